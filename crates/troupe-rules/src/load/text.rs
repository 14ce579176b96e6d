//! Bytes → text, and the positions every loader reports (Format 2.1, 16).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::diag::{Code, Diagnostic};

use super::document::LineCol;
use super::limits::MAX_FILE_BYTES;

/// The UTF-8 byte order mark, which Format 2.1 forbids.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Checks `bytes` as Format 2.1 text: no byte order mark (ENCODING at 1:1)
/// and valid UTF-8 (ENCODING at the line and column of the first bad byte).
/// `first_line` is the 1-based line `bytes` starts at (for JSONL lines).
pub fn decode<'a>(file: &str, bytes: &'a [u8], first_line: u32) -> Result<&'a str, Diagnostic> {
    if bytes.starts_with(BOM) {
        return Err(Diagnostic::error(
            Code::Encoding,
            "the file starts with a byte order mark; Troupe files are UTF-8 without one",
        )
        .in_file(file)
        .at_line_col(first_line, 1)
        .with_help("save the file as UTF-8 without BOM"));
    }
    std::str::from_utf8(bytes).map_err(|e| {
        let good = e.valid_up_to();
        // The prefix is valid UTF-8 by definition of `valid_up_to`.
        let prefix = std::str::from_utf8(bytes.get(..good).unwrap_or_default()).unwrap_or("");
        let at = position_in(prefix, prefix.len(), first_line);
        let byte = bytes.get(good).copied().unwrap_or_default();
        Diagnostic::error(
            Code::Encoding,
            format!("invalid UTF-8 (byte 0x{byte:02x}); Troupe files are UTF-8"),
        )
        .in_file(file)
        .at_line_col(at.line, at.column)
    })
}

/// The line and column (1-based, columns in Unicode scalar values) of byte
/// offset `byte` in `text`, whose first line is line `first_line`. An offset
/// inside a character or past the end is clamped.
pub fn position_in(text: &str, byte: usize, first_line: u32) -> LineCol {
    let mut end = byte.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = text.get(..end).unwrap_or("");
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let lines = before.bytes().filter(|b| *b == b'\n').count();
    let column = before.get(line_start..).unwrap_or("").chars().count() + 1;
    LineCol {
        line: first_line.saturating_add(u32::try_from(lines).unwrap_or(u32::MAX)),
        column: u32::try_from(column).unwrap_or(u32::MAX),
    }
}

/// LIMIT when `len` bytes is over [`MAX_FILE_BYTES`] (Format 16).
pub fn check_size(file: &str, len: u64) -> Option<Diagnostic> {
    (len > MAX_FILE_BYTES).then(|| {
        Diagnostic::error(
            Code::Limit,
            format!("the file is {len} bytes; the limit is {MAX_FILE_BYTES} bytes (64 MiB)"),
        )
        .in_file(file)
    })
}

/// Reads a regular file of at most `MAX_FILE_BYTES`: see `read_at_most`.
pub fn read_bounded(file: &str, path: &Path) -> Result<Vec<u8>, Diagnostic> {
    read_at_most(file, path, MAX_FILE_BYTES)
}

/// Reads a regular file of at most `max` bytes (Format 16).
///
/// Only a regular file is read: a path (after following symlinks, so a
/// symlink given on the command line is read when its target is a regular
/// file) that is a folder, FIFO, device or socket is FORBIDDEN_FILE and is
/// never read (a FIFO would block, `/dev/zero` never ends). The file is
/// opened without blocking and checked through the open handle (so a path
/// swapped for a FIFO between a check and the open cannot be read); the
/// size is checked from that metadata before reading (LIMIT, so a huge
/// file is never read), and the read itself always stops one byte past
/// `max` whatever the metadata said. A path that does not exist is MISSING_FILE; any other
/// system error (permission denied, a symlink loop) is IO.
pub fn read_at_most(file: &str, path: &Path, max: u64) -> Result<Vec<u8>, Diagnostic> {
    let failed = |e: std::io::Error| io_diagnostic(file, &e);
    // Elsewhere than on Unix a folder cannot be opened at all: look first,
    // so that it is FORBIDDEN_FILE there too.
    #[cfg(not(unix))]
    {
        let meta = std::fs::metadata(path).map_err(failed)?;
        if !meta.is_file() {
            return Err(not_regular(file, &meta.file_type()));
        }
    }
    let f = open_regular(path).map_err(failed)?;
    let meta = f.metadata().map_err(failed)?;
    if !meta.is_file() {
        return Err(not_regular(file, &meta.file_type()));
    }
    read_opened(file, f, meta.len(), max)
}

/// [`read_at_most`] when `path` opens as a regular file; `None` when it
/// cannot be opened (missing, not allowed), or is not a regular file, so
/// that the caller's other way reports it. One `open`, one `fstat` and the
/// reads (an open of a compiled package, Format 20, tries the path as a
/// package file first: no `stat` of the path before the open).
pub fn read_if_regular(file: &str, path: &Path, max: u64) -> Option<Result<Vec<u8>, Diagnostic>> {
    // Elsewhere than on Unix a folder cannot be opened at all: the
    // caller's other way looks first.
    if cfg!(not(unix)) {
        return None;
    }
    let f = open_regular(path).ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    Some(read_opened(file, f, meta.len(), max))
}

/// The reads of [`read_at_most`] from an open regular file whose metadata
/// gives `len` bytes.
fn read_opened(file: &str, f: File, len: u64, max: u64) -> Result<Vec<u8>, Diagnostic> {
    let over = |len: u64| {
        (len > max).then(|| {
            Diagnostic::error(
                Code::Limit,
                format!("the file is {len} bytes or more; the limit is {max} bytes"),
            )
            .in_file(file)
        })
    };
    if let Some(d) = over(len) {
        return Err(d);
    }
    let failed = |e: std::io::Error| io_diagnostic(file, &e);
    // The whole file as its metadata gives it, read into a buffer of that
    // size (one `read` for a regular file, where a growing buffer read it
    // in 8, 16, 32 KiB… steps). It may still grow or shrink while read:
    // a short read ends it; a full one is followed by the reads of what
    // may follow (a probe that finds the end at once), and the limit is
    // checked on what was read, which never goes past `max` + 1 bytes.
    let want = usize::try_from(len).unwrap_or(usize::MAX);
    let mut bytes = vec![0u8; want];
    let mut filled = 0;
    let mut f = f;
    while let Some(rest) = bytes.get_mut(filled..).filter(|r| !r.is_empty()) {
        match f.read(rest) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(failed(e)),
        }
    }
    bytes.truncate(filled);
    if filled == want {
        f.take(max.saturating_add(1).saturating_sub(len))
            .read_to_end(&mut bytes)
            .map_err(failed)?;
    }
    match over(bytes.len() as u64) {
        Some(d) => Err(d),
        None => Ok(bytes),
    }
}

/// The diagnostic for a failed read of `file`: MISSING_FILE when the path
/// does not exist, else IO with the system's message (Format 17.2).
pub fn io_diagnostic(file: &str, e: &std::io::Error) -> Diagnostic {
    if e.kind() == std::io::ErrorKind::NotFound {
        Diagnostic::error(Code::MissingFile, format!("no such file: {e}")).in_file(file)
    } else {
        Diagnostic::error(Code::Io, format!("the file could not be read: {e}")).in_file(file)
    }
}

/// FORBIDDEN_FILE for a path that exists but is not a regular file.
fn not_regular(file: &str, kind: &std::fs::FileType) -> Diagnostic {
    let what = if kind.is_dir() {
        "a folder"
    } else {
        special_kind(kind)
    };
    Diagnostic::error(
        Code::ForbiddenFile,
        format!("`{file}` is {what}, not a regular file; only regular files are read"),
    )
    .in_file(file)
}

#[cfg(unix)]
fn special_kind(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn special_kind(_: &std::fs::FileType) -> &'static str {
    "a special file"
}

/// Opens `path` for reading without blocking on a FIFO (`O_NONBLOCK` on
/// Unix; reads from a regular file are not affected by it). The caller must
/// still check that the handle is a regular file.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bom_is_encoding_at_1_1() {
        let d = decode("f", b"\xEF\xBB\xBF{}", 1).unwrap_err();
        assert_eq!(d.code, Code::Encoding);
        assert_eq!((d.location.line, d.location.column), (Some(1), Some(1)));
    }

    #[test]
    fn bad_byte_position() {
        // "aé\nb" then 0xff: line 2, column 2 (after `b`).
        let d = decode("f", b"a\xc3\xa9\nb\xff", 1).unwrap_err();
        assert_eq!((d.location.line, d.location.column), (Some(2), Some(2)));
        let d = decode("f", b"x\xff", 7).unwrap_err();
        assert_eq!((d.location.line, d.location.column), (Some(7), Some(2)));
    }

    #[test]
    fn a_regular_file_is_read_whole_from_one_open() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.troupe");
        // Sizes around the old growing reads' steps (8 and 16 KiB).
        for len in [0usize, 1, 8191, 8192, 8193, 24_577] {
            let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            std::fs::write(&file, &bytes).unwrap();
            let read = read_if_regular("p", &file, 1 << 20).unwrap().unwrap();
            assert_eq!(read, bytes);
            assert_eq!(read, read_at_most("p", &file, 1 << 20).unwrap());
        }
        // Over the limit: LIMIT, as read_at_most says it.
        std::fs::write(&file, [7u8; 100]).unwrap();
        let d = read_if_regular("p", &file, 99).unwrap().unwrap_err();
        assert_eq!(d.code, Code::Limit);
        assert_eq!(d, read_at_most("p", &file, 99).unwrap_err());
        assert_eq!(
            read_if_regular("p", &file, 100).unwrap().unwrap().len(),
            100
        );
        // Not a regular file, or not there: left to the caller.
        assert!(read_if_regular("d", dir.path(), 1 << 20).is_none());
        assert!(read_if_regular("m", &dir.path().join("missing"), 1 << 20).is_none());
    }

    #[test]
    fn positions_count_chars() {
        let t = "é:\n  ab";
        assert_eq!(position_in(t, 0, 1), LineCol { line: 1, column: 1 });
        assert_eq!(position_in(t, 2, 1), LineCol { line: 1, column: 2 });
        assert_eq!(position_in(t, 6, 1), LineCol { line: 2, column: 3 });
        assert_eq!(position_in(t, 99, 3), LineCol { line: 4, column: 5 });
    }
}

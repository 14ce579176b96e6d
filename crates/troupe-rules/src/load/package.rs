//! Packages (`.troupe` ZIP archives) → documents (Format 14, 16).
//!
//! Every entry is screened first (its name, kind, method, declared size and
//! the bytes it actually inflates to, its extension and magic bytes); when
//! anything is wrong nothing is parsed. Only then are `bundle.json`,
//! `manifest.json` and `sessions/*.jsonl` parsed. Diagnostics about the
//! whole archive name the package file; diagnostics about an entry, or
//! inside one, name the file `pkg.troupe!bundle.json` (Format 14.3).

use std::borrow::Cow;
use std::io::{Cursor, Read};
use std::path::Path;

use indexmap::IndexMap;
use zip::{CompressionMethod, ZipArchive};

use crate::diag::{Code, Diagnostic};

use super::document::Document;
use super::forbidden::{classify, MAGIC_PREFIX_LEN};
use super::json::parse_json;
use super::limits::{
    MAX_PACKAGE_FILE_BYTES, MAX_ZIP_ENTRIES, MAX_ZIP_ENTRY_BYTES, MAX_ZIP_TOTAL_BYTES,
};
use super::loaded::Loaded;
use super::session::{parse_session, SessionDoc};
use super::text::read_at_most;

/// A read package (Format 14).
#[derive(Debug, Clone)]
pub struct PackageDoc {
    /// The package file name as shown in diagnostics.
    pub file: String,
    /// `bundle.json`, when present and parsed.
    pub bundle: Option<Document>,
    /// `sessions/*.jsonl` by entry name, in archive order.
    pub sessions: IndexMap<String, SessionDoc>,
    /// The bytes of `ir.json` (compiled IR), when present; the compiler
    /// reads them.
    pub ir: Option<Vec<u8>>,
    /// The bytes of `ir.compact` (the same IR in the compact encoding,
    /// Format 14.4), when present.
    pub compact: Option<Vec<u8>>,
    /// `manifest.json`, when present and parsed.
    pub manifest: Option<Document>,
    /// Other file entries, by name in archive order (ignored with a warning
    /// by the checker, Format 14).
    pub other: Vec<String>,
}

/// Reads a package file: its size is checked from metadata first (LIMIT
/// over 256 MiB), then [`parse_package`].
pub fn read_package(path: &Path) -> Loaded<PackageDoc> {
    let file = path.display().to_string();
    match read_at_most(&file, path, MAX_PACKAGE_FILE_BYTES) {
        Ok(bytes) => parse_package(&file, &bytes),
        Err(d) => Loaded::fail(d),
    }
}

/// A package whose archive passed its checks (Format 14.2, 16): the bytes
/// of the entries a reader keeps, by name in archive order, and the names
/// of the other file entries. Nothing is parsed yet.
#[derive(Debug, Clone, Default)]
pub struct ScreenedPackage {
    /// `bundle.json`, `manifest.json`, `ir.json`, `ir.compact` and
    /// `sessions/*.jsonl`.
    pub kept: Vec<(String, Vec<u8>)>,
    /// Other file entries.
    pub other: Vec<String>,
}

/// [`ScreenedPackage`] with each kept entry's bytes borrowed from the
/// archive where they are stored as they are (method stored, the whole
/// entry inside the archive, its CRC-32 matching): nothing is copied out
/// of the package's buffer; an entry inflated, or one the library would
/// refuse, is read as [`screen_package`] reads it.
#[derive(Debug, Clone, Default)]
pub struct ScreenedView<'a> {
    /// As [`ScreenedPackage::kept`].
    pub kept: Vec<(String, Cow<'a, [u8]>)>,
    /// Other file entries.
    pub other: Vec<String>,
}

/// Checks a package archive (Format 14.2, 16) without parsing any entry.
/// Archive diagnostics name the archive (`file`, no pointer) when they are
/// about the whole archive, and the entry as the file `<file>!<entry>` with
/// pointer `""` when they are about one entry (Format 14.3; a name that is
/// not UTF-8 shown lossily):
/// - not a ZIP, duplicate entry names, a method other than stored/deflate,
///   an encrypted or unreadable entry: PARSE;
/// - an entry name that is not valid UTF-8 (with or without the UTF-8
///   flag): ENCODING;
/// - a name that is absolute, holds `..`, a NUL or a backslash:
///   PATH_TRAVERSAL;
/// - more than 10,000 entries, an entry over 64 MiB or a total over
///   256 MiB, by declared size or by the bytes actually inflated: LIMIT;
/// - a symlink or script/executable extension: FORBIDDEN_FILE; executable
///   magic bytes: FORBIDDEN_BINARY.
///
/// With any of those, no value is returned; otherwise the kept entries'
/// bytes.
pub fn screen_package(file: &str, bytes: &[u8]) -> Loaded<ScreenedPackage> {
    let l = screen_package_view(file, bytes);
    Loaded {
        value: l.value.map(|v| ScreenedPackage {
            kept: v
                .kept
                .into_iter()
                .map(|(n, b)| (n, b.into_owned()))
                .collect(),
            other: v.other,
        }),
        diagnostics: l.diagnostics,
    }
}

/// [`screen_package`] with the kept entries borrowed in place where they
/// are stored ([`ScreenedView`]): the same checks, the same diagnostics.
pub fn screen_package_view<'a>(file: &str, bytes: &'a [u8]) -> Loaded<ScreenedView<'a>> {
    let fail = |code, msg: String| Loaded::fail(Diagnostic::error(code, msg).in_file(file));
    if let Some(n) = declared_entry_count(bytes).filter(|n| *n > MAX_ZIP_ENTRIES) {
        return fail(
            Code::Limit,
            format!("the package has {n} entries; the limit is {MAX_ZIP_ENTRIES}"),
        );
    }
    let mut zip = match ZipArchive::new(Cursor::new(bytes)) {
        Ok(z) => z,
        Err(e) => return fail(Code::Parse, format!("not a readable ZIP archive: {e}")),
    };
    if zip.len() > MAX_ZIP_ENTRIES {
        return fail(
            Code::Limit,
            format!(
                "the package has {} entries; the limit is {MAX_ZIP_ENTRIES}",
                zip.len()
            ),
        );
    }
    if zip.has_duplicate_names() {
        return fail(
            Code::Parse,
            "two entries of the package share a name".into(),
        );
    }
    let mut diagnostics = Vec::new();
    let mut kept: Vec<(String, Cow<'a, [u8]>)> = Vec::new();
    let mut other = Vec::new();
    let (mut declared_total, mut actual_total) = (0u64, 0u64);
    // Whether every entry was looked at (a LIMIT or an unreadable entry
    // stops the walk), and whether one is `bundle.json` (MISSING_FILE is an
    // archive check too, Format 14.3).
    let (mut stopped, mut saw_bundle) = (false, false);
    for i in 0..zip.len() {
        // An entry's diagnostic names the entry as the file (Format 14.3).
        let mut err = |code, name: &str, msg: String| {
            diagnostics.push(
                Diagnostic::error(code, msg)
                    .in_file(format!("{file}!{name}"))
                    .at(""),
            );
        };
        let (name, is_dir, declared, stored) = {
            let entry = match zip.by_index_raw(i) {
                Ok(e) => e,
                Err(e) => {
                    diagnostics.push(
                        Diagnostic::error(Code::Parse, format!("entry {i} cannot be read: {e}"))
                            .in_file(file),
                    );
                    stopped = true;
                    break;
                }
            };
            let name = String::from_utf8_lossy(entry.name_raw()).into_owned();
            saw_bundle |= entry.name_raw() == b"bundle.json";
            if let Some(why) = bad_name(entry.name_raw()) {
                err(
                    Code::PathTraversal,
                    &name,
                    format!("the entry name `{}` {why}", name.escape_debug()),
                );
                continue;
            }
            // The raw bytes, whatever the UTF-8 flag says: without it the
            // library reads names as CP437 and any byte "decodes".
            if std::str::from_utf8(entry.name_raw()).is_err() {
                err(
                    Code::Encoding,
                    &name,
                    format!(
                        "the entry name `{}` is not valid UTF-8",
                        name.escape_debug()
                    ),
                );
                continue;
            }
            if entry.is_symlink() {
                err(
                    Code::ForbiddenFile,
                    &name,
                    format!("`{name}` is a symbolic link"),
                );
                continue;
            }
            if entry.encrypted() {
                err(Code::Parse, &name, format!("`{name}` is encrypted"));
                continue;
            }
            if !matches!(
                entry.compression(),
                CompressionMethod::Stored | CompressionMethod::Deflated
            ) {
                err(
                    Code::Parse,
                    &name,
                    format!(
                        "`{name}` uses the method {}; only stored and deflate are allowed",
                        entry.compression()
                    ),
                );
                continue;
            }
            declared_total = declared_total.saturating_add(entry.size());
            if entry.size() > MAX_ZIP_ENTRY_BYTES {
                err(
                    Code::Limit,
                    &name,
                    format!(
                        "`{name}` declares {} bytes; the limit per entry is {MAX_ZIP_ENTRY_BYTES}",
                        entry.size()
                    ),
                );
                continue;
            }
            if declared_total > MAX_ZIP_TOTAL_BYTES {
                err(
                    Code::Limit,
                    &name,
                    format!("the entries declare more than {MAX_ZIP_TOTAL_BYTES} bytes in total"),
                );
                stopped = true;
                break;
            }
            if let Some((Code::ForbiddenFile, msg)) = classify(&name, b"") {
                err(Code::ForbiddenFile, &name, msg);
                continue;
            }
            // A stored entry's bytes where `by_index_raw` found them
            // (its data start, its stored size) and its CRC-32.
            let stored = (entry.compression() == CompressionMethod::Stored)
                .then(|| Some((entry.data_start()?, entry.compressed_size(), entry.crc32())))
                .flatten();
            (name, entry.is_dir(), entry.size(), stored)
        };
        if is_dir {
            continue;
        }
        // A stored entry whose bytes lie whole in the archive, no more than
        // it declares, with its CRC-32: what the library's reader would
        // return, borrowed. Anything else is read by the library, which
        // gives the diagnostics below.
        let in_place = stored.and_then(|(start, len, crc)| {
            let start = usize::try_from(start).ok()?;
            let end = start.checked_add(usize::try_from(len).ok()?)?;
            let d = bytes.get(start..end)?;
            (len <= declared && crc32fast::hash(d) == crc).then_some(d)
        });
        let (mut data, read) = match in_place {
            Some(d) => (Cow::Borrowed(d), Ok(0)),
            None => {
                // Inflate, counting what actually comes out: headers can
                // lie. Room for the declared size is made first (no
                // regrowing copies of a large entry), but never more than
                // the archive's own size: a header that lies about a small
                // entry reserves no more than the input is.
                let mut data = Vec::with_capacity(declared.min(bytes.len() as u64) as usize);
                let read = zip.by_index(i).and_then(|entry| {
                    entry
                        .take(MAX_ZIP_ENTRY_BYTES + 1)
                        .read_to_end(&mut data)
                        .map_err(zip::result::ZipError::from)
                });
                (Cow::Owned(data), read)
            }
        };
        let n = data.len() as u64;
        actual_total = actual_total.saturating_add(n);
        if n > MAX_ZIP_ENTRY_BYTES {
            err(
                Code::Limit,
                &name,
                format!("`{name}` inflates past {MAX_ZIP_ENTRY_BYTES} bytes (the limit per entry)"),
            );
            stopped = true;
            break;
        }
        if actual_total > MAX_ZIP_TOTAL_BYTES {
            err(
                Code::Limit,
                &name,
                format!("the entries inflate past {MAX_ZIP_TOTAL_BYTES} bytes in total"),
            );
            stopped = true;
            break;
        }
        if let Err(e) = read {
            // The library stops an entry at its declared size; a stream
            // that goes on is a header that lies about the size.
            if e.to_string().contains("larger than its declared") {
                err(
                    Code::Limit,
                    &name,
                    format!("`{name}` inflates past its declared size"),
                );
                stopped = true;
                break;
            }
            err(Code::Parse, &name, format!("`{name}` cannot be read: {e}"));
            continue;
        }
        let head = data
            .get(..MAGIC_PREFIX_LEN.min(data.len()))
            .unwrap_or_default();
        if let Some((code, msg)) = classify(&name, head) {
            err(code, &name, msg);
            continue;
        }
        if is_kept(&name) {
            // A lying header's room is not kept (many small entries must
            // not each hold the archive's size).
            if let Cow::Owned(d) = &mut data {
                d.shrink_to_fit();
            }
            kept.push((name, data));
        } else {
            other.push(name);
        }
    }
    if !diagnostics.is_empty() {
        if !stopped && !saw_bundle {
            diagnostics.push(
                Diagnostic::error(Code::MissingFile, "the package has no bundle.json")
                    .in_file(format!("{file}!bundle.json"))
                    .at(""),
            );
        }
        return Loaded {
            value: None,
            diagnostics,
        };
    }
    Loaded::ok(ScreenedView { kept, other })
}

/// Reads a package from bytes (Format 14, 16): [`screen_package`], then
/// `bundle.json` (required, MISSING_FILE), `manifest.json` and
/// `sessions/*.jsonl` are parsed.
pub fn parse_package(file: &str, bytes: &[u8]) -> Loaded<PackageDoc> {
    let screened = screen_package(file, bytes);
    let Some(ScreenedPackage { kept, other }) = screened.value else {
        return Loaded {
            value: None,
            diagnostics: screened.diagnostics,
        };
    };
    let mut diagnostics = screened.diagnostics;
    let mut pkg = PackageDoc {
        file: file.to_string(),
        bundle: None,
        sessions: IndexMap::new(),
        ir: None,
        compact: None,
        manifest: None,
        other,
    };
    for (name, data) in kept {
        let inner = format!("{file}!{name}");
        match name.as_str() {
            "bundle.json" => {
                let l = parse_json(&inner, &data);
                diagnostics.extend(l.diagnostics);
                pkg.bundle = l.value;
            }
            "manifest.json" => {
                let l = parse_json(&inner, &data);
                diagnostics.extend(l.diagnostics);
                pkg.manifest = l.value;
            }
            "ir.json" => pkg.ir = Some(data),
            super::compiled::COMPACT_ENTRY => pkg.compact = Some(data),
            _ => {
                let l = parse_session(&inner, &data);
                diagnostics.extend(l.diagnostics);
                if let Some(s) = l.value {
                    pkg.sessions.insert(name, s);
                }
            }
        }
    }
    if pkg.bundle.is_none()
        && !diagnostics
            .iter()
            .any(|d| d.location.file.as_deref() == Some(&format!("{file}!bundle.json")))
    {
        diagnostics.push(
            Diagnostic::error(Code::MissingFile, "the package has no bundle.json")
                .in_file(format!("{file}!bundle.json"))
                .at(""),
        );
    }
    Loaded {
        value: Some(pkg),
        diagnostics,
    }
}

/// The entries a package reader keeps: `bundle.json`, `manifest.json`,
/// `ir.json`, `ir.compact` and `sessions/<name>.jsonl`.
fn is_kept(name: &str) -> bool {
    matches!(
        name,
        "bundle.json" | "manifest.json" | "ir.json" | super::compiled::COMPACT_ENTRY
    ) || name
        .strip_prefix("sessions/")
        .is_some_and(|s| !s.contains('/') && s.ends_with(".jsonl"))
}

/// Why an entry name is PATH_TRAVERSAL, if it is (Format 14); `None` when
/// the name is safe. Also used by CHARX import.
pub fn bad_name(raw: &[u8]) -> Option<&'static str> {
    if raw.contains(&0) {
        return Some("holds a NUL byte");
    }
    if raw.contains(&b'\\') {
        return Some("holds a backslash");
    }
    if raw.starts_with(b"/") || (raw.len() >= 2 && raw[1] == b':') {
        return Some("is absolute");
    }
    if raw.split(|b| *b == b'/').any(|part| part == b"..") {
        return Some("leaves the archive root (`..`)");
    }
    if raw.is_empty() {
        return Some("is empty");
    }
    None
}

/// The entry count an archive's end-of-central-directory record declares,
/// read before the ZIP library lists the entries (so a huge count is refused
/// before it costs memory). `None` when there is no such record or the count
/// is in a ZIP64 record (then the library's count is checked).
fn declared_entry_count(bytes: &[u8]) -> Option<usize> {
    const EOCD: &[u8] = b"PK\x05\x06";
    let from = bytes.len().saturating_sub(22 + 65_535);
    let tail = bytes.get(from..)?;
    let at = tail.windows(4).rposition(|w| w == EOCD)?;
    let field = tail.get(at + 10..at + 12)?;
    let n = u16::from_le_bytes([field[0], field[1]]);
    (n != u16::MAX).then_some(usize::from(n))
}

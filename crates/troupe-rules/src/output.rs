//! Writing output files so that none is ever lost (Format 16.3).
//!
//! Every file a command writes goes through [`OutputFile`]: the bytes go to
//! a partial file beside the target (`.<name>.troupe-partial`, same folder,
//! so the final rename never crosses filesystems), which is locked while it
//! is written (a second writer of the same target gets
//! [`OutputError::Locked`]), and only [`OutputFile::commit`] renames it over
//! the target. Dropping an `OutputFile` without committing removes the
//! partial file: a refused or failed command leaves the target exactly as it
//! was. A process killed while writing leaves the target untouched and a
//! partial file of complete lines (session lines are written whole), which
//! the next writer of that target reuses.
//!
//! [`check_outputs`] is the other half: an output that is one of the
//! command's inputs (the same path, a symlink to it, a hard link to it, or a
//! file inside an input folder), two outputs that are one file, and an
//! existing file that is not of the output's kind are refused before
//! anything runs.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why an output file could not be prepared or committed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// Another process holds the lock on the target's partial file: it is
    /// writing the same target now.
    #[error("{0} is being written by another troupe process (its partial file {1} is locked); wait for it to finish or choose another output")]
    Locked(String, String),
    /// The target is a folder, or its folder does not exist.
    #[error("cannot write {0}: {1}")]
    NotWritable(String, String),
    /// A system error while writing, syncing or renaming.
    #[error("cannot write {0}: {1}")]
    Io(String, std::io::Error),
}

/// A file being written: bytes go to a locked partial file beside the
/// target until [`OutputFile::commit`] renames it into place.
#[derive(Debug)]
pub struct OutputFile {
    target: PathBuf,
    partial: PathBuf,
    file: Option<File>,
}

pub use crate::load::pack::partial_path;

/// The path to write for `path`: a symlink is written through (its target
/// is replaced and the link kept).
fn real_target(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

impl OutputFile {
    /// Prepares `target` for writing: checks that it is not a folder and
    /// that its folder exists, then creates and locks the partial file
    /// (emptied). Nothing is done to `target` itself until
    /// [`OutputFile::commit`].
    pub fn create(target: &Path) -> Result<OutputFile, OutputError> {
        let shown = target.display().to_string();
        let target = real_target(target);
        if target.is_dir() {
            return Err(OutputError::NotWritable(shown, "it is a folder".into()));
        }
        let partial = partial_path(&target);
        let folder = match partial.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !folder.is_dir() {
            return Err(OutputError::NotWritable(
                shown,
                format!("the folder {} does not exist", folder.display()),
            ));
        }
        let io = |e| OutputError::Io(shown.clone(), e);
        // Open without truncating, lock, and make sure the path still names
        // the locked file: a writer that finished meanwhile renamed it away.
        for _ in 0..16 {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&partial)
                .map_err(io)?;
            match fs4::FileExt::try_lock(&file) {
                Ok(()) => {}
                Err(fs4::TryLockError::WouldBlock) => {
                    return Err(OutputError::Locked(shown, partial.display().to_string()))
                }
                Err(fs4::TryLockError::Error(e)) => return Err(io(e)),
            }
            if same_file(&file, &partial) {
                file.set_len(0).map_err(io)?;
                return Ok(OutputFile {
                    target,
                    partial,
                    file: Some(file),
                });
            }
        }
        Err(OutputError::Locked(shown, partial.display().to_string()))
    }

    /// The partial file's path (for writers that open it themselves, such
    /// as a session writer; the lock stays with this value).
    pub fn partial(&self) -> &Path {
        &self.partial
    }

    /// The final path.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Writes all of `bytes` to the partial file.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), OutputError> {
        let shown = self.target.display().to_string();
        match &mut self.file {
            Some(f) => f.write_all(bytes).map_err(|e| OutputError::Io(shown, e)),
            None => Ok(()),
        }
    }

    /// Syncs the partial file and renames it over the target (keeping an
    /// existing target's permissions). Only now is the target changed.
    pub fn commit(mut self) -> Result<(), OutputError> {
        let shown = self.target.display().to_string();
        let io = |e| OutputError::Io(shown.clone(), e);
        let file = self.file.take();
        if let Some(f) = &file {
            f.sync_all().map_err(io)?;
            if let Ok(m) = std::fs::metadata(&self.target) {
                let _ = f.set_permissions(m.permissions());
            }
        }
        std::fs::rename(&self.partial, &self.target).map_err(io)?;
        if let Some(dir) = self.target.parent().filter(|d| !d.as_os_str().is_empty())
            && let Ok(d) = File::open(dir)
        {
            let _ = d.sync_all();
        }
        drop(file);
        Ok(())
    }
}

impl Drop for OutputFile {
    /// Not committed: the partial file is removed (while still locked) and
    /// the target is left as it was.
    fn drop(&mut self) {
        if let Some(f) = self.file.take() {
            let _ = std::fs::remove_file(&self.partial);
            drop(f);
        }
    }
}

/// Writes `bytes` to `target` through an [`OutputFile`]: the target is
/// replaced whole or not at all.
pub fn write_atomic(target: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let mut out = OutputFile::create(target)?;
    out.write_all(bytes)?;
    out.commit()
}

#[cfg(unix)]
fn identity(m: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn identity(_: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// True when the open `file` is the file `path` names now.
fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => match (identity(&a), identity(&b)) {
            (Some(x), Some(y)) => x == y,
            _ => true,
        },
        _ => false,
    }
}

/// What an output file holds, for the kind rule of Format 16.3: an
/// existing file at an output path is replaced only when it already holds
/// this kind (or is empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutputKind {
    /// A package (Format 14): a ZIP archive, whose first bytes are
    /// `50 4B 03 04` or `50 4B 05 06`.
    Package,
    /// A JSON document or a JSON Lines file whose first value is an object
    /// (a session, a cassette, a bundle): its first byte after an optional
    /// byte order mark and white space is `{`.
    Json,
    /// Anything else a command writes (a report, a picture, a folder of
    /// pages): not checked by content.
    Any,
}

impl OutputKind {
    /// What the kind is called in a refusal.
    fn name(self) -> &'static str {
        match self {
            OutputKind::Package => "a package (a ZIP archive)",
            OutputKind::Json => "a JSON document or JSON Lines file",
            OutputKind::Any => "an output",
        }
    }

    /// Whether `head`, the first bytes of an existing file (at most 64),
    /// are of this kind. An empty file is of every kind.
    fn accepts(self, head: &[u8]) -> bool {
        if head.is_empty() {
            return true;
        }
        match self {
            OutputKind::Package => {
                head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06")
            }
            OutputKind::Json => {
                let rest = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
                match rest
                    .iter()
                    .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
                {
                    Some(b) => *b == b'{',
                    // Only white space in the first bytes: not refused.
                    None => true,
                }
            }
            OutputKind::Any => true,
        }
    }
}

/// Refuses outputs that are inputs (Format 16.3): [`check_outputs`] with
/// every output of [`OutputKind::Any`].
pub fn refuse_inputs(outputs: &[&Path], inputs: &[&Path]) -> Result<(), String> {
    let outputs: Vec<(&Path, OutputKind)> = outputs.iter().map(|o| (*o, OutputKind::Any)).collect();
    check_outputs(&outputs, inputs)
}

/// The output rules of Format 16.3, the one place every client (the
/// command's flags, `troupe mcp`'s arguments, a cassette recorded with
/// `--record`) checks its outputs before anything runs. An output is
/// refused when:
///
/// - it names the same file as an input (compared through symlinks by
///   canonical path, and through hard links by device and inode), or it is
///   an existing file inside an input folder (a pack's files are its
///   inputs; a new file there is fine);
/// - two outputs are the same file;
/// - it is of a checked kind ([`OutputKind::Package`], [`OutputKind::Json`])
///   and names an existing folder or something that is not a regular file,
///   or an existing file that is not of its kind.
///
/// Returns the message of the first refusal; the caller exits 2 (`troupe
/// mcp`: a result with `isError`) and writes nothing.
pub fn check_outputs(outputs: &[(&Path, OutputKind)], inputs: &[&Path]) -> Result<(), String> {
    let mut seen: Vec<(PathBuf, Option<(u64, u64)>)> = Vec::new();
    for (out, kind) in outputs {
        let canon = canonical(out);
        let id = std::fs::metadata(out).ok().as_ref().and_then(identity);
        if seen
            .iter()
            .any(|(c, i)| *c == canon || (id.is_some() && *i == id))
        {
            return Err(format!(
                "{} is given as two outputs; give each output its own file",
                out.display()
            ));
        }
        seen.push((canon.clone(), id));
        for input in inputs {
            let input_canon = canonical(input);
            let clash = if input.is_dir() {
                id.is_some() && (canon.starts_with(&input_canon) || in_folder(input, id))
            } else {
                canon == input_canon
                    || (id.is_some()
                        && std::fs::metadata(input).ok().as_ref().and_then(identity) == id)
            };
            if clash {
                return Err(format!(
                    "the output {} is an input of this command ({}); writing it would \
                     destroy the input: choose another output path",
                    out.display(),
                    input.display()
                ));
            }
        }
        if *kind != OutputKind::Any {
            of_kind(out, *kind)?;
        }
    }
    Ok(())
}

/// The kind rule of [`check_outputs`] for one output: nothing there, or a
/// regular file whose first bytes are of `kind`.
fn of_kind(out: &Path, kind: OutputKind) -> Result<(), String> {
    let Ok(meta) = std::fs::metadata(out) else {
        return Ok(());
    };
    if meta.is_dir() {
        return Err(format!(
            "the output {} is a folder; give the path of a file to write",
            out.display()
        ));
    }
    if !meta.is_file() {
        return Err(format!(
            "the output {} is not a regular file; give the path of a file to write",
            out.display()
        ));
    }
    let mut head = Vec::with_capacity(64);
    if let Ok(f) = File::open(out) {
        use std::io::Read;
        let _ = f.take(64).read_to_end(&mut head);
    }
    if kind.accepts(&head) {
        Ok(())
    } else {
        Err(format!(
            "the output {} exists and is not {}; it is not replaced: remove it or \
             choose another output path",
            out.display(),
            kind.name()
        ))
    }
}

/// True when a regular file inside folder `dir` (not following symlinks,
/// bounded like a pack scan) has identity `id` (a hard link elsewhere).
fn in_folder(dir: &Path, id: Option<(u64, u64)>) -> bool {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .max_depth(crate::load::limits::MAX_PACK_DIR_DEPTH + 1)
        .into_iter()
        .take(crate::load::limits::MAX_PACK_ENTRIES + 1)
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .any(|e| e.metadata().ok().as_ref().and_then(identity) == id)
}

/// `path` made absolute and resolved through symlinks as far as it exists
/// (a file not yet written: its folder resolved, its name appended).
fn canonical(path: &Path) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(path) {
        return c;
    }
    let name = path.file_name().map(PathBuf::from).unwrap_or_default();
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::canonicalize(&parent).unwrap_or(parent).join(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_replaces_and_drop_keeps() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("out.txt");
        std::fs::write(&t, "old").unwrap();
        {
            let mut o = OutputFile::create(&t).unwrap();
            o.write_all(b"new").unwrap();
            assert!(o.partial().exists());
        }
        assert_eq!(std::fs::read_to_string(&t).unwrap(), "old");
        assert!(!partial_path(&t).exists());
        write_atomic(&t, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&t).unwrap(), "new");
        assert!(!partial_path(&t).exists());
    }

    #[test]
    fn second_writer_is_locked_out() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("s.jsonl");
        let first = OutputFile::create(&t).unwrap();
        assert!(matches!(
            OutputFile::create(&t),
            Err(OutputError::Locked(..))
        ));
        drop(first);
        assert!(OutputFile::create(&t).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn inputs_are_refused_through_links() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.json");
        std::fs::write(&input, "{}").unwrap();
        let sym = dir.path().join("sym.json");
        std::os::unix::fs::symlink(&input, &sym).unwrap();
        let hard = dir.path().join("hard.json");
        std::fs::hard_link(&input, &hard).unwrap();
        for out in [&input, &sym, &hard] {
            assert!(refuse_inputs(&[out], &[&input]).is_err(), "{out:?}");
        }
        let fresh = dir.path().join("new.json");
        assert!(refuse_inputs(&[&fresh], &[&input]).is_ok());
        assert!(refuse_inputs(&[&fresh, &fresh], &[&input]).is_err());
        // A pack folder: its existing files are inputs, a new file is not.
        let pack = dir.path().join("pack");
        std::fs::create_dir(&pack).unwrap();
        std::fs::write(pack.join("manifest.yaml"), "x").unwrap();
        assert!(refuse_inputs(&[&pack.join("manifest.yaml")], &[&pack]).is_err());
        assert!(refuse_inputs(&[&pack.join("new.jsonl")], &[&pack]).is_ok());
        let outside = dir.path().join("linked.yaml");
        std::fs::hard_link(pack.join("manifest.yaml"), &outside).unwrap();
        assert!(refuse_inputs(&[&outside], &[&pack]).is_err());
    }

    #[test]
    fn an_existing_file_of_another_kind_or_a_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("notes.md"), "# notes").unwrap();
        std::fs::write(p("old.troupe"), b"PK\x03\x04rest").unwrap();
        std::fs::write(p("old.jsonl"), "\u{feff}  {\"troupe\": \"0.1\"}\n").unwrap();
        std::fs::write(p("empty"), "").unwrap();
        let ok = |o: &str, k| check_outputs(&[(&p(o), k)], &[]).is_ok();
        assert!(!ok("notes.md", OutputKind::Package));
        assert!(!ok("notes.md", OutputKind::Json));
        assert!(ok("notes.md", OutputKind::Any));
        assert!(ok("old.troupe", OutputKind::Package));
        assert!(!ok("old.troupe", OutputKind::Json));
        assert!(ok("old.jsonl", OutputKind::Json));
        assert!(!ok("old.jsonl", OutputKind::Package));
        assert!(ok("empty", OutputKind::Package));
        assert!(ok("new.troupe", OutputKind::Package));
        let folder = check_outputs(&[(dir.path(), OutputKind::Package)], &[]).unwrap_err();
        assert!(folder.contains("is a folder"), "{folder}");
        // Two outputs of different kinds that are one file.
        let two = check_outputs(
            &[
                (&p("x.json"), OutputKind::Json),
                (&p("x.json"), OutputKind::Json),
            ],
            &[],
        );
        assert!(two.unwrap_err().contains("two outputs"));
    }
}

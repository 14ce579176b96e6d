//! Pack directories → documents (Format 13, 16).
//!
//! Every entry is screened first (symlinks, script/executable extensions,
//! executable magic bytes); when anything is forbidden the pack is not
//! parsed at all. Only then are `manifest.yaml`, the YAML files of the known
//! folders and `sessions/*.jsonl` read.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use crate::diag::{Code, Diagnostic};

use super::document::Document;
use super::forbidden::{classify, MAGIC_PREFIX_LEN};
use super::limits::{MAX_PACK_DIR_DEPTH, MAX_PACK_ENTRIES};
use super::loaded::Loaded;
#[cfg(any(test, feature = "internals"))]
use super::refs::{normalize_ref, RefError};
use super::session::{parse_session, SessionDoc};
use super::text::{open_regular, read_bounded};
use super::yaml::parse_yaml;

/// The kind of a pack YAML file, from the top-level folder it is in
/// (Format 13.2–13.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PackFileKind {
    /// `scenarios/` (13.2).
    Scenario,
    /// `npcs/` (13.3).
    Npc,
    /// `safety/` (13.4).
    Safety,
    /// `rubrics/` (13.5).
    Rubric,
    /// `scenes/` (13.6).
    Scene,
    /// `worlds/` (13.7).
    World,
    /// `tests/` (13.8).
    Test,
    /// `playtests/` (13.9).
    Playtest,
    /// `personas/` (13.9).
    Persona,
}

impl PackFileKind {
    /// Every kind.
    pub const ALL: &'static [PackFileKind] = &[
        Self::Scenario,
        Self::Npc,
        Self::Safety,
        Self::Rubric,
        Self::Scene,
        Self::World,
        Self::Test,
        Self::Playtest,
        Self::Persona,
    ];

    /// The top-level folder holding files of this kind (`scenarios`, ...).
    pub fn folder(self) -> &'static str {
        match self {
            Self::Scenario => "scenarios",
            Self::Npc => "npcs",
            Self::Safety => "safety",
            Self::Rubric => "rubrics",
            Self::Scene => "scenes",
            Self::World => "worlds",
            Self::Test => "tests",
            Self::Playtest => "playtests",
            Self::Persona => "personas",
        }
    }

    /// The kind whose folder is `folder`.
    pub fn from_folder(folder: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|k| k.folder() == folder)
    }
}

/// A scanned and parsed pack directory (Format 13).
#[derive(Debug, Clone)]
pub struct PackFiles {
    /// The pack root as given.
    pub root: PathBuf,
    /// `manifest.yaml`, when present and parsed.
    pub manifest: Option<Document>,
    /// Every parsed YAML file directly in a known folder (subfolders are not
    /// read, Format 13.0), by path relative to the root with `/`
    /// separators, sorted by path.
    pub files: IndexMap<String, (PackFileKind, Document)>,
    /// `sessions/*.jsonl` by relative path, sorted by path.
    pub sessions: IndexMap<String, SessionDoc>,
    /// What the format does not define, sorted (the checker warns, 13.0,
    /// 13.9): unknown top-level entries (folders with a trailing `/`), files
    /// in known folders without a `.yaml`/`.yml` (`.jsonl` in `sessions/`)
    /// extension, and subfolders of known folders (`npcs/sub/`, once each;
    /// nothing under them is read). `snapshots/` is known and not listed.
    pub other: Vec<String>,
    /// Every regular file found, by relative path (what references resolve
    /// against).
    pub all_files: BTreeSet<String>,
}

impl PackFiles {
    /// Resolves a pack-relative reference (Format 13): lexical
    /// normalization ([`normalize_ref`]: PATH_TRAVERSAL for NUL, absolute or
    /// escaping paths), then MISSING_FILE unless the scan found a regular
    /// file there. Symlinks never resolve: the scan refuses any pack that
    /// has one. Returns the normalized relative path.
    #[cfg(any(test, feature = "internals"))]
    pub fn resolve_ref(&self, reference: &str) -> Result<String, RefError> {
        let rel = normalize_ref(reference)?;
        if self.all_files.contains(&rel) {
            Ok(rel)
        } else {
            Err(RefError {
                code: Code::MissingFile,
                message: format!("the reference `{reference}` names no file in the pack"),
            })
        }
    }
}

/// Scans and reads a pack directory (Format 13, 16).
///
/// 1. Walks the tree without following symlinks and screens EVERY entry:
///    a symlink, or anything not a regular file or folder, is FORBIDDEN_FILE;
///    a script/executable extension FORBIDDEN_FILE; executable magic bytes
///    FORBIDDEN_BINARY (diagnostics name the entry's relative path). More
///    than 10,000 entries or folders deeper than 32 are LIMIT. If anything
///    was found here, the diagnostics are returned with no value and no file
///    is parsed.
/// 2. Parses `manifest.yaml` (MISSING_FILE if absent), every `*.yaml`/`*.yml`
///    directly in a known folder and `sessions/*.jsonl`, each bounded in
///    size before it is read. Subfolders of those folders are listed in
///    `other` and not read (Format 13.0). Files that fail to parse are left out, with their
///    diagnostics.
///
/// A root that is missing or not a folder is MISSING_FILE.
pub fn scan_pack(root: &Path) -> Loaded<PackFiles> {
    let root_name = root.display().to_string();
    if !root.is_dir() {
        return Loaded::fail(
            Diagnostic::error(Code::MissingFile, "the pack folder does not exist")
                .in_file(root_name),
        );
    }
    let (found, diagnostics) = screen(root);
    if !diagnostics.is_empty() {
        return Loaded {
            value: None,
            diagnostics,
        };
    }
    let mut diagnostics = Vec::new();
    let mut pack = PackFiles {
        root: root.to_path_buf(),
        manifest: None,
        files: IndexMap::new(),
        sessions: IndexMap::new(),
        other: Vec::new(),
        all_files: found.files.iter().cloned().collect(),
    };
    let mut other = BTreeSet::new();
    for dir in &found.dirs {
        match dir.split_once('/') {
            // An unknown top-level folder.
            None if !is_known_folder(dir) => {
                other.insert(format!("{dir}/"));
            }
            // A subfolder of a folder whose files are read (13.0): listed
            // once, and nothing under it is read.
            Some((top, sub)) if !sub.contains('/') && reads_files(top) => {
                other.insert(format!("{dir}/"));
            }
            _ => {}
        }
    }
    // The files to read, in the walk's order; reading and parsing them is
    // independent, so it runs on the machine's cores (`crate::par`), and
    // what each gives is taken in this order, as one thread gives it.
    let mut reads: Vec<(&String, ToRead)> = Vec::new();
    for rel in &found.files {
        // A file being written (Format 13, 16.3) is not part of the pack.
        if is_partial_file(rel.rsplit('/').next().unwrap_or(rel)) {
            continue;
        }
        let (top, rest) = match rel.split_once('/') {
            Some((t, r)) => (t, Some(r)),
            None => (rel.as_str(), None),
        };
        match (top, rest) {
            ("manifest.yaml", None) => reads.push((rel, ToRead::Manifest)),
            // Under a subfolder: the subfolder is listed above, not read.
            (_, Some(rest)) if rest.contains('/') => {}
            ("sessions", Some(name)) if name.ends_with(".jsonl") => {
                reads.push((rel, ToRead::Session));
            }
            ("snapshots" | "cassettes", Some(_)) => {}
            (folder, Some(_)) => match PackFileKind::from_folder(folder) {
                Some(kind) if is_yaml(rel) => reads.push((rel, ToRead::File(kind))),
                Some(_) => {
                    other.insert(rel.clone());
                }
                None if folder == "sessions" => {
                    other.insert(rel.clone());
                }
                None => {}
            },
            (_, None) => {
                other.insert(rel.clone());
            }
        }
    }
    let read = crate::par::map(&reads, |_, (rel, what)| {
        let path = root.join(rel);
        match what {
            ToRead::Session => Got::Session(match read_bounded(rel, &path) {
                Ok(bytes) => parse_session(rel, &bytes),
                Err(d) => Loaded::fail(d),
            }),
            ToRead::Manifest | ToRead::File(_) => Got::Yaml(read_yaml(rel, &path)),
        }
    });
    for ((rel, what), got) in reads.into_iter().zip(read) {
        match (what, got) {
            (ToRead::Manifest, Got::Yaml(l)) => {
                diagnostics.extend(l.diagnostics);
                pack.manifest = l.value;
            }
            (ToRead::File(kind), Got::Yaml(l)) => {
                diagnostics.extend(l.diagnostics);
                if let Some(doc) = l.value {
                    pack.files.insert(rel.clone(), (kind, doc));
                }
            }
            (_, Got::Session(l)) => {
                diagnostics.extend(l.diagnostics);
                if let Some(s) = l.value {
                    pack.sessions.insert(rel.clone(), s);
                }
            }
            (ToRead::Session, Got::Yaml(_)) => {}
        }
    }
    if pack.manifest.is_none() && !found.files.iter().any(|f| f == "manifest.yaml") {
        diagnostics.push(
            Diagnostic::error(Code::MissingFile, "the pack has no manifest.yaml")
                .in_file("manifest.yaml")
                .with_help("every pack needs a manifest.yaml at its root (Format 13.1)"),
        );
    }
    pack.other = other.into_iter().collect();
    Loaded {
        value: Some(pack),
        diagnostics,
    }
}

/// A file of a pack [`scan_pack`] reads, by what it is.
enum ToRead {
    Manifest,
    File(PackFileKind),
    Session,
}

/// What reading a [`ToRead`] gave.
enum Got {
    Yaml(Loaded<Document>),
    Session(Loaded<SessionDoc>),
}

/// The folders whose direct files are read (the kinds and `sessions`).
fn reads_files(folder: &str) -> bool {
    PackFileKind::from_folder(folder).is_some() || folder == "sessions"
}

fn is_known_folder(name: &str) -> bool {
    PackFileKind::from_folder(name).is_some()
        || name == "sessions"
        || name == "snapshots"
        || name == "cassettes"
}

fn is_yaml(rel: &str) -> bool {
    let lower = rel.to_ascii_lowercase();
    lower.ends_with(".yaml") || lower.ends_with(".yml")
}

fn read_yaml(rel: &str, path: &Path) -> Loaded<Document> {
    match read_bounded(rel, path) {
        Ok(bytes) => parse_yaml(rel, &bytes),
        Err(d) => Loaded::fail(d),
    }
}

/// What the screening walk found: regular files and folders, by relative
/// path, sorted.
struct Found {
    files: Vec<String>,
    dirs: Vec<String>,
}

/// Walks `root` without following links and screens every entry (step 1 of
/// [`scan_pack`]).
fn screen(root: &Path) -> (Found, Vec<Diagnostic>) {
    let mut found = Found {
        files: Vec::new(),
        dirs: Vec::new(),
    };
    let mut diagnostics = Vec::new();
    let mut walk = walkdir::WalkDir::new(root)
        .follow_links(false)
        .min_depth(1)
        .sort_by_file_name()
        .into_iter();
    let mut count = 0usize;
    while let Some(entry) = walk.next() {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let rel = e
                    .path()
                    .and_then(|p| p.strip_prefix(root).ok())
                    .map_or_else(String::new, rel_name);
                // A folder that cannot be listed (permission denied) is IO;
                // an entry that vanished meanwhile is MISSING_FILE.
                let code = match e.io_error().map(std::io::Error::kind) {
                    Some(std::io::ErrorKind::NotFound) => Code::MissingFile,
                    _ => Code::Io,
                };
                diagnostics.push(
                    Diagnostic::error(code, format!("the pack could not be read: {e}"))
                        .in_file(rel),
                );
                continue;
            }
        };
        count += 1;
        if count > MAX_PACK_ENTRIES {
            diagnostics.push(
                Diagnostic::error(
                    Code::Limit,
                    format!("the pack holds more than {MAX_PACK_ENTRIES} files and folders"),
                )
                .in_file(root.display().to_string()),
            );
            break;
        }
        let rel = entry
            .path()
            .strip_prefix(root)
            .map_or_else(|_| String::new(), rel_name);
        let kind = entry.file_type();
        // A name that is not UTF-8 cannot be named in a diagnostic, a ref
        // or a package entry (14.2): ENCODING, shown with `\u{fffd}`.
        if entry
            .path()
            .strip_prefix(root)
            .is_ok_and(|p| p.to_str().is_none())
        {
            diagnostics.push(
                Diagnostic::error(
                    Code::Encoding,
                    format!(
                        "the name `{rel}` is not UTF-8; pack file and folder names must be UTF-8"
                    ),
                )
                .in_file(rel),
            );
            if kind.is_dir() {
                walk.skip_current_dir();
            }
            continue;
        }
        if kind.is_symlink() {
            diagnostics.push(
                Diagnostic::error(
                    Code::ForbiddenFile,
                    format!("`{rel}` is a symbolic link; packs may not hold links"),
                )
                .in_file(rel),
            );
            continue;
        }
        if let Some((Code::ForbiddenFile, msg)) = classify(&rel, b"") {
            diagnostics.push(Diagnostic::error(Code::ForbiddenFile, msg).in_file(rel));
            continue;
        }
        if kind.is_dir() {
            if entry.depth() > MAX_PACK_DIR_DEPTH {
                diagnostics.push(
                    Diagnostic::error(
                        Code::Limit,
                        format!("folders nest deeper than {MAX_PACK_DIR_DEPTH} levels"),
                    )
                    .in_file(rel),
                );
                walk.skip_current_dir();
                continue;
            }
            found.dirs.push(rel);
        } else if kind.is_file() {
            // Only regular files are opened (a FIFO would block).
            let mut head = [0u8; MAGIC_PREFIX_LEN];
            let n = open_regular(entry.path())
                .and_then(|mut f| read_head(&mut f, &mut head))
                .unwrap_or(0);
            if let Some((code, msg)) = classify(&rel, head.get(..n).unwrap_or_default()) {
                diagnostics.push(Diagnostic::error(code, msg).in_file(rel));
                continue;
            }
            found.files.push(rel);
        } else {
            diagnostics.push(
                Diagnostic::error(
                    Code::ForbiddenFile,
                    format!("`{rel}` is not a regular file or folder"),
                )
                .in_file(rel),
            );
        }
    }
    found.files.sort();
    found.dirs.sort();
    (found, diagnostics)
}

/// Reads up to `head.len()` bytes (fewer only at the end of the file).
fn read_head(f: &mut File, head: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// A relative path with `/` separators (non-UTF-8 names lossily).
fn rel_name(p: &Path) -> String {
    p.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The name of the partial file an output `name` is written to before it is
/// renamed into place (Format 16.3): `.<name>.troupe-partial`, in the same
/// folder.
pub fn partial_file_name(name: &str) -> String {
    format!(".{name}{PARTIAL_SUFFIX}")
}

/// The partial file of `target`: `.<name>.troupe-partial` in its folder
/// (Format 16.3).
pub fn partial_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(partial_file_name(&name))
}

/// Whether a file name is a partial file of [`partial_file_name`]'s form: a
/// file being written (or left by a killed writer), which a pack scan skips
/// without a diagnostic (Format 13).
pub fn is_partial_file(file_name: &str) -> bool {
    file_name.len() > 1 + PARTIAL_SUFFIX.len()
        && file_name.starts_with('.')
        && file_name.ends_with(PARTIAL_SUFFIX)
}

const PARTIAL_SUFFIX: &str = ".troupe-partial";

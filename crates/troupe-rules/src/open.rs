//! Opening what `PACK` names (Format 20): a pack directory, a bundle file
//! or a package — the one way every client (the API's [`crate::Pack`],
//! hence the CLI, MCP, the server and the Python binding) opens one.
//! Sources are loaded and checked (17) and refused when they do not
//! conform; a package whose compiled form matches (14.4) is used without
//! parsing or checking its sources again.

use std::path::Path;
use std::sync::Arc;

use crate::check::run::{check_package, Checked};
use crate::compile::package::{read_ir, read_ir_bin, verify_ir, PackageIr};
use crate::diag::render::Sources;
use crate::diag::{Code, Diagnostic, Severity};
use crate::load::compiled::{ir_mismatch, verify_compact, Compact, COMPACT_ENTRY};
use crate::load::limits::MAX_PACKAGE_FILE_BYTES;
use crate::load::text::{read_at_most, read_if_regular};
#[cfg(any(test, feature = "internals"))]
use crate::load::Document;
use crate::load::LazyBundle;
#[cfg(any(test, feature = "internals"))]
use crate::pipeline::compiled::bare_document;
use crate::pipeline::package::compiled_forms_match;
use crate::runtime::{OpenError, OpenOptions, Opened};

mod paths;

pub use paths::check_scanned_pack;

impl Opened {
    /// A bundle the caller has already checked (Format 17.1), ready for
    /// [`crate::runtime::Session::start`]: what its sessions need is
    /// compiled as [`open_with`] compiles it.
    pub fn from_checked(name: impl Into<String>, bundle: serde_json::Value) -> Opened {
        Opened {
            name: name.into(),
            bundle: LazyBundle::from_value(bundle),
            seating: Some(crate::pipeline::SEATING),
            ..Opened::default()
        }
    }
}

/// Checks every path as `troupe check` does (Format 17; see
/// `paths::check_paths_with`), a package's `ir.json` compared with what
/// its `bundle.json` compiles to (14.4), and its `ir.compact`'s IR with
/// that compilation's encoding.
pub fn check_paths(paths: &[std::path::PathBuf]) -> Checked {
    paths::check_paths_with(paths, &compiled_forms_match)
}

/// Opens a pack directory, a bundle or a package.
#[cfg(any(test, feature = "internals"))]
pub fn open(path: &Path) -> Result<Opened, OpenError> {
    open_with(path, OpenOptions::default())
}

/// [`open`] with `options`.
pub fn open_with(path: &Path, options: OpenOptions) -> Result<Opened, OpenError> {
    let name = path.display().to_string();
    let mut warnings = Vec::new();
    if options.use_ir && path.extension().and_then(|e| e.to_str()) == Some("troupe") {
        // Opened once and read from the handle; a path that does not open
        // as a regular file is looked at as before (a folder named
        // `*.troupe` is a pack; a file that exists but cannot be read is
        // IO).
        let read = match read_if_regular(&name, path, MAX_PACKAGE_FILE_BYTES) {
            Some(read) => Some(read),
            None if path.is_file() => Some(read_at_most(&name, path, MAX_PACKAGE_FILE_BYTES)),
            None => None,
        };
        if let Some(read) = read {
            let bytes = read.map_err(|d| OpenError {
                diagnostics: vec![d],
                sources: Sources::new(),
            })?;
            if let Some(opened) = open_ir(&name, Some(path), &bytes, options, &mut warnings)? {
                return Ok(opened);
            }
        }
    }
    let mut checked = check_paths(&[path.to_path_buf()]);
    // The compiled form is not used from here on: what the check says of it
    // (IR_MISMATCH) does not bear on running bundle.json; what the loader
    // found wrong with it is already in `warnings`.
    checked.diagnostics.retain(|d| d.code != Code::IrMismatch);
    if !checked.is_valid(false) {
        let mut diagnostics = warnings;
        diagnostics.extend(checked.diagnostics);
        return Err(OpenError {
            diagnostics,
            sources: checked.sources,
        });
    }
    warnings.extend(
        checked
            .diagnostics
            .into_iter()
            .filter(|d| d.severity == Severity::Warning),
    );
    let parsed = checked.parsed;
    let Some((_, bundle)) = checked.bundles.into_iter().next() else {
        return Err(OpenError::default());
    };
    let sessions = if path.is_dir() {
        dir_sessions(&path.join("sessions"))
    } else if path.extension().and_then(|e| e.to_str()) == Some("troupe") {
        std::fs::read(path)
            .ok()
            .and_then(|b| crate::load::screen_package(&name, &b).value)
            .map(|s| package_sessions(&s.kept))
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    Ok(Opened {
        name,
        bundle: LazyBundle::from_value(bundle),
        warnings,
        from_ir: false,
        sessions,
        parsed,
        seating: Some(crate::pipeline::SEATING),
        ..Opened::default()
    })
}

/// The compiled form of the package `bytes` when its hashes and versions
/// match (Format 14.4): its `ir.compact` when that is bound to it and reads
/// as a sound IR, else its `ir.json` (with `options.verify_ir`, each only
/// when it is byte for byte what `bundle.json` compiles to, or that
/// compilation's encoding); `None`, with IR_MISMATCH in `warnings`, when
/// the bundle must be checked and compiled afresh. A package read from the
/// file at `path` keeps no `bundle.json` once its hash is checked (it is
/// read again if a caller needs the bundle, [`LazyBundle`]); one held only
/// in memory keeps its bytes.
fn open_ir(
    name: &str,
    path: Option<&Path>,
    bytes: &[u8],
    options: OpenOptions,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Option<Opened>, OpenError> {
    // The entries borrowed from `bytes` where they are stored as they are.
    let screened = crate::load::screen_package_view(name, bytes);
    let Some(mut s) = screened.value else {
        return Err(OpenError {
            diagnostics: screened.diagnostics,
            sources: Sources::new(),
        });
    };
    let entry = |n: &str| {
        s.kept
            .iter()
            .find(|(k, _)| k == n)
            .map_or(&[][..], |(_, b)| &**b)
    };
    // With verification, bundle.json is compiled once for both entries:
    // (ir.json is the compilation, ir.compact's IR is its encoding).
    let mut verified: Option<(bool, bool)> = None;
    let mut verify = |compact: Option<&[u8]>| {
        *verified.get_or_insert_with(|| {
            compiled_forms_match(entry("bundle.json"), entry("ir.json"), compact)
        })
    };
    let mut found: Option<(PackageIr, String)> = None;
    match verify_compact(name, &s.kept) {
        Compact::Bound { bundle_hash, ir } => {
            if options.verify_ir && !verify(Some(ir)).1 {
                warnings.push(ir_mismatch(
                    name,
                    COMPACT_ENTRY,
                    "",
                    "ir.compact is not what bundle.json compiles to (--verify-ir); it is not used",
                ));
            } else {
                match read_ir_bin(ir, &bundle_hash) {
                    Ok(ir) => found = Some((ir, bundle_hash)),
                    Err(f) => {
                        warnings.push(ir_mismatch(name, COMPACT_ENTRY, &f.pointer, &f.message))
                    }
                }
            }
        }
        Compact::Refused(d) => warnings.push(d),
        Compact::Absent | Compact::Skipped => {}
    }
    if found.is_none() {
        match verify_ir(name, &s.kept) {
            Ok(Some(_)) if options.verify_ir && !verify(None).0 => {
                warnings.push(ir_mismatch(
                    name,
                    "ir.json",
                    "",
                    "ir.json is not what bundle.json compiles to (--verify-ir); the IR is not used and bundle.json is compiled afresh",
                ));
            }
            Ok(Some(hash)) => match read_ir(entry("ir.json"), &hash) {
                Ok(ir) => found = Some((ir, hash)),
                Err(f) => warnings.push(ir_mismatch(name, "ir.json", &f.pointer, &f.message)),
            },
            Ok(None) => {}
            Err(d) => warnings.extend(d),
        }
    }
    let Some((ir, hash)) = found else {
        return Ok(None);
    };
    let sessions = package_sessions(&s.kept);
    let bundle = match path {
        // Made absolute (a later read must not depend on the working
        // directory) without resolving links: `canonicalize` costs a
        // `readlink` per component of the path at every open, and the
        // re-read checks `bundle.json`'s hash anyway ([`LazyBundle`]).
        Some(p) => LazyBundle::from_package_file(
            std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()),
            hash,
        ),
        // The screened entry's bytes move into the bundle (a copy of a
        // large bundle.json cost a fresh mapping's page faults).
        None => LazyBundle::from_bytes(
            s.kept
                .iter_mut()
                .find(|(k, _)| k == "bundle.json")
                .map(|(_, b)| std::mem::take(b).into_owned())
                .unwrap_or_default(),
        ),
    };
    Ok(Some(Opened {
        name: name.to_string(),
        bundle,
        warnings: std::mem::take(warnings),
        from_ir: true,
        ir: Some(Arc::new(ir)),
        sessions,
        seating: Some(crate::pipeline::SEATING),
        ..Opened::default()
    }))
}

/// [`open_with`] for a package held in memory (`name` names it in
/// diagnostics): the compiled form when it matches (Format 14.4), else
/// `bundle.json` checked and compiled afresh.
pub fn open_package_bytes(
    name: &str,
    bytes: &[u8],
    options: OpenOptions,
) -> Result<Opened, OpenError> {
    let mut warnings = Vec::new();
    if options.use_ir
        && let Some(opened) = open_ir(name, None, bytes, options, &mut warnings)?
    {
        return Ok(opened);
    }
    let loaded = crate::load::parse_package(name, bytes);
    let mut diagnostics = warnings;
    diagnostics.extend(loaded.diagnostics);
    let Some(pkg) = loaded.value else {
        return Err(OpenError {
            diagnostics,
            sources: Sources::new(),
        });
    };
    let parsed = Arc::new(crate::cel::parse::ParseCache::default());
    let (diags, bundle) = parsed.scope(|| check_package(&pkg, &compiled_forms_match));
    diagnostics.extend(diags.into_iter().filter(|d| d.code != Code::IrMismatch));
    let mut sources = Sources::new();
    if let Some(b) = &pkg.bundle {
        sources.add(b.file.clone(), b.text.clone());
    }
    match bundle {
        Some(bundle) if !diagnostics.iter().any(Diagnostic::is_error) => {
            let sessions = crate::load::screen_package(name, bytes)
                .value
                .map(|s| package_sessions(&s.kept))
                .unwrap_or_default();
            diagnostics.retain(|d| d.severity == Severity::Warning);
            Ok(Opened {
                name: name.to_string(),
                bundle: LazyBundle::from_value(bundle),
                warnings: diagnostics,
                from_ir: false,
                sessions,
                parsed,
                seating: Some(crate::pipeline::SEATING),
                ..Opened::default()
            })
        }
        _ => Err(OpenError {
            diagnostics,
            sources,
        }),
    }
}

fn package_sessions<B: AsRef<[u8]>>(kept: &[(String, B)]) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = kept
        .iter()
        .filter_map(|(n, b)| {
            Some((
                n.strip_prefix("sessions/")?.to_string(),
                b.as_ref().to_vec(),
            ))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn dir_sessions(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.ends_with(".jsonl")
                && e.path().is_file()
                && let Ok(b) = std::fs::read(e.path())
            {
                out.push((n, b));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Reads a bundle file or a pack directory as a bundle value (a pack is
/// lowered, Format 13.10), with the diagnostics of reading and lowering.
#[cfg(any(test, feature = "internals"))]
fn read_bundle_or_pack(path: &Path) -> (Option<Document>, Vec<Diagnostic>) {
    if path.is_dir() {
        let scanned = crate::load::scan_pack(path);
        let mut diags = scanned.diagnostics;
        let Some(pack) = scanned.value else {
            return (None, diags);
        };
        let (pack_diags, bundle) = crate::check::run::check_pack(&pack);
        diags.extend(pack_diags);
        let doc = bare_document(&path.display().to_string(), &bundle);
        (Some(doc), diags)
    } else {
        let l = crate::load::read_bundle(path);
        (l.value, l.diagnostics)
    }
}

/// Opens a bundle (file or pack directory) and optionally a session file,
/// checks both, and compiles them into an engine (Format 17.1: refused with
/// the diagnostics when they do not conform). A session path that does not exist is
/// also looked for in the pack's `sessions/`.
#[cfg(any(test, feature = "internals"))]
pub fn open_engine(
    bundle: &Path,
    session: Option<&Path>,
) -> Result<crate::engine::Engine, Vec<Diagnostic>> {
    let (bdoc, mut diags) = read_bundle_or_pack(bundle);
    let Some(bdoc) = bdoc else {
        return Err(diags);
    };
    let sdoc = match session {
        Some(p) => {
            let p = if !p.exists() && bundle.is_dir() {
                bundle.join("sessions").join(p)
            } else {
                p.to_path_buf()
            };
            let l = crate::load::read_session(&p);
            diags.extend(l.diagnostics);
            match l.value {
                Some(s) => Some(s),
                None => return Err(diags),
            }
        }
        None => None,
    };
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    match &sdoc {
        Some(s) => {
            if s.header.is_none() {
                return Err(diags);
            }
            crate::pipeline::load_documents(&bdoc, Some(s), None)
        }
        None => crate::pipeline::load_documents(&bdoc, None, None),
    }
    .map_err(|mut d| {
        diags.append(&mut d);
        diags
    })
}

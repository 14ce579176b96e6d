//! Checking what paths name, as `troupe check` does (Format 17): each path
//! read by the load stage — a folder as a pack, a `.troupe` file as a
//! package, a `.jsonl` file as a session, anything else as a bundle — and
//! handed to the check stage's entry points ([`crate::check::run`]), which
//! read no file.

use std::path::{Path, PathBuf};

use crate::check::run::{
    check_bundle_document, check_pack_lowered, check_package, check_session_document,
    sort_for_report, stops, Checked, IrVerifier,
};
use crate::diag::render::Sources;
use crate::diag::{Code, Diagnostic};
use crate::load::lower;
use crate::load::{self, PackFiles, SessionDoc};

/// True for a folder whose name ends like a Troupe file (`.json`,
/// `.yaml`, `.yml`, `.jsonl`, `.troupe`): it was given where a file is
/// expected, FORBIDDEN_FILE (Format 16), not a pack.
fn named_like_a_file(path: &Path) -> bool {
    ["json", "yaml", "yml", "jsonl", "troupe"]
        .iter()
        .any(|e| has_ext(path, e))
}

/// Checks every path as `troupe check` does (Format 17): directories as
/// packs, `.troupe` files as packages, `.jsonl` files as sessions (against
/// the first bundle or pack given before or after them that has the
/// session's scenario), anything else as a bundle (`.json`, `.yaml`).
/// `ir_ok` tells whether a package's `ir.json` is what its `bundle.json`
/// compiles to (Format 14.4): only compiling can tell, which is a later
/// stage's work ([`crate::open::check_paths`] passes the compiler's).
pub(super) fn check_paths_with(paths: &[PathBuf], ir_ok: IrVerifier<'_>) -> Checked {
    let parsed = std::sync::Arc::new(crate::cel::parse::ParseCache::default());
    let mut checked = parsed.scope(|| check_paths_parsing(paths, ir_ok));
    checked.parsed = parsed;
    checked
}

/// [`check_paths_with`] inside its parse scope.
fn check_paths_parsing(paths: &[PathBuf], ir_ok: IrVerifier<'_>) -> Checked {
    let mut checked = Checked::default();
    let mut sessions: Vec<(usize, String, SessionDoc)> = Vec::new();
    // Which input each diagnostic belongs to, for the report order.
    let mut owner: Vec<usize> = Vec::new();
    for (index, path) in paths.iter().enumerate() {
        owner.resize(checked.diagnostics.len(), index.saturating_sub(1));
        let name = path.display().to_string();
        if let Err(e) = std::fs::metadata(path) {
            checked
                .diagnostics
                .push(if e.kind() == std::io::ErrorKind::NotFound {
                    Diagnostic::error(Code::MissingFile, format!("no such file or folder: {name}"))
                        .in_file(name)
                } else {
                    load::text::io_diagnostic(&name, &e)
                });
            continue;
        }
        if path.is_dir() && named_like_a_file(path) {
            checked.diagnostics.push(
                Diagnostic::error(
                    Code::ForbiddenFile,
                    format!(
                        "`{name}` is a folder, not a regular file; only regular files are read"
                    ),
                )
                .in_file(name),
            );
        } else if path.is_dir() {
            check_pack_path(path, &mut checked);
        } else if has_ext(path, "troupe") {
            check_package_path(path, &mut checked, ir_ok);
        } else if has_ext(path, "jsonl") {
            let loaded = load::read_session(path);
            checked.diagnostics.extend(loaded.diagnostics);
            if let Some(s) = loaded.value {
                add_session_sources(&mut checked.sources, &s);
                sessions.push((index, name, s));
            }
        } else {
            let loaded = load::read_bundle(path);
            let had_errors = loaded.diagnostics.iter().any(stops);
            if loaded.value.is_none() && !loaded.diagnostics.iter().any(|d| d.code == Code::Limit) {
                // Quote the text of a file that did not parse.
                if let Ok(bytes) = load::text::read_bounded(&name, path) {
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    checked.sources.add(name.clone(), text.into());
                }
            }
            checked.diagnostics.extend(loaded.diagnostics);
            if let Some(mut doc) = loaded.value {
                checked.sources.add(doc.file.clone(), doc.text.clone());
                if !had_errors {
                    let diags = check_bundle_document(&doc);
                    let usable = !diags.iter().any(stops);
                    checked.diagnostics.extend(diags);
                    if usable {
                        // Moved, not copied: the document is done with.
                        checked.bundles.push((name, std::mem::take(&mut doc.value)));
                    }
                }
            }
        }
    }
    owner.resize(checked.diagnostics.len(), paths.len().saturating_sub(1));
    for (index, name, session) in sessions {
        let scenario = session
            .header
            .as_ref()
            .and_then(|h| crate::model::Header::read(&h.value).scenario)
            .map(str::to_string);
        let bundle = checked
            .bundles
            .iter()
            .find(|(_, b)| crate::model::scenario_ids(b).any(|x| Some(x) == scenario.as_deref()));
        match (bundle, &checked.bundles.first()) {
            (Some((_, b)), _) | (None, Some((_, b))) => {
                checked.diagnostics.extend(check_session_document(b, &session));
                owner.resize(checked.diagnostics.len(), index);
            }
            (None, None) => checked.diagnostics.push(
                Diagnostic::error(
                    Code::MissingFile,
                    "a session is checked against its bundle: give the bundle or pack on the same command line",
                )
                .in_file(name),
            ),
        }
        owner.resize(checked.diagnostics.len(), index);
    }
    owner.resize(checked.diagnostics.len(), paths.len().saturating_sub(1));
    sort_for_report(&mut checked.diagnostics, &owner);
    checked.finish();
    checked
}

/// The human renderer quotes the whole file of a session read from text
/// (one built in memory has no text to quote).
fn add_session_sources(sources: &mut Sources, s: &SessionDoc) {
    if let Some(text) = s.text() {
        sources.add(s.file.clone(), text.clone());
    }
}

fn check_pack_path(path: &Path, checked: &mut Checked) {
    // Nothing here runs the pack: its lowered bundle moves into `checked`.
    if let Some((_, lowered)) = check_scanned(path, load::scan_pack(path), checked) {
        checked
            .bundles
            .push((path.display().to_string(), lowered.bundle));
    }
}

/// Checks a pack directory already scanned by [`load::scan_pack`] into
/// `checked` (file names shown under the root as given), and gives back
/// the pack and its lowering when it was readable, so that a caller that
/// runs the pack (`troupe test`) neither scans nor lowers it twice.
pub fn check_scanned_pack(
    path: &Path,
    loaded: load::Loaded<PackFiles>,
    checked: &mut Checked,
) -> Option<(PackFiles, lower::Lowered)> {
    let (pack, lowered) = check_scanned(path, loaded, checked)?;
    checked
        .bundles
        .push((path.display().to_string(), lowered.bundle.clone()));
    Some((pack, lowered))
}

/// [`check_scanned_pack`] without adding the bundle to `checked.bundles`.
fn check_scanned(
    path: &Path,
    loaded: load::Loaded<PackFiles>,
    checked: &mut Checked,
) -> Option<(PackFiles, lower::Lowered)> {
    let root = path.display().to_string();
    for mut d in loaded.diagnostics {
        if let Some(f) = d.location.file.clone() {
            let shown = prefixed(&root, &f);
            // Quote a file that did not parse, so the report shows the line
            // and a caret (its text is in no parsed document).
            if d.code == Code::Parse && !checked.sources.contains(&shown) {
                let file = path.join(&f);
                if let Ok(bytes) = load::text::read_bounded(&shown, &file) {
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    checked.sources.add(shown.clone(), text.into());
                }
            }
            d.location.file = Some(shown);
        }
        checked.diagnostics.push(d);
    }
    let pack = loaded.value?;
    let (mut diags, lowered) = check_pack_lowered(&pack);
    if let Some(m) = &pack.manifest {
        checked
            .sources
            .add(prefixed(&root, &m.file), m.text.clone());
    }
    for (_, doc) in pack.files.values() {
        checked
            .sources
            .add(prefixed(&root, &doc.file), doc.text.clone());
    }
    for s in pack.sessions.values() {
        add_session_sources(&mut checked.sources, s);
    }
    for d in &mut diags {
        if let Some(f) = &d.location.file {
            d.location.file = Some(prefixed(&root, f));
        }
    }
    checked.diagnostics.extend(diags);
    Some((pack, lowered))
}

/// Pack file names are relative to the pack root; diagnostics show them
/// under the root as given (`examples/packs/x/npcs/a.yaml`).
fn prefixed(root: &str, file: &str) -> String {
    if file.starts_with(root) {
        file.to_string()
    } else {
        format!("{}/{}", root.trim_end_matches('/'), file)
    }
}

fn check_package_path(path: &Path, checked: &mut Checked, ir_ok: IrVerifier<'_>) {
    let loaded = load::read_package(path);
    checked.diagnostics.extend(loaded.diagnostics);
    let Some(pkg) = loaded.value else { return };
    let (diags, bundle) = check_package(&pkg, ir_ok);
    if let Some(b) = &pkg.bundle {
        checked.sources.add(b.file.clone(), b.text.clone());
    }
    for s in pkg.sessions.values() {
        add_session_sources(&mut checked.sources, s);
    }
    checked.diagnostics.extend(diags);
    if let Some(b) = bundle {
        checked.bundles.push((path.display().to_string(), b));
    }
}

fn has_ext(path: &Path, ext: &str) -> bool {
    path.extension().and_then(|e| e.to_str()) == Some(ext)
}

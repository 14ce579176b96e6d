//! The check entry points (Format 17): a bundle, a session with its bundle, a
//! pack directory, a package, or a list of paths as `troupe check` gets them.
//! Each runs the load stage's diagnostics, the version check, the schema
//! check, then the semantic checks, and locates every diagnostic.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::bundle::check_bundle;
use super::locate::{dedup, locate_in};
use super::pack::{checks::check_pack_files, lower, origin::Origins};
use super::schema::{SchemaKind, Schemas};
use super::session::SessionChecker;
use crate::diag::render::Sources;
use crate::diag::{escape_token, Code, Diagnostic, Severity};
use crate::load::{self, Document, PackFileKind, PackFiles, SessionDoc};

/// Codes that stop every other check of their file (Format 17.1).
fn stops(d: &Diagnostic) -> bool {
    matches!(
        d.code,
        Code::Encoding | Code::Parse | Code::Limit | Code::UnsupportedVersion
    )
}

/// The outcome of checking: every diagnostic, and the texts they quote.
#[derive(Debug, Default)]
pub struct Checked {
    /// Every diagnostic, in report order.
    pub diagnostics: Vec<Diagnostic>,
    /// The source texts, for human output.
    pub sources: Sources,
    /// The bundles that were read (a pack's lowered bundle), by name, for
    /// sessions given after them.
    pub bundles: Vec<(String, Value)>,
    /// The expressions the check parsed, for compiling the bundles and
    /// starting sessions from them without parsing again.
    pub parsed: std::sync::Arc<crate::cel::parse::ParseCache>,
}

impl Checked {
    /// Puts the report in its final form (`docs/validation.md`): a
    /// diagnostic about a whole file points at it with the empty pointer
    /// (Format 17.2). Call it once, after the report is ordered.
    pub fn finish(&mut self) {
        for d in &mut self.diagnostics {
            if d.location.file.is_some() && d.location.pointer.is_none() {
                d.location.pointer = Some(String::new());
            }
        }
    }

    /// Orders the diagnostics of a report about one input: by file, line,
    /// column, pointer and code, then [`Checked::finish`].
    pub fn finish_single(&mut self) {
        let owner = vec![0; self.diagnostics.len()];
        sort_for_report(&mut self.diagnostics, &owner);
        self.finish();
    }

    /// True when no error was reported (and, with `strict`, no warning).
    pub fn is_valid(&self, strict: bool) -> bool {
        !self
            .diagnostics
            .iter()
            .any(|d| d.is_error() || (strict && d.severity == Severity::Warning))
    }
}

/// Checks one bundle document: version, schema, semantic checks (Format
/// 2.3, 2.2, 3–11). Diagnostics are located in `doc`.
pub fn check_bundle_document(doc: &Document) -> Vec<Diagnostic> {
    if let Some(d) = load::check_version(doc, "troupe", "") {
        return vec![d];
    }
    let mut out = Schemas::get().validate(SchemaKind::Bundle, doc, "");
    let mut semantic = check_bundle(&doc.value);
    for d in &mut semantic {
        let p = d.location.pointer.clone().unwrap_or_default();
        locate_in(d, doc, &p);
    }
    out.extend(semantic);
    dedup(&mut out);
    out
}

/// The pointer prefix of a message line: `message:<id>` (the ID escaped as
/// a JSON Pointer token), or `line:<n>` when it has no string ID (Format 12.1).
pub fn message_prefix(doc: &Document) -> String {
    match doc.value.get("id").and_then(Value::as_str) {
        Some(id) => format!("message:{}", escape_token(id)),
        None => format!("line:{}", doc.first_line),
    }
}

/// Checks a session's header and lines against `bundle` (Format 12, 7).
/// The load diagnostics of the session are not included. The lines are
/// read one at a time (each parsed, checked against its schema and its
/// path, its diagnostics located in it, and dropped), so memory is the
/// session's text and the facts of each message's path, never its JSON
/// values (Format 16.2). Diagnostics come in the order schema diagnostics
/// (header, then each line), then the story's and header's, then each
/// line's semantic ones.
pub fn check_session_document(bundle: &Value, session: &SessionDoc) -> Vec<Diagnostic> {
    let Some(header) = &session.header else {
        return Vec::new();
    };
    if let Some(d) = load::check_version(header, "troupe", "header") {
        return vec![d];
    }
    let schemas = Schemas::get();
    let mut out = schemas.validate(SchemaKind::SessionHeader, header, "header");
    let mut semantic = Vec::new();
    let mut checker = SessionChecker::begin(bundle, &header.value, &mut semantic);
    for d in &mut semantic {
        locate_session(d, session, None);
    }
    for m in session.messages() {
        out.extend(schemas.validate(SchemaKind::Message, &m, &message_prefix(&m)));
        if let Some(checker) = &mut checker {
            let from = semantic.len();
            checker.message(&m.value, m.first_line, &mut semantic);
            // Every diagnostic of a line is about that line (a repeated
            // ID's included: it is located at its later line, this one).
            for d in semantic.get_mut(from..).unwrap_or_default() {
                locate_session(d, session, Some(&m));
            }
        }
    }
    out.extend(semantic);
    dedup(&mut out);
    out
}

/// Locates a session diagnostic in the header or, for `message:<id>/…`, in
/// `message`, the line it is about.
fn locate_session(d: &mut Diagnostic, session: &SessionDoc, message: Option<&Document>) {
    let Some(p) = d.location.pointer.clone() else {
        d.location.file.get_or_insert_with(|| session.file.clone());
        return;
    };
    if let Some(rest) = p.strip_prefix("header") {
        if let Some(h) = &session.header {
            locate_in(d, h, rest);
        }
    } else if let Some(rest) = p.strip_prefix("message:") {
        let inner = rest.find('/').map_or("", |i| &rest[i..]);
        if let Some(m) = message {
            locate_in(d, m, inner);
        }
    }
    d.location.file.get_or_insert_with(|| session.file.clone());
}

fn schema_kind(kind: PackFileKind) -> SchemaKind {
    match kind {
        PackFileKind::Scenario => SchemaKind::PackScenario,
        PackFileKind::Npc => SchemaKind::Npc,
        PackFileKind::Safety => SchemaKind::Safety,
        PackFileKind::Rubric => SchemaKind::Rubric,
        PackFileKind::Scene => SchemaKind::Scene,
        PackFileKind::World => SchemaKind::World,
        PackFileKind::Test => SchemaKind::PackTest,
        PackFileKind::Playtest => SchemaKind::Playtest,
        PackFileKind::Persona => SchemaKind::Persona,
    }
}

/// Top-level files a pack may have besides its folders (Format 13.9).
const ALLOWED_EXTRAS: &[&str] = &[
    "README.md",
    "LICENSE",
    "LICENSE.md",
    "CHANGELOG.md",
    ".github/",
    ".troupe/",
];

/// Checks a scanned pack (Format 13) and returns its diagnostics and its
/// lowered bundle (Format 13.2), which the pack's sessions are checked
/// against.
#[cfg(any(test, feature = "unstable-internals"))]
pub fn check_pack(pack: &PackFiles) -> (Vec<Diagnostic>, Value) {
    let (diags, lowered) = check_pack_lowered(pack);
    (diags, lowered.bundle)
}

/// [`check_pack`], returning the whole lowering (the bundle and where each
/// of its values came from) for callers that go on to run the pack.
pub fn check_pack_lowered(pack: &PackFiles) -> (Vec<Diagnostic>, lower::Lowered) {
    let schemas = Schemas::get();
    let mut out = Vec::new();
    let mut values = lower::PackValues::new();
    let mut docs: Vec<(&str, &Document)> = Vec::new();
    if let Some(m) = &pack.manifest {
        docs.push(("manifest.yaml", m));
        match load::check_version(m, "schema_version", "") {
            Some(d) => out.push(d),
            None => {
                out.extend(schemas.validate(SchemaKind::Manifest, m, ""));
                values.insert("manifest.yaml".into(), m.value.clone());
            }
        }
    }
    for (path, (kind, doc)) in &pack.files {
        docs.push((path, doc));
        match load::check_version(doc, "schema_version", "") {
            Some(d) => out.push(d),
            None => {
                out.extend(schemas.validate(schema_kind(*kind), doc, ""));
                if *kind == PackFileKind::Test {
                    for mut d in super::assertion_syntax::check_fixture(&doc.value) {
                        let p = d.location.pointer.clone().unwrap_or_default();
                        d.location.file = Some(path.clone());
                        locate_in(&mut d, doc, &p);
                        out.push(d);
                    }
                }
                values.insert(path.clone(), doc.value.clone());
            }
        }
    }
    let find = |file: &str| docs.iter().find(|(p, _)| *p == file).map(|(_, d)| *d);
    let locate_file = |d: &mut Diagnostic| {
        let file = d.location.file.clone().unwrap_or_default();
        let p = d.location.pointer.clone().unwrap_or_default();
        if let Some(doc) = find(&file) {
            locate_in(d, doc, &p);
        }
    };
    let exists = |p: &str| pack.all_files.contains(p);
    let mut pack_diags = check_pack_files(&values, &exists);
    let mut lowered = lower::lower(&values, &exists);
    pack_diags.extend(std::mem::take(&mut lowered.diagnostics));
    for d in &mut pack_diags {
        locate_file(d);
    }
    out.extend(pack_diags);
    // What follows reads the lowered bundle.
    let derived_from = out.len();
    let mut semantic = check_bundle(&lowered.bundle);
    if let Some(max) = pack
        .manifest
        .as_ref()
        .and_then(|m| m.value.pointer("/players/max"))
        .and_then(crate::model::integer_u64)
    {
        semantic.extend(players_over_max(&lowered.bundle, max));
    }
    for d in &mut semantic {
        translate(d, &lowered.origins);
        locate_file(d);
    }
    out.extend(semantic);
    let mut fixture_diags = super::pack::fixtures::check_fixtures(&values, &lowered.bundle, &exists);
    for d in &mut fixture_diags {
        locate_file(d);
    }
    out.extend(fixture_diags);
    let pt_files: Vec<(&str, &Value, bool)> = pack
        .files
        .iter()
        .filter_map(|(p, (k, _))| {
            let v = values.get(p.as_str())?;
            match k {
                PackFileKind::Playtest => Some((p.as_str(), v, true)),
                PackFileKind::Persona => Some((p.as_str(), v, false)),
                _ => None,
            }
        })
        .collect();
    let max = pack
        .manifest
        .as_ref()
        .and_then(|m| m.value.pointer("/players/max"))
        .and_then(crate::model::integer_u64);
    let mut playtest_diags = super::playtest::check_playtests(&pt_files, &lowered.bundle, max, &exists);
    for d in &mut playtest_diags {
        locate_file(d);
    }
    out.extend(playtest_diags);
    let max_players = pack
        .manifest
        .as_ref()
        .and_then(|m| m.value.pointer("/players/max"))
        .and_then(crate::model::integer_u64);
    for session in pack.sessions.values() {
        out.extend(check_session_document(&lowered.bundle, session));
        let players = session
            .header
            .as_ref()
            .and_then(|h| h.value.get("players"))
            .and_then(Value::as_array)
            .map_or(0, Vec::len) as u64;
        if let (Some(max), Some(h)) = (max_players, &session.header) {
            if players > max {
                let mut d = advisory(format!(
                    "the session has {players} players; the manifest's players.max is {max}"
                ))
                .at("header/players");
                locate_in(&mut d, h, "/players");
                out.push(d);
            }
        }
    }
    for other in &pack.other {
        if ALLOWED_EXTRAS.contains(&other.as_str()) {
            continue;
        }
        out.push(
            Diagnostic::error(
                Code::Advisory,
                format!("`{other}` is not part of the pack format and is ignored"),
            )
            .with_severity(Severity::Warning)
            .in_file(other.as_str())
            .at(""),
        );
    }
    if lowered.declarations_missing {
        // Format 13.0: no cascade from a missing declaration.
        let mut i = 0;
        out.retain(|d| {
            i += 1;
            i <= derived_from || !matches!(d.code, Code::UnknownRef | Code::UnknownVariable)
        });
    }
    dedup(&mut out);
    (out, lowered)
}

/// An ADVISORY warning (Format 13.1, 17.2).
fn advisory(message: String) -> Diagnostic {
    Diagnostic::error(Code::Advisory, message).with_severity(Severity::Warning)
}

/// ADVISORY at each scenario's `/cast` whose player entries (seats and
/// `player: true`) outnumber the manifest's `players.max` (Format 13.1).
fn players_over_max(bundle: &Value, max: u64) -> Vec<Diagnostic> {
    let scenarios = bundle.get("scenarios").and_then(Value::as_array);
    let mut out = Vec::new();
    for (i, sc) in scenarios.into_iter().flatten().enumerate() {
        let players = sc
            .get("cast")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|c| c.get("seat").is_some() || c.get("player") == Some(&Value::Bool(true)))
            .count() as u64;
        if players > max {
            out.push(
                advisory(format!(
                    "the scenario has {players} player entries; the manifest's players.max is {max}"
                ))
                .at(format!("/scenarios/{i}/cast")),
            );
        }
    }
    out
}

/// Moves a diagnostic found on a lowered bundle to the pack file and pointer
/// it came from.
fn translate(d: &mut Diagnostic, origins: &Origins) {
    if let Some(p) = &d.location.pointer {
        if let Some((file, pointer)) = origins.translate(p) {
            d.location.file = Some(file);
            d.location.pointer = Some(pointer);
        }
    }
}

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
pub fn check_paths_with(paths: &[PathBuf], ir_ok: IrVerifier<'_>) -> Checked {
    let parsed = std::sync::Arc::new(crate::cel::parse::ParseCache::default());
    let mut checked = parsed.scope(|| check_paths_parsing(paths, ir_ok));
    checked.parsed = parsed;
    checked
}

/// Whether `ir.json` (second) is the compilation of `bundle.json` (first).
pub type IrVerifier<'a> = &'a dyn Fn(&[u8], &[u8]) -> bool;

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
            .and_then(|h| h.value.get("scenario"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let bundle = checked.bundles.iter().find(|(_, b)| {
            b.get("scenarios")
                .and_then(Value::as_array)
                .is_some_and(|s| {
                    s.iter()
                        .any(|x| x.get("id").and_then(Value::as_str) == scenario.as_deref())
                })
        });
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

/// Orders a report (`docs/validation.md`): by input in command-line order,
/// then file, line, column, pointer and code; the sort is stable.
fn sort_for_report(diagnostics: &mut Vec<Diagnostic>, owner: &[usize]) {
    let mut keyed: Vec<(usize, Diagnostic)> = owner
        .iter()
        .copied()
        .zip(std::mem::take(diagnostics))
        .collect();
    keyed.sort_by(|(ia, a), (ib, b)| {
        let key = |d: &Diagnostic| {
            (
                d.location.file.clone(),
                d.location.line,
                d.location.column,
                d.location.pointer.clone(),
                d.code,
            )
        };
        ia.cmp(ib).then_with(|| key(a).cmp(&key(b)))
    });
    *diagnostics = keyed.into_iter().map(|(_, d)| d).collect();
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
        checked.bundles.push((path.display().to_string(), lowered.bundle));
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

/// Checks a read package (Format 14.3): its `bundle.json` as a bundle, every
/// session in it against that bundle, and an ADVISORY for each entry the
/// format does not define. Returns the diagnostics and the bundle when it is
/// usable.
pub fn check_package(
    pkg: &load::PackageDoc,
    ir_ok: IrVerifier<'_>,
) -> (Vec<Diagnostic>, Option<Value>) {
    let mut out = Vec::new();
    let mut bundle = None;
    if let Some(doc) = &pkg.bundle {
        let diags = check_bundle_document(doc);
        if !diags.iter().any(stops) {
            bundle = Some(doc.value.clone());
        }
        out.extend(diags);
    }
    if let Some(b) = &bundle {
        for s in pkg.sessions.values() {
            out.extend(check_session_document(b, s));
        }
    }
    if let Some(m) = &pkg.manifest {
        out.extend(check_package_manifest(m));
    }
    // The compiled form (Format 14.4): a stale or corrupt one is a warning
    // (loaders fall back to bundle.json); one whose hashes all agree must be
    // exactly what bundle.json compiles to, or the package could run
    // another story than the one checked here: an error.
    if let (Some(ir), Some(b)) = (&pkg.ir, &pkg.bundle) {
        let mut entries = vec![
            ("bundle.json".to_string(), b.text.as_bytes().to_vec()),
            ("ir.json".to_string(), ir.clone()),
        ];
        if let Some(m) = &pkg.manifest {
            entries.push(("manifest.json".to_string(), m.text.as_bytes().to_vec()));
        }
        match load::compiled::verify_ir(&pkg.file, &entries) {
            Err(d) => out.extend(d),
            // Whether ir.json is bundle.json's compilation can only be told
            // by compiling it (Format 14.4): `ir_ok` does.
            Ok(Some(_)) if !ir_ok(b.text.as_bytes(), ir) =>
            {
                out.push(
                    load::compiled::ir_mismatch(
                        &pkg.file,
                        "ir.json",
                        "",
                        "ir.json is not what bundle.json compiles to, although every hash agrees: the package would run another story than the one checked; compile it again with `troupe compile`",
                    )
                    .with_severity(Severity::Error),
                );
            }
            Ok(_) => {}
        }
    }
    for other in &pkg.other {
        out.push(
            Diagnostic::error(
                Code::Advisory,
                format!("package entry `{other}` is not part of the format and is ignored"),
            )
            .with_severity(Severity::Warning)
            .in_file(format!("{}!{other}", pkg.file))
            .at(""),
        );
    }
    dedup(&mut out);
    (out, bundle)
}

/// Checks a package's `manifest.json` against its shape (Format 14.1):
/// version, then schema and unknown fields.
pub fn check_package_manifest(doc: &Document) -> Vec<Diagnostic> {
    if let Some(d) = load::check_version(doc, "troupe", "") {
        return vec![d];
    }
    Schemas::get().validate(SchemaKind::PackageManifest, doc, "")
}

fn has_ext(path: &Path, ext: &str) -> bool {
    path.extension().and_then(|e| e.to_str()) == Some(ext)
}

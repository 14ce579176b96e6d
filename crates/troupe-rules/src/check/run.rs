//! The check entry points (Format 17): a bundle, a session with its bundle, a
//! pack, or a package, each as the load stage read it (the paths `troupe
//! check` gets are read and walked by [`crate::open::check_paths`]).
//! Each runs the load stage's diagnostics, the version check, the schema
//! check, then the semantic checks, and locates every diagnostic.

use serde_json::Value;

use super::bundle::check_bundle;
use super::locate::{dedup, locate_in};
use super::pack::checks::check_pack_files;
use super::schema::{SchemaKind, Schemas};
use super::session::SessionChecker;
use crate::diag::render::Sources;
use crate::diag::{escape_token, Code, Diagnostic, Severity};
use crate::load::{self, Document, PackFileKind, PackFiles, SessionDoc};
use crate::load::{lower, origin::Origins};

/// Codes that stop every other check of their file (Format 17.1).
pub(crate) fn stops(d: &Diagnostic) -> bool {
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
    doc.spans.prefetch(
        semantic
            .iter()
            .filter_map(|d| d.location.pointer.as_deref()),
    );
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
    match crate::model::id_of(&doc.value) {
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
    check_messages(schemas, checker.as_mut(), session, &mut out, &mut semantic);
    out.extend(semantic);
    dedup(&mut out);
    out
}

/// The checks of [`check_session_document`] for message lines appended to
/// a session (Format 12, 18.10): `checker` has read the session's earlier
/// lines, and reads these too (call it only when none is an error, or drop
/// it: it has taken their IDs).
pub fn check_appended(checker: &mut SessionChecker, appended: &SessionDoc) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut semantic = Vec::new();
    check_messages(
        Schemas::get(),
        Some(checker),
        appended,
        &mut out,
        &mut semantic,
    );
    out.extend(semantic);
    dedup(&mut out);
    out
}

/// Each message of `session` in file order: its schema diagnostics into
/// `out`, its semantic ones (when there is a story to check against) into
/// `semantic`, located.
fn check_messages(
    schemas: &Schemas,
    mut checker: Option<&mut SessionChecker>,
    session: &SessionDoc,
    out: &mut Vec<Diagnostic>,
    semantic: &mut Vec<Diagnostic>,
) {
    for m in session.messages() {
        out.extend(schemas.validate(SchemaKind::Message, &m, &message_prefix(&m)));
        if let Some(checker) = checker.as_deref_mut() {
            let from = semantic.len();
            checker.message(&m.value, m.first_line, semantic);
            // Every diagnostic of a line is about that line (a repeated
            // ID's included: it is located at its later line, this one).
            for d in semantic.get_mut(from..).unwrap_or_default() {
                locate_session(d, session, Some(&m));
            }
        }
    }
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
#[cfg(any(test, feature = "internals"))]
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
                values.insert("manifest.yaml".into(), &m.value);
            }
        }
    }
    // Each file's version and schema checks read that file alone: they run
    // on the machine's cores (`crate::par`), their diagnostics joined in
    // file order. `true` when the file's version is one this reads.
    let files: Vec<(&String, &(PackFileKind, Document))> = pack.files.iter().collect();
    let per_file = crate::par::map(&files, |_, (path, (kind, doc))| {
        let mut mine = Vec::new();
        match load::check_version(doc, "schema_version", "") {
            Some(d) => {
                mine.push(d);
                (mine, false)
            }
            None => {
                mine.extend(schemas.validate(schema_kind(*kind), doc, ""));
                if *kind == PackFileKind::Test {
                    for mut d in super::assertion_syntax::check_fixture(&doc.value) {
                        let p = d.location.pointer.clone().unwrap_or_default();
                        d.location.file = Some((*path).clone());
                        locate_in(&mut d, doc, &p);
                        mine.push(d);
                    }
                }
                (mine, true)
            }
        }
    });
    for ((path, (_, doc)), (mine, read)) in files.into_iter().zip(per_file) {
        docs.push((path, doc));
        out.extend(mine);
        if read {
            // Borrowed: the files outlive the check (docs/performance.md,
            // Run AJ: the copy of every file was a tenth of the lowering).
            values.insert(path.clone(), &doc.value);
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
    let max_players =
        crate::model::manifest::Manifest::of(pack.manifest.as_ref().map(|m| &m.value)).players_max;
    if let Some(max) = max_players {
        semantic.extend(players_over_max(&lowered.bundle, max));
    }
    for d in &mut semantic {
        translate(d, &lowered.origins);
        locate_file(d);
    }
    out.extend(semantic);
    let mut fixture_diags =
        super::pack::fixtures::check_fixtures(&values, &lowered.bundle, &exists);
    for d in &mut fixture_diags {
        locate_file(d);
    }
    out.extend(fixture_diags);
    let pt_files: Vec<(&str, &Value, bool)> = pack
        .files
        .iter()
        .filter_map(|(p, (k, _))| {
            let v = *values.get(p.as_str())?;
            match k {
                PackFileKind::Playtest => Some((p.as_str(), v, true)),
                PackFileKind::Persona => Some((p.as_str(), v, false)),
                _ => None,
            }
        })
        .collect();
    let mut playtest_diags =
        super::playtest::check_playtests(&pt_files, &lowered.bundle, max_players, &exists);
    for d in &mut playtest_diags {
        locate_file(d);
    }
    out.extend(playtest_diags);
    for session in pack.sessions.values() {
        out.extend(check_session_document(&lowered.bundle, session));
        let players = session
            .header
            .as_ref()
            .and_then(|h| crate::model::Header::read(&h.value).players)
            .map_or(0, <[Value]>::len) as u64;
        if let (Some(max), Some(h)) = (max_players, &session.header)
            && players > max
        {
            let mut d = advisory(format!(
                "the session has {players} players; the manifest's players.max is {max}"
            ))
            .at("header/players");
            locate_in(&mut d, h, "/players");
            out.push(d);
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
    let mut out = Vec::new();
    for (i, sc) in crate::model::scenarios(bundle).iter().enumerate() {
        let players = crate::model::items::Cast::all(sc)
            .filter(crate::model::items::Cast::is_player)
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
    if let Some(p) = &d.location.pointer
        && let Some((file, pointer)) = origins.translate(p)
    {
        d.location.file = Some(file);
        d.location.pointer = Some(pointer);
    }
}

/// A package's compiled entries compared with compiling its `bundle.json`
/// (first; Format 14.4): whether `ir.json` (second) is the compilation, and
/// whether the IR `ir.compact` encodes (third, when it is to be compared)
/// is the compilation's encoding.
pub type IrVerifier<'a> = &'a dyn Fn(&[u8], &[u8], Option<&[u8]>) -> (bool, bool);

/// Orders a report (`docs/validation.md`): by input in command-line order,
/// then file, line, column, pointer and code; the sort is stable.
pub(crate) fn sort_for_report(diagnostics: &mut Vec<Diagnostic>, owner: &[usize]) {
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
    if let Some(b) = &pkg.bundle {
        out.extend(check_compiled_form(pkg, b, ir_ok));
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

/// The compiled form of a package (Format 14.4): a stale or corrupt
/// `ir.json` or `ir.compact` is a warning (loaders fall back); one whose
/// hashes and records all agree must be exactly what `bundle.json`
/// compiles to (or encodes it), or the package could run another story
/// than the one checked here: an error. Both entries are looked at,
/// whichever a loader would use.
fn check_compiled_form(
    pkg: &load::PackageDoc,
    b: &load::Document,
    ir_ok: IrVerifier<'_>,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut entries = vec![("bundle.json".to_string(), b.text.as_bytes().to_vec())];
    if let Some(ir) = &pkg.ir {
        entries.push(("ir.json".to_string(), ir.clone()));
    }
    if let Some(c) = &pkg.compact {
        entries.push((load::compiled::COMPACT_ENTRY.to_string(), c.clone()));
    }
    if let Some(m) = &pkg.manifest {
        entries.push(("manifest.json".to_string(), m.text.as_bytes().to_vec()));
    }
    let json_bound = match load::compiled::verify_ir(&pkg.file, &entries) {
        Err(d) => {
            out.extend(d);
            false
        }
        Ok(bound) => bound.is_some(),
    };
    let compact = match load::compiled::verify_compact(&pkg.file, &entries) {
        load::compiled::Compact::Refused(d) => {
            out.push(d);
            None
        }
        load::compiled::Compact::Bound { ir, .. } => Some(ir),
        _ => None,
    };
    if !json_bound && compact.is_none() {
        return out;
    }
    // Whether an entry is bundle.json's compilation can only be told by
    // compiling it (Format 14.4): `ir_ok` does, once for both.
    let (json_ok, compact_ok) = ir_ok(
        b.text.as_bytes(),
        pkg.ir.as_deref().unwrap_or_default(),
        compact,
    );
    let not_compiled = |entry: &str, msg: &str| {
        load::compiled::ir_mismatch(&pkg.file, entry, "", msg).with_severity(Severity::Error)
    };
    if json_bound && !json_ok {
        out.push(not_compiled(
            "ir.json",
            "ir.json is not what bundle.json compiles to, although every hash agrees: the package would run another story than the one checked; compile it again with `troupe compile`",
        ));
    }
    if compact.is_some() && !compact_ok {
        out.push(not_compiled(
            load::compiled::COMPACT_ENTRY,
            "ir.compact is not what bundle.json compiles to, although its record and every hash agree: the package would run another story than the one checked; compile it again with `troupe compile`",
        ));
    }
    out
}

/// Checks a package's `manifest.json` against its shape (Format 14.1):
/// version, then schema and unknown fields.
pub fn check_package_manifest(doc: &Document) -> Vec<Diagnostic> {
    if let Some(d) = load::check_version(doc, "troupe", "") {
        return vec![d];
    }
    Schemas::get().validate(SchemaKind::PackageManifest, doc, "")
}

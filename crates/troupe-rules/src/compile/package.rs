//! The compiled package (Format 14.4): `bundle.json`, `ir.compact`,
//! `ir.json`, `manifest.json` and the sessions, stored with fixed times so
//! the same input gives the same bytes.
//!
//! `ir.json` (IR version [`IR_VERSION`]) is the compiled form the engine
//! and the runtime run, [`PackageIr`]: for every scenario that can be run
//! with default seating (Format 18.4), its compiled story ([`StoryIr`]:
//! slots, typed environments, variables, CEL programs as lowered trees,
//! derived order, events, outcomes, openings, lore
//! entries, presets) and its runtime part ([`RuntimeIr`]: sorted rules,
//! emotion, rubric, safety policy). Opening such a package and starting a
//! session with default seating parses, checks and lowers nothing; the
//! loader treats `ir.json` as untrusted ([`read_ir`]).

use std::io::{Cursor, Write};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

use super::changes::ChangeScope;
use super::ir::{ChangeIr, Layout, NameRef, Source, StoryIr, Who};
use super::runtime::RuntimeIr;
use crate::cel::Program;
use crate::load::compiled::{compact_record, COMPACT_ENTRY};
pub use crate::load::compiled::{content_hash, verify_ir, IR_VERSION};

/// How deep the compiled IR may nest, counted in levels of serde's data
/// model (each sequence, map, struct, enum variant, `Some` and newtype
/// opens one; Format 14.4): deep enough for the IR of every expression
/// the parser accepts (`crate::cel::parse::MAX_DEPTH` levels), shallow
/// enough that reading, checking and dropping the deepest IR stays within
/// a 2 MiB thread's stack in a debug build. A deeper IR is not used
/// (IR_MISMATCH).
pub const IR_MAX_NESTING: usize = 640;

/// The whole of `ir.json` (Format 14.4).
#[derive(Debug, Serialize, Deserialize)]
pub struct PackageIr {
    /// `IR_VERSION`.
    pub ir_version: String,
    /// The version of the Troupe that compiled it (informative).
    pub troupe_version: String,
    /// `content_hash` of the `bundle.json` bytes it was compiled from.
    pub bundle_hash: String,
    /// The scenarios that run from the IR with default seating, in bundle
    /// order (a scenario without players, or whose default header does
    /// not check, is left out: a session of it compiles `bundle.json`).
    pub scenarios: Vec<Arc<ScenarioIr>>,
}

/// One scenario compiled for default seating (Format 18.4: each seat a
/// plain player character whose ID is the seat ID, named
/// [`crate::model::session::DEFAULT_PLAYER_NAME`]).
#[derive(Debug, Serialize, Deserialize)]
pub struct ScenarioIr {
    /// The scenario's ID.
    #[serde(deserialize_with = "crate::wire::shared_str")]
    pub id: Arc<str>,
    /// Its index in the bundle's `scenarios`.
    pub index: usize,
    /// The default header's `players` (Format 18.4).
    #[serde(with = "crate::wire::json_values")]
    pub players: Vec<Value>,
    /// The default header's `characters`.
    #[serde(with = "crate::wire::json_values")]
    pub characters: Vec<Value>,
    /// `difficulty.default` as written, if any.
    pub default_preset: Option<String>,
    /// The compiled story.
    pub story: Arc<StoryIr>,
    /// The runtime's part.
    pub runtime: Arc<RuntimeIr>,
}

impl PackageIr {
    /// The compiled scenario `id` (the bundle's first scenario for `None`),
    /// shared.
    pub fn scenario(&self, id: Option<&str>) -> Option<Arc<ScenarioIr>> {
        match id {
            Some(id) => self.scenarios.iter().find(|s| &*s.id == id),
            None => self.scenarios.iter().find(|s| s.index == 0),
        }
        .cloned()
    }
}

/// The bytes of `bundle.json` for `bundle`: Troupe JSON and `\n`.
pub fn bundle_bytes(bundle: &Value) -> Vec<u8> {
    crate::load::compiled::bundle_json(bundle)
}

fn to_ir_json(ir: &PackageIr) -> Vec<u8> {
    let mut out = serde_json::to_vec(ir).unwrap_or_default();
    out.push(b'\n');
    out
}

/// What `ir.compact`'s IR (after its record) begins with: the name of
/// this encoding (Format 14.4, "This implementation's `ir.compact`").
pub const COMPACT_ENCODING: &str = "troupe-compact-3";

/// The IR of `ir.compact` (Format 14.4, after its record): the name of
/// the encoding ([`COMPACT_ENCODING`]), the string table (each distinct
/// string of the IR once: their byte lengths, then their text joined;
/// `crate::wire::strings`), then the IR of `ir.json` in postcard's
/// encoding with every string written as its index in the table and every
/// field written (`crate::wire::writing_every_field`). All three in
/// postcard. Empty if the IR cannot be written (none that compile makes).
pub fn to_ir_bin(ir: &PackageIr) -> Vec<u8> {
    use crate::wire::strings::{tabled, TableWriter};
    crate::wire::writing_every_field(|| {
        let table = TableWriter::new();
        let Ok(body) = postcard::to_allocvec(&tabled(ir, &table)) else {
            return Vec::new();
        };
        let (lens, text) = table.into_parts();
        let Ok(mut out) = postcard::to_allocvec(&(COMPACT_ENCODING, lens, text.as_str())) else {
            return Vec::new();
        };
        out.extend_from_slice(&body);
        out
    })
}

/// `ir.json` of `ir` (compact JSON and `\n`), as `troupe compile` writes it.
pub fn to_ir_json_bytes(ir: &PackageIr) -> Vec<u8> {
    to_ir_json(ir)
}

/// Reads and validates the untrusted IR of `ir.compact` (Format 14.4,
/// after its record) as [`read_ir`] does `ir.json`: the encoding
/// [`to_ir_bin`] writes — its name, a string table whose lengths cut its
/// text (checked as UTF-8 once) at character boundaries, then this
/// version's IR with every string an index into the table —, nothing
/// after it, nested at most [`IR_MAX_NESTING`] deep (postcard has no
/// limit of its own), then the same checks. Each distinct string read as
/// an `Arc<str>` is made once and shared (`crate::wire::strings`).
pub fn read_ir_bin(bin: &[u8], bundle_hash: &str) -> Result<PackageIr, IrFault> {
    let unreadable = |e: &dyn std::fmt::Display| {
        fault(
            "",
            format!("ir.compact cannot be read as this Troupe's IR ({e}); it is not used"),
        )
    };
    let mut de = postcard::Deserializer::from_bytes(bin);
    // The encoding's name and the string table (its text checked as UTF-8
    // once, here), then the IR, its strings read from the table.
    let encoding = <&str>::deserialize(&mut de).map_err(|e| unreadable(&e))?;
    if encoding != COMPACT_ENCODING {
        return Err(unreadable(&format_args!(
            "it is not in the encoding `{COMPACT_ENCODING}`"
        )));
    }
    let (lens, text) = <(Vec<u32>, &str)>::deserialize(&mut de).map_err(|e| unreadable(&e))?;
    let strings = crate::wire::strings::Strings::new(text, lens).ok_or_else(|| {
        unreadable(&"a string table whose lengths do not cut its text into strings")
    })?;
    let (n, text) = (strings.len(), strings.text());
    let nesting = crate::wire::Nesting::with_strings(IR_MAX_NESTING, strings);
    let read = crate::wire::strings::interning_in(n, Some(text), || {
        PackageIr::deserialize(nesting.wrap(&mut de))
    });
    let p = read.map_err(|e| {
        // postcard drops a custom error's message: the bound's is said again.
        if nesting.exceeded() {
            unreadable(&nesting.message())
        } else {
            unreadable(&e)
        }
    })?;
    match de.finalize() {
        Ok([]) => {}
        Ok(rest) => {
            return Err(unreadable(&format_args!(
                "{} bytes after the IR",
                rest.len()
            )))
        }
        Err(e) => return Err(unreadable(&e)),
    }
    sound(p, bundle_hash, "ir.compact")
}

/// Why an `ir.json` was not used: the JSON Pointer in it and a plain
/// message (reported as IR_MISMATCH).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrFault {
    /// Where in `ir.json` (`""`: the document as a whole).
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

fn fault(pointer: impl Into<String>, message: impl Into<String>) -> IrFault {
    IrFault {
        pointer: pointer.into(),
        message: message.into(),
    }
}

/// Reads and validates an untrusted `ir.json` (Format 14.4): it must be
/// UTF-8 and parse as this version's IR (a CEL program's constant regular
/// expression compiles as it is read), name `IR_VERSION`, carry
/// `bundle_hash` equal to `bundle_hash`, and be structurally sound
/// (`validate_story`).
pub fn read_ir(ir: &[u8], bundle_hash: &str) -> Result<PackageIr, IrFault> {
    // Checked as UTF-8 once, whole (serde_json's slice reader checks every
    // string it reads again).
    let text = std::str::from_utf8(ir).map_err(|e| {
        fault(
            "",
            format!(
                "ir.json is not UTF-8 ({e}); it is not used and bundle.json is compiled afresh"
            ),
        )
    })?;
    // serde_json's own limit (128 levels) is below what the IR of an
    // expression at the parser's height bound nests; the reader's own
    // bound, [`IR_MAX_NESTING`], replaces it.
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let nesting = crate::wire::Nesting::new(IR_MAX_NESTING);
    let read = PackageIr::deserialize(nesting.wrap(&mut de)).and_then(|p| de.end().map(|()| p));
    let p: PackageIr = read.map_err(|e| {
        fault(
            "",
            format!("ir.json cannot be read as this Troupe's IR ({e}); it is not used and bundle.json is compiled afresh"),
        )
    })?;
    sound(p, bundle_hash, "ir.json")
}

/// The checks of [`read_ir`] and [`read_ir_bin`] after reading: the IR
/// version, the bundle hash, each scenario's environments linked and its
/// soundness ([`validate_story`]).
fn sound(mut p: PackageIr, bundle_hash: &str, entry: &str) -> Result<PackageIr, IrFault> {
    // What follows a refusal (Format 14.4): ir.compact's is ir.json.
    let then = if entry == "ir.json" {
        "bundle.json is compiled afresh"
    } else {
        "ir.json is tried"
    };
    if p.ir_version != IR_VERSION {
        return Err(fault(
            "/ir_version",
            format!("{entry} is of another IR version (this Troupe reads `{IR_VERSION}`); it is not used and {then}"),
        ));
    }
    if p.bundle_hash != bundle_hash {
        return Err(fault(
            "/bundle_hash",
            format!("{entry} was not compiled from this bundle.json (its bundle_hash differs); the IR is not used and {then}"),
        ));
    }
    for (i, s) in p.scenarios.iter_mut().enumerate() {
        // Just read: the scenario and its story have no other owner yet.
        let Some(s) = Arc::get_mut(s) else {
            return Err(fault(
                format!("/scenarios/{i}"),
                format!(
                    "{entry} is not a sound IR (the scenario is shared); it is not used and {then}"
                ),
            ));
        };
        let linked = match std::sync::Arc::get_mut(&mut s.story) {
            Some(story) => story.link_envs(),
            None => Err(("story".into(), "the story is shared".into())),
        };
        linked.map_err(|(at, m)| {
            fault(
                format!("/scenarios/{i}/{at}"),
                format!("{entry} is not a sound IR ({m}); it is not used and {then}"),
            )
        })?;
        let unsound = |(at, m): Fault| {
            fault(
                format!("/scenarios/{i}/{at}"),
                format!("{entry} is not a sound IR ({m}); it is not used and {then}"),
            )
        };
        if entry == "ir.json" {
            validate_story(&s.story, &s.runtime).map_err(unsound)?;
        } else {
            // `ir.compact` holds the rules' changes as written only: the
            // lowered ones are derived here, so they agree by construction.
            let mut lowered = Vec::with_capacity(s.runtime.rules.len());
            validate(&s.story, &s.runtime, Some(&mut lowered)).map_err(unsound)?;
            let Some(rt) = Arc::get_mut(&mut s.runtime) else {
                return Err(unsound(("runtime".into(), "the runtime is shared".into())));
            };
            for (r, c) in rt.rules.iter_mut().zip(lowered) {
                r.changes = c;
            }
        }
    }
    Ok(p)
}

type Fault = (String, String);

fn check(ok: bool, at: impl FnOnce() -> String, m: impl FnOnce() -> String) -> Result<(), Fault> {
    if ok {
        Ok(())
    } else {
        Err((at(), m()))
    }
}

/// The structural rules of 14.4 for one compiled scenario: every index in
/// range (variables, slots, environments, cast members, presets, knobs,
/// branches), slot counts consistent (the layouts tile `slot_count`, each
/// environment has a source per slot), every derived variable computed
/// after the derived variables it reads (so no cycle), and every rule's
/// changes as written lowering to its changes. Regular expressions (key
/// sets, rule and safety patterns) are not checked here: the compile that
/// wrote the IR checked them, and one that does not compile when first used
/// matches nothing (Format 14.4). `Err`: the JSON Pointer below the
/// scenario and the fault.
pub fn validate_story(s: &StoryIr, rt: &RuntimeIr) -> Result<(), Fault> {
    validate(s, rt, None)
}

/// [`validate_story`]; with `derived` (`ir.compact`, whose rules hold
/// their changes as written only), each rule's changes as written are
/// lowered into `derived` (rule order) instead of compared with the
/// rule's `changes`, and the lowered changes are checked in range.
fn validate(
    s: &StoryIr,
    rt: &RuntimeIr,
    mut derived: Option<&mut Vec<Arc<[ChangeIr]>>>,
) -> Result<(), Fault> {
    let nvars = s.vars.len();
    let ncast = s.cast.len();
    let nslots = s.slot_count;
    // Layouts tile the slots in order.
    let mut next = 0usize;
    for (i, v) in s.vars.iter().enumerate() {
        let (first, n) = match &v.layout {
            Layout::Single(x) | Layout::Open(x) => (*x as usize, 1),
            Layout::Fixed { first, keys } => (*first as usize, keys.len()),
        };
        check(
            first == next && first + n <= nslots,
            || format!("story/vars/{i}/layout"),
            || format!("variable `{}` does not take the next slots", v.name),
        )?;
        next = first + n;
        if let Some(d) = v.derived {
            check(
                s.derived
                    .get(d as usize)
                    .is_some_and(|x| x.var as usize == i),
                || format!("story/vars/{i}/derived"),
                || {
                    format!(
                        "variable `{}` names derived program {d}, which is not its",
                        v.name
                    )
                },
            )?;
        }
        if let Some(d) = &s.difficulty {
            check(
                v.start.is_empty() || v.start.len() == d.presets.len(),
                || format!("story/vars/{i}/start"),
                || "start values do not match the presets".into(),
            )?;
        }
    }
    check(
        next == nslots,
        || "story/slot_count".into(),
        || format!("slot_count {nslots} but the variables take {next}"),
    )?;
    check(
        s.present.len() == ncast,
        || "story/present".into(),
        || "scene.present does not have one entry per cast member".into(),
    )?;
    for (i, p) in s.players.iter().enumerate() {
        check(
            (*p as usize) < ncast,
            || format!("story/players/{i}"),
            || format!("player {p} is not a cast member"),
        )?;
    }
    let nknobs = s.difficulty.as_ref().map_or(0, |d| d.knobs.len());
    if let Some(d) = &s.difficulty {
        check(
            (d.default as usize) < d.presets.len()
                && d.presets.iter().all(|(_, k)| k.len() == d.knobs.len()),
            || "story/difficulty".into(),
            || "the presets do not match their knobs".into(),
        )?;
    }
    check(
        !s.envs.is_empty(),
        || "story/envs".into(),
        || "no environment".into(),
    )?;
    for (i, e) in s.envs.iter().enumerate() {
        check(
            e.sources.len() == e.env.slot_count(),
            || format!("story/envs/{i}/sources"),
            || "an environment does not have one source per slot".into(),
        )?;
        for (j, src) in e.sources.iter().enumerate() {
            let ok = match src {
                Source::Var(v) => (*v as usize) < nvars,
                Source::Knob(k) => (*k as usize) < nknobs,
                _ => true,
            };
            check(
                ok,
                || format!("story/envs/{i}/sources/{j}"),
                || "a source names a variable or knob out of range".into(),
            )?;
        }
    }
    let env_slots = |e: u16| s.envs.get(e as usize).map(|x| x.env.slot_count());
    // Pointers are only formatted for a fault: a sound IR (every load of
    // a package) formats none.
    let program = |p: &Program, env: u16, at: &dyn Fn() -> String| -> Result<(), Fault> {
        match env_slots(env) {
            Some(n) => p.validate(n).map_err(|m| (at(), m)),
            None => Err((at(), format!("environment {env} is out of range"))),
        }
    };
    // Derived variables: each reads only derived variables computed before it.
    for (i, d) in s.derived.iter().enumerate() {
        let at = || format!("story/derived/{i}");
        check(
            s.vars.get(d.var as usize).and_then(|v| v.derived) == Some(i as u32),
            at,
            || "a derived program's variable does not name it".into(),
        )?;
        program(&d.program, d.env, &|| format!("story/derived/{i}/program"))?;
        let sources = &s.envs[d.env as usize].sources;
        for r in &d.reads {
            let Some(src) = sources.get(*r as usize) else {
                return Err((at(), format!("read slot {r} is out of range")));
            };
            if let Source::Var(v) = src
                && let Some(j) = s.vars[*v as usize].derived
            {
                check((j as usize) < i, at, || {
                    format!(
                                "derived `{}` reads derived `{}`, which is not computed before it (a cycle or a wrong order)",
                                s.vars[d.var as usize].name, s.vars[*v as usize].name
                            )
                })?;
            }
        }
    }
    let changes = |cs: &[ChangeIr], at: &dyn Fn() -> String| -> Result<(), Fault> {
        for (k, c) in cs.iter().enumerate() {
            let ok = match c {
                ChangeIr::Set { var, slot, .. } | ChangeIr::Add { var, slot, .. } => {
                    s.vars.get(*var as usize).is_some_and(|v| match &v.layout {
                        Layout::Single(x) => x == slot,
                        Layout::Fixed { first, keys } => {
                            *slot >= *first && ((*slot - *first) as usize) < keys.len()
                        }
                        Layout::Open(_) => false,
                    })
                }
                ChangeIr::SetOpen { var, slot, .. } | ChangeIr::AddOpen { var, slot, .. } => s
                    .vars
                    .get(*var as usize)
                    .is_some_and(|v| v.layout == Layout::Open(*slot)),
                ChangeIr::Location(_) => true,
                ChangeIr::Present(c) | ChangeIr::Enter(c) | ChangeIr::Leave(c) => {
                    c.iter().all(|x| (*x as usize) < ncast)
                }
            };
            check(
                ok,
                || format!("{}/{k}", at()),
                || "a change names a variable, slot or cast member out of range".into(),
            )?;
        }
        Ok(())
    };
    let who = |w: Who| match w {
        Who::Narrator => true,
        Who::Cast(c) => (c as usize) < ncast,
    };
    for (field, list) in [("events", &s.events), ("outcomes", &s.outcomes)] {
        for (i, f) in list.iter().enumerate() {
            if let Some(p) = &f.when {
                program(p, 0, &|| format!("story/{field}/{i}/when"))?;
            }
            changes(&f.changes, &|| format!("story/{field}/{i}/changes"))?;
        }
    }
    for (i, o) in s.openings.iter().enumerate() {
        check(
            who(o.author)
                && o.parts.iter().all(|p| {
                    p.audience
                        .as_ref()
                        .is_none_or(|a| a.iter().all(|w| who(*w)))
                })
                && o.scene_present
                    .as_ref()
                    .is_none_or(|p| p.iter().all(|c| (*c as usize) < ncast)),
            || format!("story/openings/{i}"),
            || "an opening names a cast member out of range".into(),
        )?;
        changes(&o.changes, &|| format!("story/openings/{i}/changes"))?;
    }
    for (name, r) in &s.names {
        let ok = match r {
            NameRef::Slot(x) => (*x as usize) < nslots,
            NameRef::OpenKey(v, _) => (*v as usize) < nvars,
            NameRef::Location | NameRef::Present => true,
        };
        check(
            ok,
            || "story/names".into(),
            || format!("state name `{name}` is out of range"),
        )?;
    }
    for (name, v) in &s.var_index {
        check(
            (*v as usize) < nvars,
            || "story/var_index".into(),
            || format!("state name `{name}` names no variable"),
        )?;
    }
    for (i, e) in s.entries.iter().enumerate() {
        if let Some(p) = &e.when {
            program(p, e.env, &|| format!("story/entries/{i}/when"))?;
        } else {
            check(
                env_slots(e.env).is_some(),
                || format!("story/entries/{i}/env"),
                || "environment out of range".into(),
            )?;
        }
    }
    if let Some(p) = &s.emotion {
        program(p, 0, &|| "story/emotion".into())?;
    }
    for name in s.model.decl.changes.keys() {
        check(
            crate::changes::resolve_target(s, name).is_ok(),
            || {
                format!(
                    "story/model/decl/changes/{}",
                    crate::diag::escape_token(name)
                )
            },
            || format!("the model may change `{name}`, which names no variable"),
        )?;
    }
    let scope = crate::compile::changes::ChangeScope::of_ir(s);
    let mut buf = Vec::new();
    for (i, r) in rt.rules.iter().enumerate() {
        if let Some(p) = &r.when {
            program(p, 0, &|| format!("runtime/rules/{i}/when"))?;
        }
        if derived.is_none() {
            changes(&r.changes, &|| format!("runtime/rules/{i}/changes"))?;
        }
        // A raw value is one JSON value as read: it is an array when it
        // starts with `[`.
        let is_array = match r.changes_json.tokens() {
            Some(t) => t.is_array(),
            None => r.changes_json.text().trim_start().starts_with('['),
        };
        check(
            is_array,
            || format!("runtime/rules/{i}/changes_json"),
            || "the changes as written are not a JSON array".into(),
        )?;
        // The changes as written go to the session file and the lowered
        // ones are applied: they must be the same changes (Format 14.4).
        // Read here and dropped (not kept in the rule: only a chosen
        // rule's are kept, `RuleIr::written_changes`).
        let at = || format!("runtime/rules/{i}/changes_json");
        match derived.as_deref_mut() {
            None => check(
                written_lower(&scope, &r.changes_json, &mut buf) && *buf == *r.changes,
                at,
                || "the changes as written do not lower to the rule's `changes`".into(),
            )?,
            Some(out) => {
                check(written_lower(&scope, &r.changes_json, &mut buf), at, || {
                    "the changes as written do not lower".into()
                })?;
                changes(&buf, &|| format!("runtime/rules/{i}/changes_json"))?;
                out.push(Arc::from(&buf[..]));
            }
        }
    }
    check(
        rt.rules.windows(2).all(|w| w[0].priority >= w[1].priority),
        || "runtime/rules".into(),
        || "rules are not in trial order (priority highest first)".into(),
    )?;
    for (i, c) in rt.rubric.iter().flatten().enumerate() {
        if let Some(p) = &c.score {
            program(p, 0, &|| format!("runtime/rubric/{i}/score"))?;
        }
    }
    Ok(())
}

/// Lowers a rule's changes as written into `buf` (cleared first), read as
/// [`RuleIr::written_changes`] reads them; `false` when they do not read
/// or lower. Tokens (`ir.compact`, checked when read) are lowered as they
/// are; JSON text is read through a borrowed view when it holds no escape
/// ([`RawJson`]), as a `serde_json::Value` (which refuses text nested 128
/// levels or more) otherwise.
///
/// [`RuleIr::written_changes`]: super::runtime::RuleIr::written_changes
/// [`RawJson`]: super::value::RawJson
fn written_lower(
    scope: &ChangeScope<'_>,
    written: &super::written::WrittenChanges,
    buf: &mut Vec<ChangeIr>,
) -> bool {
    use super::changes::lower_changes_into;
    use super::value::{JsonView, RawJson};
    buf.clear();
    let text = match written {
        super::written::WrittenChanges::Tokens(_) => {
            return written
                .tokens()
                .and_then(|t| t.items())
                .is_some_and(|items| lower_changes_into(scope, items, buf).is_ok())
        }
        super::written::WrittenChanges::Text(t) => t.get(),
    };
    match RawJson::new(text) {
        // serde_json's recursion limit, which a `Value` read obeys.
        Some(_) if crate::wire::nests_deeper_than(text, SERDE_JSON_MAX_DEPTH) => false,
        Some(raw) => raw
            .items()
            .is_some_and(|items| lower_changes_into(scope, items, buf).is_ok()),
        None => serde_json::from_str::<Vec<Value>>(text)
            .is_ok_and(|w| lower_changes_into(scope, w.iter(), buf).is_ok()),
    }
}

/// The deepest nesting `serde_json` reads into a value (its recursion
/// limit, 128, refuses the 128th level).
const SERDE_JSON_MAX_DEPTH: usize = 127;

/// The bytes of a package (Format 14.4) of a canonical bundle whose
/// `bundle.json` is `bundle_json`, compiled to `ir`, and its sessions
/// (`name` → bytes; names without the `sessions/` prefix): `bundle.json`,
/// `ir.compact`, `ir.json`, `manifest.json` and the sessions. Entries are
/// in code point order of names, stored, dated 1980-01-01 00:00:00.
pub fn package_bytes(
    bundle_json: Vec<u8>,
    ir: PackageIr,
    sessions: &[(String, Vec<u8>)],
) -> std::io::Result<Vec<u8>> {
    let mut manifest = Map::new();
    manifest.insert("troupe".into(), "0.1".into());
    manifest.insert("kind".into(), "package".into());
    manifest.insert("ir_version".into(), IR_VERSION.into());
    manifest.insert("content_hash".into(), ir.bundle_hash.clone().into());
    // `ir.json` with its hash, and the same IR in the compact encoding
    // (bound to ir.json by its record), written side by side
    // (docs/performance.md, Run AZ).
    let ((ir_json, ir_hash), compact) = crate::par::join(
        || {
            let ir_json = to_ir_json(&ir);
            let ir_hash = content_hash(&ir_json);
            (ir_json, ir_hash)
        },
        || to_ir_bin(&ir),
    );
    manifest.insert("ir_hash".into(), ir_hash.clone().into());
    let mut manifest_json = Value::Object(manifest).to_string();
    manifest_json.push('\n');
    // Each entry's data in one or two parts, borrowed: `ir.compact` is its
    // record and then the encoded IR, stored without joining them into a
    // copy (docs/performance.md, Run AQ).
    let record;
    let mut entries: Vec<(String, [&[u8]; 2])> = vec![("bundle.json".into(), [&bundle_json, &[]])];
    // An IR the encoder could not write (none it compiles) is left out:
    // the entry is optional.
    if !compact.is_empty() {
        record = compact_record(&ir_hash, &compact);
        entries.push((COMPACT_ENTRY.into(), [record.as_bytes(), &compact]));
    }
    entries.push(("ir.json".into(), [&ir_json, &[]]));
    entries.push(("manifest.json".into(), [manifest_json.as_bytes(), &[]]));
    let mut sess: Vec<(String, [&[u8]; 2])> = sessions
        .iter()
        .map(|(n, b)| (format!("sessions/{n}"), [&b[..], &[]]))
        .collect();
    sess.sort_by(|a, b| a.0.cmp(&b.0));
    entries.extend(sess);
    // The archive written once into a buffer of about its size: the
    // entries' data, each one's local and central headers (30 and 46 bytes
    // and its name twice, with room for extra fields) and the end record.
    let size = entries
        .iter()
        .map(|(n, d)| d[0].len() + d[1].len() + 2 * n.len() + 30 + 46 + 64)
        .sum::<usize>()
        + 22
        + 64;
    // The IR is freed while the archive is written.
    crate::par::join(
        move || drop(ir),
        || {
            let mut zip = ZipWriter::new(Cursor::new(Vec::with_capacity(size)));
            let options = SimpleFileOptions::default()
                .compression_method(CompressionMethod::Stored)
                .last_modified_time(DateTime::default())
                .unix_permissions(0o644);
            for (name, data) in &entries {
                zip.start_file(name.as_str(), options)
                    .map_err(std::io::Error::other)?;
                zip.write_all(data[0])?;
                zip.write_all(data[1])?;
            }
            let cursor = zip.finish().map_err(std::io::Error::other)?;
            Ok(cursor.into_inner())
        },
    )
    .1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The soundness check reads a rule's changes as written through a
    /// borrowed view, and must refuse and accept exactly what reading them
    /// as `serde_json::Value` (as `RuleIr::written_changes` does) and
    /// lowering that would: a repeated key's first position and last value,
    /// escapes, whitespace, and serde_json's 128-level limit even in a part
    /// that lowering drops.
    #[test]
    fn written_changes_are_checked_as_a_json_value_would_read_them() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let o = crate::open::open(&root.join("examples/packs/everyday-negotiation")).unwrap();
        let bundle = crate::compile::canonical::canonical_bundle(&o.bundle);
        let ir = read_ir(
            &crate::pipeline::package::ir_bytes(&bundle),
            &content_hash(&bundle_bytes(&bundle)),
        )
        .unwrap();
        let s = &ir.scenarios[0];
        let scope = ChangeScope::of_ir(&s.story);
        let rule = s
            .runtime
            .rules
            .iter()
            .find(|r| r.changes_json.text() == r#"[{"add":{"patience":-10}}]"#)
            .expect("the rule `haggle_fatigue`'s changes");
        let by_value = |t: &str| {
            serde_json::from_str::<Vec<Value>>(t)
                .ok()
                .and_then(|w| crate::compile::changes::lower_changes(&scope, &w).ok())
                .is_some_and(|l| *l == *rule.changes)
        };
        let nest = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        for (text, lowers) in [
            (r#"[{"add":{"patience":-10}}]"#.to_string(), true),
            (" \n[ {\"add\" : {\"patience\":-10} } ]\n".into(), true),
            (
                r#"[{"add":{"nope":1},"add":{"patience":-10}}]"#.into(),
                true,
            ),
            (
                r#"[{"add":{"patience":-10},"add":{"nope":1}}]"#.into(),
                false,
            ),
            (r#"[{"add":{"patience":7,"patience":-10}}]"#.into(), true),
            (r#"[{"add":{"patience":-10.0}}]"#.into(), false),
            (r#"[{"add":{"patience":-1e1}}]"#.into(), false),
            (r#"[{"add":{"patience":"-10"}}]"#.into(), false),
            (r#"[{"a\u0064d":{"patience":-10}}]"#.into(), true),
            (r#"[{"add":"\ud800","add":{"patience":-10}}]"#.into(), false),
            (r#"{"add":{"patience":-10}}"#.into(), false),
            (r#"[{"add":{"patience":-10}},{}]"#.into(), true),
            (r#"[{"add":{"patience":-10}},{"add":{}}]"#.into(), true),
            // 127 levels in all (the list, the change, 125 more) read; 128 not.
            (
                format!(r#"[{{"add":{},"add":{{"patience":-10}}}}]"#, nest(125)),
                true,
            ),
            (
                format!(r#"[{{"add":{},"add":{{"patience":-10}}}}]"#, nest(126)),
                false,
            ),
        ] {
            assert_eq!(by_value(&text), lowers, "{text}");
            let written = serde_json::value::RawValue::from_string(text.clone())
                .map(Into::into)
                .unwrap();
            let mut buf = Vec::new();
            assert_eq!(
                written_lower(&scope, &written, &mut buf) && *buf == *rule.changes,
                lowers,
                "{text}"
            );
        }
    }

    /// Format 14.4: the regular expressions of an IR whose hashes match are
    /// taken as written (the compile that wrote them checked them) and
    /// compiled on first use; one that does not compile then matches
    /// nothing, and nothing panics. Here a rule's `pattern`, a safety
    /// pattern and a rule's regular-expression keyword are edited into
    /// ones that do not compile.
    #[test]
    fn an_irs_patterns_are_compiled_on_first_use_and_a_bad_one_matches_nothing() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let o = crate::open::open(&root.join("examples/packs/everyday-negotiation")).unwrap();
        let bundle = crate::compile::canonical::canonical_bundle(&o.bundle);
        let hash = content_hash(&bundle_bytes(&bundle));
        let mut ir: Value =
            serde_json::from_slice(&crate::pipeline::package::ir_bytes(&bundle)).unwrap();
        let rt = &mut ir["scenarios"][0]["runtime"];
        let rules = rt["rules"].as_array_mut().unwrap();
        let i = rules
            .iter()
            .position(|r| r.get("pattern").is_some())
            .unwrap();
        rules[i]["pattern"] = "(".into();
        rules[0]["keywords"]["keys"] = serde_json::json!(["/(/"]);
        let cats = rt["safety"]["categories"].as_array_mut().unwrap();
        let c = cats
            .iter()
            .position(|c| c.get("patterns").is_some())
            .unwrap();
        cats[c]["patterns"] = serde_json::json!(["("]);
        let text = format!("{ir}\n");
        let read = read_ir(text.as_bytes(), &hash).expect("read without compiling a pattern");
        let rt = &read.scenarios[0].runtime;
        let rule = rt.rules.iter().find(|r| r.pattern.is_some()).unwrap();
        let pattern = rule.pattern.as_ref().unwrap();
        assert!(pattern.regex().is_err() && !pattern.is_match("("));
        assert!(!rt.rules[0].keywords.as_ref().unwrap().hits("("));
        let v = rt.safety.verdict("( 123-45-6789", false);
        assert_eq!(v.status, crate::compile::safety::Status::Ok, "{v:?}");
        // Not UTF-8: refused as a whole, at "".
        let mut bad = text.into_bytes();
        bad[1] = 0xff;
        assert_eq!(read_ir(&bad, &hash).unwrap_err().pointer, "");
    }
}

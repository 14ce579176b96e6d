//! The integrity of a compiled package (Format 14.4): `ir.json` is bound to
//! `bundle.json` by hashes (manifest `content_hash` and `ir_hash`, ir.json
//! `bundle_hash`), which detect corruption and partial edits; only
//! recompiling `bundle.json` (`troupe check`, `--verify-ir`) proves that
//! `ir.json` is its compilation. The example negotiation package is edited
//! three ways: (a) ir.json alone, (b) ir.json with the manifest's `ir_hash`
//! fixed up, (c) bundle.json alone.
//!
//! Expected outcomes derived from Format 14.4 and 19 by hand: the script
//! `used-car-safety.txt` is stopped at its second line by the `threats`
//! category (`I know where you live`, action `stop`).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;
use troupe::files::read_script;
use troupe::internals::check::check_paths;
use troupe::internals::open::open;
use troupe::internals::runtime::{Options, Session};
use troupe::SafetyStatus as Status;
use troupe::{Code, Severity};
use troupe::{OpenOptions, Pack, SessionOptions};

use crate::common::packages::{self, fix_ir_hash, get, play_safety, set, write};

const NEGOTIATION: &str = "examples/packs/everyday-negotiation";

/// The example package and its entries, `ir.json` its only compiled entry
/// (the tests of `ir.json` edit it; [`packages::compiled`]).
fn compiled() -> Vec<(String, Vec<u8>)> {
    packages::compiled(NEGOTIATION)
}

/// The example package as `troupe compile` writes it, with `ir.compact`.
fn compiled_full() -> Vec<(String, Vec<u8>)> {
    packages::compiled_full(NEGOTIATION)
}

/// Open options with verification (`--verify-ir`).
fn verifying() -> OpenOptions {
    let mut o = OpenOptions::default();
    o.verify_ir = true;
    o
}

/// The three unsafe edits of issue 11 applied to a bundle value: the safety
/// categories removed, the character made `fictional: false`, a reply
/// rewritten.
fn edit_bundle(bundle: &mut Value) {
    let sc = &mut bundle["scenarios"][0];
    sc["safety"]["categories"] = Value::Array(Vec::new());
    sc["rules"][0]["replies"] = serde_json::json!(["Rewritten."]);
    bundle["characters"][0]["fictional"] = Value::Bool(false);
}

/// ir.json with the compiled story edited (its own `bundle_hash` left as
/// it was): the safety policy's categories removed and a rule's reply
/// rewritten, in the compiled form the runtime runs.
fn edited_ir(e: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut ir: Value = serde_json::from_slice(get(e, "ir.json")).unwrap();
    let rt = &mut ir["scenarios"][0]["runtime"];
    assert!(rt["safety"]["categories"]
        .as_array()
        .is_some_and(|c| !c.is_empty()));
    rt["safety"]["categories"] = Value::Array(Vec::new());
    rt["rules"][0]["replies"] = serde_json::json!(["Rewritten."]);
    let mut s = ir.to_string();
    s.push('\n');
    s.into_bytes()
}

fn ir_mismatch(d: &[troupe::Diagnostic], severity: Severity) -> Vec<(String, String)> {
    d.iter()
        .filter(|d| d.code == Code::IrMismatch && d.severity == severity)
        .map(|d| {
            (
                d.location.file.clone().unwrap_or_default(),
                d.location.pointer.clone().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn the_compiled_example_package_uses_its_ir_and_checks_clean() {
    let dir = tempfile::tempdir().unwrap();
    // As written (with ir.compact) and with ir.json alone.
    for e in [compiled_full(), compiled()] {
        let p = write(dir.path(), "ok.troupe", &e);
        let o = Pack::open(&p).unwrap();
        assert!(o.from_ir() && o.warnings().is_empty());
        let v = Pack::open_with(&p, verifying()).unwrap();
        assert!(v.from_ir() && v.warnings().is_empty());
        assert!(check_paths(&[p]).diagnostics.is_empty());
    }
}

#[test]
fn a_naive_edit_of_ir_json_falls_back_and_still_stops_at_the_unsafe_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = compiled();
    let ir = edited_ir(&e);
    set(&mut e, "ir.json", ir);
    let p = write(dir.path(), "a.troupe", &e);
    let o = Pack::open(&p).unwrap();
    assert!(!o.from_ir(), "the edited IR is not used");
    let file = format!("{}!manifest.json", p.display());
    assert_eq!(
        ir_mismatch(o.warnings(), Severity::Warning),
        [(file, "/ir_hash".to_string())]
    );
    // The story run is bundle.json's: line 2 is stopped by `threats`.
    assert_eq!(play_safety(&o), [Status::Redirect, Status::Stop]);
    // Compiling the edited package writes a package that checks clean.
    let again = Pack::open_with(&p, {
        let mut o = OpenOptions::default();
        o.use_ir = false;
        o.verify_ir = false;
        o
    })
    .unwrap();
    let q = dir.path().join("again.troupe");
    std::fs::write(&q, again.compile().unwrap()).unwrap();
    assert!(check_paths(&[q]).is_valid(true));
}

#[test]
fn an_edit_with_its_hash_fixed_up_fails_check_and_verify_ir_falls_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = compiled();
    let ir = edited_ir(&e);
    set(&mut e, "ir.json", ir);
    fix_ir_hash(&mut e);
    let p = write(dir.path(), "b.troupe", &e);
    // Every hash agrees, so only recompiling tells: `check` is an error.
    let checked = check_paths(std::slice::from_ref(&p));
    assert!(!checked.is_valid(false));
    let file = format!("{}!ir.json", p.display());
    assert_eq!(
        ir_mismatch(&checked.diagnostics, Severity::Error),
        [(file.clone(), String::new())]
    );
    // `--verify-ir` recompiles at open: a warning, and bundle.json runs.
    let o = Pack::open_with(&p, {
        let mut o = OpenOptions::default();
        o.verify_ir = true;
        o
    })
    .unwrap();
    assert!(!o.from_ir());
    assert_eq!(
        ir_mismatch(o.warnings(), Severity::Warning),
        [(file, String::new())]
    );
    assert_eq!(play_safety(&o), [Status::Redirect, Status::Stop]);
    // `troupe compile` never takes the IR: what it writes checks clean.
    let c = Pack::open_with(&p, {
        let mut o = OpenOptions::default();
        o.use_ir = false;
        o.verify_ir = false;
        o
    })
    .unwrap();
    let q = dir.path().join("again.troupe");
    std::fs::write(&q, c.compile().unwrap()).unwrap();
    assert!(check_paths(&[q]).is_valid(true));
}

#[test]
fn an_edit_of_bundle_json_alone_fails_check_on_the_bundle_itself() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = compiled();
    let mut bundle: Value = serde_json::from_slice(get(&e, "bundle.json")).unwrap();
    edit_bundle(&mut bundle);
    set(&mut e, "bundle.json", format!("{bundle}\n").into_bytes());
    let p = write(dir.path(), "c.troupe", &e);
    let checked = check_paths(std::slice::from_ref(&p));
    assert!(!checked.is_valid(false));
    // The bundle's own diagnostic: `fictional` must be true (Format 4).
    assert!(checked.diagnostics.iter().any(|d| d.is_error()
        && d.code == Code::Schema
        && d.location.pointer.as_deref() == Some("/characters/0/fictional")));
    // The stale IR is a warning; the edited bundle does not run.
    let file = format!("{}!manifest.json", p.display());
    assert_eq!(
        ir_mismatch(&checked.diagnostics, Severity::Warning),
        [(file, "/content_hash".to_string())]
    );
    assert!(Pack::open(&p).is_err());
}

/// The compiled harbor-lights package (two derived variables: `ready`
/// reads `avg_trust`).
fn compiled_harbor() -> Vec<(String, Vec<u8>)> {
    packages::compiled("examples/packs/harbor-lights")
}

/// Edits the compiled story of harbor-lights' first scenario with `edit`,
/// fixes up `ir_hash` (so only the validator can tell), opens it, and
/// returns the IR_MISMATCH warnings (file, pointer), whether the IR was
/// used, the package's path and its directory (removed when dropped).
fn open_edited_story(
    edit: impl FnOnce(&mut Value),
) -> (Vec<(String, String)>, bool, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut e = compiled_harbor();
    let mut ir: Value = serde_json::from_slice(get(&e, "ir.json")).unwrap();
    edit(&mut ir["scenarios"][0]["story"]);
    set(&mut e, "ir.json", format!("{ir}\n").into_bytes());
    fix_ir_hash(&mut e);
    let p = write(dir.path(), "s.troupe", &e);
    let o = Pack::open(&p).unwrap();
    (
        ir_mismatch(o.warnings(), Severity::Warning),
        o.from_ir(),
        p,
        dir,
    )
}

#[test]
fn a_structurally_broken_ir_is_refused_by_the_validator_and_bundle_json_runs() {
    // An index out of range: a derived program's read slot past its
    // environment's slots (Format 14.4: every index in range).
    let (w, used, p, _dir) = open_edited_story(|s| {
        s["derived"][0]["reads"] = serde_json::json!([100000]);
    });
    assert!(!used, "the broken IR is not used");
    let file = format!("{}!ir.json", p.display());
    assert_eq!(w, [(file, "/scenarios/0/story/derived/0".to_string())]);
    // ... and the package still runs bundle.json's story.
    let o = Pack::open(&p).unwrap();
    let mut s = o.start(SessionOptions::default()).unwrap();
    assert!(s.turn("Hello").is_ok());
    // A slot count that the variables' layouts do not add up to.
    let (w, used, p, _dir) = open_edited_story(|s| {
        let n = s["slot_count"].as_u64().unwrap();
        s["slot_count"] = (n + 1).into();
    });
    assert!(!used);
    let file = format!("{}!ir.json", p.display());
    assert_eq!(w, [(file, "/scenarios/0/story/slot_count".to_string())]);
    // A constant regular expression that does not compile (the IR cannot
    // be read as an IR).
    let (w, used, _, _dir) = open_edited_story(|s| {
        s["events"] = serde_json::json!([{"id": "x", "when": {"root": {"MatchesConst": [{"Const": {"String": "a"}}, "("]}, "result_type": "Bool", "branches": [], "source": "", "reads": []}, "repeat": false, "end": false, "changes": [], "signal": null}]);
    });
    assert!(!used);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].1, "");
}

#[test]
fn owner_environments_must_fit_the_one_base_written_for_them() {
    // The shared declarations are written once (`story/base_env`) and each
    // owner's environment is linked to them when read (Format 14.4).
    let (w, used, p, _dir) = open_edited_story(|s| {
        assert!(s["base_env"].is_object());
        s["base_env"] = Value::Null;
    });
    assert!(!used, "an environment without its base is not used");
    let file = format!("{}!ir.json", p.display());
    assert_eq!(w, [(file, "/scenarios/0/story/envs/0/env".to_string())]);
    // A base with another number of slots than the owner was compiled
    // against: one slot dropped from the base.
    let (w, used, p, _dir) = open_edited_story(|s| {
        s["base_env"]["slots"].as_array_mut().unwrap().pop();
    });
    assert!(!used);
    let file = format!("{}!ir.json", p.display());
    assert_eq!(w, [(file, "/scenarios/0/story/envs/0/env".to_string())]);
    // The unedited package runs from its IR, with every owner's slots.
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "ok.troupe", &compiled());
    // The internal open: the IR's environments are not on the API's `Pack`.
    let o = open(&p).unwrap();
    assert!(o.from_ir && o.warnings.is_empty());
    let ir = o.ir.as_ref().unwrap();
    let story = &ir.scenarios[0].story;
    for e in &story.envs {
        assert!(e.env.is_linked());
        assert_eq!(e.env.slot_count(), e.sources.len());
        assert!(e.env.slot("state.deal_progress").is_some());
    }
}

#[test]
fn a_rules_written_changes_must_be_a_list() {
    // A rule's changes as written are kept as JSON text in the IR and read
    // back when the rule is chosen; the loader checks they are an array.
    let dir = tempfile::tempdir().unwrap();
    let mut e = compiled();
    let mut ir: Value = serde_json::from_slice(get(&e, "ir.json")).unwrap();
    let rule = &mut ir["scenarios"][0]["runtime"]["rules"][0];
    assert!(rule["changes_json"].is_array());
    rule["changes_json"] = serde_json::json!({"add": {"patience": 1}});
    set(&mut e, "ir.json", format!("{ir}\n").into_bytes());
    fix_ir_hash(&mut e);
    let p = write(dir.path(), "c.troupe", &e);
    let o = Pack::open(&p).unwrap();
    assert!(!o.from_ir());
    let file = format!("{}!ir.json", p.display());
    assert_eq!(
        ir_mismatch(o.warnings(), Severity::Warning),
        [(
            file,
            "/scenarios/0/runtime/rules/0/changes_json".to_string()
        )]
    );
}

/// Issue 43, item 9: a rule holds its changes twice — as written (the
/// session file records them) and lowered (applied to the state). An IR
/// edited so the two differ, its hash fixed up, printed one change while
/// the session recorded another; Format 14.4's soundness now ties them:
/// IR_MISMATCH at the rule's `changes_json` and bundle.json runs.
#[test]
fn a_rules_written_and_lowered_changes_must_agree() {
    let base = compiled();
    let ir: Value = serde_json::from_slice(get(&base, "ir.json")).unwrap();
    let rules = ir["scenarios"][0]["runtime"]["rules"].as_array().unwrap();
    let i = rules
        .iter()
        .position(|r| r["changes_json"].as_array().is_some_and(|c| !c.is_empty()))
        .expect("a rule with changes");
    let edits: [fn(&mut Value); 2] = [
        // The written changes emptied: the lowered ones still apply.
        |r| r["changes_json"] = serde_json::json!([]),
        // The lowered changes emptied: the written ones are still recorded.
        |r| r["changes"] = serde_json::json!([]),
    ];
    for edit in edits {
        let dir = tempfile::tempdir().unwrap();
        let mut e = base.clone();
        let mut ir = ir.clone();
        edit(&mut ir["scenarios"][0]["runtime"]["rules"][i]);
        set(&mut e, "ir.json", format!("{ir}\n").into_bytes());
        fix_ir_hash(&mut e);
        let p = write(dir.path(), "c.troupe", &e);
        let o = Pack::open(&p).unwrap();
        assert!(!o.from_ir());
        let file = format!("{}!ir.json", p.display());
        assert_eq!(
            ir_mismatch(o.warnings(), Severity::Warning),
            [(file, format!("/scenarios/0/runtime/rules/{i}/changes_json"))]
        );
    }
    // Unedited packages of both examples (keyed variables, scene moves)
    // pass the same check and run from their IR.
    for e in [compiled(), compiled_harbor()] {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "ok.troupe", &e);
        let o = Pack::open(&p).unwrap();
        assert!(o.from_ir() && o.warnings().is_empty(), "{:?}", o.warnings());
    }
}

#[test]
fn a_derived_order_with_a_cycle_is_refused() {
    // Swap the two derived programs (and the variables' indices of them):
    // `ready` now comes first and reads `avg_trust`, computed after it —
    // a parent after its child (Format 14.4, 8.1).
    let (w, used, p, _dir) = open_edited_story(|s| {
        let d = s["derived"].as_array_mut().unwrap();
        assert_eq!(d.len(), 2);
        d.swap(0, 1);
        for v in s["vars"].as_array_mut().unwrap() {
            if let Some(i) = v["derived"].as_u64() {
                v["derived"] = (1 - i).into();
            }
        }
    });
    assert!(!used);
    let file = format!("{}!ir.json", p.display());
    assert_eq!(w, [(file, "/scenarios/0/story/derived/0".to_string())]);
    // `check` of such a package is an error (it is not bundle.json's
    // compilation although its hashes agree).
    let checked = check_paths(std::slice::from_ref(&p));
    assert!(!checked.is_valid(false));
}

#[test]
fn a_session_from_the_ir_starts_without_parsing_the_bundle() {
    let dir = tempfile::tempdir().unwrap();
    for e in [compiled_full(), compiled()] {
        let p = write(dir.path(), "ok.troupe", &e);
        // The internal open: the IR and whether the bundle was parsed are not
        // on the API's `Pack`.
        let o = open(&p).unwrap();
        assert!(o.from_ir && o.ir.is_some());
        let mut s = Session::start(&o, &Options::default()).unwrap();
        s.turn("Hello Marco!").unwrap();
        assert!(
            !o.bundle.is_parsed(),
            "default seating runs from the IR alone (Format 14.4)"
        );
    }
}

/// Issue 43, item 9: `troupe mcp`'s `run` tool opens a package the way
/// `troupe run --verify-ir` does. The edited IR (safety categories removed)
/// with its hash fixed up does not run: the result's text names
/// IR_MISMATCH, and `bundle.json` runs, so the threat on the second line
/// is stopped as the checked story says (not a small-talk reply).
#[cfg(feature = "mcp")]
#[test]
fn mcp_run_verifies_a_package_as_verify_ir_does() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let mut e = compiled();
    let ir = edited_ir(&e);
    set(&mut e, "ir.json", ir);
    fix_ir_hash(&mut e);
    write(dir.path(), "b.troupe", &e);
    let lines = read_script(Path::new("examples/scripts/used-car-safety.txt")).unwrap();
    let requests = [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "cargo-test", "version": "0"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "run", "arguments": {"pack": "b.troupe", "lines": lines}}}),
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .arg("mcp")
        .arg("--root")
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answers = Vec::new();
    for r in &requests {
        writeln!(stdin, "{r}").unwrap();
        stdin.flush().unwrap();
        if r.get("id").is_some() {
            let line = out.next().unwrap().unwrap();
            answers.push(serde_json::from_str::<Value>(&line).unwrap());
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let result = &answers[1]["result"];
    assert_ne!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("warning[IR_MISMATCH]"), "{text}");
    let turns = result["structuredContent"]["turns"].as_array().unwrap();
    let safety: Vec<&str> = turns
        .iter()
        .map(|t| t["safety_status"].as_str().unwrap())
        .collect();
    assert_eq!(safety, ["redirect", "stop"], "{result}");
}

/// Issue 38: an opened package keeps no `bundle.json` once its hashes are
/// checked (Format 14.4): with the package file deleted after the open, a
/// session of default seating plays from `ir.json` alone — under the rules
/// runtime and under the model runtime (the committed example cassette,
/// whose requests must be byte for byte the ones the source pack sends) —
/// and its file is the source pack's, byte for byte. A session that needs
/// the bundle (another player name) is then refused, never a panic.
#[test]
fn a_package_plays_from_its_ir_after_the_file_is_deleted() {
    use troupe::model_runtime::{Backend, ModelRuntime, Settings};
    use troupe::{Pack, SessionOptions};
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "ok.troupe", &compiled_full());
    let package = Pack::open(&p).unwrap();
    assert!(package.from_ir());
    std::fs::remove_file(&p).unwrap();
    let source = Pack::open(NEGOTIATION).unwrap();
    let script = std::fs::read_to_string("examples/model/negotiation.script.txt").unwrap();
    let play = |pack: &Pack, model: bool| {
        let mut options = SessionOptions::default();
        if model {
            let backend = Backend::replay("examples/model/negotiation.cassette.json").unwrap();
            options = options.runtime(ModelRuntime::new(Settings::default(), backend).adapter());
        }
        let mut s = pack.start(options).unwrap();
        for line in script.lines().filter(|l| !l.trim().is_empty()) {
            let r = s.turn(line).unwrap();
            assert!(r.reply.is_some(), "a reply to {line:?}");
        }
        s.jsonl().to_string()
    };
    for model in [false, true] {
        assert_eq!(
            play(&package, model),
            play(&source, model),
            "model: {model}"
        );
    }
    let Err(refused) = package.start(SessionOptions::default().player_name("Robin")) else {
        panic!("no bundle to compile another seating from");
    };
    assert!(refused.to_string().contains("bundle.json"), "{refused}");
}

// ------------------------------------------------------------ ir.compact
//
// Format 14.4, "ir.compact": tried first when the package has it; used when
// manifest.json and ir.json are present, content_hash and ir_version agree,
// the ir.json hash it records equals the manifest's ir_hash, the hash it
// records of its IR equals those bytes' hash, and its IR reads and is sound
// (IR version, bundle_hash, nesting, soundness). Otherwise IR_MISMATCH (a
// warning) at `ir.compact` — `""` for a record that is missing or differs
// or an IR that cannot be read, the pointer into the IR where a check names
// one — and the loader goes on with ir.json as if ir.compact were absent.

/// The file name of entry `entry` of the package at `p`.
fn at(p: &Path, entry: &str) -> String {
    format!("{}!{entry}", p.display())
}

/// `ir.compact` for `ir_json` (the bytes of an `ir.json` with this
/// package's `bundle_hash`) whose record names `ir_json_hash`, as an editor
/// who recomputes the record writes it.
fn compact_of(ir_json: &[u8], ir_json_hash: &str, bundle_hash: &str) -> Vec<u8> {
    use troupe::internals::compile::{read_ir, to_ir_bin};
    let ir = read_ir(ir_json, bundle_hash).unwrap();
    troupe::internals::load::compact_entry(ir_json_hash, &to_ir_bin(&ir))
}

/// The manifest's field `f`.
fn manifest_field(e: &[(String, Vec<u8>)], f: &str) -> String {
    let m: Value = serde_json::from_slice(get(e, "manifest.json")).unwrap();
    m[f].as_str().unwrap().to_string()
}

/// The session file of the script `used-car-safety.txt` played on `o`.
fn session_bytes(o: &Pack) -> String {
    let inputs = read_script(Path::new("examples/scripts/used-car-safety.txt")).unwrap();
    let mut s = o.start(SessionOptions::default()).unwrap();
    for i in &inputs {
        if s.ended() {
            break;
        }
        s.turn(i).unwrap();
    }
    s.jsonl().to_string()
}

#[test]
fn compile_writes_ir_compact_and_it_plays_the_same_session_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let full = compiled_full();
    let names: Vec<&str> = full.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["bundle.json", "ir.compact", "ir.json", "manifest.json"],
        "14.4: code point order of names"
    );
    let with = write(dir.path(), "with.troupe", &full);
    let without = write(dir.path(), "without.troupe", &compiled());
    let a = Pack::open(&with).unwrap();
    let b = Pack::open(&without).unwrap();
    let source = Pack::open(NEGOTIATION).unwrap();
    assert!(a.from_ir() && a.warnings().is_empty(), "{:?}", a.warnings());
    let played = session_bytes(&a);
    assert_eq!(played, session_bytes(&b));
    assert_eq!(played, session_bytes(&source));
    // In memory, as the server and the Python binding open an upload.
    let bytes = std::fs::read(&with).unwrap();
    let pack = troupe::Pack::from_package(&bytes).unwrap();
    assert!(pack.from_ir() && pack.warnings().is_empty());
    // ir.json is neither read nor hashed when ir.compact is used: garbage
    // there (its hash not fixed up) changes nothing at load...
    let mut e = full.clone();
    set(&mut e, "ir.json", b"not an IR".to_vec());
    let p = write(dir.path(), "garbage.troupe", &e);
    let o = Pack::open(&p).unwrap();
    assert!(o.from_ir() && o.warnings().is_empty(), "{:?}", o.warnings());
    assert_eq!(session_bytes(&o), played);
    // ... and `check` reports it (the loader's warning, 14.4 Checking).
    let checked = check_paths(std::slice::from_ref(&p));
    assert!(checked.is_valid(false));
    assert_eq!(
        ir_mismatch(&checked.diagnostics, Severity::Warning),
        [(at(&p, "manifest.json"), "/ir_hash".to_string())]
    );
}

#[test]
fn a_tampered_or_truncated_ir_compact_is_not_used_and_ir_json_runs() {
    let dir = tempfile::tempdir().unwrap();
    let full = compiled_full();
    let compact = get(&full, "ir.compact").to_vec();
    let mut flipped = compact.clone();
    let n = flipped.len();
    flipped[n - 10] ^= 0x20;
    let mut record = compact.clone();
    record[10] = if record[10] == b'0' { b'1' } else { b'0' };
    for (what, bad) in [
        ("a byte of its IR changed", flipped),
        ("truncated", compact[..n / 2].to_vec()),
        ("cut in its record", compact[..80].to_vec()),
        ("its record's ir.json hash changed", record),
        ("empty", Vec::new()),
    ] {
        let mut e = full.clone();
        set(&mut e, "ir.compact", bad);
        let p = write(dir.path(), "t.troupe", &e);
        let o = Pack::open(&p).unwrap();
        assert_eq!(
            ir_mismatch(o.warnings(), Severity::Warning),
            [(at(&p, "ir.compact"), String::new())],
            "{what}"
        );
        assert!(o.from_ir(), "{what}: ir.json is used");
        assert_eq!(play_safety(&o), [Status::Redirect, Status::Stop], "{what}");
        // `check` says the same, and a stale entry is not an error.
        let checked = check_paths(std::slice::from_ref(&p));
        assert!(checked.is_valid(false), "{what}");
        assert_eq!(
            ir_mismatch(&checked.diagnostics, Severity::Warning),
            [(at(&p, "ir.compact"), String::new())],
            "{what}"
        );
    }
}

#[test]
fn an_ir_compact_from_another_pack_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let full = compiled_full();
    let harbor = packages::compiled_full("examples/packs/harbor-lights");
    // As it is: it records harbor's ir.json hash.
    let mut e = full.clone();
    set(&mut e, "ir.compact", get(&harbor, "ir.compact").to_vec());
    let p = write(dir.path(), "h.troupe", &e);
    let o = Pack::open(&p).unwrap();
    assert_eq!(
        ir_mismatch(o.warnings(), Severity::Warning),
        [(at(&p, "ir.compact"), String::new())]
    );
    assert!(o.from_ir());
    assert_eq!(play_safety(&o), [Status::Redirect, Status::Stop]);
    // Its record fixed up to this package's ir_hash: the record agrees,
    // and the IR's own bundle_hash tells (at /bundle_hash).
    let harbor_hash = manifest_field(&harbor, "content_hash");
    let fixed = compact_of(
        get(&harbor, "ir.json"),
        &manifest_field(&full, "ir_hash"),
        &harbor_hash,
    );
    let mut e = full.clone();
    set(&mut e, "ir.compact", fixed);
    let p = write(dir.path(), "h2.troupe", &e);
    let o = Pack::open(&p).unwrap();
    assert_eq!(
        ir_mismatch(o.warnings(), Severity::Warning),
        [(at(&p, "ir.compact"), "/bundle_hash".to_string())]
    );
    assert!(o.from_ir());
    assert_eq!(play_safety(&o), [Status::Redirect, Status::Stop]);
}

#[test]
fn an_ir_compact_whose_record_agrees_but_whose_ir_differs_fails_check_and_verify_ir_falls_back_to_ir_json(
) {
    let dir = tempfile::tempdir().unwrap();
    let mut e = compiled_full();
    // The edited story (safety categories removed), encoded, its record
    // naming this package's ir.json: every hash agrees.
    let bundle_hash = manifest_field(&e, "content_hash");
    let edited = compact_of(&edited_ir(&e), &manifest_field(&e, "ir_hash"), &bundle_hash);
    set(&mut e, "ir.compact", edited);
    let p = write(dir.path(), "d.troupe", &e);
    // Without verification the hashes cannot tell: the edited IR runs
    // (14.4, threat model), and its story has no safety category: the
    // script's three lines all play, none flagged.
    let o = Pack::open(&p).unwrap();
    assert!(o.from_ir() && o.warnings().is_empty());
    assert_eq!(play_safety(&o), [Status::Ok, Status::Ok, Status::Ok]);
    // `check` compiles: an error at ir.compact, none at ir.json.
    let checked = check_paths(std::slice::from_ref(&p));
    assert!(!checked.is_valid(false));
    assert_eq!(
        ir_mismatch(&checked.diagnostics, Severity::Error),
        [(at(&p, "ir.compact"), String::new())]
    );
    assert!(ir_mismatch(&checked.diagnostics, Severity::Warning).is_empty());
    // `--verify-ir`: a warning at ir.compact, then ir.json, verified, runs.
    let v = Pack::open_with(&p, verifying()).unwrap();
    assert_eq!(
        ir_mismatch(v.warnings(), Severity::Warning),
        [(at(&p, "ir.compact"), String::new())]
    );
    assert!(v.from_ir());
    assert_eq!(play_safety(&v), [Status::Redirect, Status::Stop]);
    // ... and with ir.json edited the same way (its hash fixed up), both
    // are refused and bundle.json runs.
    let ir = edited_ir(&e);
    set(&mut e, "ir.json", ir);
    fix_ir_hash(&mut e);
    let ir = get(&e, "ir.json").to_vec();
    let edited = compact_of(&ir, &manifest_field(&e, "ir_hash"), &bundle_hash);
    set(&mut e, "ir.compact", edited);
    let p = write(dir.path(), "d2.troupe", &e);
    let v = Pack::open_with(&p, verifying()).unwrap();
    assert_eq!(
        ir_mismatch(v.warnings(), Severity::Warning),
        [
            (at(&p, "ir.compact"), String::new()),
            (at(&p, "ir.json"), String::new())
        ]
    );
    assert!(!v.from_ir());
    assert_eq!(play_safety(&v), [Status::Redirect, Status::Stop]);
    let checked = check_paths(std::slice::from_ref(&p));
    assert_eq!(
        ir_mismatch(&checked.diagnostics, Severity::Error),
        [
            (at(&p, "ir.compact"), String::new()),
            (at(&p, "ir.json"), String::new())
        ]
    );
}

#[test]
fn edits_of_ir_json_in_a_package_with_ir_compact_as_14_4_says() {
    let dir = tempfile::tempdir().unwrap();
    // A naive edit of ir.json (its hash not fixed up): ir.compact still
    // agrees with the manifest and runs the checked story; `check` warns.
    let mut e = compiled_full();
    let ir = edited_ir(&e);
    set(&mut e, "ir.json", ir);
    let p = write(dir.path(), "a.troupe", &e);
    let o = Pack::open(&p).unwrap();
    assert!(o.from_ir() && o.warnings().is_empty());
    assert_eq!(play_safety(&o), [Status::Redirect, Status::Stop]);
    let checked = check_paths(std::slice::from_ref(&p));
    assert_eq!(
        ir_mismatch(&checked.diagnostics, Severity::Warning),
        [(at(&p, "manifest.json"), "/ir_hash".to_string())]
    );
    // The spec's example: slot_count one higher, ir_hash fixed up. The
    // record of ir.compact names the old ir.json: IR_MISMATCH there, then
    // at ir.json's slot_count, and bundle.json runs.
    let mut e = compiled_full();
    let ir = packages::edited(&e, |sc| {
        let n = sc["story"]["slot_count"].as_u64().unwrap();
        sc["story"]["slot_count"] = (n + 1).into();
    });
    set(&mut e, "ir.json", ir);
    fix_ir_hash(&mut e);
    let p = write(dir.path(), "b.troupe", &e);
    let o = Pack::open(&p).unwrap();
    assert_eq!(
        ir_mismatch(o.warnings(), Severity::Warning),
        [
            (at(&p, "ir.compact"), String::new()),
            (
                at(&p, "ir.json"),
                "/scenarios/0/story/slot_count".to_string()
            )
        ]
    );
    assert!(!o.from_ir());
    // An edited bundle.json: reported once, at /content_hash, whichever
    // entry would have been used.
    let mut e = compiled_full();
    let mut bundle: Value = serde_json::from_slice(get(&e, "bundle.json")).unwrap();
    bundle["x-note"] = "edited".into();
    set(&mut e, "bundle.json", format!("{bundle}\n").into_bytes());
    let p = write(dir.path(), "c.troupe", &e);
    let o = Pack::open(&p).unwrap();
    assert_eq!(
        ir_mismatch(o.warnings(), Severity::Warning),
        [(at(&p, "manifest.json"), "/content_hash".to_string())]
    );
    assert!(!o.from_ir());
}

#[test]
fn an_ir_compact_without_ir_json_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = compiled_full();
    e.retain(|(n, _)| n != "ir.json");
    let p = write(dir.path(), "n.troupe", &e);
    let o = Pack::open(&p).unwrap();
    assert_eq!(
        ir_mismatch(o.warnings(), Severity::Warning),
        [(at(&p, "ir.compact"), String::new())]
    );
    assert!(!o.from_ir());
    assert_eq!(play_safety(&o), [Status::Redirect, Status::Stop]);
}

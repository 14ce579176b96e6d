//! The `--json` documents of Format 20.1: each command's document has exactly
//! the members the table lists, in that order, with the JSON types it gives.
//! Run on the example bundle and its walkthrough session.

use std::process::Command;

use serde_json::Value;

fn json(args: &[&str]) -> Value {
    run_json(args, Some(0))
}

/// As [`json`], whatever the exit code.
fn json_any(args: &[&str]) -> Value {
    run_json(args, None)
}

fn run_json(args: &[&str], code: Option<i32>) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(args)
        .output()
        .expect("runs");
    if code.is_some() {
        assert_eq!(
            out.status.code(),
            code,
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    assert!(
        text.ends_with('\n'),
        "{args:?}: one document, then a newline"
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: one JSON document: {e}"))
}

/// Validates `doc` against `schemas/output/<name>.schema.json` (offline:
/// each output schema is self-contained).
fn conforms(name: &str, doc: &Value) {
    let path = format!(
        "{}/schemas/output/{name}.schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{path}: {e}"));
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:#?}");
}

#[test]
fn the_output_schemas_refuse_other_documents() {
    let path = format!(
        "{}/schemas/output/state.schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    assert!(
        !v.is_valid(&serde_json::json!({"at": null})),
        "members missing"
    );
    let mut extra = json(&["state", BUNDLE, SESSION, "--json"]);
    extra["mystery"] = Value::Bool(true);
    assert!(!v.is_valid(&extra), "an unknown member");
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}

const BUNDLE: &str = "examples/bundles/harbor-lights.bundle.json";
const SESSION: &str = "examples/bundles/sessions/harbor-lights.walkthrough.jsonl";

#[test]
fn check_state_and_ended_documents() {
    let c = json(&["check", BUNDLE, "--json"]);
    assert_eq!(keys(&c), ["valid", "errors", "warnings", "diagnostics"]);
    assert_eq!(c["valid"], true);
    conforms("check", &c);
    let broken = json_any(&[
        "check",
        "examples/broken/unknown-field.bundle.json",
        "--json",
    ]);
    assert_eq!(broken["valid"], false);
    conforms("check", &broken);

    let s = json(&["state", BUNDLE, SESSION, "--json"]);
    assert_eq!(
        keys(&s),
        ["at", "turn", "round", "ended", "outcome", "state"]
    );
    // No --at: the session's last message in file order (issue 42: one
    // default across state, ended, explain and plot); the walkthrough's
    // last line is m13. --initial: the initial state, `at` null.
    assert_eq!(s["at"], "m13", "no --at: the last message in file order");
    let initial = json(&["state", BUNDLE, SESSION, "--initial", "--json"]);
    assert!(initial["at"].is_null(), "--initial: the initial state");
    assert_eq!(initial["turn"], 0);
    let both = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(["state", BUNDLE, SESSION, "--initial", "--at", "m2"])
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2), "--at and --initial together");
    let state = keys(&s["state"]);
    assert_eq!(
        state[..2],
        ["scene.location", "scene.present"],
        "state order (18.6)"
    );

    let e = json(&["ended", BUNDLE, SESSION, "--at", "m2", "--json"]);
    assert_eq!(keys(&e), ["at", "ended", "ending", "outcome"]);
    assert_eq!(e["at"], "m2");
    assert!(e["ended"].is_boolean());
    conforms("ended", &e);
}

#[test]
fn knows_render_and_explain_documents() {
    let k = json(&[
        "knows",
        BUNDLE,
        SESSION,
        "--message",
        "m2",
        "--part",
        "0",
        "--json",
    ]);
    let ids: Vec<&str> = k
        .as_array()
        .expect("an array")
        .iter()
        .map(|v| v.as_str().expect("IDs"))
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted, "code point order (7.4)");
    conforms("knows", &k);

    let r = json(&["render", BUNDLE, "--text", "{{narrator}}", "--json"]);
    assert!(r.is_string(), "render prints one JSON string");
    conforms("render", &r);

    let t = json(&["transcript", BUNDLE, SESSION, "--format", "json"]);
    assert_eq!(keys(&t), ["scenario", "at", "messages"]);
    assert_eq!(keys(&t["messages"][0]), ["id", "author", "name", "parts"]);
    conforms("transcript", &t);

    let x = json(&["explain", BUNDLE, SESSION, "--at", "m2", "--json"]);
    assert_eq!(keys(&x), ["at", "scenario", "active", "entries"]);
    let entry = &x["entries"][0];
    assert_eq!(
        keys(entry),
        [
            "index",
            "id",
            "owner",
            "pointer",
            "order",
            "position",
            "constant",
            "active",
            "why",
            "scanned",
            "hits",
            "missed",
            "secondary",
            "when",
            "step"
        ]
    );
    assert!(keys(&entry["when"]).contains(&"result"));
    conforms("explain", &x);
}

#[test]
fn run_document_holds_every_turn_result_field() {
    let r = json(&[
        "run",
        "examples/packs/everyday-negotiation",
        "--script",
        "examples/scripts/used-car-good-deal.txt",
        "--json",
    ]);
    assert_eq!(keys(&r), ["opening", "turns", "unplayed", "score"]);
    assert_eq!(
        keys(&r["opening"]),
        ["message", "opening", "text", "firings", "ended", "outcome"]
    );
    let turn = &r["turns"][0];
    assert_eq!(
        keys(turn),
        [
            "turn",
            "messages",
            "rule",
            "reply",
            "state_delta",
            "firings",
            "session_control",
            "safety_status",
            "npc_emotion",
            "ended",
            "outcome",
            "score",
            "replies",
            "diagnostics"
        ],
        "Format 18.6, in its order"
    );
    conforms("run", &r);
}

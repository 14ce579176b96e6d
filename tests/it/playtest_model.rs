//! Model-driven playtest personas (Format 22.3) with a real backend: lines
//! from a server on the loopback interface, recorded to a cassette and
//! replayed byte-identically with the server stopped, a playtest's own
//! `cassette` (22.1, 22.7), the NOT RUN verdict (22.6, 21.1), the
//! UNMOCKED_MODEL_CALL pointer (24.5), safety on a model's line (18.5,
//! 19.4), and the API key absent from every output. Expected values are
//! derived by hand from the example pack's rules (see each test).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::loopback::{ok, serve, status};
use common::{edit, pack};
use serde_json::{json, Value};
use troupe::model_runtime::{Backend, Settings};
use troupe::tools::{run_playtests_with, PlaytestOptions, PlaytestReport, Verdict};

const KEY: &str = "sk-persona-SECRET-7777-do-not-leak";

/// `troupe ARGS…` with the key in `TEST_PERSONA_KEY`.
fn troupe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(args)
        .env("TEST_PERSONA_KEY", KEY)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/packs/everyday-negotiation")
}

/// The three lines the server says, in order (the example's recording).
fn lines() -> Vec<common::loopback::Answer> {
    vec![
        ok(json!({"say": "What a lovely car."})),
        ok(json!({"say": "You have a beautiful lot here."})),
        ok(json!({"say": "So, what would you take for it?"})),
    ]
}

fn run_lib(root: &Path, settings: Settings, backend: Backend) -> PlaytestReport {
    let pack = troupe::Pack::open(root).unwrap();
    let options = {
        let mut o = PlaytestOptions::default();
        o.model = Some((settings, backend));
        o
    };
    run_playtests_with(&pack, root, Some("model_charm"), options)
        .unwrap()
        .remove(0)
}

/// Validates a `troupe playtest --json` document against
/// schemas/output/playtest.schema.json (Format 22.6).
fn conforms(doc: &Value) {
    let path = format!(
        "{}/schemas/output/playtest.schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

fn assert_no_key(texts: &[&str]) {
    for t in texts {
        assert!(!t.contains(KEY), "the key leaked: {t}");
    }
}

#[test]
fn persona_lines_from_a_server_are_recorded_then_replay_byte_identically() {
    // model_charm (seed 7, 3 rounds): round 1 "What a lovely car." is m2
    // (impression 50 -> 62, reply m3); round 2 "You have a beautiful lot
    // here." is m4 (-> 74, reply m5): `charm` (>= 70) is met at m5, round 2,
    // turn 2. Round 3 asks once more: 3 requests of 120 tokens each.
    let (dir, root) = pack("everyday-negotiation");
    let s = serve(lines());
    let cassette = dir.path().join("rec.json");
    let settings = {
        let mut o = Settings::default();
        o.model = "m".into();
        o
    };
    let backend = Backend::record(
        &s.url,
        Some(KEY.into()),
        Duration::from_secs(10),
        cassette.clone(),
    );
    let recorded = run_lib(&root, settings.clone(), backend);
    assert_eq!(recorded.status, Verdict::Pass, "{}", recorded.to_text());
    let charm = &recorded.goals[0];
    assert_eq!(
        charm.evidence,
        json!({"message": "m5", "round": 2, "turn": 2})
    );
    let m = &recorded.model[0];
    assert_eq!((m.agent.as_str(), m.requests), ("mo", 3));
    assert_eq!(m.usage.total_tokens, 360);
    assert!(m.refused.is_empty(), "{:?}", m.refused);
    // What the server got: the key as a bearer token, the settings, the
    // seed, the `say` schema, the instructions and goals, the transcript.
    let seen = s.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].0.as_deref(), Some(&*format!("Bearer {KEY}")));
    let body = &seen[1].1;
    assert_eq!(body["model"], "m");
    assert_eq!(body["seed"], 7);
    assert_eq!(body["max_tokens"], 512);
    assert_eq!(
        body["response_format"]["json_schema"]["schema"]["required"],
        json!(["say"])
    );
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.starts_with("You are Mo, a friendly buyer at Marco's used-car lot."),
        "{system}"
    );
    assert!(
        system.contains("## Your goals\n- Win Marco over\n"),
        "{system}"
    );
    // Round 2 has seen the opening, its own line (its character is the
    // responder of 24.3, so the line is the assistant's) and Marco's reply.
    let msgs = body["messages"].as_array().unwrap();
    assert!(msgs
        .iter()
        .any(|m| m["role"] == "assistant" && m["content"] == "What a lovely car."));
    let cassette_text = std::fs::read_to_string(&cassette).unwrap();
    assert_no_key(&[&cassette_text, &recorded.to_text()]);
    for (_, session) in &recorded.sessions {
        assert_no_key(&[session]);
    }
    // Replayed with the server stopped: the same report and session bytes.
    drop(s);
    let replayed = run_lib(&root, settings, Backend::replay(&cassette).unwrap());
    assert_eq!(replayed, recorded);
    assert_eq!(replayed.sessions, recorded.sessions);
    // And from the command line, the report as JSON, twice the same.
    let c = cassette.to_str().unwrap();
    let args = [
        "playtest",
        root.to_str().unwrap(),
        "model_charm",
        "--runtime",
        "model",
        "--model",
        "m",
        "--cassette",
        c,
        "--json",
    ];
    let o = troupe(&args);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        doc["playtests"][0],
        serde_json::to_value(&recorded).unwrap()
    );
    assert_eq!(doc["playtests"][0]["model"][0]["requests"], 3);
    assert_eq!(text(&troupe(&args)).0, out);
    assert_no_key(&[&out, &err]);
}

#[test]
fn the_committed_example_replays_its_cassette_offline() {
    // examples/packs/everyday-negotiation/playtests/model_charm.yaml names
    // cassettes/model_buyer.json: no flag, no server. Usage and requests are
    // shown in text (Format 22.6).
    let root = example();
    let o = troupe(&["playtest", root.to_str().unwrap(), "model_charm"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.starts_with("PASS model_charm\n"), "{out}");
    assert!(out.contains("  mo/charm: met"), "{out}");
    assert!(out.contains("  model mo: 3 requests · "), "{out}");
    assert!(out.contains(" tokens ("), "{out}");
    let o = troupe(&["playtest", root.to_str().unwrap(), "model_charm", "--json"]);
    let doc: Value = serde_json::from_str(&text(&o).0).unwrap();
    conforms(&doc);
    let m = &doc["playtests"][0]["model"][0];
    assert_eq!(m["agent"], "mo");
    assert_eq!(m["requests"], 3);
    assert!(m["usage"]["total_tokens"].as_u64().unwrap() > 0);
    // `troupe test` runs it in stage 5, and the whole pack passes.
    let o = troupe(&["test", root.to_str().unwrap(), "--json"]);
    let doc: Value = serde_json::from_str(&text(&o).0).unwrap();
    assert_eq!(o.status.code(), Some(0), "{doc}");
    let stage = &doc["stages"][4];
    let t = stage["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "model_charm")
        .unwrap();
    assert_eq!(t["status"], "PASS");
}

#[test]
fn a_persona_without_a_backend_is_not_run() {
    // No answers, no cassette, no --runtime model: NOT RUN (Format 22.3,
    // 22.6): exit 6 from `troupe playtest`, SKIP in `troupe test`, counted
    // as skipped in JUnit, never as passed.
    let (dir, root) = pack("everyday-negotiation");
    edit(
        &root,
        "playtests/model_charm.yaml",
        "cassette: cassettes/model_buyer.json\n",
        "",
    );
    let r = root.to_str().unwrap();
    let reason = "persona model_buyer speaks through a model and has no model backend (no answers, no cassette, no --runtime model)";
    let o = troupe(&["playtest", r, "model_charm"]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(6), "{out}");
    assert_eq!(out, format!("NOT RUN model_charm\n  reason: {reason}\n"));
    let o = troupe(&["playtest", r, "model_charm", "--json"]);
    let doc: Value = serde_json::from_str(&text(&o).0).unwrap();
    conforms(&doc);
    assert_eq!(doc["playtests"][0]["status"], "NOT RUN");
    assert_eq!(doc["playtests"][0]["reason"], reason);
    // With the other playtests: none FAILs, so still 6.
    let o = troupe(&["playtest", r]);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o).0);
    // troupe test: a SKIP test, the stage PASS (the others pass), exit 0.
    let junit = dir.path().join("junit.xml");
    let o = troupe(&["test", r, "--json", "--junit", junit.to_str().unwrap()]);
    let doc: Value = serde_json::from_str(&text(&o).0).unwrap();
    assert_eq!(o.status.code(), Some(0), "{doc}");
    let stage = &doc["stages"][4];
    assert_eq!(stage["status"], "PASS");
    let t = stage["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "model_charm")
        .unwrap();
    assert_eq!(t["status"], "SKIP");
    assert_eq!(t["reason"], format!("NOT RUN: {reason}"));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(&format!("<skipped message=\"NOT RUN: {reason}\"/>")),
        "{xml}"
    );
    let suite = xml
        .lines()
        .find(|l| l.contains("<testsuite name=\"playtests\""))
        .unwrap();
    assert!(
        suite.contains("tests=\"3\"") && suite.contains("skipped=\"1\""),
        "{suite}"
    );
    let o = troupe(&["test", r]);
    let (out, _) = text(&o);
    assert!(out.contains("SKIP model_charm"), "{out}");
}

#[test]
fn a_missing_or_escaping_cassette_is_reported_by_check() {
    // Format 22.7: MISSING_FILE / PATH_TRAVERSAL at /cassette, located.
    let (_dir, root) = pack("everyday-negotiation");
    let r = root.to_str().unwrap();
    edit(
        &root,
        "playtests/model_charm.yaml",
        "cassette: cassettes/model_buyer.json",
        "cassette: cassettes/nope.json",
    );
    let o = troupe(&["check", r, "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let doc: Value = serde_json::from_str(&text(&o).0).unwrap();
    let d: Vec<&Value> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| {
            d["file"]
                .as_str()
                .is_some_and(|f| f.ends_with("playtests/model_charm.yaml"))
        })
        .collect();
    assert_eq!(d.len(), 1, "{doc}");
    assert_eq!(d[0]["code"], "MISSING_FILE");
    assert_eq!(d[0]["pointer"], "/cassette");
    // `cassette: cassettes/nope.json` is line 11 of the file, its value at
    // column 11.
    assert_eq!(
        (d[0]["line"].clone(), d[0]["column"].clone()),
        (json!(11), json!(11))
    );
    edit(
        &root,
        "playtests/model_charm.yaml",
        "cassette: cassettes/nope.json",
        "cassette: ../outside.json",
    );
    let o = troupe(&["check", r, "--json"]);
    let doc: Value = serde_json::from_str(&text(&o).0).unwrap();
    let codes: Vec<&Value> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| {
            d["file"]
                .as_str()
                .is_some_and(|f| f.ends_with("playtests/model_charm.yaml"))
        })
        .map(|d| &d["code"])
        .collect();
    assert_eq!(codes, [&json!("PATH_TRAVERSAL")], "{doc}");
    // `troupe playtest` runs nothing on a pack that does not conform.
    assert_eq!(
        troupe(&["playtest", r, "model_charm"]).status.code(),
        Some(1)
    );
}

#[test]
fn a_request_the_cassette_does_not_hold_names_the_turn_and_the_difference() {
    // Format 24.5: other instructions change the system message, so round
    // 1's request differs from every recorded one at
    // /messages/0/content, after `model` and `role` (2 equal values each):
    // the earliest, interaction 0, is the nearest.
    let (_dir, root) = pack("everyday-negotiation");
    let r = root.to_str().unwrap();
    edit(&root, "personas/model_buyer.yaml", "Be warm", "Be cold");
    let o = troupe(&["playtest", r, "model_charm", "--json"]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    conforms(&doc);
    let p = &doc["playtests"][0];
    assert_eq!(p["status"], "FAIL");
    assert_eq!(
        p["model"][0]["refused"],
        json!(["round 1: UNMOCKED_MODEL_CALL: round 1, agent mo (input m2): the cassette holds no answer for this request (3 recorded, 3 unused); the nearest recorded request (interaction 0, from 0) differs at /messages/0/content; record it again with --record"])
    );
    // Replaying the example's cassette with another max_tokens: the first
    // request equals interaction 0 in `model` and every message, then
    // differs at /max_tokens.
    let c = example().join("cassettes/model_buyer.json");
    let o = troupe(&[
        "playtest",
        example().to_str().unwrap(),
        "model_charm",
        "--runtime",
        "model",
        "--max-tokens",
        "100",
        "--cassette",
        c.to_str().unwrap(),
    ]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("    refused: round 1: UNMOCKED_MODEL_CALL: round 1, agent mo (input m2): the cassette holds no answer for this request (3 recorded, 3 unused); the nearest recorded request (interaction 0, from 0) differs at /max_tokens;"),
        "{out}"
    );
}

#[test]
fn a_persona_line_that_trips_safety_is_handled_as_any_input() {
    // Format 22.3: a model's line is an input like any other (18.5, 19.4).
    // The example policy redirects a card number (state unchanged, the
    // reply says "made-up figure") and stops on a threat, which ends the
    // session: round 3 makes no call, so 2 requests.
    let (_dir, root) = pack("everyday-negotiation");
    std::fs::write(
        root.join("personas/model_buyer.yaml"),
        "schema_version: \"0.1\"\npersona_id: model_buyer\nname: Mo\nmodel:\n  instructions: \"Buy the car.\"\n  answers:\n    - {say: \"My card is 4111 1111 1111 1111, can you hold the car for me?\"}\n    - {say: \"I know where you live.\"}\n",
    )
    .unwrap();
    let pack = troupe::Pack::open(&root).unwrap();
    let r = run_playtests_with(
        &pack,
        &root,
        Some("model_charm"),
        PlaytestOptions::default(),
    )
    .unwrap()
    .remove(0);
    assert_eq!(r.status, Verdict::Fail);
    assert_eq!(r.model[0].requests, 2);
    let session = &r.sessions[0].1;
    assert!(session.contains("made-up figure"), "{session}");
    assert_eq!(r.goals[0].evidence["state"]["impression"], json!(50));
    // The session written conforms (Format 17.1).
    let diags = pack.check_session("model_charm.jsonl", session);
    assert!(!diags.iter().any(troupe::Diagnostic::is_error), "{diags:?}");
}

#[test]
fn model_failures_have_their_codes_and_never_show_the_key() {
    // 401 is MODEL_AUTH (Format 24.6): the call fails, the agent passes for
    // the rest of the run (one request), the goal is not met; the key is in
    // no output.
    let (_dir, root) = pack("everyday-negotiation");
    let s = serve(vec![status(401, "{\"error\": \"bad key\"}")]);
    let o = troupe(&[
        "playtest",
        root.to_str().unwrap(),
        "model_charm",
        "--runtime",
        "model",
        "--endpoint",
        &s.url,
        "--api-key-env",
        "TEST_PERSONA_KEY",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(out.contains("  model mo: 1 request · 0 tokens"), "{out}");
    assert!(out.contains("    refused: round 1: MODEL_AUTH: "), "{out}");
    assert_no_key(&[&out, &err]);
    assert_eq!(s.seen.lock().unwrap().len(), 1);
    // The model flags need --runtime model; --runtime model needs a backend.
    let o = troupe(&["playtest", root.to_str().unwrap(), "--endpoint", &s.url]);
    assert_eq!(o.status.code(), Some(2));
    let o = troupe(&["playtest", root.to_str().unwrap(), "--runtime", "model"]);
    assert_eq!(o.status.code(), Some(2));
    let o = troupe(&["test", root.to_str().unwrap(), "--cassette", "x.json"]);
    assert_eq!(o.status.code(), Some(2));
    // troupe test takes the flags for stage 5: replaying a cassette.
    let c = example().join("cassettes/model_buyer.json");
    let o = troupe(&[
        "test",
        root.to_str().unwrap(),
        "--runtime",
        "model",
        "--cassette",
        c.to_str().unwrap(),
        "--json",
    ]);
    let doc: Value = serde_json::from_str(&text(&o).0).unwrap();
    assert_eq!(o.status.code(), Some(0), "{doc}");
}

//! The model runtime (Format 24) against an OpenAI-compatible server on
//! the loopback interface, started by each test: proposals validated and
//! clamped, one repair request, drop-whole, cassettes recorded and
//! replayed byte-identically, every failure of 24.6 with its code and exit
//! code, and the API key absent from every output. Nothing leaves the
//! machine.

use crate::common;
use common::loopback::{ok, serve, status, Answer};

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

const KEY: &str = "sk-test-SECRET-4242-do-not-leak";

fn pack() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/packs/everyday-negotiation")
}

fn script(dir: &Path, lines: &[&str]) -> PathBuf {
    let p = dir.join("script.txt");
    std::fs::write(&p, lines.join("\n")).unwrap();
    p
}

/// `troupe run PACK --runtime model …` with the key in `TEST_MODEL_KEY`.
fn run(extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_troupe"))
        .arg("run")
        .arg(pack())
        .args(["--runtime", "model", "--api-key-env", "TEST_MODEL_KEY"])
        .args(extra)
        .env("TEST_MODEL_KEY", KEY)
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

/// The key is in no output: stdout, stderr, and every file in `dir`.
fn assert_no_key(o: &Output, dir: &Path) {
    let (out, err) = text(o);
    assert!(!out.contains(KEY) && !err.contains(KEY), "the key leaked");
    for e in std::fs::read_dir(dir).unwrap() {
        let bytes = std::fs::read(e.unwrap().path()).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "the key leaked into a file"
        );
    }
}

/// The session file conforms (troupe check PACK --session FILE).
fn session_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn replies_and_allowed_changes_clamped_to_the_step_limit() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(vec![
        ok(
            json!({"reply": "Nine thousand, {{user}}, and it's yours.", "changes": {"deal_progress": 55, "impression": 58}, "emotion": "warm"}),
        ),
        ok(json!({"reply": "Fine. Nine-two.", "changes": {}})),
    ]);
    let out = dir.path().join("s.jsonl");
    let sc = script(dir.path(), &["How about 8,000?", "Meet me halfway."]);
    let o = run(&[
        "--endpoint",
        &s.url,
        "--model",
        "m",
        "--seed",
        "7",
        "--script",
        sc.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    // The reply is literal text (Format 18.7): `{{user}}` is not a macro.
    assert!(
        stdout.contains("Marco: Nine thousand, {{user}}, and it's yours."),
        "{stdout}"
    );
    // deal_progress 0 → 55 is clamped to the step 20; impression 50 → 58.
    assert!(stdout.contains("deal_progress 0 → 20"), "{stdout}");
    assert!(stdout.contains("impression 50 → 58"), "{stdout}");
    assert!(
        stdout.contains("clamped to the step limit: deal_progress"),
        "{stdout}"
    );
    assert!(stdout.contains("model emotion: warm"), "{stdout}");
    assert!(
        stdout.contains("model: 1 request · 120 tokens (100 prompt, 20 completion)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Model: 2 requests · 240 tokens"),
        "{stdout}"
    );
    let seen = s.seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].0.as_deref(), Some(format!("Bearer {KEY}").as_str()));
    let body = &seen[0].1;
    assert_eq!(body["model"], "m");
    assert_eq!(body["seed"], 7);
    assert_eq!(body["response_format"]["type"], "json_schema");
    let schema = &body["response_format"]["json_schema"]["schema"];
    assert_eq!(
        schema["properties"]["changes"]["properties"]["deal_progress"],
        json!({"type": "integer", "minimum": 0, "maximum": 100})
    );
    assert!(schema["properties"]["changes"]["properties"]
        .get("internal_counter")
        .is_none());
    // The prompt: system first, the opening, then the input; the hidden
    // variable is not shown.
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "system");
    let sys = msgs[0]["content"].as_str().unwrap();
    assert!(sys.starts_with("You are Marco."), "{sys}");
    assert!(!sys.contains("internal_counter"), "{sys}");
    assert!(
        sys.contains("deal_progress (by at most 20 per turn)"),
        "{sys}"
    );
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs.last().unwrap()["content"], "Player: How about 8,000?");
    // The second turn's transcript holds the first reply.
    let msgs2 = seen[1].1["messages"].as_array().unwrap();
    assert!(msgs2
        .iter()
        .any(|m| m["content"] == "Nine thousand, {{user}}, and it's yours."));
    drop(seen);
    let lines = session_lines(&out);
    assert_eq!(lines.len(), 6, "header, root, two turns");
    assert_eq!(
        lines[3]["changes"],
        json!([{"set": {"deal_progress": 20, "impression": 58}}])
    );
    assert_eq!(
        lines[3]["parts"][0]["text"],
        "Nine thousand, \\{{user}}, and it's yours."
    );
    assert!(lines[5].get("changes").is_none());
    let check = common::troupe(&["check", pack().to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check).1);
    assert_no_key(&o, dir.path());
}

#[test]
fn a_forbidden_change_gets_one_repair_request_then_the_proposal_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(vec![
        ok(json!({"reply": "Sure.", "changes": {"internal_counter": 9}})),
        ok(json!({"reply": "Sure.", "changes": {"deal_progress": "lots"}})),
    ]);
    let sc = script(dir.path(), &["Deal?"]);
    let o = run(&[
        "--endpoint",
        &s.url,
        "--script",
        sc.to_str().unwrap(),
        "--json",
    ]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    // The document follows schemas/output/run.schema.json (Format 20.1, 24.7).
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/output/run.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let turn = &doc["turns"][0];
    assert_eq!(turn["reply"], Value::Null);
    assert_eq!(turn["messages"], json!(["m2"]));
    assert_eq!(turn["model"]["requests"], 2);
    let dropped = turn["model"]["dropped"].as_str().unwrap();
    assert!(dropped.contains("`deal_progress`"), "{dropped}");
    // The turn result carries the diagnostic (Format 18.6, 24.4).
    let diags = turn["diagnostics"].as_array().unwrap();
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0]["code"], "MODEL_ANSWER");
    assert_eq!(diags[0]["severity"], "warning");
    assert_eq!(diags[0]["pointer"], "message:m3");
    assert_eq!(doc["model"]["requests"], 2);
    assert_eq!(doc["model"]["usage"]["total_tokens"], 240);
    let seen = s.seen.lock().unwrap();
    let repair = seen[1].1["messages"].as_array().unwrap();
    let last = repair.last().unwrap()["content"].as_str().unwrap();
    assert!(
        last.starts_with("Your answer was refused: `internal_counter` may not be changed"),
        "{last}"
    );
    assert_eq!(repair[repair.len() - 2]["role"], "assistant");
    drop(seen);
    // Human output names the code.
    let o = run(&["--endpoint", &s.url, "--script", sc.to_str().unwrap()]);
    assert!(
        text(&o).0.contains("refused: MODEL_ANSWER"),
        "{}",
        text(&o).0
    );
    assert_no_key(&o, dir.path());
}

#[test]
fn a_repaired_answer_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(vec![
        status(
            200,
            &json!({"choices": [{"message": {"content": "Sure thing!"}}]}).to_string(),
        ),
        ok(json!({"reply": "Sure thing!", "changes": {"patience": 50}})),
    ]);
    let sc = script(dir.path(), &["Hello"]);
    let o = run(&[
        "--endpoint",
        &s.url,
        "--script",
        sc.to_str().unwrap(),
        "--json",
        "--structured",
        "none",
    ]);
    let doc: Value = serde_json::from_str(&text(&o).0).unwrap();
    assert_eq!(doc["turns"][0]["reply"], "Sure thing!");
    let repaired = doc["turns"][0]["model"]["repaired"].as_str().unwrap();
    assert!(repaired.starts_with("the answer is not JSON"), "{repaired}");
    assert_eq!(doc["turns"][0]["model"]["dropped"], Value::Null);
    // patience 60 → 50 is within the step 15.
    assert_eq!(doc["turns"][0]["state_delta"]["patience"], 50);
    let seen = s.seen.lock().unwrap();
    assert!(seen[0].1.get("response_format").is_none());
    let sys = seen[0].1["messages"][0]["content"].as_str().unwrap();
    assert!(
        sys.contains("The object follows this JSON Schema: {"),
        "{sys}"
    );
}

#[test]
fn json_object_mode_sends_the_schema_in_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(vec![ok(json!({"reply": "Hi."}))]);
    let sc = script(dir.path(), &["Hello"]);
    let o = run(&[
        "--endpoint",
        &s.url,
        "--script",
        sc.to_str().unwrap(),
        "--structured",
        "json_object",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let seen = s.seen.lock().unwrap();
    assert_eq!(seen[0].1["response_format"], json!({"type": "json_object"}));
    assert!(seen[0].1["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("JSON Schema"));
}

#[test]
fn a_recorded_cassette_replays_byte_identically_with_the_server_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.json");
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    let sc = script(
        dir.path(),
        &["How about 8,000?", "Meet me halfway.", "Deal?"],
    );
    {
        let s = serve(vec![
            ok(json!({"reply": "No.", "changes": {"patience": 50}})),
            ok(json!({"reply": "Maybe.", "changes": {"deal_progress": 20}})),
            ok(json!({"reply": "Closer.", "changes": {"deal_progress": 40, "impression": 70}})),
        ]);
        let o = run(&[
            "--endpoint",
            &s.url,
            "--seed",
            "3",
            "--script",
            sc.to_str().unwrap(),
            "--out",
            a.to_str().unwrap(),
            "--cassette",
            cassette.to_str().unwrap(),
            "--record",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
        assert_no_key(&o, dir.path());
    }
    // The server is gone: replay needs no endpoint.
    let o = run(&[
        "--seed",
        "3",
        "--script",
        sc.to_str().unwrap(),
        "--out",
        b.to_str().unwrap(),
        "--cassette",
        cassette.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let doc: Value = serde_json::from_slice(&std::fs::read(&cassette).unwrap()).unwrap();
    assert_eq!(doc["kind"], "cassette");
    assert_eq!(doc["interactions"].as_array().unwrap().len(), 3);
    assert_eq!(doc["interactions"][0]["request"]["seed"], 3);
    // Another input is a request the cassette does not hold.
    let other = script(dir.path(), &["How about 8,000?", "Something else"]);
    let c = dir.path().join("c2.jsonl");
    let o = run(&[
        "--seed",
        "3",
        "--script",
        other.to_str().unwrap(),
        "--out",
        c.to_str().unwrap(),
        "--cassette",
        cassette.to_str().unwrap(),
    ]);
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("UNMOCKED_MODEL_CALL: turn 2 (input m4)"),
        "{stderr}"
    );
    // The first turn is kept, nothing of the second.
    assert_eq!(session_lines(&c).len(), 4);
    // Another seed changes every request.
    let o = run(&[
        "--seed",
        "4",
        "--script",
        sc.to_str().unwrap(),
        "--cassette",
        cassette.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
}

/// Runs two turns against `answers` (the first turn's answer is good) with
/// `--out`, and returns the output and the session lines written.
fn fails_on_turn_two(answers: Vec<Answer>, extra: &[&str]) -> (Output, Vec<Value>, usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec![ok(json!({"reply": "Hello."}))];
    all.extend(answers);
    let s = serve(all);
    let out = dir.path().join("s.jsonl");
    let sc = script(dir.path(), &["Hi", "Again"]);
    let mut args = vec![
        "--endpoint",
        s.url.as_str(),
        "--script",
        sc.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert_no_key(&o, dir.path());
    let n = s.seen.lock().unwrap().len();
    let lines = session_lines(&out);
    let check = common::troupe(&["check", pack().to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check).1);
    (o, lines, n)
}

fn assert_failure(o: &Output, lines: &[Value], exit: i32, code: &str) {
    let (stdout, stderr) = text(o);
    assert_eq!(o.status.code(), Some(exit), "{stdout}{stderr}");
    assert!(stderr.contains(code), "{stderr}");
    // Header, root, the first turn; nothing of the failed one.
    assert_eq!(lines.len(), 4, "{lines:?}");
}

#[test]
fn connection_refused_is_model_unreachable() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.jsonl");
    let sc = script(dir.path(), &["Hi"]);
    let url = format!("http://127.0.0.1:{port}/v1");
    let o = run(&[
        "--endpoint",
        &url,
        "--script",
        sc.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("MODEL_UNREACHABLE"), "{stderr}");
    // Header and root only.
    assert_eq!(session_lines(&out).len(), 2);
    assert_no_key(&o, dir.path());
}

#[test]
fn a_slow_server_is_model_timeout() {
    let mut slow = ok(json!({"reply": "late"}));
    slow.delay = Duration::from_secs(3);
    let (o, lines, _) = fails_on_turn_two(vec![slow], &["--timeout", "1"]);
    assert_failure(&o, &lines, 4, "MODEL_TIMEOUT");
}

#[test]
fn unauthorized_is_model_auth_with_exit_5() {
    for code in [401, 403] {
        let (o, lines, n) = fails_on_turn_two(vec![status(code, "{\"error\": \"bad key\"}")], &[]);
        assert_failure(&o, &lines, 5, "MODEL_AUTH");
        assert_eq!(n, 2, "no retry on {code}");
    }
}

#[test]
fn rate_limits_honour_retry_after_then_give_up() {
    let mut limited = status(429, "slow down");
    limited.headers.push(("Retry-After".into(), "1".into()));
    // Once limited, then answered: the turn succeeds.
    let dir = tempfile::tempdir().unwrap();
    let s = serve(vec![limited.clone(), ok(json!({"reply": "Now then."}))]);
    let sc = script(dir.path(), &["Hi"]);
    let o = run(&["--endpoint", &s.url, "--script", sc.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    assert!(text(&o).0.contains("Now then."));
    assert_eq!(s.seen.lock().unwrap().len(), 2);
    // Always limited: three tries, then MODEL_RATE_LIMITED.
    let (o, lines, n) = fails_on_turn_two(vec![limited], &[]);
    assert_failure(&o, &lines, 4, "MODEL_RATE_LIMITED");
    assert_eq!(n, 1 + 3);
}

#[test]
fn server_errors_are_retried_a_bounded_number_of_times() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(vec![
        status(503, "busy"),
        ok(json!({"reply": "Back again."})),
    ]);
    let sc = script(dir.path(), &["Hi"]);
    let o = run(&["--endpoint", &s.url, "--script", sc.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let (o, lines, n) = fails_on_turn_two(vec![status(500, "boom")], &[]);
    assert_failure(&o, &lines, 4, "MODEL_SERVER_ERROR");
    assert_eq!(n, 1 + 3);
}

#[test]
fn a_body_that_is_not_json_is_model_bad_response() {
    let (o, lines, _) = fails_on_turn_two(vec![status(200, "<html>oops</html>")], &[]);
    assert_failure(&o, &lines, 4, "MODEL_BAD_RESPONSE");
}

#[test]
fn a_truncated_answer_is_model_truncated() {
    let body = json!({"choices": [{"message": {"content": "{\"reply\": \"I was say"}, "finish_reason": "length"}]});
    let (o, lines, _) = fails_on_turn_two(vec![status(200, &body.to_string())], &[]);
    assert_failure(&o, &lines, 4, "MODEL_TRUNCATED");
}

#[test]
fn a_missing_key_variable_is_a_usage_error() {
    let o = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .arg("run")
        .arg(pack())
        .args([
            "--runtime",
            "model",
            "--endpoint",
            "http://127.0.0.1:9/v1",
            "--api-key-env",
            "TROUPE_NO_SUCH_VAR_X",
            "--script",
            "Cargo.toml",
        ])
        .env_remove("TROUPE_NO_SUCH_VAR_X")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("TROUPE_NO_SUCH_VAR_X"));
}

#[test]
fn the_committed_example_cassette_replays_offline() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    for out in [&a, &b] {
        let o = common::troupe(&[
            "run",
            "examples/packs/everyday-negotiation",
            "--runtime",
            "model",
            "--cassette",
            "examples/model/negotiation.cassette.json",
            "--script",
            "examples/model/negotiation.script.txt",
            "--out",
            out.to_str().unwrap(),
        ]);
        let (stdout, stderr) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
        assert!(
            stdout.contains("Marco: Here, every stamp in it."),
            "{stdout}"
        );
        assert!(stdout.contains("model: 2 requests"), "{stdout}");
        assert!(stdout.contains("Model: 5 requests"), "{stdout}");
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

/// A bundle with a whisper, lore entries and a template override, and a
/// session of it (Format 24.3).
fn whisper_case(dir: &Path) -> (PathBuf, PathBuf) {
    let bundle = json!({
        "troupe": "0.1", "kind": "bundle",
        "characters": [
            {"id": "kai", "name": "Kai Moreno", "nickname": "Kai", "fictional": true, "age_band": "adult", "description": "A gate guard."},
            {"id": "ana", "name": "Ana", "fictional": true, "age_band": "adult"}
        ],
        "scenarios": [{
            "id": "gate", "name": "The gate",
            "cast": [{"character": "kai"}, {"character": "ana"}, {"seat": "player", "player": true}],
            "variables": [{"id": "alarm", "type": "int", "default": 1}, {"id": "plan", "type": "int", "default": 7, "visibility": "hidden"}],
            "entries": [
                {"id": "second", "content": "Second entry.", "constant": true, "order": 200},
                {"id": "first", "content": "First entry.", "constant": true, "order": 100},
                {"id": "third", "content": "Third entry.", "constant": true, "order": 300}
            ],
            "model": {"prompt": "You are {{char}}, guarding the gate. Alarm {{alarm}}.", "lore_budget": 30, "changes": {"alarm": {"step": 1}}}
        }]
    });
    let header = json!({"troupe": "0.1", "kind": "session", "scenario": "gate",
        "players": [{"seat": "player", "character": "pc"}],
        "characters": [{"id": "pc", "name": "Pat", "fictional": true, "age_band": "adult"}], "seed": 5});
    let lines = [
        header,
        json!({"id": "m1", "author": "pc", "parts": [{"type": "text", "text": "Hello all."}]}),
        json!({"id": "m2", "parent": "m1", "author": "ana", "parts": [
            {"type": "text", "text": "Nice day."},
            {"type": "text", "text": "Meet me at noon.", "audience": ["pc"]}]}),
        json!({"id": "m3", "parent": "m2", "author": "pc", "parts": [{"type": "text", "text": "Sure."}]}),
    ];
    let (b, s) = (dir.join("gate.json"), dir.join("gate.jsonl"));
    std::fs::write(&b, bundle.to_string()).unwrap();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&s, text).unwrap();
    (b, s)
}

#[test]
fn the_prompt_holds_only_what_the_responder_knows_and_lore_within_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let (b, s) = whisper_case(dir.path());
    let (b, s) = (b.to_str().unwrap(), s.to_str().unwrap());
    let o = common::troupe(&["prompt", b, s, "--at", "m3", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let body: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(body["seed"], 5);
    let msgs = body["messages"].as_array().unwrap();
    let sys = msgs[0]["content"].as_str().unwrap();
    // The pack's template, rendered for the responder Kai.
    assert!(
        sys.starts_with("You are Kai, guarding the gate. Alarm 1.\n"),
        "{sys}"
    );
    assert!(sys.contains("description: A gate guard."), "{sys}");
    // Lore in 5.5 order within 30 characters: 12 + 13 fit, the third not.
    assert!(
        sys.contains("## Lore\n- First entry.\n- Second entry.\n\n"),
        "{sys}"
    );
    assert!(!sys.contains("Third entry."), "{sys}");
    // The hidden variable is not shown; alarm is.
    assert!(
        sys.contains("alarm = 1") && !sys.contains("plan ="),
        "{sys}"
    );
    // Kai did not hear the whisper (Format 7.4).
    let transcript: Vec<&str> = msgs[1..]
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        transcript,
        ["Pat: Hello all.", "Ana: Nice day.", "Pat: Sure."]
    );
    // Ana wrote it, so it is hers (as the assistant).
    let o = common::troupe(&["prompt", b, s, "--at", "m3", "--char", "ana", "--json"]);
    let body: Value = serde_json::from_slice(&o.stdout).unwrap();
    let m = &body["messages"][2];
    assert_eq!(m["role"], "assistant");
    assert_eq!(m["content"], "Nice day.\nMeet me at noon.");
    // The text form shows roles and the response format.
    let o = common::troupe(&["prompt", b, s, "--at", "m3", "--structured", "none"]);
    let t = text(&o).0;
    assert!(t.starts_with("--- system ---\nYou are Kai"), "{t}");
    assert!(t.contains("--- response_format ---\n(none"), "{t}");
    // An unknown character is refused.
    let o = common::troupe(&["prompt", b, s, "--at", "m3", "--char", "zed"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn fixtures_run_under_the_model_runtime_with_inline_answers() {
    let (_dir, root) = common::pack("everyday-negotiation");
    let fixture = r#"schema_version: "0.1"
fixture_id: model_mocks
scenario_id: used_car_negotiation
runtime: model
mocks:
  model:
    - {reply: "Nine-five, and not a penny less.", changes: {patience: 10}, emotion: neutral}
    - '{"reply": "Fine.", "changes": {"internal_counter": 5}}'
    - "still not json"
    - {reply: "You again.", changes: {impression: 40}}
turns:
  - turn: 1
    player_input: "Would you take 8,000?"
    expect: {reply_contains: "Nine-five", state: {patience: 45}, npc_emotion_not: annoyed, npc_emotion: neutral}
  - turn: 2
    player_input: "Come on."
    expect: {state: {internal_counter: 0, patience: 45}, fired: []}
  - turn: 3
    player_input: "Hello?"
    expect: {state: {impression: 40}, reply_contains: "again"}
"#;
    std::fs::write(root.join("tests/model_mocks.yaml"), fixture).unwrap();
    let o = common::troupe(&[
        "test",
        root.to_str().unwrap(),
        "--test",
        "model_mocks",
        "--json",
    ]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    // One answer too few: ERR naming the code.
    let short = fixture.replace(
        "    - {reply: \"You again.\", changes: {impression: 40}}\n",
        "",
    );
    std::fs::write(root.join("tests/model_mocks.yaml"), short).unwrap();
    let o = common::troupe(&["test", root.to_str().unwrap(), "--test", "model_mocks"]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{stdout}{stderr}");
    assert!(
        stdout.contains("turn 3: UNMOCKED_MODEL_CALL: turn 3 (input m5)"),
        "{stdout}"
    );
}

#[test]
fn play_takes_the_model_runtime_too() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(vec![ok(json!({"reply": "Welcome to the lot!"}))]);
    let out = dir.path().join("p.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .arg("play")
        .arg(pack())
        .args([
            "--runtime",
            "model",
            "--endpoint",
            &s.url,
            "--out",
            out.to_str().unwrap(),
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"Hello Marco\n/quit\n").unwrap();
    }
    let o = child.wait_with_output().unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("Marco: Welcome to the lot!"), "{stdout}");
    assert!(stdout.contains("model: 1 request"), "{stdout}");
    assert_eq!(session_lines(&out).len(), 4);
    // The fake runtime is never offered to people.
    let o = common::troupe(&["play", pack().to_str().unwrap(), "--runtime", "fake"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_fixture_replays_a_cassette_recorded_by_run() {
    let (_dir, root) = common::pack("everyday-negotiation");
    std::fs::create_dir_all(root.join("cassettes")).unwrap();
    let cassette = root.join("cassettes/haggle.json");
    let sc = script(
        root.parent().unwrap(),
        &["Would you take 8,000?", "Come on."],
    );
    {
        let s = serve(vec![
            ok(json!({"reply": "Nine-five.", "changes": {"patience": 50}})),
            ok(json!({"reply": "Nine-two, final.", "changes": {"deal_progress": 20}})),
        ]);
        let o = Command::new(env!("CARGO_BIN_EXE_troupe"))
            .arg("run")
            .arg(&root)
            .args(["--runtime", "model", "--endpoint", &s.url, "--script"])
            .arg(&sc)
            .arg("--cassette")
            .arg(&cassette)
            .arg("--record")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    }
    let fixture = r#"schema_version: "0.1"
fixture_id: model_cassette
scenario_id: used_car_negotiation
runtime: model
cassette: cassettes/haggle.json
turns:
  - turn: 1
    player_input: "Would you take 8,000?"
    expect: {reply_contains: "Nine-five", state: {patience: 50}}
  - turn: 2
    player_input: "Come on."
    expect: {state: {deal_progress: 20}, npc_emotion_not: annoyed}
"#;
    std::fs::write(root.join("tests/model_cassette.yaml"), fixture).unwrap();
    // The pack with its cassettes/ folder still checks clean.
    let o = common::troupe(&["check", root.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).0);
    let o = common::troupe(&["test", root.to_str().unwrap(), "--test", "model_cassette"]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    // Another input is not in the cassette.
    std::fs::write(
        root.join("tests/model_cassette.yaml"),
        fixture.replace("Come on.", "Something else."),
    )
    .unwrap();
    let o = common::troupe(&["test", root.to_str().unwrap(), "--test", "model_cassette"]);
    let (stdout, _) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{stdout}");
    assert!(
        stdout.contains("turn 2: UNMOCKED_MODEL_CALL: turn 2 (input m4)"),
        "{stdout}"
    );
    // A path outside cassettes/ is refused.
    std::fs::write(
        root.join("tests/model_cassette.yaml"),
        fixture.replace("cassettes/haggle.json", "../haggle.json"),
    )
    .unwrap();
    let o = common::troupe(&["test", root.to_str().unwrap(), "--test", "model_cassette"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(text(&o)
        .0
        .contains("not a file under the pack's cassettes/ folder"));
    // A cassette under cassettes/ that is not there is a check error
    // (Format 13.8): MISSING_FILE at the fixture's /cassette.
    std::fs::write(
        root.join("tests/model_cassette.yaml"),
        fixture.replace("cassettes/haggle.json", "cassettes/hagle.json"),
    )
    .unwrap();
    let o = common::troupe(&["check", root.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let doc: Value = serde_json::from_str(&text(&o).0).unwrap();
    let d = &doc["diagnostics"][0];
    assert_eq!(d["code"], "MISSING_FILE", "{doc}");
    assert_eq!(d["pointer"], "/cassette");
    assert!(d["file"]
        .as_str()
        .unwrap()
        .ends_with("tests/model_cassette.yaml"));
    assert_eq!(d["line"], 5, "the line of `cassette:`");
    let o = common::troupe(&["test", root.to_str().unwrap(), "--test", "model_cassette"]);
    assert_eq!(o.status.code(), Some(1), "the check gates the run");
}

/// Credentials in the endpoint URL (user information, a query) never reach
/// a message (Format 24.6): refused credentials and an unreachable host.
#[test]
fn credentials_in_the_endpoint_url_are_not_shown() {
    let s = serve(vec![status(401, "{\"error\": \"bad key\"}")]);
    let with_secrets = s
        .url
        .replace("http://", "http://me:s3cretpw@")
        .replace("/v1", "/v1?api-key=q5ecret");
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let refused = format!("http://me:s3cretpw@127.0.0.1:{port}/v1?api-key=q5ecret");
    for (url, exit) in [(with_secrets, 5), (refused, 4)] {
        let dir = tempfile::tempdir().unwrap();
        let sc = script(dir.path(), &["Hi"]);
        let o = run(&["--endpoint", &url, "--script", sc.to_str().unwrap()]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(exit), "{out}{err}");
        for secret in ["s3cretpw", "q5ecret", "me:"] {
            assert!(
                !out.contains(secret) && !err.contains(secret),
                "{url}: {err}"
            );
        }
        assert!(
            err.contains("http://***@127.0.0.1:") && err.contains("/v1/chat/completions?***"),
            "{err}"
        );
    }
}

#[test]
fn temperature_and_max_tokens_are_sent_and_model_changes_fire_events_and_outcomes() {
    // Derived from everyday-negotiation's rules: patience starts at 60 and a
    // model may move it by at most 15 a turn (Format 24.2), so answers
    // asking for 0 give 45, 30, 15, 0. `patience_warning` (below 25) fires
    // at turn 3 (15); the outcome `failure` (below 10) holds at turn 4 (0)
    // and ends the story (9.3, 18.5).
    let dir = tempfile::tempdir().unwrap();
    let s = serve(vec![ok(
        json!({"reply": "No.", "changes": {"patience": 0}}),
    )]);
    let sc = script(dir.path(), &["a", "b", "c", "d"]);
    let o = run(&[
        "--endpoint",
        &s.url,
        "--temperature",
        "0.25",
        "--max-tokens",
        "64",
        "--script",
        sc.to_str().unwrap(),
        "--json",
    ]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let turns = doc["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 4);
    let patience: Vec<&Value> = turns
        .iter()
        .map(|t| &t["state_delta"]["patience"])
        .collect();
    assert_eq!(patience, [&json!(45), &json!(30), &json!(15), &json!(0)]);
    let fired = |t: &Value, what: &str, id: &str| {
        t["firings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f[what] == id)
    };
    assert!(!fired(&turns[1], "event", "patience_warning"));
    assert!(
        fired(&turns[2], "event", "patience_warning"),
        "{}",
        turns[2]
    );
    assert!(fired(&turns[3], "outcome", "failure"), "{}", turns[3]);
    assert_eq!(turns[3]["outcome"], "failure");
    assert_eq!(turns[3]["session_control"], "end_session");
    let seen = s.seen.lock().unwrap();
    assert_eq!(seen.len(), 4);
    assert!(seen
        .iter()
        .all(|(_, b)| b["temperature"] == json!(0.25) && b["max_tokens"] == json!(64)));
}

/// Issue 43, item 12: a server that sends its headers at once and then
/// trickles the body one byte at a time never gives a whole answer within
/// `--timeout`: MODEL_TIMEOUT (exit 4, Format 24.6), not
/// MODEL_BAD_RESPONSE, and nothing of the turn is written.
#[test]
fn a_trickling_body_is_model_timeout() {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let Ok((stream, _)) = listener.accept() else {
            return;
        };
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        let _ = reader.read_exact(&mut body);
        let mut stream = stream;
        let answer = ok(json!({"reply": "late"})).body;
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            answer.len()
        );
        for b in answer.bytes().take(12) {
            if stream.write_all(&[b]).is_err() {
                return;
            }
            let _ = stream.flush();
            std::thread::sleep(Duration::from_millis(400));
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.jsonl");
    let sc = script(dir.path(), &["Hi"]);
    let url = format!("http://127.0.0.1:{port}/v1");
    let o = run(&[
        "--endpoint",
        &url,
        "--script",
        sc.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--timeout",
        "2",
    ]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(4), "{stdout}{stderr}");
    assert!(stderr.contains("MODEL_TIMEOUT"), "{stderr}");
    assert!(!stderr.contains("MODEL_BAD_RESPONSE"), "{stderr}");
    // Header and root only.
    assert_eq!(session_lines(&out).len(), 2);
    let _ = server.join();
}

/// Issue 43, item 12: a model's reply holding a line feed cannot print a
/// line that looks like another message in human output — its second line
/// is indented and marked (`    | [m99] Player: …`), never `  [m99] …`.
#[test]
fn a_reply_with_a_line_feed_cannot_forge_a_message_line() {
    let s = serve(vec![ok(
        json!({"reply": "Sure.\n  [m99] Player: I accept every term."}),
    )]);
    let dir = tempfile::tempdir().unwrap();
    let sc = script(dir.path(), &["Hi"]);
    let o = run(&["--endpoint", &s.url, "--script", sc.to_str().unwrap()]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        !stdout.lines().any(|l| l.trim_start().starts_with("[m99]")),
        "{stdout}"
    );
    assert!(
        stdout.contains("\n    |   [m99] Player: I accept every term."),
        "{stdout}"
    );
}

/// Issue 37 item 4 (Format 24.3): without `--char`, `troupe prompt` asks
/// the speaker the turn order would choose for a reply to the message.
/// Derived by hand for `examples/packs/tenants-meeting` (natural order,
/// seed 0): `m2` names nobody, the opening was Margit's, and
/// choose(50, "speaker:0:m2") = 15 < 30 draws Dev; `m7` @-names Ruth by her
/// alias; `m9` names Margit; `m12` names nobody, Dev spoke last, and
/// choose(70, "speaker:0:m12") = 55 ≥ 50 draws Ruth. `--char` still wins.
#[test]
fn prompt_asks_whoever_the_turn_order_chooses() {
    let pack = "examples/packs/tenants-meeting";
    let who = |at: &str, char: Option<&str>| {
        let mut args = vec!["prompt", pack, "letter.jsonl", "--at", at, "--json"];
        args.extend(char.map(|c| ["--char", c]).into_iter().flatten());
        let o = common::troupe(&args);
        assert_eq!(o.status.code(), Some(0), "{}", common::stdout(&o));
        let body: Value = serde_json::from_slice(&o.stdout).unwrap();
        let system = body["messages"][0]["content"].as_str().unwrap().to_string();
        system.lines().next().unwrap().to_string()
    };
    for (at, name) in [
        ("m2", "Dev"),
        ("m7", "Ruth"),
        ("m9", "Margit"),
        ("m12", "Ruth"),
    ] {
        assert!(
            who(at, None).starts_with(&format!("You are {name}.")),
            "{at}"
        );
    }
    assert!(who("m2", Some("margit")).starts_with("You are Margit."));
}

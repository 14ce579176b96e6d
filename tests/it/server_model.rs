//! `troupe serve` playing sessions under the model runtime (docs/server.md
//! "Runtimes"): the model is the server's configuration (`--config`, its
//! key from an environment variable), a loopback fake model server answers,
//! and the session file is what `troupe run --runtime model --out` writes
//! for the same answers. The key reaches the model server and nothing
//! else: no answer, log line or database file holds it. SQLite only (the
//! runtime does not touch the storage code that PostgreSQL changes).

use crate::common;
use common::loopback::{ok, serve, status};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::server_support::*;

const KEY: &str = "sk-server-SECRET-7373-do-not-leak";
const KEY_ENV: &str = "TROUPE_TEST_SERVER_MODEL_KEY";

/// The answers of the fake model, in order (one per turn).
fn answers() -> Vec<common::loopback::Answer> {
    vec![
        ok(
            json!({"reply": "Nine thousand, and it's yours.", "changes": {"deal_progress": 55, "impression": 58}, "emotion": "warm"}),
        ),
        ok(json!({"reply": "Fine. Nine-two.", "changes": {"impression": 60}})),
        ok(json!({"reply": "You drive a hard bargain.", "changes": {}})),
    ]
}

const INPUTS: &[&str] = &["How about 8,000?", "Meet me halfway."];

/// A configuration file naming the model `local` at `endpoint`.
fn config(dir: &Path, endpoint: &str) -> PathBuf {
    let path = dir.join("serve.json");
    std::fs::write(
        &path,
        json!({"models": {"local": {"endpoint": endpoint, "model": "m", "api_key_env": KEY_ENV, "timeout_secs": 5}}})
            .to_string(),
    )
    .unwrap();
    path
}

/// `troupe serve --config CONFIG` with the key in its environment and its
/// log (stderr) written to `log`.
fn start(db: &Backend, config: &Path, log: &Path) -> Server {
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--database"])
        .arg(db.arg())
        .arg("--config")
        .arg(config)
        .env(KEY_ENV, KEY)
        .current_dir(ROOT)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("troupe serve did not start: {line:?}"))
        .to_string();
    Server { child, base }
}

/// Every file in `dir` (the database and its WAL, the log) without the key.
fn assert_no_key_in(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(KEY),
                "the key leaked into {}",
                path.display()
            );
        }
    }
}

#[test]
fn a_model_session_over_http_writes_the_file_troupe_run_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let model = serve(answers());
    let db = Backend::Sqlite(tmp.path().join("troupe.db"));
    let log = tmp.path().join("serve.log");
    let server = start(&db, &config(tmp.path(), &model.url), &log);
    let (ws, _) = workspace(&server, &db, "model");
    let pack = upload(&ws);
    let created = ws.post(
        "/sessions",
        &json!({"pack": pack, "seed": 7, "runtime": "model", "model": "local"}),
    );
    assert_eq!(created.status, 201, "{created:?}");
    let id = created.json()["id"].as_str().unwrap().to_string();
    let mut bodies = vec![created.body.clone()];
    for (i, text) in INPUTS.iter().enumerate() {
        let a = ws.post(&format!("/sessions/{id}/turns"), &json!({"text": text}));
        assert_eq!(a.status, 200, "{a:?}");
        let doc = a.json();
        // The turn's `model` member, as `troupe run --json` prints it.
        assert_eq!(doc["model"]["requests"], 1, "{doc}");
        assert_eq!(doc["model"]["usage"]["total_tokens"], 120, "{doc}");
        assert!(doc["model"].get("input").is_none(), "{doc}");
        if i == 0 {
            assert_eq!(doc["model"]["emotion"], "warm", "{doc}");
            assert_eq!(doc["model"]["clamped"], json!(["deal_progress"]), "{doc}");
        }
        bodies.push(a.body);
    }
    let exported = ws.get(&format!("/sessions/{id}.jsonl"));
    assert_eq!(exported.status, 200);
    bodies.push(exported.body.clone());
    // The same answers through `troupe run --runtime model --out`.
    let again = serve(answers());
    let script = tmp.path().join("script.txt");
    std::fs::write(&script, INPUTS.join("\n") + "\n").unwrap();
    let out = tmp.path().join("run.jsonl");
    let o = Command::new(BIN)
        .arg("run")
        .arg(&package().0)
        .args(["--runtime", "model", "--api-key-env", KEY_ENV])
        .args(["--endpoint", &again.url, "--model", "m", "--timeout", "5"])
        .args(["--seed", "7", "--script"])
        .arg(&script)
        .arg("--out")
        .arg(&out)
        .env(KEY_ENV, KEY)
        .current_dir(ROOT)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        exported.body,
        std::fs::read_to_string(&out).unwrap(),
        "the session file differs from `troupe run --runtime model --out`"
    );
    // The server sent the requests `troupe run` sends, with the key as the
    // bearer token, to the configured endpoint only.
    let served = model.seen.lock().unwrap().clone();
    let ran = again.seen.lock().unwrap().clone();
    assert_eq!(served.len(), 2);
    assert_eq!(served, ran);
    assert_eq!(
        served[0].0.as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(served[0].1["model"], "m");
    // The key is in no answer, log line or database file.
    for b in &bodies {
        assert!(!b.contains(KEY), "the key leaked into an answer");
    }
    drop(server);
    assert_no_key_in(tmp.path());
}

#[test]
fn a_rebuilt_model_session_goes_on_under_its_configured_model() {
    let tmp = tempfile::tempdir().unwrap();
    let model = serve(answers());
    let db = Backend::Sqlite(tmp.path().join("troupe.db"));
    let cfg = config(tmp.path(), &model.url);
    let log = tmp.path().join("serve.log");
    let server = start(&db, &cfg, &log);
    let (ws, _) = workspace(&server, &db, "rebuild");
    let pack = upload(&ws);
    let created = ws.post(
        "/sessions",
        &json!({"pack": pack, "seed": 3, "runtime": "model", "model": "local"}),
    );
    assert_eq!(created.status, 201, "{created:?}");
    let id = created.json()["id"].as_str().unwrap().to_string();
    let a = ws.post(
        &format!("/sessions/{id}/turns"),
        &json!({"text": INPUTS[0]}),
    );
    assert_eq!(a.status, 200, "{a:?}");
    // The stored settings name the model, never its endpoint.
    server.kill();
    let server = start(&db, &cfg, &log);
    let ws = Ws {
        base: ws
            .base
            .replace(ws.base.split("/api/").next().unwrap(), &server.base),
        token: ws.token.clone(),
    };
    let b = ws.post(
        &format!("/sessions/{id}/turns"),
        &json!({"text": INPUTS[1]}),
    );
    assert_eq!(b.status, 200, "{b:?}");
    assert_eq!(b.json()["model"]["requests"], 1, "{b:?}");
    assert_eq!(model.seen.lock().unwrap().len(), 2);
    // Resumed from its file under the model runtime too.
    let file = ws.get(&format!("/sessions/{id}.jsonl")).body;
    assert!(
        !file.contains(&model.url),
        "the endpoint is in the session file"
    );
    let resumed = call(
        "POST",
        &ws.url(&format!(
            "/sessions:resume?pack={pack}&runtime=model&model=local"
        )),
        Some(&ws.token),
        Some(file.as_bytes()),
        None,
    );
    assert_eq!(resumed.status, 201, "{resumed:?}");
    let rid = resumed.json()["id"].as_str().unwrap().to_string();
    let c = ws.post(&format!("/sessions/{rid}/turns"), &json!({"text": "Deal?"}));
    assert_eq!(c.status, 200, "{c:?}");
    assert_eq!(c.json()["model"]["requests"], 1, "{c:?}");
    assert_eq!(model.seen.lock().unwrap().len(), 3);
    drop(server);
    assert_no_key_in(tmp.path());
}

#[test]
fn a_client_names_a_configured_model_and_never_a_url() {
    let tmp = tempfile::tempdir().unwrap();
    let model = serve(vec![status(401, "{\"error\": \"bad key\"}")]);
    let db = Backend::Sqlite(tmp.path().join("troupe.db"));
    let log = tmp.path().join("serve.log");
    let server = start(&db, &config(tmp.path(), &model.url), &log);
    let (ws, _) = workspace(&server, &db, "names");
    let pack = upload(&ws);
    let refused = |body: Value, status: u16, code: &str| {
        let a = ws.post("/sessions", &body);
        assert_eq!(a.status, status, "{body}: {a:?}");
        assert_eq!(a.content_type, "application/problem+json");
        assert_eq!(a.json()["code"], code, "{a:?}");
        a
    };
    let a = refused(
        json!({"pack": pack, "runtime": "model", "model": "elsewhere"}),
        422,
        "UNKNOWN_MODEL",
    );
    assert!(
        a.json()["detail"].as_str().unwrap().contains("local"),
        "{a:?}"
    );
    // A URL is only ever a name that is not configured.
    refused(
        json!({"pack": pack, "runtime": "model", "model": "http://127.0.0.1:9/v1"}),
        422,
        "UNKNOWN_MODEL",
    );
    refused(
        json!({"pack": pack, "runtime": "model"}),
        400,
        "BAD_REQUEST",
    );
    refused(json!({"pack": pack, "model": "local"}), 400, "BAD_REQUEST");
    refused(
        json!({"pack": pack, "runtime": "model", "endpoint": "http://127.0.0.1:9/v1"}),
        400,
        "BAD_REQUEST",
    );
    refused(json!({"pack": pack, "runtime": "fake"}), 422, "UNSUPPORTED");
    assert!(model.seen.lock().unwrap().is_empty());
    // A failing model: the runtime's code, nothing played, no endpoint in
    // the answer.
    let created = ws.post(
        "/sessions",
        &json!({"pack": pack, "runtime": "model", "model": "local"}),
    );
    assert_eq!(created.status, 201, "{created:?}");
    let id = created.json()["id"].as_str().unwrap().to_string();
    let before = ws.get(&format!("/sessions/{id}.jsonl")).body;
    let t = ws.post(&format!("/sessions/{id}/turns"), &json!({"text": "Hello"}));
    assert_eq!(t.status, 502, "{t:?}");
    assert_eq!(t.json()["code"], "MODEL_AUTH", "{t:?}");
    assert!(!t.body.contains("127.0.0.1"), "{t:?}");
    assert!(!t.body.contains(KEY));
    assert_eq!(ws.get(&format!("/sessions/{id}.jsonl")).body, before);
    drop(server);
    // The log has the model runtime's message; no file has the key.
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("MODEL_AUTH"), "{logged}");
    // The warning names the request it was logged in (docs/server.md
    // "Start"), from the model turn's blocking task too.
    let api = &ws.base[ws.base.find("/api/").unwrap()..];
    let turn_path = format!("path={api}/sessions/{id}/turns");
    assert!(
        logged.lines().any(|l| l.contains("MODEL_AUTH")
            && l.contains("method=POST")
            && l.contains(&turn_path)),
        "{turn_path}: {logged}"
    );
    assert_no_key_in(tmp.path());
}

#[test]
fn a_model_whose_key_variable_is_unset_stops_the_server_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path(), "http://127.0.0.1:9/v1");
    let o = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--database"])
        .arg(tmp.path().join("t.db"))
        .arg("--config")
        .arg(&cfg)
        .env_remove(KEY_ENV)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(KEY_ENV) && err.contains("models.local"),
        "{err}"
    );
    // An endpoint that is not http(s) is refused too.
    std::fs::write(
        &cfg,
        json!({"models": {"x": {"endpoint": "file:///etc/passwd"}}}).to_string(),
    )
    .unwrap();
    let (code, _, err) = common::run(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--config",
        cfg.to_str().unwrap(),
        "--database",
        tmp.path().join("t.db").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("models.x.endpoint"), "{err}");
}

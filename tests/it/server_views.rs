//! The read-only views of a session over HTTP (docs/server.md "API"):
//! `render` and `prompt` answer exactly what `troupe render --json` and
//! `troupe prompt --json` print for the same pack and session file.

use crate::common;

use crate::server_support::*;
use serde_json::{json, Value};

/// A played session, exported, and the same file on disk for the CLI.
fn played(ws: &Ws, dir: &std::path::Path) -> (String, std::path::PathBuf) {
    let pack = upload(ws);
    let (id, doc) = create(ws, &pack, 7);
    let mut expected = doc["current"].clone();
    for text in [
        "Hello Marco! What's your best price?",
        "That's too much. I can offer 7,000.",
    ] {
        let a = ws.post(
            &format!("/sessions/{id}/turns"),
            &json!({"text": text, "expected": expected}),
        );
        assert_eq!(a.status, 200, "{a:?}");
        expected = a.last_message();
    }
    let file = dir.join(format!("{id}.jsonl"));
    std::fs::write(&file, ws.get(&format!("/sessions/{id}.jsonl")).body).unwrap();
    (id, file)
}

/// The CLI's `--json` output, parsed.
fn cli_json(args: &[&str]) -> Value {
    let (code, out, err) = common::run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {out}"))
}

fn query(pairs: &[(&str, &str)]) -> String {
    let enc = |s: &str| {
        s.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect::<String>()
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[test]
fn render_and_prompt_answer_what_the_cli_prints() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "views") {
        let server = Server::start(&db);
        let (ws, _) = workspace(&server, &db, "views");
        let (id, file) = played(&ws, tmp.path());
        let pkg = package().0.to_str().unwrap();
        let session = file.to_str().unwrap();

        // render: at a message, for a character; and without `at`.
        let text = "{{user}} talks to {{char}}.";
        let a = ws.get(&format!(
            "/sessions/{id}/render?{}",
            query(&[("text", text), ("at", "m3"), ("char", "marco")])
        ));
        assert_eq!(a.status, 200, "{a:?}");
        let cli = cli_json(&[
            "render",
            pkg,
            "--text",
            text,
            "--session",
            session,
            "--at",
            "m3",
            "--char",
            "marco",
            "--json",
        ]);
        assert_eq!(a.json(), cli, "{db:?}");
        assert!(a.json().is_string());
        let a = ws.get(&format!(
            "/sessions/{id}/render?{}",
            query(&[("text", text)])
        ));
        let cli = cli_json(&[
            "render",
            pkg,
            "--text",
            text,
            "--session",
            session,
            "--json",
        ]);
        assert_eq!((a.status, a.json()), (200, cli), "{db:?}");
        // A malformed template is the library's TEMPLATE_SYNTAX, as a problem.
        let bad = ws.get(&format!(
            "/sessions/{id}/render?{}",
            query(&[("text", "{{#if}")])
        ));
        assert_eq!(bad.status, 422, "{bad:?}");
        assert_eq!(bad.content_type, "application/problem+json");
        assert_eq!(bad.json()["code"], "TEMPLATE_SYNTAX", "{}", bad.body);
        assert_eq!(ws.get(&format!("/sessions/{id}/render")).status, 400);

        // prompt: the last message by default, and with every setting.
        let a = ws.get(&format!("/sessions/{id}/prompt"));
        assert_eq!(a.status, 200, "{a:?}");
        assert_eq!(
            a.json(),
            cli_json(&["prompt", pkg, session, "--json"]),
            "{db:?}"
        );
        let a = ws.get(&format!(
            "/sessions/{id}/prompt?{}",
            query(&[
                ("at", "m3"),
                ("char", "marco"),
                ("model", "tiny"),
                ("structured", "json_object"),
                ("max_tokens", "64"),
                ("temperature", "0.5"),
            ])
        ));
        assert_eq!(a.status, 200, "{a:?}");
        let cli = cli_json(&[
            "prompt",
            pkg,
            session,
            "--at",
            "m3",
            "--char",
            "marco",
            "--model",
            "tiny",
            "--structured",
            "json_object",
            "--max-tokens",
            "64",
            "--temperature",
            "0.5",
            "--json",
        ]);
        assert_eq!(a.json(), cli, "{db:?}");
        let nobody = ws.get(&format!("/sessions/{id}/prompt?char=nobody"));
        assert_eq!(nobody.status, 404, "{nobody:?}");
        assert_eq!(nobody.content_type, "application/problem+json");
        let bad = ws.get(&format!("/sessions/{id}/prompt?structured=xml"));
        assert_eq!(bad.status, 400, "{bad:?}");
        // Format 24.1's bounds, as the CLI's flags hold them: a temperature
        // is a finite number ≥ 0, max_tokens at least 1.
        for (q, says) in [
            ("temperature=NaN", "temperature NaN"),
            ("temperature=-1", "temperature -1"),
            ("temperature=inf", "temperature inf"),
            ("max_tokens=0", "max_tokens is 0"),
        ] {
            let bad = ws.get(&format!("/sessions/{id}/prompt?{q}"));
            assert_eq!(bad.status, 400, "{q}: {bad:?}");
            assert!(
                bad.json()["detail"].as_str().unwrap_or("").contains(says),
                "{q}: {}",
                bad.body
            );
            let flag = format!("--{}", q.replace('_', "-"));
            let cli = common::troupe(&["prompt", pkg, session, &flag, "--json"]);
            assert_eq!(
                cli.status.code(),
                Some(2),
                "{q}: {}",
                String::from_utf8_lossy(&cli.stderr)
            );
            assert!(
                String::from_utf8_lossy(&cli.stderr).contains(says),
                "{q}: {}",
                String::from_utf8_lossy(&cli.stderr)
            );
        }
        // Another session's views are 404, not an empty answer.
        assert_eq!(ws.get("/sessions/snone/prompt").status, 404);
        assert_eq!(ws.get("/sessions/snone/render?text=x").status, 404);
    }
}

/// A validator of `schema` (a schema of the OpenAPI document `doc`): its
/// `#/components/…` references resolve in `doc`, its output-schema `$id`s
/// to the schemas the library embeds.
fn validator(doc: &Value, schema: &Value) -> jsonschema::Validator {
    let root = json!({"components": doc["components"], "allOf": [schema]});
    let registry = jsonschema::Registry::new()
        .extend(troupe::output_schemas().iter().map(|(_, text)| {
            let v: Value = serde_json::from_str(text).unwrap();
            (v["$id"].as_str().unwrap().to_string(), v)
        }))
        .and_then(|b| b.prepare())
        .unwrap();
    jsonschema::options()
        .with_registry(&registry)
        .offline()
        .build(&root)
        .unwrap_or_else(|e| panic!("{schema}: {e}"))
}

/// Every workspace operation that answers JSON names the schema of its
/// answer, and every operation with a JSON body the schema of its
/// request; the answers and requests of a played session match them.
#[test]
fn every_json_body_matches_its_openapi_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Backend::Sqlite(tmp.path().join("schemas.db"));
    let server = Server::start(&db);
    let (ws, _) = workspace(&server, &db, "schemas");
    let doc = call(
        "GET",
        &format!("{}/api/v1/openapi.json", server.base),
        None,
        None,
        None,
    )
    .json();
    let w = "/api/v1/workspaces/{ws}";
    let op = |method: &str, path: &str| doc["paths"][format!("{w}{path}")][method].clone();
    let answer = |method: &str, path: &str| {
        let o = op(method, path);
        let (_, r) = o["responses"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(k, _)| k.starts_with('2'))
            .unwrap();
        r["content"]["application/json"]["schema"].clone()
    };
    for (path, ops) in doc["paths"].as_object().unwrap() {
        if !path.starts_with(w) {
            continue;
        }
        for (method, o) in ops.as_object().unwrap() {
            for (status, r) in o["responses"].as_object().unwrap() {
                if let Some(media) = r["content"].get("application/json") {
                    if status.starts_with('2') {
                        assert!(
                            media.get("schema").is_some(),
                            "{method} {path}: no answer schema"
                        );
                    }
                }
            }
            if let Some(media) = o["requestBody"]["content"].get("application/json") {
                assert!(
                    media.get("schema").is_some(),
                    "{method} {path}: no request schema"
                );
            }
        }
    }
    let check = |method: &str, path: &str, body: &Value| {
        let v = validator(&doc, &answer(method, path));
        let errors: Vec<String> = v.iter_errors(body).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{method} {path}: {errors:?}\n{body}");
    };
    let request = |path: &str, body: &Value| {
        let schema =
            op("post", path)["requestBody"]["content"]["application/json"]["schema"].clone();
        assert!(validator(&doc, &schema).is_valid(body), "{path}: {body}");
    };
    let pack = upload(&ws);
    check("get", "/packs", &ws.get("/packs").json());
    check(
        "get",
        "/packs/{hash}",
        &ws.get(&format!("/packs/{pack}")).json(),
    );
    let start = json!({"pack": pack, "seed": 3});
    request("/sessions", &start);
    let created = ws.post("/sessions", &start);
    check("post", "/sessions", &created.json());
    let id = created.json()["id"].as_str().unwrap().to_string();
    let s = |rest: &str| format!("/sessions/{id}{rest}");
    let t = json!({"text": "Hello Marco! What's your best price?", "expected": created.json()["current"]});
    request("/sessions/{id}/turns", &t);
    let turn = ws.post(&s("/turns"), &t);
    assert_eq!(turn.status, 200, "{turn:?}");
    check("post", "/sessions/{id}/turns", &turn.json());
    let turn = ws.post(&s("/turns"), &json!({"text": "I can offer 7,000."}));
    check("post", "/sessions/{id}/turns", &turn.json());
    check("get", "/sessions/{id}", &ws.get(&s("")).json());
    for (path, rest) in [
        ("/sessions/{id}/state", "/state"),
        ("/sessions/{id}/ended", "/ended"),
        ("/sessions/{id}/explain", "/explain"),
        ("/sessions/{id}/knows", "/knows?message=m3&part=0"),
        ("/sessions/{id}/score", "/score"),
        (
            "/sessions/{id}/render",
            "/render?text=Hi%20%7B%7Buser%7D%7D",
        ),
        ("/sessions/{id}/prompt", "/prompt"),
    ] {
        let a = ws.get(&s(rest));
        assert_eq!(a.status, 200, "{path}: {a:?}");
        check("get", path, &a.json());
    }
    let settings = json!({"difficulty": "hard"});
    request("/sessions/{id}/settings", &settings);
    let changed = ws.post(&s("/settings"), &settings);
    assert_eq!(changed.status, 200, "{changed:?}");
    check("post", "/sessions/{id}/settings", &changed.json());
    request("/sessions/{id}/undo", &json!({}));
    let undone = ws.post(&s("/undo"), &json!({}));
    check("post", "/sessions/{id}/undo", &undone.json());
    let goto = json!({"message": "m1"});
    request("/sessions/{id}/goto", &goto);
    check(
        "post",
        "/sessions/{id}/goto",
        &ws.post(&s("/goto"), &goto).json(),
    );
    // And the schemas refuse what the server refuses.
    let turn_schema = op("post", "/sessions/{id}/turns")["requestBody"]["content"]
        ["application/json"]["schema"]
        .clone();
    assert!(!validator(&doc, &turn_schema).is_valid(&json!({"text": "x", "speed": 1})));
    let turn_answer = answer("post", "/sessions/{id}/turns");
    assert!(!validator(&doc, &turn_answer).is_valid(&json!({"turn": "one"})));
}

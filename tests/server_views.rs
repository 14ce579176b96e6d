//! The read-only views of a session over HTTP (docs/server.md "API"):
//! `render` and `prompt` answer exactly what `troupe render --json` and
//! `troupe prompt --json` print for the same pack and session file.

mod common;
mod server_support;

use serde_json::{json, Value};
use server_support::*;

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
        // Another session's views are 404, not an empty answer.
        assert_eq!(ws.get("/sessions/snone/prompt").status, 404);
        assert_eq!(ws.get("/sessions/snone/render?text=x").status, 404);
    }
}

//! The model runtime speaks as a cast (Format 18.9, 24; issue 37 item 4):
//! under the `all` strategy a turn of three speakers makes one model call
//! per reply, each call answering the message before it with its own
//! responder's prompt; a cassette records each call as an interaction of
//! its own and replays them with no model to the same bytes. The server is
//! a loopback fake (tests/common/loopback.rs); nothing leaves the machine.
//!
//! Expected by hand: cast ana, ben, cy (all present, no rules, so every
//! speaker is a candidate the model answers for), then the player seat;
//! `all` tries the candidates in cast order, each reply answering the one
//! before (18.5 "Several replies"): m1 is the input `hello`, m2 Ana's
//! reply (parent m1), m3 Ben's (parent m2), m4 Cy's (parent m3). Ben's
//! prompt ends with Ana's line as a user message `Ana: <text>` (24.3: a
//! message the responder did not author), Cy's with Ben's.

use crate::common::loopback::{ok, serve};

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

fn bundle(dir: &Path) -> String {
    let character = |id: &str, name: &str| json!({"id": id, "name": name, "fictional": true, "age_band": "adult"});
    let b = json!({
        "troupe": "0.1",
        "kind": "bundle",
        "characters": [character("ana", "Ana"), character("ben", "Ben"), character("cy", "Cy")],
        "scenarios": [{
            "id": "flat",
            "name": "The flat",
            "turn_order": {"strategy": "all"},
            "cast": [
                {"character": "ana"},
                {"character": "ben"},
                {"character": "cy"},
                {"seat": "player", "player": true}
            ]
        }]
    });
    let p = dir.join("flat.bundle.json");
    std::fs::write(&p, serde_json::to_string_pretty(&b).unwrap()).unwrap();
    p.display().to_string()
}

fn run(bundle: &str, dir: &Path, extra: &[&str]) -> Output {
    let script = dir.join("script.txt");
    std::fs::write(&script, "hello\n").unwrap();
    Command::new(env!("CARGO_BIN_EXE_troupe"))
        .arg("run")
        .arg(bundle)
        .args(["--runtime", "model", "--seed", "7", "--json", "--script"])
        .arg(&script)
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn last_content(request: &Value) -> (String, String) {
    let m = request["messages"].as_array().unwrap().last().unwrap();
    (
        m["role"].as_str().unwrap().to_string(),
        m["content"].as_str().unwrap().to_string(),
    )
}

#[test]
fn an_all_turn_makes_one_call_per_reply_and_its_cassette_replays_each() {
    let dir = tempfile::tempdir().unwrap();
    let b = bundle(dir.path());
    let cassette = dir.path().join("c.json");
    let (a, r) = (dir.path().join("a.jsonl"), dir.path().join("r.jsonl"));
    let recorded = {
        let s = serve(vec![
            ok(json!({"reply": "Ana here."})),
            ok(json!({"reply": "Ben agrees."})),
            ok(json!({"reply": "Cy doubts it."})),
        ]);
        let o = run(
            &b,
            dir.path(),
            &[
                "--endpoint",
                &s.url,
                "--out",
                a.to_str().unwrap(),
                "--cassette",
                cassette.to_str().unwrap(),
                "--record",
            ],
        );
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        // Three replies, three calls.
        let seen = s.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 3);
        // Each call answers the message before it: Ben's prompt ends with
        // Ana's line, Cy's with Ben's.
        assert_eq!(
            last_content(&seen[0].1),
            ("user".into(), "Player: hello".into())
        );
        assert_eq!(
            last_content(&seen[1].1),
            ("user".into(), "Ana: Ana here.".into())
        );
        assert_eq!(
            last_content(&seen[2].1),
            ("user".into(), "Ben: Ben agrees.".into())
        );
        o
    };
    let doc: Value = serde_json::from_slice(&recorded.stdout).unwrap();
    let turn = &doc["turns"][0];
    let authors: Vec<&str> = turn["replies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["author"].as_str().unwrap())
        .collect();
    assert_eq!(authors, ["ana", "ben", "cy"], "{turn}");
    assert_eq!(turn["messages"], json!(["m1", "m2", "m3", "m4"]));
    // The turn reports the requests of all its replies (Format 24.7).
    assert_eq!(turn["model"]["requests"], 3, "{turn}");
    assert_eq!(turn["model"]["usage"]["total_tokens"], 360);
    assert_eq!(doc["model"]["requests"], 3);
    // The session: each reply a message of its own, answering the one before.
    let lines: Vec<Value> = std::fs::read_to_string(&a)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    for (i, (id, parent, author)) in [("m2", "m1", "ana"), ("m3", "m2", "ben"), ("m4", "m3", "cy")]
        .iter()
        .enumerate()
    {
        let m = &lines[i + 2];
        assert_eq!(
            (m["id"].as_str(), m["parent"].as_str(), m["author"].as_str()),
            (Some(*id), Some(*parent), Some(*author)),
            "{m}"
        );
    }
    // The cassette holds one interaction per call, in call order.
    let cas: Value = serde_json::from_slice(&std::fs::read(&cassette).unwrap()).unwrap();
    let inter = cas["interactions"].as_array().unwrap();
    assert_eq!(inter.len(), 3);
    assert_eq!(
        last_content(&inter[1]["request"]).1,
        "Ana: Ana here.",
        "the second interaction is Ben's call"
    );
    // Replayed with no model (the server is gone): the same bytes, session
    // and output alike.
    let o = run(
        &b,
        dir.path(),
        &[
            "--out",
            r.to_str().unwrap(),
            "--cassette",
            cassette.to_str().unwrap(),
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&r).unwrap());
    assert_eq!(o.stdout, recorded.stdout);
}

#[test]
fn a_cassette_missing_the_third_call_takes_the_whole_turn_back() {
    // Each call is its own interaction: a cassette holding only the first
    // two cannot replay the turn, which is taken back whole (Format 24.8:
    // nothing of a turn whose call fails is written).
    let dir = tempfile::tempdir().unwrap();
    let b = bundle(dir.path());
    let cassette = dir.path().join("c.json");
    {
        let s = serve(vec![
            ok(json!({"reply": "Ana here."})),
            ok(json!({"reply": "Ben agrees."})),
            ok(json!({"reply": "Cy doubts it."})),
        ]);
        let o = run(
            &b,
            dir.path(),
            &[
                "--endpoint",
                &s.url,
                "--cassette",
                cassette.to_str().unwrap(),
                "--record",
            ],
        );
        assert_eq!(o.status.code(), Some(0));
    }
    let mut cas: Value = serde_json::from_slice(&std::fs::read(&cassette).unwrap()).unwrap();
    cas["interactions"].as_array_mut().unwrap().pop();
    std::fs::write(&cassette, serde_json::to_string_pretty(&cas).unwrap()).unwrap();
    let out = dir.path().join("s.jsonl");
    let o = run(
        &b,
        dir.path(),
        &[
            "--out",
            out.to_str().unwrap(),
            "--cassette",
            cassette.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("UNMOCKED_MODEL_CALL: turn 1 (input m3)"),
        "{err}"
    );
    // Only the header remains.
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 1);
}

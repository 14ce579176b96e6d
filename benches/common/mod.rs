//! The generated story and session the engine benchmarks run on: 20
//! variables (two derived, one keyed by the cast), 10 repeating events, and
//! a session of N messages in segments of 50 whose first message continues
//! the segment `(s - 1) / 2` (a branch every 50 messages; depth about
//! 50 × log2(N / 50)).

#![allow(dead_code)]

use serde_json::{json, Value};

/// The bundle.
pub fn bundle() -> Value {
    let mut vars = Vec::new();
    for i in 0..10 {
        vars.push(json!({"id": format!("v{i}"), "type": "int", "min": 0, "max": 1000}));
    }
    for i in 0..5 {
        vars.push(json!({"id": format!("n{i}"), "type": "number", "default": 0.5, "max": 100}));
    }
    vars.push(json!({"id": "trust", "type": "int", "keys": "cast", "default": 30, "max": 100}));
    vars.push(json!({"id": "mood", "type": "string", "default": "calm"}));
    vars.push(json!({"id": "flag", "type": "bool"}));
    vars.push(json!({"id": "d0", "type": "int", "derived": "state.v0 + state.v1"}));
    vars.push(json!({"id": "d1", "type": "bool", "derived": "state.trust.p > 50 && state.flag"}));
    let events: Vec<Value> = (0..10)
        .map(|i| {
            json!({"id": format!("e{i}"), "when": format!("state.v{i} > 5"), "repeat": true,
                   "changes": [{"add": {format!("n{}", i % 5): 0.25}}]})
        })
        .collect();
    let ch = |id: &str| json!({"id": id, "name": id.to_uppercase(), "fictional": true, "age_band": "adult"});
    json!({
        "troupe": "0.1", "kind": "bundle",
        "characters": [ch("p"), ch("a"), ch("b"), ch("c")],
        "scenarios": [{
            "id": "bench", "name": "Bench",
            "cast": [{"character": "p", "player": true}, {"character": "a"}, {"character": "b"}, {"character": "c"}],
            "variables": vars, "events": events
        }]
    })
}

/// The session as JSON Lines text, `n` messages after the header.
pub fn session_jsonl(n: usize) -> String {
    let mut out = String::with_capacity(n * 200);
    out.push_str(r#"{"troupe":"0.1","kind":"session","scenario":"bench","seed":7}"#);
    out.push('\n');
    let authors = ["p", "a", "b", "c"];
    for i in 0..n {
        let seg = i / 50;
        let parent = if i % 50 != 0 {
            Some(i - 1)
        } else if seg > 0 {
            Some(((seg - 1) / 2) * 50 + 49)
        } else {
            None
        };
        let mut m = json!({
            "id": format!("m{i}"),
            "author": authors[i % 4],
            "parts": [{"type": "text", "text": format!("Line {i}: the quick brown fox jumps over the lazy dog.")}],
            "changes": [
                {"add": {format!("v{}", i % 10): 1}},
                {"set": {format!("trust.{}", authors[(i + 1) % 4]): (i % 100) as i64}}
            ]
        });
        if let Some(p) = parent {
            m["parent"] = json!(format!("m{p}"));
        }
        if i % 25 == 24 {
            m["firings"] = json!([{"event": format!("e{}", (i / 25) % 10)}]);
        }
        if i % 7 == 0 {
            m["changes"]
                .as_array_mut()
                .unwrap()
                .push(json!({"set": {"flag": i % 2 == 0, "mood": "tense"}}));
        }
        out.push_str(&m.to_string());
        out.push('\n');
    }
    out
}

/// Parses JSON Lines with serde_json only (the baseline).
pub fn parse_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("generated JSON"))
        .collect()
}

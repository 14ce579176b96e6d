//! `troupe mcp` over its stdio (docs/mcp.md), its bound: a cancelled
//! call's work stops, measured as the server's CPU time in two runs (a
//! ratio, not a clock). The protocol tests are `tests/it/mcp_stdio.rs`.
#![cfg(all(unix, feature = "mcp"))]

use crate::common;

use serde_json::{json, Value};

fn initialize() -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "cargo-test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
}

/// `requests` written at once to `troupe mcp` (stdin then closed): the
/// response lines in the order written, and the server's CPU time in
/// seconds (`wait4`'s resource usage of the child).
fn piped(requests: &[Value]) -> (Vec<Value>, f64) {
    let mut input = String::new();
    for r in requests {
        input.push_str(&format!("{r}\n"));
    }
    let root = env!("CARGO_MANIFEST_DIR");
    let r = common::measured::troupe_in(
        std::path::Path::new(root),
        &["mcp", "--root", root],
        Some(input.as_bytes()),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, r.cpu)
}

/// A `run` call of 10,000 lines that do not end the tiny story: long
/// enough that a message sent after it arrives while it runs.
fn long_run(id: u64) -> Value {
    let lines = vec!["Hello there, how are you?"; 10_000];
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "run", "arguments": {"pack": "examples/bundles/tiny.bundle.json", "lines": lines}}})
}

fn position(out: &[Value], id: u64) -> usize {
    out.iter()
        .position(|v| v["id"] == id)
        .unwrap_or_else(|| panic!("no answer to {id}"))
}

/// Issue 43, item 8: `notifications/cancelled` changed nothing. A
/// cancelled call gets no response (the protocol says none is sent, and
/// the end of input does not wait for it), its work stops before its next
/// turn, and the next call runs: the server's CPU time with the cancelled
/// run is under half of that with the run finished (a ratio of two runs,
/// not a clock).
#[test]
fn a_cancelled_call_gets_no_answer_and_its_work_stops() {
    let _serial = crate::serial();
    let state = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "state", "arguments": {"pack": "examples/bundles/tiny.bundle.json"}}});
    let mut whole = initialize();
    whole.push(long_run(2));
    whole.push(state.clone());
    let mut cancelled = initialize();
    cancelled.push(long_run(2));
    cancelled.push(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "test"}}),
    );
    cancelled.push(state);
    let (out, full) = piped(&whole);
    assert_eq!(out[position(&out, 2)]["result"]["isError"], false);
    let (out, cut) = piped(&cancelled);
    assert!(out.iter().all(|v| v["id"] != 2), "{out:?}");
    assert_eq!(out[position(&out, 5)]["result"]["isError"], false);
    assert!(
        cut < full / 2.0,
        "the cancelled run took {cut:.2} s of CPU, the whole one {full:.2} s"
    );
}

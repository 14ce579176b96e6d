//! `troupe mcp` over its stdio (docs/mcp.md): the binary answers
//! `initialize` with the pinned protocol revision and `tools/list` with
//! every tool, each with an input and an output schema; a tool's failure is
//! a result with `isError`, a call that does not fit the schema a JSON-RPC
//! error. (The stock-client tests are `tests/mcp/test_mcp.py`.)
#![cfg(feature = "mcp")]

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

/// Sends `requests` (one JSON-RPC message per line), closes stdin and
/// returns every response line, in order.
fn exchange(requests: &[Value]) -> Vec<Value> {
    exchange_in(std::path::Path::new(env!("CARGO_MANIFEST_DIR")), requests)
}

/// [`exchange`] with the server's root at `root`.
fn exchange_in(root: &std::path::Path, requests: &[Value]) -> Vec<Value> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .arg("mcp")
        .arg("--root")
        .arg(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("troupe mcp starts");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let expected = requests.iter().filter(|r| r.get("id").is_some()).count();
    let mut lines = stdout.lines();
    let mut out = Vec::new();
    // One request at a time: each answer is read before the next is sent,
    // so no response can be lost when stdin closes.
    for r in requests {
        writeln!(stdin, "{r}").unwrap();
        stdin.flush().unwrap();
        if r.get("id").is_some() {
            let line = lines.next().expect("a response").unwrap();
            out.push(serde_json::from_str(&line).expect("a JSON-RPC line"));
        }
    }
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "troupe mcp exits 0 when stdin closes");
    assert_eq!(out.len(), expected);
    out
}

fn initialize() -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "cargo-test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
}

#[test]
fn initialize_and_tools_list_over_stdio() {
    let mut requests = initialize();
    requests.push(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let out = exchange(&requests);
    let init = &out[0]["result"];
    assert_eq!(init["protocolVersion"], "2025-06-18");
    assert_eq!(init["serverInfo"]["name"], "troupe");
    assert!(init["capabilities"]["tools"].is_object());
    assert!(init["capabilities"]["resources"].is_object());
    let tools = out[1]["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "check",
            "test",
            "compile",
            "state",
            "knows",
            "ended",
            "explain",
            "render",
            "cel_check",
            "run"
        ]
    );
    for t in tools {
        assert_eq!(t["inputSchema"]["type"], "object", "{}", t["name"]);
        assert_eq!(t["outputSchema"]["type"], "object", "{}", t["name"]);
    }
}

#[test]
fn a_newer_revision_asked_for_is_answered_with_the_pinned_one() {
    let mut requests = initialize();
    requests[0]["params"]["protocolVersion"] = json!("2025-11-25");
    let out = exchange(&requests[..1]);
    assert_eq!(out[0]["result"]["protocolVersion"], "2025-06-18");
}

#[test]
fn tool_failures_are_results_and_misuse_is_a_jsonrpc_error() {
    let mut requests = initialize();
    requests.push(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "check", "arguments": {"paths": ["examples/broken/cel-syntax.bundle.json"]}}}),
    );
    requests.push(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "state", "arguments": {"pack": "../outside"}}}),
    );
    requests.push(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "state", "arguments": {"pack": 7}}}),
    );
    requests.push(
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "no_such_tool", "arguments": {}}}),
    );
    let out = exchange(&requests);
    let check = &out[1]["result"];
    assert_eq!(check["isError"], true);
    assert_eq!(check["structuredContent"]["valid"], false);
    assert_eq!(
        check["structuredContent"]["diagnostics"][0]["code"],
        "CEL_SYNTAX"
    );
    assert_eq!(
        check["structuredContent"]["diagnostics"][0]["file"],
        "examples/broken/cel-syntax.bundle.json"
    );
    let outside = &out[2]["result"];
    assert_eq!(outside["isError"], true);
    assert_eq!(outside["structuredContent"]["error"], "refused");
    assert_eq!(
        outside["structuredContent"]["diagnostics"][0]["code"],
        "PATH_TRAVERSAL"
    );
    assert_eq!(out[3]["error"]["code"], -32602);
    assert_eq!(out[4]["error"]["code"], -32602);
}

/// Issue 43, item 1: MCP `compile` applies Format 16.3's output rules
/// through the same function as `troupe compile`: `out` inside the input
/// pack, an existing file that is not a package, and the root itself are
/// refused (`isError`, `error: refused`), and no file changes; a new file
/// beside the pack is written.
#[test]
fn compile_refuses_outputs_as_the_cli_does() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let pack = root.join("pack");
    std::fs::create_dir(&pack).unwrap();
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/packs/everyday-negotiation");
    for e in walkdir::WalkDir::new(&src) {
        let e = e.unwrap();
        let to = pack.join(e.path().strip_prefix(&src).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
    std::fs::write(root.join("README.md"), "# workspace\n").unwrap();
    let manifest = std::fs::read(pack.join("manifest.yaml")).unwrap();
    let compile = |id: u64, out: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "compile", "arguments": {"pack": "pack", "out": out}}})
    };
    let mut requests = initialize();
    let refused = [
        ("pack/manifest.yaml", "is an input"),
        ("pack/scenarios/used_car_negotiation.yaml", "is an input"),
        ("README.md", "is not a package"),
        (".", "is a folder"),
        ("pack", "is a folder"),
    ];
    for (i, (out, _)) in refused.iter().enumerate() {
        requests.push(compile(10 + i as u64, out));
    }
    requests.push(compile(99, "game.troupe"));
    let answers = exchange_in(root, &requests);
    for (i, (out, why)) in refused.iter().enumerate() {
        let r = &answers[1 + i]["result"];
        assert_eq!(r["isError"], true, "{out}: {r}");
        assert_eq!(r["structuredContent"]["error"], "refused", "{out}: {r}");
        let message = r["structuredContent"]["message"].as_str().unwrap();
        assert!(message.contains(why), "{out}: {message}");
    }
    assert_eq!(std::fs::read(pack.join("manifest.yaml")).unwrap(), manifest);
    assert_eq!(
        std::fs::read_to_string(root.join("README.md")).unwrap(),
        "# workspace\n"
    );
    let ok = &answers[1 + refused.len()]["result"];
    assert_eq!(ok["isError"], false, "{ok}");
    assert!(std::fs::read(root.join("game.troupe"))
        .unwrap()
        .starts_with(b"PK"));
}

/// Issue 43, item 8: requests read from a file (the end of input arrives
/// at once): every request read is answered before the server exits. 3,000
/// `state` calls take longer than the SDK's few seconds of grace at the end
/// of input; with the SDK's plain stdio transport this gave between 57 and
/// 3,001 answers across runs.
#[test]
fn every_request_read_is_answered_before_exit() {
    let n = 3000;
    let mut input = String::new();
    for r in initialize() {
        input.push_str(&format!("{r}\n"));
    }
    for i in 0..n {
        let r = json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": {
            "name": "state", "arguments": {"pack": "examples/bundles/tiny.bundle.json"}}});
        input.push_str(&format!("{r}\n"));
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("requests.jsonl");
    std::fs::write(&file, input).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(["mcp", "--root", env!("CARGO_MANIFEST_DIR")])
        .stdin(std::fs::File::open(&file).unwrap())
        .stderr(Stdio::null())
        .output()
        .expect("troupe mcp runs");
    assert!(out.status.success());
    let mut ids = Vec::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(v.get("error").is_none(), "{v}");
        ids.push(v["id"].as_u64().unwrap());
    }
    ids.sort_unstable();
    let expected: Vec<u64> = std::iter::once(1).chain(10..10 + n).collect();
    assert_eq!(
        ids.len(),
        expected.len(),
        "answers lost at the end of input"
    );
    assert_eq!(ids, expected);
}

/// Issue 43, item 8: a path given many times in one `check` (also through
/// `./` and `..`) is checked once: the report is that of one copy.
#[test]
fn duplicate_paths_in_one_check_are_checked_once() {
    let one = "examples/broken/cel-syntax.bundle.json";
    let mut many: Vec<String> = vec![one.to_string(); 500];
    many.push(format!("./{one}"));
    many.push(format!("examples/../{one}"));
    let mut requests = initialize();
    for (id, paths) in [(2, vec![one.to_string()]), (3, many)] {
        requests.push(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "check", "arguments": {"paths": paths}}}),
        );
    }
    let out = exchange(&requests);
    let (single, repeated) = (&out[1]["result"], &out[2]["result"]);
    assert_eq!(single["isError"], true);
    assert_eq!(single["structuredContent"], repeated["structuredContent"]);
}

/// `requests` written at once to `troupe mcp` (stdin then closed): the
/// response lines in the order written, and the server's CPU time in
/// seconds (`wait4`'s resource usage of the child).
#[cfg(unix)]
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

/// Issue 43, item 8: tool calls ran on the thread that answers the
/// protocol, so a `ping` sent during a long call waited for it. Calls now
/// run off that thread: `ping` and `tools/list` sent after a long `run`
/// are answered before it.
#[cfg(unix)]
#[test]
fn ping_and_tools_list_are_answered_during_a_long_call() {
    let mut requests = initialize();
    requests.push(long_run(2));
    requests.push(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}));
    requests.push(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}));
    let (out, _) = piped(&requests);
    assert_eq!(out.len(), 4);
    let run = position(&out, 2);
    assert!(position(&out, 3) < run, "ping waited for the call");
    assert!(position(&out, 4) < run, "tools/list waited for the call");
    let doc = &out[run]["result"]["structuredContent"];
    assert_eq!(doc["turns"].as_array().unwrap().len(), 10_000);
}

/// Issue 43, item 10: MCP `run` of 1 M lines aborted the server (its answer
/// holds every turn). `lines` holds at most 10,000 (docs/mcp.md): 10,001
/// is a protocol error (-32602) before anything runs.
#[test]
fn run_takes_at_most_ten_thousand_lines() {
    let mut too_long = long_run(2);
    too_long["params"]["arguments"]["lines"]
        .as_array_mut()
        .unwrap()
        .push(json!("one more"));
    let mut requests = initialize();
    requests.push(too_long);
    let out = exchange(&requests);
    assert_eq!(out[1]["error"]["code"], -32602, "{}", out[1]);
    let message = out[1]["error"]["message"].as_str().unwrap();
    assert!(message.contains("/lines"), "{message}");
    // The validator quotes the value; the error quotes at most 300
    // characters of it, not the 10,001 lines.
    assert!(message.len() < 2000, "{} bytes", message.len());
}

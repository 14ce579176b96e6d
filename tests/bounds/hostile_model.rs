//! Hostile input to the model runtime (issue 43, items 6 and 7), through
//! the `troupe` binary against a loopback server: a hostile answer is not
//! amplified (Format 24.4's bounded problems), and model bodies and
//! cassettes are held to Format 16's value budget before any value is
//! built. Peak memory is measured from outside the process and compared
//! between two input sizes, never against a clock.

#![cfg(unix)]

use crate::common;
use common::loopback::{ok, serve, status};
use common::measured::{troupe_in, Run};

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

fn pack() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/packs/everyday-negotiation")
}

fn run(dir: &Path, args: &[&str]) -> Run {
    troupe_in(dir, args, None)
}

/// An answer whose `changes` holds `names` names the negotiation does not
/// let a model change, about 13 bytes each.
fn hostile_answer(names: usize) -> Value {
    let changes: serde_json::Map<String, Value> =
        (0..names).map(|i| (format!("n{i:07}"), json!(0))).collect();
    json!({"reply": "Sure.", "changes": changes})
}

/// Issue 43, item 6: an answer of 1.3 M names nobody may change gave a
/// refusal per name, each listing what may change — for one turn 0.89 GB,
/// a 113 MB transcript line and a 129 MB repair request. Format 24.4 now
/// lists the first 16 problems and counts the rest, and the names past
/// them are counted as the answer is read, never built as values: the
/// repair request and the `--json` document are the same size whatever the
/// answer's size, and the peak grows by less than 16 times the answer from
/// 40,000 to 160,000 names (0.5 MB to 2 MB; the answer is received twice
/// and sent back once; measured 11×).
#[test]
fn a_hostile_answer_is_not_amplified() {
    let _serial = crate::serial();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("script.txt"), "Deal?\n").unwrap();
    let mut peaks = Vec::new();
    let mut sizes = Vec::new();
    let mut outputs = Vec::new();
    for names in [40_000, 160_000] {
        let answer = hostile_answer(names);
        let s = serve(vec![ok(answer.clone())]);
        sizes.push(answer.to_string().len() as i64);
        let r = run(
            d,
            &[
                "run",
                pack().to_str().unwrap(),
                "--runtime",
                "model",
                "--endpoint",
                &s.url,
                "--script",
                "script.txt",
                "--json",
            ],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        let doc: Value = serde_json::from_str(&r.stdout).unwrap();
        let turn = &doc["turns"][0];
        assert_eq!(turn["model"]["requests"], 2);
        assert_eq!(turn["diagnostics"][0]["code"], "MODEL_ANSWER");
        let dropped = turn["model"]["dropped"].as_str().unwrap();
        assert_eq!(dropped.matches("may not be changed").count(), 16);
        assert!(
            dropped.ends_with(&format!("and {} more problems", names - 16)),
            "{}",
            &dropped[dropped.len().saturating_sub(80)..]
        );
        let seen = s.seen.lock().unwrap();
        let repair = seen[1].1["messages"].as_array().unwrap();
        let last = repair.last().unwrap()["content"].as_str().unwrap();
        assert!(last.starts_with("Your answer was refused: `n0000000` may not be changed"));
        assert!(last.len() < 16 * 300, "{} bytes", last.len());
        peaks.push(r.max_rss_kib);
        outputs.push(r.stdout.len());
        // Human output: one bounded line for the refusal.
        drop(seen);
        let r = run(
            d,
            &[
                "run",
                pack().to_str().unwrap(),
                "--runtime",
                "model",
                "--endpoint",
                &s.url,
                "--script",
                "script.txt",
            ],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        let line = r
            .stdout
            .lines()
            .find(|l| l.contains("refused: MODEL_ANSWER"))
            .unwrap();
        assert!(line.len() < 16 * 300, "{} bytes", line.len());
    }
    // The printed document does not grow with the answer (but for the
    // digits of the count, in `dropped` and in the diagnostic).
    assert!(outputs[1] - outputs[0] < 16, "{outputs:?}");
    eprintln!("peaks {peaks:?} KiB for answers of {sizes:?} bytes");
    let growth = peaks[1] - peaks[0];
    let more_kib = (sizes[1] - sizes[0]) / 1024;
    assert!(
        growth < 16 * more_kib,
        "peak grew by {growth} KiB for {more_kib} KiB more answer"
    );
}

/// Issue 43, item 7: a model body of many tiny values (a 16 MiB body of
/// zeros took 0.89 GB for one turn) is refused by Format 16's value budget
/// before it is built: MODEL_BAD_RESPONSE, exit 4, nothing written.
#[test]
fn a_body_over_the_value_budget_is_refused_before_it_is_built() {
    let _serial = crate::serial();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("script.txt"), "Deal?\n").unwrap();
    let mut peaks = Vec::new();
    for n in [1usize << 20, 4 << 20] {
        // `[0,0,…]`: one value per 2 bytes, four times the budget.
        let mut body = String::with_capacity(2 * n + 2);
        body.push('[');
        for i in 0..n {
            body.push_str(if i == 0 { "0" } else { ",0" });
        }
        body.push(']');
        let s = serve(vec![status(200, &body)]);
        let r = run(
            d,
            &[
                "run",
                pack().to_str().unwrap(),
                "--runtime",
                "model",
                "--endpoint",
                &s.url,
                "--script",
                "script.txt",
                "--out",
                "o.jsonl",
            ],
        );
        assert_eq!(r.code, 4, "{}", r.stderr);
        assert!(r.stderr.contains("MODEL_BAD_RESPONSE"), "{}", r.stderr);
        assert!(r.stderr.contains("values"), "{}", r.stderr);
        peaks.push(r.max_rss_kib);
    }
    // Four times the body: the peak grows by less than the 6 MiB more
    // body times 4 (the body itself, read whole, and its text).
    let growth = peaks[1] - peaks[0];
    assert!(growth < 4 * 6 * 1024, "peak grew by {growth} KiB");
}

/// Issue 43, item 7: a cassette of many tiny values (a 20 MB one peaked at
/// 1.1 GB in `troupe test`) is MODEL_CASSETTE (exit 3) by Format 16's value
/// budget, before any value is built; the peak grows by less than the
/// cassette's size from 4 MiB to 16 MiB.
#[test]
fn a_cassette_over_the_value_budget_is_refused_before_it_is_built() {
    let _serial = crate::serial();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("script.txt"), "Deal?\n").unwrap();
    let mut peaks = Vec::new();
    for n in [2usize << 20, 8 << 20] {
        let mut c = String::with_capacity(2 * n + 64);
        c.push_str(r#"{"troupe": "0.1", "kind": "cassette", "interactions": [], "x": [0"#);
        for _ in 1..n {
            c.push_str(",0");
        }
        c.push_str("]}");
        let f = format!("c{n}.json");
        std::fs::write(d.join(&f), c).unwrap();
        let r = run(
            d,
            &[
                "run",
                pack().to_str().unwrap(),
                "--runtime",
                "model",
                "--cassette",
                &f,
                "--script",
                "script.txt",
            ],
        );
        assert_eq!(r.code, 3, "{}", r.stderr);
        assert!(r.stderr.contains("MODEL_CASSETTE"), "{}", r.stderr);
        assert!(r.stderr.contains("values"), "{}", r.stderr);
        peaks.push(r.max_rss_kib);
    }
    let growth = peaks[1] - peaks[0];
    assert!(growth < 12 * 1024 * 2, "peak grew by {growth} KiB");
}

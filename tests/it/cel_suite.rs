//! The shared CEL conformance data (`data/cel/`, STACK.md): every line of
//! `cel-subset.jsonl` passes and every line of `cel-rejected.jsonl` fails to
//! check. The files are read from `$TROUPE_SHARED_DIR` (else `../shared`).

use crate::common;

fn shared_file(name: &str) -> Option<String> {
    let path = common::shared(&format!("data/cel/{name}"), "cel suite")?;
    Some(std::fs::read_to_string(&path).unwrap())
}

fn run(name: &str, expected_lines: usize) {
    let Some(text) = shared_file(name) else {
        return;
    };
    let (passed, failed) = troupe::internals::cel::run_text(&text);
    for (line, test, why) in &failed {
        println!("{name}:{line} {test}: {why}");
    }
    assert_eq!(
        passed + failed.len(),
        expected_lines,
        "line count of {name}"
    );
    assert!(
        failed.is_empty(),
        "{} of {} lines of {name} failed",
        failed.len(),
        expected_lines
    );
}

#[test]
fn subset_passes() {
    run("cel-subset.jsonl", 580);
}

#[test]
fn rejected_fail_to_check() {
    run("cel-rejected.jsonl", 684);
}

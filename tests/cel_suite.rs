//! The shared CEL conformance data (`data/cel/`, STACK.md): every line of
//! `cel-subset.jsonl` passes and every line of `cel-rejected.jsonl` fails to
//! check. The files are read from `$TROUPE_SHARED_DIR` (else `../shared`).

use std::path::PathBuf;

fn shared_file(name: &str) -> Option<String> {
    let dir = std::env::var_os("TROUPE_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let path = dir.join("data/cel").join(name);
    match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) => {
            if std::env::var("TROUPE_REQUIRE_SHARED").as_deref() == Ok("1") {
                panic!(
                    "{} is required (TROUPE_REQUIRE_SHARED=1) but unreadable: {e}",
                    path.display()
                );
            }
            println!(
                "cel suite not run: {} is unreadable ({e}); set TROUPE_SHARED_DIR",
                path.display()
            );
            None
        }
    }
}

fn run(name: &str, expected_lines: usize) {
    let Some(text) = shared_file(name) else {
        return;
    };
    let (passed, failed) = troupe::cel::suite::run_text(&text);
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

//! Runs the whole conformance suite in `conformance/` (Format 20). Tests
//! listed in `conformance/known-failures.txt` may fail (each line gives its
//! cause); a listed test that passes fails this test, so the list shrinks.

use std::collections::BTreeSet;
use std::path::Path;

use troupe::conformance::Outcome;

#[test]
fn the_conformance_suite_passes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance");
    if !dir.is_dir() {
        println!(
            "conformance suite not run: {} does not exist",
            dir.display()
        );
        return;
    }
    let known: BTreeSet<String> = std::fs::read_to_string(dir.join("known-failures.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    let report = troupe::conformance::run_dir(&dir);
    println!("{}", report.to_text());
    assert!(!report.results.is_empty(), "no conformance case found");
    let mut unexpected = Vec::new();
    for r in &report.results {
        let index = r.test.split_whitespace().next().unwrap_or("");
        let key = format!("{} {index}", r.file);
        let failed = r.outcome != Outcome::Pass;
        match (failed, known.contains(&key)) {
            (true, false) => unexpected.push(format!("fails: {key} {}: {:?}", r.test, r.outcome)),
            (false, true) => unexpected.push(format!(
                "passes now, remove it from known-failures.txt: {key}"
            )),
            _ => {}
        }
    }
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
}

//! Runs the whole conformance suite in `conformance/` (Format 23): every
//! case must pass, and a case that breaks the runner contract fails.

use std::path::Path;

use troupe::conformance::Outcome;

#[test]
fn the_conformance_suite_passes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance");
    let report = troupe::conformance::run_dir(&dir);
    println!("{}", report.to_text());
    assert!(
        report.results.len() >= 250,
        "the suite has {} tests; it should have at least 250",
        report.results.len()
    );
    let failed: Vec<String> = report
        .results
        .iter()
        .filter(|r| r.outcome != Outcome::Pass)
        .map(|r| format!("{} {}: {:?}", r.file, r.test, r.outcome))
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

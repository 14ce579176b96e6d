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

/// The example cases read copies of `examples/bundles` kept inside the
/// suite (Format 23: case inputs stay inside the suite's folder); the
/// copies must not drift from the examples.
#[test]
fn the_example_inputs_inside_the_suite_are_the_examples() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (copy, original) in [
        ("tiny.bundle.json", "examples/bundles/tiny.bundle.json"),
        ("tiny.session.jsonl", "examples/bundles/tiny.session.jsonl"),
        (
            "harbor-lights.bundle.json",
            "examples/bundles/harbor-lights.bundle.json",
        ),
        (
            "harbor-lights.walkthrough.jsonl",
            "examples/bundles/sessions/harbor-lights.walkthrough.jsonl",
        ),
    ] {
        let a = std::fs::read(root.join("conformance/cases/examples/files").join(copy)).unwrap();
        let b = std::fs::read(root.join(original)).unwrap();
        assert!(
            a == b,
            "conformance/cases/examples/files/{copy} differs from {original}"
        );
    }
}

//! Runs the whole conformance suite in `conformance/` (Format 20).

use std::path::Path;

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
    let report = troupe::conformance::run_dir(&dir);
    let text = report.to_text();
    println!("{text}");
    assert!(
        !report.results.is_empty(),
        "no conformance case found in {}",
        dir.display()
    );
    assert_eq!(report.failed(), 0, "{text}");
}

//! Runs the whole conformance suite in `conformance/` (Format 23): every
//! case must pass, and a case that breaks the runner contract fails.

use std::path::Path;

use troupe::internals::conformance::Outcome;

#[test]
fn the_conformance_suite_passes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance");
    let report = troupe::internals::conformance::run_dir(&dir);
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

/// The codes of the parse layers (Format 23 `parse`: archive checks of
/// 14.1, 14.2 and 16, then parsing, version, schema and 15).
const PARSE_LAYERS: &[&str] = &[
    "ADVISORY",
    "ENCODING",
    "FORBIDDEN_BINARY",
    "FORBIDDEN_FILE",
    "LIMIT",
    "MISSING_FILE",
    "PARSE",
    "PATH_TRAVERSAL",
    "SCHEMA",
    "UNKNOWN_FIELD",
    "UNSUPPORTED_VERSION",
];

/// Issue 42: `troupe check` of each package of the suite's `parse` cases
/// agrees with the case. Format 23 makes a `parse` case the parse layers
/// only: check reports every code the case expects, and any other code it
/// reports is from the semantic checks (3–12) or IR_MISMATCH (14.4), never
/// one of the parse layers that the case left out.
#[test]
fn check_agrees_with_the_package_parse_cases() {
    use base64::Engine as _;
    use std::collections::BTreeSet;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/cases");
    let tmp = tempfile::tempdir().unwrap();
    let mut seen = 0;
    let mut files: Vec<_> = walk(&dir);
    files.sort();
    for file in files {
        let case: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        for t in case["tests"].as_array().into_iter().flatten() {
            if t["type"] != "parse" || t["kind"] != "package" {
                continue;
            }
            let bytes = match (t["base64"].as_str(), t["text"].as_str()) {
                (Some(b), _) => base64::engine::general_purpose::STANDARD.decode(b).unwrap(),
                (None, Some(text)) => text.as_bytes().to_vec(),
                _ => continue,
            };
            seen += 1;
            let pkg = tmp.path().join(format!("case-{seen}.troupe"));
            std::fs::write(&pkg, bytes).unwrap();
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_troupe"))
                .args(["check", pkg.to_str().unwrap(), "--json"])
                .output()
                .unwrap();
            let report: serde_json::Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{}: {e}", t["name"]));
            let check: BTreeSet<&str> = report["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|d| d["code"].as_str())
                .collect();
            let want: BTreeSet<&str> = t["expect"]["codes"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|c| c.as_str())
                .collect();
            let name = format!("{} {}", file.display(), t["name"]);
            assert!(
                want.is_subset(&check),
                "{name}: the case expects {want:?}, check reports {check:?}"
            );
            let extra: Vec<&&str> = check
                .difference(&want)
                .filter(|c| PARSE_LAYERS.contains(c))
                .collect();
            assert!(
                extra.is_empty(),
                "{name}: check reports parse-layer codes {extra:?} the case does not expect ({want:?})"
            );
        }
    }
    assert!(seen >= 70, "only {seen} package parse cases");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
    out
}

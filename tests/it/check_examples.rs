//! `troupe check` on the shipped examples: every example pack, bundle and
//! session is valid, and every input in `examples/broken/` reports exactly
//! the codes and locations `examples/broken/EXPECTED.json` derives from the
//! spec. The `--json` report of each broken input is pinned by a snapshot.

use std::path::{Path, PathBuf};

use serde_json::Value;
use troupe::internals::check::check_paths;
use troupe::internals::diag::Report;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The paths `troupe check` gets for one broken entry: a pack directory as
/// is; a folder of a bundle and a session as its bundle(s) then session(s).
fn args_for(path: &Path) -> Vec<PathBuf> {
    if !path.is_dir() || path.join("manifest.yaml").exists() {
        return vec![path.to_path_buf()];
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort_by_key(|p| (p.extension().is_some_and(|e| e == "jsonl"), p.clone()));
    files
}

#[test]
fn example_packs_bundles_and_sessions_are_valid() {
    let r = root();
    let mut inputs: Vec<Vec<PathBuf>> = std::fs::read_dir(r.join("examples/packs"))
        .unwrap()
        .map(|e| vec![e.unwrap().path()])
        .collect();
    inputs.push(vec![
        r.join("examples/bundles/tiny.bundle.json"),
        r.join("examples/bundles/tiny.session.jsonl"),
    ]);
    inputs.push(vec![
        r.join("examples/bundles/harbor-lights.bundle.json"),
        r.join("examples/bundles/sessions/harbor-lights.walkthrough.jsonl"),
    ]);
    for args in inputs {
        let checked = check_paths(&args);
        assert!(
            checked.diagnostics.is_empty(),
            "{args:?} should be valid, got {:#?}",
            checked.diagnostics
        );
    }
}

#[test]
fn every_broken_input_reports_its_expected_codes_and_locations() {
    let r = root();
    let broken = r.join("examples/broken");
    std::env::set_current_dir(&r).unwrap();
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(broken.join("EXPECTED.json")).unwrap())
            .unwrap();
    let mut failures = Vec::new();
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots/check"));
    settings.set_prepend_module_to_snapshot(false);
    for (name, want) in expected.as_object().unwrap() {
        let path = Path::new("examples/broken").join(name);
        let checked = check_paths(&args_for(&path));
        let mut codes: Vec<String> = checked
            .diagnostics
            .iter()
            .map(|d| d.code.as_str().to_string())
            .collect();
        codes.sort();
        codes.dedup();
        let want_codes: Vec<String> = want["codes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect();
        if codes != want_codes {
            failures.push(format!("{name}: codes {codes:?}, expected {want_codes:?}"));
        }
        for at in want["at"].as_array().into_iter().flatten() {
            let file = format!("examples/broken/{}", at["file"].as_str().unwrap());
            let found = checked.diagnostics.iter().any(|d| {
                d.code.as_str() == at["code"].as_str().unwrap()
                    && d.location.file.as_deref() == Some(file.as_str())
                    && d.location.pointer.as_deref() == at["pointer"].as_str()
            });
            if !found {
                failures.push(format!(
                    "{name}: no {} at {file} {}; got {:?}",
                    at["code"],
                    at["pointer"],
                    checked
                        .diagnostics
                        .iter()
                        .map(|d| (
                            d.code.as_str(),
                            d.location.file.clone(),
                            d.location.pointer.clone()
                        ))
                        .collect::<Vec<_>>()
                ));
            }
        }
        let report =
            serde_json::to_string_pretty(&Report::new(&checked.diagnostics, false)).unwrap();
        settings
            .bind(|| insta::assert_snapshot!(format!("broken-{}", name.replace('.', "-")), report));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

//! `troupe docs PACK [--check]` end to end (Format 20.3): the example packs'
//! committed sections are current, a stale section fails with a diff naming
//! the change until `troupe docs` is re-run, the author's text is kept,
//! output is idempotent, and `troupe init` writes a current section.

use crate::common;

use std::path::Path;

use common::{copy_dir, stdout, troupe};

const PACKS: [&str; 4] = [
    "examples/packs/everyday-negotiation",
    "examples/packs/harbor-lights",
    "examples/packs/job-interview",
    "examples/packs/tenants-meeting",
];

#[test]
fn the_example_packs_docs_are_current() {
    for pack in PACKS {
        let o = troupe(&["docs", pack, "--check"]);
        assert_eq!(o.status.code(), Some(0), "{pack}: {}", stdout(&o));
    }
}

#[test]
fn a_changed_bound_makes_check_fail_with_a_diff_until_docs_is_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join("neg");
    copy_dir(Path::new(PACKS[0]), &pack);
    let p = pack.to_str().unwrap();
    let scenario = pack.join("scenarios/used_car_negotiation.yaml");
    let text = std::fs::read_to_string(&scenario).unwrap();
    let edited = text.replacen("      max: 10\n", "      max: 12\n", 1);
    assert_ne!(edited, text, "the fixture pack has `max: 10`");
    std::fs::write(&scenario, edited).unwrap();
    let readme = pack.join("README.md");
    let before = std::fs::read(&readme).unwrap();

    let o = troupe(&["docs", p, "--check"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let diff = stdout(&o);
    assert!(
        diff.contains("-| `internal_counter` | int | 0 … 10 |"),
        "{diff}"
    );
    assert!(
        diff.contains("+| `internal_counter` | int | 0 … 12 |"),
        "{diff}"
    );
    assert!(diff.starts_with("--- "), "a unified diff: {diff}");
    assert_eq!(
        std::fs::read(&readme).unwrap(),
        before,
        "--check never writes"
    );

    let o = troupe(&["docs", p]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = troupe(&["docs", p, "--check"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let once = std::fs::read(&readme).unwrap();
    let o = troupe(&["docs", p]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(std::fs::read(&readme).unwrap(), once, "idempotent");
    assert!(
        !std::fs::read_dir(&pack).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("tmp")),
        "no temporary file left"
    );
}

#[test]
fn the_authors_text_is_kept_and_a_missing_readme_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join("jobs");
    copy_dir(Path::new(PACKS[2]), &pack);
    let p = pack.to_str().unwrap();
    let readme = pack.join("README.md");
    let generated = std::fs::read_to_string(&readme).unwrap();

    // No README: --check fails (missing), docs creates it.
    std::fs::remove_file(&readme).unwrap();
    assert_eq!(troupe(&["docs", p, "--check"]).status.code(), Some(1));
    assert!(!readme.exists(), "--check never writes");
    assert_eq!(troupe(&["docs", p]).status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&readme).unwrap(), generated);

    // A README without markers: the section is appended after the text.
    std::fs::write(&readme, "# Jobs\n\nMy notes.\n").unwrap();
    assert_eq!(troupe(&["docs", p]).status.code(), Some(0));
    let text = std::fs::read_to_string(&readme).unwrap();
    assert_eq!(text, format!("# Jobs\n\nMy notes.\n\n{generated}"));

    // Text before and after the section survives a regeneration.
    let (head, tail) = ("# Jobs\n\nBefore.\n\n", "\n## After\n\nMore notes.\n");
    let stale = generated.replace("| `hard` |", "| `harder` |");
    std::fs::write(&readme, format!("{head}{stale}{tail}")).unwrap();
    assert_eq!(troupe(&["docs", p]).status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(&readme).unwrap(),
        format!("{head}{generated}{tail}")
    );

    // A lone marker is refused and the file left alone.
    let lone = "# Jobs\n\n<!-- troupe:docs:begin -->\nmine\n";
    std::fs::write(&readme, lone).unwrap();
    let o = troupe(&["docs", p]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("without"));
    assert_eq!(std::fs::read_to_string(&readme).unwrap(), lone);
}

#[test]
fn a_pack_that_does_not_check_gets_no_docs() {
    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join("broken");
    copy_dir(Path::new(PACKS[2]), &pack);
    std::fs::write(pack.join("manifest.yaml"), "schema_version: [\n").unwrap();
    let before = std::fs::read(pack.join("README.md")).unwrap();
    let o = troupe(&["docs", pack.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read(pack.join("README.md")).unwrap(), before);
}

#[test]
fn init_writes_a_current_section_and_its_workflow_checks_it() {
    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join("fresh");
    let p = pack.to_str().unwrap();
    assert_eq!(troupe(&["init", p]).status.code(), Some(0));
    let readme = std::fs::read_to_string(pack.join("README.md")).unwrap();
    assert!(readme.starts_with("# fresh\n"), "{readme}");
    assert!(readme.contains("<!-- troupe:docs:begin -->"), "{readme}");
    assert!(
        readme.contains("| `patience` | int | 0 … 100 | difficulty knob `patience` | hidden |"),
        "{readme}"
    );
    let o = troupe(&["test", p]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = troupe(&["docs", p, "--check"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let workflow = std::fs::read_to_string(pack.join(".github/workflows/troupe.yml")).unwrap();
    let test = workflow.find("troupe test .").unwrap();
    let docs = workflow.find("troupe docs . --check").unwrap();
    assert!(test < docs, "{workflow}");
}

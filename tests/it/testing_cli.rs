//! `troupe test` and `troupe init` end to end (Format 20, 21): exit codes,
//! the alias, the JUnit file, no progress display when stdout is not a
//! terminal, and a scaffold that passes `troupe check` and `troupe test`.

use crate::common;

use common::{stdout, troupe};

#[test]
fn the_example_packs_pass_and_the_alias_works() {
    for pack in [
        "examples/packs/everyday-negotiation",
        "examples/packs/harbor-lights",
        "examples/packs/job-interview",
        "examples/packs/tenants-meeting",
    ] {
        let o = troupe(&["test", pack]);
        assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
        let text = stdout(&o);
        assert!(text.starts_with("PASS check\n"), "{text}");
        assert!(text.contains("\ncoverage:\n"), "{text}");
        // Not a terminal: no progress display (carriage returns, escapes).
        assert!(!text.contains('\r') && !text.contains('\x1b'), "{text:?}");
    }
    let o = troupe(&["test-pack", "examples/packs/everyday-negotiation", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "PASS");
    assert_eq!(v["exit_code"], 0);
}

#[test]
fn usage_errors_exit_2_and_list_the_fixtures() {
    let o = troupe(&[
        "test",
        "examples/packs/everyday-negotiation",
        "--test",
        "nope",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("golden_rules_walkout (golden_rules_walkout.yaml), golden_settings_change (golden_settings_change.yaml), golden_used_car_negotiation (golden_used_car_negotiation.yaml), smoke_used_car_negotiation (smoke_used_car_negotiation.yaml)"),
        "{err}"
    );
    assert!(o.stdout.is_empty(), "nothing runs");
    let o = troupe(&["test", "examples/packs/everyday-negotiation", "--review"]);
    assert_eq!(o.status.code(), Some(2), "--review needs a terminal");
    let o = troupe(&["test", "examples/bundles/tiny.bundle.json"]);
    assert_eq!(o.status.code(), Some(2), "a bundle is not a pack directory");
}

#[test]
fn a_package_is_not_a_pack_directory_exit_2() {
    // Format 20, 21.1: `troupe test`, `playtest` and `docs` need a pack
    // directory; a package (or a missing path) is a usage error: exit 2,
    // nothing on standard output, also with --json.
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("neg.troupe");
    let pkg = pkg.to_str().unwrap();
    let o = troupe(&["compile", "examples/packs/everyday-negotiation", "-o", pkg]);
    assert_eq!(o.status.code(), Some(0));
    for args in [
        vec!["test", pkg],
        vec!["test", pkg, "--json"],
        vec!["playtest", pkg, "--json"],
        vec!["docs", pkg],
        vec!["docs", pkg, "--check"],
        vec!["test", "no/such/pack", "--json"],
    ] {
        let o = troupe(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("is not a pack directory"), "{args:?}: {err}");
    }
    // The same package is accepted where a package is (Format 20).
    let o = troupe(&["check", pkg]);
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn junit_is_written_and_a_failure_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join("p");
    let o = troupe(&["init", pack.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let golden = pack.join("tests/golden_first_meeting.yaml");
    let text = std::fs::read_to_string(&golden).unwrap();
    std::fs::write(
        &golden,
        text.replace("check: \"lt 60\"", "check: \"gt 60\""),
    )
    .unwrap();
    let junit = dir.path().join("out.xml");
    let o = troupe(&[
        "test",
        pack.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<failure message=\"scenario.difficulty.options.hard.patience: expected a number &gt; 60, found 30\">"), "{xml}");
}

#[test]
fn init_writes_a_pack_that_passes_check_and_test_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join("My Pack");
    let p = pack.to_str().unwrap();
    let o = troupe(&["init", p]);
    assert_eq!(o.status.code(), Some(0));
    for f in [
        "manifest.yaml",
        "scenarios/first_meeting.yaml",
        "npcs/host.yaml",
        "safety/policy.yaml",
        "rubrics/rubric.yaml",
        "tests/smoke_first_meeting.yaml",
        "tests/golden_first_meeting.yaml",
        ".github/workflows/troupe.yml",
    ] {
        assert!(pack.join(f).is_file(), "{f}");
    }
    let manifest = std::fs::read_to_string(pack.join("manifest.yaml")).unwrap();
    assert!(manifest.contains("pack_id: local.my_pack"), "{manifest}");
    let workflow = std::fs::read_to_string(pack.join(".github/workflows/troupe.yml")).unwrap();
    assert!(workflow.contains("troupe check .") && workflow.contains("troupe test ."));
    // Troupe is installed from a pinned git commit, never by name from
    // crates.io (where `troupe` is another project's crate).
    assert!(
        workflow.contains(
            "cargo install --locked --git \"$TROUPE_GIT\" --rev \"$TROUPE_REV\" troupe-cli"
        ),
        "{workflow}"
    );
    assert!(!workflow.contains("cargo install troupe"), "{workflow}");
    let (git, rev, known) = troupe::internals::testing::pinned_source();
    assert!(workflow.contains(&format!("TROUPE_GIT: \"{git}\"")));
    assert!(workflow.contains(&format!("TROUPE_REV: \"{rev}\"")));
    if !known {
        // A build that was not told its source writes marked placeholders,
        // which the install step refuses with a plain message.
        assert!(git.starts_with("PLACEHOLDER") && rev.starts_with("PLACEHOLDER"));
        assert!(workflow.contains("Troupe's source is not pinned"));
    }
    let o = troupe(&["check", "--strict", p]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = troupe(&["test", p]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // A second init into the same folder refuses.
    let o = troupe(&["init", p]);
    assert_eq!(o.status.code(), Some(1));
}

/// `troupe schema` prints the embedded schemas (offline), and `init`'s
/// modelines point at the local copies it writes in `.troupe/schemas/`.
#[test]
fn schemas_are_usable_offline() {
    let o = troupe(&["schema", "scenario"]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    let want = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/scenario.schema.json"),
    )
    .unwrap();
    assert_eq!(text.trim_end(), want.trim_end());
    let o = troupe(&["schema", "scenari"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("did you mean `scenario`?"));
    let names = stdout(&troupe(&["schema"]));
    for n in ["manifest", "scenario", "npc", "pack-test", "defs"] {
        assert!(names.lines().any(|l| l == n), "{names}");
    }
    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join("p");
    let p = pack.to_str().unwrap();
    assert_eq!(troupe(&["init", p]).status.code(), Some(0));
    let scenario = std::fs::read_to_string(pack.join("scenarios/first_meeting.yaml")).unwrap();
    assert!(scenario
        .starts_with("# yaml-language-server: $schema=../.troupe/schemas/scenario.schema.json\n"));
    let copy = std::fs::read_to_string(pack.join(".troupe/schemas/scenario.schema.json")).unwrap();
    assert!(
        !copy.contains("\"$id\""),
        "relative $refs resolve next to the copy"
    );
    assert!(pack.join(".troupe/schemas/defs.schema.json").is_file());
    let o = troupe(&["check", "--strict", p]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

/// `troupe ended` and `troupe explain` ask about the session's last message
/// in file order when `--at` is not given.
#[test]
fn at_defaults_to_the_last_message() {
    let pack = "examples/packs/harbor-lights";
    let session = "examples/packs/harbor-lights/sessions/walkthrough.jsonl";
    let text =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(session))
            .unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let last = last["id"].as_str().unwrap();
    let given = stdout(&troupe(&["ended", pack, session, "--at", last, "--json"]));
    let default = stdout(&troupe(&["ended", pack, session, "--json"]));
    assert_eq!(given, default);
    assert!(
        default.contains(&format!("\"at\": \"{last}\"")),
        "{default}"
    );
    let o = troupe(&["explain", pack, session]);
    assert_eq!(o.status.code(), Some(0));
}

/// `troupe cel check|eval --pack` uses the pack's declarations, and
/// `--session` (with `--at`, else the last message) its state.
#[test]
fn cel_against_a_pack_and_a_session() {
    let pack = "examples/packs/job-interview";
    let session = "examples/packs/job-interview/sessions/offer.jsonl";
    let o = troupe(&["cel", "check", "state.rapport > 50", "--pack", pack]);
    assert_eq!((o.status.code(), stdout(&o).trim()), (Some(0), "bool"));
    let o = troupe(&["cel", "check", "state.rapor > 50", "--pack", pack]);
    assert_eq!(o.status.code(), Some(1));
    // The initial state: rapport 40; patience at the standard knob, 50.
    let o = troupe(&[
        "cel",
        "eval",
        "state.rapport + state.patience",
        "--pack",
        pack,
    ]);
    assert_eq!(stdout(&o).trim(), "90");
    // At m3 (after the first answer) and at the last message (the offer).
    let at = |m: Option<&str>| {
        let mut args = vec![
            "cel",
            "eval",
            "state.rapport",
            "--pack",
            pack,
            "--session",
            session,
        ];
        if let Some(m) = m {
            args.extend(["--at", m]);
        }
        stdout(&troupe(&args)).trim().to_string()
    };
    assert_eq!(at(Some("m3")), "55");
    assert_eq!(at(None), "90");
}

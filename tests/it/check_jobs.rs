//! Checking and compiling on several threads (Format 17.1: "the
//! diagnostics, their order, the report's bytes and a compiled package's
//! bytes are those of `--jobs 1`"; docs/performance.md, Run AU): the
//! generated multi-scenario pack of the benchmarks, valid and with errors
//! and warnings in several scenarios and files, checked and compiled with
//! 1 thread and with several.

use std::path::Path;

use troupe::{Code, OpenOptions, Pack, Severity};

#[path = "../../benches/runtime/generated_pack.rs"]
#[allow(dead_code)]
mod generated_pack;

const THREADS: [usize; 4] = [2, 3, 8, 0];

/// The report of `troupe check DIR` with `jobs` threads: text, JSON and
/// the diagnostics.
fn report(dir: &Path, jobs: usize) -> (String, String, Vec<troupe::Diagnostic>) {
    let r = troupe::check_with_jobs(&[dir], jobs);
    let json = serde_json::to_string_pretty(&r.to_json(false)).unwrap();
    (r.render(), json, r.diagnostics().to_vec())
}

/// A valid pack of 24 scenarios: the same report and the same package
/// bytes whatever the number of threads.
#[test]
fn a_valid_pack_checks_and_compiles_the_same_on_any_number_of_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pack");
    generated_pack::generate(&dir, 24);
    let one = report(&dir, 1);
    assert!(one.2.iter().all(|d| !d.is_error()), "{}", one.0);
    let compiled = |jobs: usize| {
        Pack::open_with(&dir, OpenOptions::default().use_ir(false).jobs(jobs))
            .unwrap()
            .compile()
            .unwrap()
    };
    let bytes = compiled(1);
    for jobs in THREADS {
        assert_eq!(report(&dir, jobs), one, "--jobs {jobs}");
        assert!(compiled(jobs) == bytes, "the package with --jobs {jobs}");
    }
    // The package checks and opens the same way too.
    let pkg = tmp.path().join("p.troupe");
    std::fs::write(&pkg, &bytes).unwrap();
    let one = report(&pkg, 1);
    assert!(one.2.is_empty(), "{}", one.0);
    assert_eq!(report(&pkg, 2), one);
}

/// Errors and warnings in several scenarios (an unknown variable in a
/// condition, an unknown reference, a duplicate rule ID, an event that can
/// never happen) and a file that does not parse: every one reported, in
/// the order one thread reports them, whatever the number of threads.
#[test]
fn diagnostics_of_many_scenarios_come_in_one_order_on_any_number_of_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pack");
    generated_pack::generate(&dir, 30);
    let edit = |i: usize, from: &str, to: &str| {
        let path = dir.join(format!("scenarios/s{i:04}.yaml"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "s{i:04}: {from}");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    };
    // CEL: an unknown variable (scenarios 3 and 17).
    edit(3, "state.deal_0003 > 40", "state.nope > 40");
    edit(17, "state.count_0017 > 2", "state.missing_0017 > 2");
    // An unknown reference (scenario 8).
    edit(
        8,
        "npc: {ref: npcs/vendor.yaml}",
        "npc: {ref: npcs/nobody.yaml}",
    );
    // A duplicate rule ID (scenario 12).
    edit(12, "- {id: facts,", "- {id: praise,");
    // An event that can never happen: DEAD_LOGIC (scenarios 21 and 28).
    edit(21, "state.deal_0021 > 40", "state.deal_0021 > 400");
    edit(28, "state.count_0028 > 2", "state.count_0028 < 0");
    // A file that does not parse (scenario 25).
    edit(25, "title: Scenario 25", "title: [Scenario 25");
    let one = report(&dir, 1);
    let diags = &one.2;
    let files: Vec<&str> = diags
        .iter()
        .filter_map(|d| d.location.file.as_deref())
        .collect();
    for i in [3, 8, 12, 17, 21, 25, 28] {
        let name = format!("s{i:04}.yaml");
        assert!(
            files.iter().any(|f| f.ends_with(&name)),
            "a diagnostic in {name}:\n{}",
            one.0
        );
    }
    assert!(diags.iter().any(|d| d.code == Code::Parse), "{}", one.0);
    assert!(
        diags
            .iter()
            .filter(|d| d.code == Code::DeadLogic && d.severity == Severity::Warning)
            .count()
            >= 2,
        "{}",
        one.0
    );
    assert!(
        diags.iter().filter(|d| d.is_error()).count() >= 5,
        "{}",
        one.0
    );
    for jobs in THREADS {
        assert_eq!(report(&dir, jobs), one, "--jobs {jobs}");
    }
    // Without the file that does not parse, the pack is checked past its
    // files (its scenarios' checks and lints, Format 17.1), and opening it
    // refuses it with the same diagnostics on any number of threads.
    edit(25, "title: [Scenario 25", "title: Scenario 25");
    let one = report(&dir, 1);
    assert!(one.2.iter().any(|d| d.code == Code::DeadLogic), "{}", one.0);
    let refused = |jobs: usize| {
        Pack::open_with(&dir, OpenOptions::default().jobs(jobs))
            .unwrap_err()
            .diagnostics()
            .to_vec()
    };
    let refused_one = refused(1);
    assert!(!refused_one.is_empty());
    for jobs in THREADS {
        assert_eq!(report(&dir, jobs), one, "--jobs {jobs}");
        assert_eq!(refused(jobs), refused_one, "--jobs {jobs}");
    }
}

/// `troupe check --jobs` and `troupe compile --jobs` take the setting and
/// give what one thread gives.
#[test]
fn the_command_line_takes_jobs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pack");
    generated_pack::generate(&dir, 6);
    let d = dir.to_str().unwrap();
    let (c1, o1, _) = crate::common::run(&["check", d, "--json", "--jobs", "1"]);
    let (c2, o2, _) = crate::common::run(&["check", d, "--json", "--jobs", "4"]);
    assert_eq!((c1, &o1), (c2, &o2));
    let out = |n: &str| tmp.path().join(format!("out{n}.troupe"));
    for n in ["1", "3"] {
        let (code, _, err) =
            crate::common::run(&["compile", d, "-o", out(n).to_str().unwrap(), "--jobs", n]);
        assert_eq!(code, 0, "{err}");
    }
    assert!(std::fs::read(out("1")).unwrap() == std::fs::read(out("3")).unwrap());
    let (code, _, err) = crate::common::run(&["check", d, "--jobs", "0"]);
    assert_eq!(code, 2, "--jobs 0 is a usage error: {err}");
}

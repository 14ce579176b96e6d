//! Coverage over fixture runs (Format 21.6): rule conditions are seen where
//! a run tried the rules, rubric scores where a session ended, and the
//! not-reached list names what a new test should reach.

use std::path::{Path, PathBuf};

use troupe::testing::runner::Installed;
use troupe::testing::stages::{run, Options, Quiet};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

fn pack(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(name);
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/packs")
            .join(name),
        &root,
    );
    (dir, root)
}

fn edit(root: &Path, rel: &str, from: &str, to: &str) {
    let p = root.join(rel);
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(from), "{rel} has no {from:?}");
    std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn rule_conditions_and_scores_are_seen_where_runs_evaluate_them() {
    let (_d, root) = pack("everyday-negotiation");
    edit(
        &root,
        "scenarios/used_car_negotiation.yaml",
        "  - id: offer\n    keywords: [I can do]\n",
        "  - id: offer\n    keywords: [I can do]\n    when: \"state.impression >= 60 || state.patience > 50\"\n",
    );
    edit(
        &root,
        "rubrics/negotiation_rubric.yaml",
        "score: \"double(state.deal_progress) / 100.0\"",
        "score: \"state.deal_progress > 80 ? 1.0 : double(state.deal_progress) / 100.0\"",
    );
    let r = run(&root, &mut Options::default(), &Installed, &mut Quiet).unwrap();
    // The new operands lower the deal fixture's own coverage below its
    // minimum: 2 events, 1 outcome, 4 rules, the opening, the offer's
    // first operand true and the score's condition true: 10 of 18.
    let fixtures: Vec<String> = r.stages[2]
        .tests
        .iter()
        .flat_map(|t| t.failures.iter().map(|f| f.message.clone()))
        .collect();
    assert_eq!(fixtures, vec!["coverage 55.6% is below the minimum 60%"]);
    let s = &r.coverage.scenarios[0];
    let b = &s.kinds["branches"];
    // The offer is tried once (turn 4 of the deal, impression 85): the
    // first operand is seen true and short-circuits the second. The score
    // is taken when the deal (85 > 80) and the walkout (0) end.
    assert_eq!(b.total, 6);
    assert_eq!(b.reached, 3);
    assert_eq!(
        b.not_reached,
        vec![
            "branch scenarios/used_car_negotiation.yaml /rules/3/when #1 'state.impression >= 60' false",
            "branch scenarios/used_car_negotiation.yaml /rules/3/when #2 'state.patience > 50' true",
            "branch scenarios/used_car_negotiation.yaml /rules/3/when #2 'state.patience > 50' false",
        ]
    );
    // 4 events + 2 outcomes + 5 rules + 1 opening + 3 branches of 18.
    assert_eq!(s.percent, 83.3);
}

#[test]
fn with_test_coverage_counts_that_fixture_alone() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/packs/everyday-negotiation");
    let mut o = Options {
        test: Some("golden_rules_walkout".into()),
        ..Options::default()
    };
    let r = run(&root, &mut o, &Installed, &mut Quiet).unwrap();
    let s = &r.coverage.scenarios[0];
    assert_eq!(r.coverage.scope, "golden_rules_walkout");
    // haggle_fatigue, patience_warning; failure; lowball; the opening.
    assert_eq!(s.kinds["events"].reached, 2);
    assert_eq!(s.kinds["outcomes"].not_reached, vec!["outcome success"]);
    assert_eq!(s.kinds["rules"].reached, 1);
    assert_eq!(s.percent, 41.7);
    let text = troupe::testing::report::to_text(&r);
    assert!(
        text.contains("coverage of golden_rules_walkout only:"),
        "{text}"
    );
}

//! Coverage over fixture runs (Format 21.6): rule conditions are seen where
//! a run tried the rules, rubric scores where a session ended, and the
//! not-reached list names what a new test should reach.

use std::path::Path;

use troupe::internals::testing::Installed;
use troupe::internals::testing::{run, Options, Quiet};

use crate::common;
use common::*;

#[test]
fn rule_conditions_and_scores_are_seen_where_runs_evaluate_them() {
    let (_d, root) = pack("everyday-negotiation");
    edit(
        &root,
        "scenarios/used_car_negotiation.yaml",
        "when: \"state.deal_progress >= 50\"",
        "when: \"state.deal_progress >= 50 || state.impression > 90\"",
    );
    edit(
        &root,
        "rubrics/negotiation_rubric.yaml",
        "score: \"double(state.deal_progress) / 100.0\"",
        "score: \"state.deal_progress > 80 ? 1.0 : double(state.deal_progress) / 100.0\"",
    );
    let r = run(&root, &mut Options::default(), &Installed, &mut Quiet).unwrap();
    assert_eq!(
        r.exit_code,
        0,
        "{}",
        troupe::internals::testing::to_text(&r)
    );
    let s = &r.coverage.scenarios[0];
    let b = &s.kinds["branches"];
    // close_deal is tried once (the deal's handshake, deal_progress 50):
    // its first operand is seen true and short-circuits the second. The
    // score is taken where sessions end: the deal (90) and the fatigue
    // run (100) above 80, the walkout and the safety stop (0) not. The
    // emotion's four items are seen across the runs.
    assert_eq!(b.total, 10);
    assert_eq!(b.reached, 7);
    assert_eq!(
        b.not_reached,
        vec![
            "branch scenarios/used_car_negotiation.yaml /rules/2/when #1 'state.deal_progress >= 50' false",
            "branch scenarios/used_car_negotiation.yaml /rules/2/when #2 'state.impression > 90' true",
            "branch scenarios/used_car_negotiation.yaml /rules/2/when #2 'state.impression > 90' false",
        ]
    );
    // 4 events + 2 outcomes + 11 rules + 1 speaker (Marco) + 1 opening
    // + 7 branches of 29.
    assert_eq!(s.percent, 89.7);
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
    // patience_warning; failure; small_talk, walk_away_threat and
    // lowball_offer; the opening; the emotion's first operand both ways
    // and its second false (impression 50, 40); Marco speaks: 10 of 23
    // (temper_flare is tried, but standard's volatility is below 50, so it
    // is not reached).
    assert_eq!(s.kinds["events"].reached, 1);
    assert_eq!(s.kinds["outcomes"].not_reached, vec!["outcome success"]);
    assert_eq!(s.kinds["rules"].reached, 3);
    assert_eq!(s.kinds["branches"].reached, 3);
    assert_eq!(s.kinds["speakers"].reached, 1);
    assert_eq!(s.percent, 43.5);
    let text = troupe::internals::testing::to_text(&r);
    assert!(
        text.contains("coverage of golden_rules_walkout only:"),
        "{text}"
    );
}

/// Coverage and the runtime cannot disagree (Format 21.6, issue 11): a
/// session's recorder holds what the runtime evaluated; coverage reaches
/// exactly those operand values, under the labels of the programs the
/// runtime ran.
#[test]
fn coverage_reaches_exactly_the_branches_the_runtime_took() {
    use std::collections::BTreeSet;
    use troupe::internals::engine::Report;
    use troupe::internals::runtime::{Opened, Options, Session};
    use troupe::internals::testing::coverage::{report, Hits, Model};

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/packs/everyday-negotiation");
    let pack = troupe::Pack::open(&root).expect("the pack lowers");
    let bundle = pack.bundle().clone();
    let opened = Opened::from_checked("negotiation", bundle.clone());
    let options = Options {
        scenario: Some("used_car_negotiation".into()),
        ..Options::default()
    };
    let mut s = Session::start_recorded(&opened, &options).unwrap();
    for input in [
        "Good afternoon! It's a lovely car.",
        "Could I see the service book? Similar hatchbacks are listed for less.",
        "I can offer 8,500 today, paid in full.",
    ] {
        s.turn(input).unwrap();
    }
    let rec = s.recorder().unwrap();
    let model = Model::new(&bundle, &Default::default());
    let m = &model.scenarios["used_car_negotiation"];

    // What the runtime saw, as (condition, operand text, value), the text
    // taken from the runtime's own program where the IR holds it.
    let ir = &s.engine().ir;
    let mut seen = BTreeSet::new();
    for r in &rec.reports {
        let Report::Seen {
            site,
            operand,
            value,
        } = r
        else {
            continue;
        };
        let Some(c) = m.conditions.iter().find(|c| &c.key == site) else {
            continue; // a lowered Threshold: no operands (21.6)
        };
        let runtime_text = site
            .strip_prefix("event ")
            .and_then(|id| ir.events.iter().find(|e| &*e.id == id))
            .and_then(|e| e.when.as_ref())
            .map(|p| p.operand_text(*operand).to_string());
        if let Some(t) = runtime_text {
            assert_eq!(t, c.operands[*operand], "{site}");
        }
        seen.insert(format!(
            "branch {} {} #{} '{}' {value}",
            c.file,
            c.pointer,
            operand + 1,
            c.operands[*operand]
        ));
    }
    assert!(!seen.is_empty());

    let mut hits = Hits::default();
    hits.record("used_car_negotiation", Some(m), &rec);
    let r = report(&model, &hits, "all");
    let b = &r.scenarios[0].kinds["branches"];
    let all: BTreeSet<String> = m
        .items
        .iter()
        .filter(|i| i.kind == "branches")
        .map(|i| i.label.clone())
        .collect();
    let not: BTreeSet<String> = b.not_reached.iter().cloned().collect();
    let reached: BTreeSet<String> = all.difference(&not).cloned().collect();
    assert_eq!(reached, seen);
    assert_eq!(b.reached, seen.len());
    // At the start patience is high and impression low: the emotion's
    // first condition is seen false, then its inner one false ('neutral').
    assert!(seen.contains("branch  /scenarios/0/emotion #1 'state.patience < 25' false"));
    assert!(seen.contains("branch  /scenarios/0/emotion #2 'state.impression > 70' false"));
    assert!(!seen.contains("branch  /scenarios/0/emotion #1 'state.patience < 25' true"));
}

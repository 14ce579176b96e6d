//! `troupe test` on broken variants of the example packs, built in a
//! temporary folder: each fails at the stage Format 21 says, with the
//! message it says.

use std::path::Path;

use troupe::internals::testing::Installed;
use troupe::internals::testing::{run, Options, Quiet, Run, Snapshots, UsageError, GATE_REASON};
use troupe::internals::testing::{StageName, Status};

use crate::common;
use common::*;

fn test(root: &Path) -> Run {
    run(root, &mut Options::default(), &Installed, &mut Quiet).unwrap()
}

fn stage(r: &Run, s: StageName) -> &troupe::internals::testing::StageResult {
    r.stages.iter().find(|x| x.stage == s).unwrap()
}

fn messages(r: &Run, s: StageName) -> Vec<String> {
    stage(r, s)
        .tests
        .iter()
        .flat_map(|t| t.failures.iter().map(|f| f.message.clone()))
        .collect()
}

const GOLDEN: &str = "tests/golden_used_car_negotiation.yaml";

#[test]
fn a_wrong_threshold_in_a_golden_test_fails_its_static_assertion() {
    let (_d, root) = pack("everyday-negotiation");
    edit(
        &root,
        GOLDEN,
        "variable=impression AND threshold=70",
        "variable=impression AND threshold=75",
    );
    let r = test(&root);
    assert_eq!(stage(&r, StageName::Check).status, Status::Pass);
    assert_eq!(stage(&r, StageName::StaticAssertions).status, Status::Fail);
    assert_eq!(
        messages(&r, StageName::StaticAssertions),
        vec!["events[id=dealer_warms_up].when: threshold: expected 75, found the number 70"]
    );
    let failure = &stage(&r, StageName::StaticAssertions)
        .tests
        .iter()
        .find(|t| t.status == Status::Fail)
        .unwrap()
        .failures[0];
    assert_eq!(failure.file.as_deref(), Some(GOLDEN));
    assert_eq!(
        failure.pointer.as_deref(),
        Some("/static_assertions/1/check")
    );
    // The line of that check in the fixture file (counted by hand).
    assert_eq!(failure.line, Some(59));
    assert_eq!(r.exit_code, 1);
}

#[test]
fn a_static_assertion_on_a_missing_path_fails() {
    let (_d, root) = pack("everyday-negotiation");
    edit(
        &root,
        GOLDEN,
        "path: events[id=counter_offer].repeat",
        "path: events[id=rush].repeat",
    );
    let r = test(&root);
    assert_eq!(stage(&r, StageName::StaticAssertions).status, Status::Fail);
    assert_eq!(
        messages(&r, StageName::StaticAssertions),
        vec!["events[id=rush].repeat: path not found: no 'events[id=rush]' (step 1)"]
    );
    // The other stages still run.
    assert_eq!(stage(&r, StageName::Fixtures).status, Status::Pass);
    assert_eq!(r.exit_code, 1);
}

#[test]
fn a_check_error_gates_every_later_stage() {
    let (_d, root) = pack("everyday-negotiation");
    edit(
        &root,
        "npcs/marco_dealer.yaml",
        "fictional: true",
        "fictional: false",
    );
    let r = test(&root);
    assert_eq!(stage(&r, StageName::Check).status, Status::Fail);
    assert!(!stage(&r, StageName::Check).diagnostics.is_empty());
    for s in &r.stages[1..] {
        assert_eq!(s.status, Status::Skip, "{:?}", s.stage);
        assert_eq!(s.reason.as_deref(), Some(GATE_REASON));
        assert!(s.tests.is_empty());
    }
    assert_eq!(r.exit_code, 1);
}

#[test]
fn a_malformed_assertion_path_is_assertion_syntax_in_the_check_stage() {
    let (_d, root) = pack("everyday-negotiation");
    edit(
        &root,
        GOLDEN,
        "path: events[id=counter_offer].repeat",
        "path: events[id=counter_offer",
    );
    let r = test(&root);
    let check = stage(&r, StageName::Check);
    assert_eq!(check.status, Status::Fail);
    let d = check
        .diagnostics
        .iter()
        .find(|d| d.code.as_str() == "ASSERTION_SYNTAX")
        .expect("an ASSERTION_SYNTAX diagnostic");
    assert_eq!(
        d.location.pointer.as_deref(),
        Some("/static_assertions/4/path")
    );
    assert!(d
        .location
        .file
        .as_deref()
        .is_some_and(|f| f.ends_with(GOLDEN)));
    // `events[id=counter_offer` is 23 characters: position 24 wants `]`.
    assert!(
        d.message.contains("position 24: `]` expected"),
        "{}",
        d.message
    );
    assert_eq!(
        stage(&r, StageName::StaticAssertions).reason.as_deref(),
        Some(GATE_REASON)
    );
}

#[test]
fn fake_fixtures_cannot_see_firings_and_coverage_minimum_is_checked() {
    let (_d, root) = pack("everyday-negotiation");
    edit(
        &root,
        "tests/smoke_used_car_negotiation.yaml",
        "      safety_status: ok\n",
        "      safety_status: ok\n      fired: [dealer_warms_up]\ncoverage:\n  minimum: 80\n",
    );
    let r = test(&root);
    assert_eq!(stage(&r, StageName::Fixtures).status, Status::Fail);
    assert_eq!(
        messages(&r, StageName::Fixtures),
        vec![
            "turn 1: fired expected 'dealer_warms_up' among the firings, got []",
            "coverage 0.0% is below the minimum 80%",
        ]
    );
}

#[test]
fn test_selects_by_fixture_id_file_name_or_stem_and_lists_names_otherwise() {
    let (_d, root) = pack("everyday-negotiation");
    for name in [
        "smoke_used_car_negotiation",
        "smoke_used_car_negotiation.yaml",
    ] {
        let mut o = Options {
            test: Some(name.into()),
            snapshots: Snapshots::Check,
            model: None,
        };
        let r = run(&root, &mut o, &Installed, &mut Quiet).unwrap();
        let fixtures = stage(&r, StageName::Fixtures);
        assert_eq!(fixtures.tests.len(), 1);
        assert_eq!(fixtures.tests[0].name, "smoke_used_car_negotiation");
        // Stage 2 has that fixture's three assertions only.
        assert_eq!(stage(&r, StageName::StaticAssertions).tests.len(), 3);
        assert_eq!(
            stage(&r, StageName::Sessions).reason.as_deref(),
            Some("not selected (--test)")
        );
        assert_eq!(
            stage(&r, StageName::Playtests).reason.as_deref(),
            Some("not selected (--test)")
        );
        assert_eq!(r.coverage.scope, name);
    }
    let mut o = Options {
        test: Some("nope".into()),
        snapshots: Snapshots::Check,
        model: None,
    };
    let e = run(&root, &mut o, &Installed, &mut Quiet).unwrap_err();
    assert_eq!(
        e,
        UsageError::UnknownTest {
            name: "nope".into(),
            names: vec![
                "golden_rules_candid (golden_rules_candid.yaml)".into(),
                "golden_rules_deal (golden_rules_deal.yaml)".into(),
                "golden_rules_fatigue (golden_rules_fatigue.yaml)".into(),
                "golden_rules_safety (golden_rules_safety.yaml)".into(),
                "golden_rules_temper (golden_rules_temper.yaml)".into(),
                "golden_rules_walkout (golden_rules_walkout.yaml)".into(),
                "golden_settings_change (golden_settings_change.yaml)".into(),
                "golden_used_car_negotiation (golden_used_car_negotiation.yaml)".into(),
                "smoke_used_car_negotiation (smoke_used_car_negotiation.yaml)".into(),
            ]
        }
    );
}

const SNAP: &str = "snapshots/walkthrough.snap.json";

fn walkthrough(
    s: &troupe::internals::testing::StageResult,
) -> &troupe::internals::testing::TestResult {
    s.tests
        .iter()
        .find(|t| t.name == "walkthrough.jsonl")
        .unwrap()
}

#[test]
fn a_snapshot_changed_by_a_rule_change_fails_with_a_diff() {
    let (_d, root) = pack("harbor-lights");
    // Tobias's guilt drops by 30 instead of 20 when he opens up.
    edit(
        &root,
        "scenarios/harbor_lights.yaml",
        "tobias.guilt: -20",
        "tobias.guilt: -30",
    );
    let r = test(&root);
    let sessions = stage(&r, StageName::Sessions);
    assert_eq!(sessions.status, Status::Fail);
    let t = walkthrough(sessions);
    assert_eq!(
        t.failures[0].message,
        "the snapshot differs from snapshots/walkthrough.snap.json (`troupe test --review` to review)"
    );
    let diff = t.diff.as_deref().unwrap();
    assert!(diff.contains("-        \"tobias.guilt\": 50,"), "{diff}");
    assert!(diff.contains("+        \"tobias.guilt\": 40,"), "{diff}");
    assert!(diff.starts_with("--- snapshots/walkthrough.snap.json (accepted)\n+++ snapshots/walkthrough.snap.json (current)\n"));
    // Nothing was written.
    let accepted = std::fs::read_to_string(root.join(SNAP)).unwrap();
    assert!(accepted.contains("\"tobias.guilt\": 50"));

    // --accept writes it; the next run passes.
    let mut o = Options {
        test: None,
        snapshots: Snapshots::AcceptAll,
        model: None,
    };
    let r = run(&root, &mut o, &Installed, &mut Quiet).unwrap();
    let t = walkthrough(stage(&r, StageName::Sessions));
    assert_eq!(t.status, Status::Pass);
    assert!(t
        .reason
        .as_deref()
        .unwrap()
        .contains("accepted the changed snapshot"));
    let r = test(&root);
    assert_eq!(stage(&r, StageName::Sessions).status, Status::Pass);
}

#[test]
fn review_decides_each_change_and_stale_snapshots_are_listed_and_deleted_on_accept() {
    let (_d, root) = pack("harbor-lights");
    std::fs::write(root.join("snapshots/gone.snap.json"), "{}\n").unwrap();
    std::fs::remove_file(root.join(SNAP)).unwrap();
    let r = test(&root);
    let sessions = stage(&r, StageName::Sessions);
    assert_eq!(sessions.status, Status::Fail);
    assert_eq!(
        walkthrough(sessions).failures[0].message,
        "no accepted snapshot snapshots/walkthrough.snap.json (`troupe test --accept` accepts it)"
    );
    let gone = sessions
        .tests
        .iter()
        .find(|t| t.name == "gone.snap.json")
        .unwrap();
    assert_eq!(gone.status, Status::Skip);

    // Review: reject the new one, accept deleting the stale one.
    let mut seen = Vec::new();
    let mut reviewer = |c: &troupe::internals::testing::SnapshotChange| {
        seen.push(c.path.clone());
        if c.path.ends_with("gone.snap.json") {
            troupe::internals::testing::Decision::Accept
        } else {
            troupe::internals::testing::Decision::Reject
        }
    };
    let mut o = Options {
        test: None,
        snapshots: Snapshots::Review(&mut reviewer),
        model: None,
    };
    let r = run(&root, &mut o, &Installed, &mut Quiet).unwrap();
    assert_eq!(
        seen,
        vec![SNAP.to_string(), "snapshots/gone.snap.json".to_string()]
    );
    assert_eq!(stage(&r, StageName::Sessions).status, Status::Fail);
    assert!(!root.join("snapshots/gone.snap.json").exists());
    assert!(!root.join(SNAP).exists());
}

#[test]
fn a_playtest_goal_not_met_fails_stage_5_with_its_evidence() {
    let (_d, root) = pack("everyday-negotiation");
    std::fs::remove_dir_all(root.join("playtests")).unwrap();
    std::fs::remove_dir_all(root.join("personas")).unwrap();
    let r = test(&root);
    assert_eq!(stage(&r, StageName::Playtests).status, Status::Skip);
    assert_eq!(
        stage(&r, StageName::Playtests).reason.as_deref(),
        Some("the pack has no playtest")
    );
    std::fs::create_dir_all(root.join("playtests")).unwrap();
    std::fs::create_dir_all(root.join("personas")).unwrap();
    std::fs::write(
        root.join("personas/polite.yaml"),
        "schema_version: \"0.1\"\npersona_id: polite\nrules:\n  - say: [\"Good afternoon.\"]\n",
    )
    .unwrap();
    std::fs::write(
        root.join("playtests/one_buyer.yaml"),
        "schema_version: \"0.1\"\nname: one_buyer\nmode: party\nscenario_id: used_car_negotiation\nrounds: 2\nroster:\n  - {id: ana, role: polite, target: player, goals: [{id: deal, do: \"Buy the car\", verify: \"state.deal_progress >= 80\"}]}\n",
    )
    .unwrap();
    let r = test(&root);
    assert_eq!(
        stage(&r, StageName::Check).status,
        Status::Pass,
        "{:#?}",
        stage(&r, StageName::Check).diagnostics
    );
    let p = stage(&r, StageName::Playtests);
    assert_eq!(p.status, Status::Fail);
    assert_eq!(p.tests[0].name, "one_buyer");
    let f = &p.tests[0].failures[0];
    assert_eq!(f.message, "goal ana/deal not met");
    assert_eq!(f.pointer.as_deref(), Some("/roster/0/goals/0/verify"));
    // "Good afternoon." hits no keyword or pattern: only the fallback rule
    // small_talk applies, patience 60 - 3 - 3 after two rounds; the deal
    // never moves. The evidence is the final state (Format 22.6).
    let state = &f.actual.as_ref().unwrap()["state"];
    assert_eq!(state["deal_progress"], 0);
    assert_eq!(state["patience"], 54);
    assert_eq!(r.exit_code, 1);
}

#[test]
fn a_session_whose_recorded_firings_replay_differently_fails_with_firing_mismatch() {
    let (_d, root) = pack("harbor-lights");
    edit(
        &root,
        "sessions/walkthrough.jsonl",
        ",\"firings\":[{\"event\":\"fog_rolls_in\"}]}",
        "}",
    );
    let r = test(&root);
    let sessions = stage(&r, StageName::Sessions);
    assert_eq!(sessions.status, Status::Fail);
    let msgs = messages(&r, StageName::Sessions);
    // fog_rolls_in is true at m9 (turn 4, no fog yet) but no longer recorded.
    assert!(
        msgs.iter()
            .any(|m| m.starts_with("FIRING_MISMATCH") && m.contains("fog_rolls_in")),
        "{msgs:?}"
    );
    let f = &walkthrough(sessions).failures[0];
    assert_eq!(f.pointer.as_deref(), Some("message:m9"));
    // The state changed too (no fog), so the snapshot differs.
    assert!(
        msgs.iter().any(|m| m.starts_with("the snapshot differs")),
        "{msgs:?}"
    );
}

#[test]
fn a_rules_fixture_compares_exact_state_values() {
    let (_d, root) = pack("harbor-lights");
    edit(
        &root,
        "tests/smoke_harbor_lights.yaml",
        "clues: 0",
        "clues: 1",
    );
    let r = test(&root);
    assert_eq!(stage(&r, StageName::Fixtures).status, Status::Fail);
    assert_eq!(
        messages(&r, StageName::Fixtures),
        vec!["turn 1: state.clues expected 1, got 0"]
    );
}

#[test]
fn a_changed_event_threshold_fails_the_golden_fixtures() {
    let (_d, root) = pack("everyday-negotiation");
    // Marco now warms up only above 85: impression reaches 74 at turn 2
    // and 79 at turn 3, never above 85.
    edit(
        &root,
        "scenarios/used_car_negotiation.yaml",
        "variable: impression\n      threshold: 70",
        "variable: impression\n      threshold: 85",
    );
    let r = test(&root);
    assert_eq!(
        messages(&r, StageName::StaticAssertions),
        vec!["events[id=dealer_warms_up].when: threshold: expected 70, found the number 85"]
    );
    // Derived by hand: impression 74 never passes 85, so the deal stays 10
    // lower (0, 15, then 40 after the offer: no counter-offer, 40 is not
    // above 40), and the handshake is not tried (close_deal needs 50): small
    // talk answers. Failures are listed per turn in the order of the
    // `expect` table of Format 21.3.
    let fixtures = messages(&r, StageName::Fixtures);
    assert_eq!(
        fixtures,
        vec![
            "turn 2: state.deal_progress expected 10, got 0",
            "turn 2: fired expected 'dealer_warms_up' among the firings, got []",
            "turn 3: state.deal_progress expected 25, got 15",
            "turn 4: state.deal_progress expected 50, got 40",
            "turn 4: state.internal_counter expected 2, got 1",
            "turn 4: fired expected 'counter_offer' among the firings, got []",
            "turn 5: session_control expected \"end_session\", got \"continue_session\"",
            "turn 5: state.deal_progress expected 90, got 40",
            "turn 5: fired expected 'success' among the firings, got []",
            "turn 5: ended expected true, got false",
            "turn 5: outcome expected \"success\", got null",
            "turn 5: reply expected to contain \"paperwork\", got \"Marco shrugs. 'So, what are you offering?'\"",
            // 4 rules, Marco speaking, the opening and 3 emotion branches:
            // 9 of 23 items (events 4, outcomes 2, rules 11, the speaker
            // Marco, the opening, branches 4).
            "coverage 39.1% is below the minimum 40%",
            // golden_settings_change (Format 8.9): no warm-up, so the deal
            // is 10 lower from turn 2 on (0, then 25 after the offer).
            "turn 2: state.deal_progress expected 10, got 0",
            "turn 2: fired expected 'dealer_warms_up' among the firings, got []",
            "turn 3: state.deal_progress expected 10, got 0",
            "turn 4: state.deal_progress expected 35, got 25",
            "turn 5: state.deal_progress expected 35, got 25",
        ]
    );
    assert_eq!(r.exit_code, 1);
}

#[test]
fn a_turn_after_the_end_fails_and_later_turns_do_not_run() {
    let (_d, root) = pack("everyday-negotiation");
    let p = root.join("tests/golden_rules_walkout.yaml");
    let mut text = std::fs::read_to_string(&p).unwrap();
    text.push_str(
        "  - turn: 5\n    player_input: Hello?\n  - turn: 6\n    player_input: Anyone?\n",
    );
    std::fs::write(&p, text).unwrap();
    let r = test(&root);
    let t = stage(&r, StageName::Fixtures)
        .tests
        .iter()
        .find(|t| t.name == "golden_rules_walkout")
        .unwrap();
    assert_eq!(t.status, Status::Fail);
    assert_eq!(t.failures.len(), 1);
    assert_eq!(t.failures[0].message, "turn 5: the session ended at turn 4");
    assert_eq!(t.failures[0].pointer.as_deref(), Some("/turns/4"));
}

/// Editing a rule's reply and changes makes the session test fail with a
/// readable diff of the recorded turns against the re-played ones (Format
/// 21.5 re-play), until `--accept` re-records the session.
#[test]
fn an_edited_rule_fails_the_session_test_until_accepted() {
    let (_d, root) = pack("harbor-lights");
    let r = test(&root);
    assert_eq!(stage(&r, StageName::Sessions).status, Status::Pass);
    edit(
        &root,
        "scenarios/harbor_lights.yaml",
        "{{char}} smiles. 'You're welcome here, {{user}}.'",
        "{{char}} frowns. 'We'll see, {{user}}.'",
    );
    let r = test(&root);
    let t = stage(&r, StageName::Sessions)
        .tests
        .iter()
        .find(|t| t.name == "inn.jsonl")
        .unwrap();
    assert_eq!(t.status, Status::Fail);
    assert!(t.failures[0].message.starts_with(
        "re-played under the current rules, sessions/inn.jsonl differs from the recording"
    ));
    let diff = t.diff.as_deref().unwrap();
    assert!(
        diff.contains("-  reply: Mara smiles. 'You're welcome here, Player.'"),
        "{diff}"
    );
    assert!(
        diff.contains("+  reply: Mara frowns. 'We'll see, Player.'"),
        "{diff}"
    );
    // --accept re-records the session (and its snapshot); then it passes.
    let mut opts = Options {
        snapshots: Snapshots::AcceptAll,
        ..Options::default()
    };
    let r = run(&root, &mut opts, &Installed, &mut Quiet).unwrap();
    assert_eq!(stage(&r, StageName::Sessions).status, Status::Pass);
    let text = std::fs::read_to_string(root.join("sessions/inn.jsonl")).unwrap();
    assert!(text.contains("frowns"), "{text}");
    assert_eq!(
        stage(&test(&root), StageName::Sessions).status,
        Status::Pass
    );
}

/// A recorded session holding a host's settings change (Format 8.9) is
/// re-played with that change in its place (21.5): it passes as recorded
/// (without the change, the second turn would re-play as small talk and
/// differ), and a pack edit that makes the later turn read the new
/// settings differently fails it. Derived
/// from the negotiation pack (tests/it/settings.rs): under adversarial (time
/// pressure 75) "Let me think about it." is `stalling`, -10 patience; at
/// time pressure 45 it is small talk, -3.
#[test]
fn a_hosts_settings_change_is_re_played() {
    let (_d, root) = pack("everyday-negotiation");
    let opened = troupe::Pack::open(&root).unwrap();
    let mut s = opened.start(troupe::SessionOptions::default()).unwrap();
    s.turn("Let me think about it.").unwrap();
    s.change_settings(&serde_json::json!({"difficulty": "adversarial"}))
        .unwrap();
    let t = s.turn("Let me think about it.").unwrap();
    assert_eq!(t.rule.as_deref(), Some("stalling"));
    std::fs::create_dir_all(root.join("sessions")).unwrap();
    std::fs::write(root.join("sessions/think.jsonl"), s.jsonl()).unwrap();
    let mut opts = Options {
        snapshots: Snapshots::AcceptAll,
        ..Options::default()
    };
    let r = run(&root, &mut opts, &Installed, &mut Quiet).unwrap();
    let t = stage(&r, StageName::Sessions)
        .tests
        .iter()
        .find(|t| t.name == "think.jsonl")
        .unwrap()
        .clone();
    assert_eq!(t.status, Status::Pass, "{t:?}");
    assert!(!format!("{t:?}").contains("not re-played"), "{t:?}");
    assert_eq!(
        stage(&test(&root), StageName::Sessions).status,
        Status::Pass
    );
    edit(
        &root,
        "scenarios/used_car_negotiation.yaml",
        "      time_pressure: 75",
        "      time_pressure: 45",
    );
    let r = test(&root);
    let t = stage(&r, StageName::Sessions)
        .tests
        .iter()
        .find(|t| t.name == "think.jsonl")
        .unwrap();
    assert_eq!(t.status, Status::Fail);
    let diff = t.diff.as_deref().unwrap();
    assert!(
        diff.contains("-  changes: [{\"add\":{\"patience\":-10}}]"),
        "{diff}"
    );
}

//! `troupe check` checks what a pack's fixtures name (Format 13.8): the
//! spec's example pack (13.1–13.4) with the fixture of 13.8's example, and
//! each typo a new author made in the example packs, each reported with
//! its code, its place and a did-you-mean.

use std::path::Path;

use troupe::internals::check::check_paths;
use troupe::Code;

use crate::common;
use common::*;

/// (code, file relative to the pack, pointer, message) of every error.
fn errors(root: &Path) -> Vec<(String, String, String, String)> {
    let checked = check_paths(&[root.to_path_buf()]);
    let prefix = format!("{}/", root.display());
    checked
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| {
            (
                d.code.as_str().to_string(),
                d.location
                    .file
                    .clone()
                    .unwrap_or_default()
                    .trim_start_matches(&prefix)
                    .to_string(),
                d.location.pointer.clone().unwrap_or_default(),
                d.message.to_string(),
            )
        })
        .collect()
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// The pack of Format 13.1–13.4, written out as the spec shows it.
fn spec_pack(root: &Path) {
    write(
        root,
        "manifest.yaml",
        "schema_version: \"0.1\"\npack_id: official.market_day\nname: Market day\nversion: 1.0.0\ncontent_rating: teen\nentry_scenarios: [scenarios/haggle.yaml]\nsafety: {policy: safety/default.yaml}\n",
    );
    write(
        root,
        "scenarios/haggle.yaml",
        r#"schema_version: "0.1"
scenario_id: haggle
title: Haggling at the stall
npc: {ref: npcs/vendor.yaml}
opening: {npc_says: "Best prices in town, {{user}}!"}
state:
  variables:
    impression: {type: number, default: 50, min: 0, max: 100, visibility: visible}
events:
  - id: warming_up
    when: {type: variable_above, variable: impression, threshold: 60}
ending_conditions:
  success: {type: variable_above, variable: impression, threshold: 90}
  failure: "state.impression < 10.0"
"#,
    );
    write(
        root,
        "npcs/vendor.yaml",
        "schema_version: \"0.1\"\nnpc_id: vendor\nname: Rosa Vidal\nnickname: Rosa\nfictional: true\nage_band: adult\npersona: \"A sharp, friendly stall keeper who enjoys haggling.\"\nvariables:\n  patience: {type: int, default: 5, min: 0, max: 10}\n",
    );
    write(
        root,
        "safety/default.yaml",
        "schema_version: \"0.1\"\npolicy_id: default\ncontent_rating_cap: teen\ncategories:\n  - {id: graphic_violence, action: redirect, terms: [gore], redirect_text: \"Let's keep it mild.\"}\nglobal_rules: [minor_safety, crisis_support]\n",
    );
}

#[test]
fn the_spec_example_of_13_8() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("market");
    spec_pack(&root);
    assert_eq!(errors(&root), vec![], "the pack of 13.1-13.4 is valid");
    write(
        &root,
        "tests/typos.yaml",
        r#"schema_version: "0.1"
fixture_id: typos
scenario_id: haggle
difficulty: easy
turns:
  - turn: 1
    player_input: Hello
    expect: {fired: [warming_upp], outcome: sucess, state: {impresion: 50},
             state_delta_contains: [impresion]}
  - turn: 3
    player_input: Bye
"#,
    );
    let got: Vec<(String, String)> = errors(&root)
        .into_iter()
        .map(|(c, f, p, _)| {
            assert_eq!(f, "tests/typos.yaml");
            (c, p)
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("UNKNOWN_REF", "/difficulty"),
        ("UNKNOWN_REF", "/turns/0/expect/fired/0"),
        ("UNKNOWN_REF", "/turns/0/expect/outcome"),
        ("UNKNOWN_VARIABLE", "/turns/0/expect/state/impresion"),
        ("UNKNOWN_VARIABLE", "/turns/0/expect/state_delta_contains/0"),
        ("ORDER", "/turns/1/turn"),
    ]
    .iter()
    .map(|(c, p)| (c.to_string(), p.to_string()))
    .collect();
    let mut got_sorted = got.clone();
    got_sorted.sort();
    let mut want_sorted = want.clone();
    want_sorted.sort();
    assert_eq!(got_sorted, want_sorted);
    let messages: Vec<String> = errors(&root).into_iter().map(|e| e.3).collect();
    for hint in ["`warming_up`", "`success`", "`impression`"] {
        assert!(
            messages
                .iter()
                .any(|m| m.contains(&format!("did you mean {hint}?"))),
            "{hint} offered in {messages:?}"
        );
    }
}

/// The typos of issue 14 item 1, one at a time, in a golden fixture of the
/// negotiation pack: each is an error naming the typo with a did-you-mean.
#[test]
fn each_typo_in_a_golden_test_is_an_error_with_a_did_you_mean() {
    let cases: &[(&str, &str, &str, &str, &str)] = &[
        (
            "fired: [counter_offer, haggle_fatigue, failure]",
            "fired: [counter_ofer, haggle_fatigue, failure]",
            "UNKNOWN_REF",
            "/turns/2/expect/fired/0",
            "did you mean `counter_offer`?",
        ),
        (
            "outcome: failure",
            "outcome: failre",
            "UNKNOWN_REF",
            "/turns/2/expect/outcome",
            "did you mean `failure`?",
        ),
        (
            "state: {patience: 23}",
            "state: {patiense: 23}",
            "UNKNOWN_VARIABLE",
            "/turns/0/expect/state/patiense",
            "did you mean `patience`?",
        ),
        (
            "difficulty: hard",
            "difficulty: hrad",
            "UNKNOWN_REF",
            "/difficulty",
            "did you mean `hard`?",
        ),
        (
            "rule: stalling",
            "rule: staling",
            "UNKNOWN_REF",
            "/turns/0/expect/rule",
            "did you mean `stalling`?",
        ),
        (
            "  - turn: 3\n",
            "  - turn: 4\n",
            "ORDER",
            "/turns/2/turn",
            "this one is 3",
        ),
    ];
    let file = "tests/golden_rules_fatigue.yaml";
    for (from, to, code, pointer, hint) in cases {
        let (_d, root) = pack("everyday-negotiation");
        edit(&root, file, from, to);
        let got = errors(&root);
        assert_eq!(got.len(), 1, "{to}: {got:?}");
        let (c, f, p, m) = &got[0];
        assert_eq!(
            (c.as_str(), f.as_str(), p.as_str()),
            (*code, file, *pointer)
        );
        assert!(m.contains(hint), "{m}");
    }
    // state_delta_contains, in the seed-format golden fixture.
    let (_d, root) = pack("everyday-negotiation");
    let golden = "tests/golden_used_car_negotiation.yaml";
    let text = std::fs::read_to_string(root.join(golden)).unwrap();
    assert!(
        text.contains("- deal_progress"),
        "the fixture lists deal_progress"
    );
    edit(&root, golden, "- deal_progress", "- deal_progres");
    let got = errors(&root);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, Code::UnknownVariable.as_str());
    assert!(got[0].2.contains("/state_delta_contains/"), "{:?}", got[0]);
    assert!(
        got[0].3.contains("did you mean `deal_progress`?"),
        "{}",
        got[0].3
    );
}

/// `rule`, `not_fired` and keyed state names (`trust.mara`) are checked too.
#[test]
fn rules_not_fired_and_keys() {
    let (_d, root) = pack("harbor-lights");
    let file = "tests/smoke_harbor_lights.yaml";
    let text = std::fs::read_to_string(root.join(file)).unwrap();
    let first_expect = text.find("expect:").unwrap();
    let mut edited = text.clone();
    edited.insert_str(
        first_expect + "expect:".len(),
        "\n      rule: ask_lighthose\n      not_fired: [lamp_relitt]\n      state_delta_contains: [trust.marra]",
    );
    std::fs::write(root.join(file), edited).unwrap();
    let got = errors(&root);
    let codes: Vec<(&str, &str)> = got.iter().map(|e| (e.0.as_str(), e.3.as_str())).collect();
    assert_eq!(got.len(), 3, "{codes:?}");
    assert!(got
        .iter()
        .any(|e| e.2.ends_with("/expect/rule") && e.0 == "UNKNOWN_REF"));
    assert!(got
        .iter()
        .any(|e| e.2.ends_with("/expect/not_fired/0") && e.3.contains("`lamp_relit`")));
    assert!(got.iter().any(|e| e.0 == "UNKNOWN_VARIABLE"
        && e.3
            .contains("`trust` has no key `marra`; did you mean `mara`?")));
}

#[test]
fn coverage_minimum_is_held_to_the_decimal_limits() {
    // Format 2.2: a number field other than a variable value outside the
    // decimal limits (29 significant digits here) is SCHEMA; 13.8/21.3
    // `coverage.minimum` is such a field.
    let (_d, root) = pack("everyday-negotiation");
    let rel = "tests/golden_rules_walkout.yaml";
    let text = std::fs::read_to_string(root.join(rel)).unwrap();
    write(
        &root,
        rel,
        &format!("{text}\ncoverage:\n  minimum: 50.0000000000000000000000000001\n"),
    );
    let errs = errors(&root);
    assert!(
        errs.iter()
            .any(|(c, f, p, _)| c == "SCHEMA" && f == rel && p == "/coverage/minimum"),
        "{errs:?}"
    );
    // 28 significant digits are a decimal: no error there.
    write(
        &root,
        rel,
        &format!("{text}\ncoverage:\n  minimum: 50.00000000000000000000000001\n"),
    );
    assert!(
        !errors(&root)
            .iter()
            .any(|(_, _, p, _)| p == "/coverage/minimum"),
        "{:?}",
        errors(&root)
    );
}

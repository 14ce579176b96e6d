//! `troupe check` of playtests (Format 22.7): DEADLOCK for choreography
//! that can never proceed, references, and the roster ADVISORY.

use std::path::Path;
use std::process::Command;

use troupe::internals::check::check_paths;
use troupe::{Code, Diagnostic, Severity};

use crate::common;
use common::*;

fn write(root: &Path, rel: &str, text: &str) {
    std::fs::write(root.join(rel), text).unwrap();
}

fn find<'a>(ds: &'a [Diagnostic], code: Code, pointer: &str) -> Option<&'a Diagnostic> {
    ds.iter()
        .find(|d| d.code == code && d.location.pointer.as_deref() == Some(pointer))
}

const HEAD: &str = "schema_version: \"0.1\"\nscenario_id: used_car_negotiation\n";

#[test]
fn a_deadlocked_choreography_is_reported_at_its_step() {
    let (_d, root) = pack("everyday-negotiation");
    // Line 8 is step 0 (`after` names a signal no event raises), line 9
    // step 1 (round 30 with rounds 4).
    write(
        &root,
        "playtests/stuck.yaml",
        &format!(
            "{HEAD}name: stuck\nmode: scenario\nrounds: 4\nroster: [{{id: ana, role: polite_buyer, target: player}}]\nchoreography:\n  - {{who: ana, do: \"Now {{{{char\", after: deal_done}}\n  - {{who: ana, do: \"Later.\", round: 30}}\n"
        ),
    );
    let checked = check_paths(std::slice::from_ref(&root));
    let ds = &checked.diagnostics;
    let after = find(ds, Code::Deadlock, "/choreography/0/after").expect("DEADLOCK at after");
    assert!(after
        .location
        .file
        .as_deref()
        .unwrap()
        .ends_with("playtests/stuck.yaml"));
    assert_eq!(after.location.line, Some(8));
    assert!(after.message.contains("deal_done"));
    // The step's `do` is a template: an unclosed tag is TEMPLATE_SYNTAX.
    assert!(
        find(ds, Code::TemplateSyntax, "/choreography/0/do").is_some(),
        "{ds:#?}"
    );
    let round = find(ds, Code::Deadlock, "/choreography/1/round").expect("DEADLOCK at round");
    assert_eq!(round.location.line, Some(9));
    assert!(!checked.is_valid(false));
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(["check", root.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("DEADLOCK"), "{text}");
}

#[test]
fn a_signal_an_event_raises_is_no_deadlock() {
    let (_d, root) = pack("everyday-negotiation");
    write(
        &root,
        "playtests/fine.yaml",
        &format!(
            "{HEAD}name: fine\nmode: scenario\nrounds: 4\nroster: [{{id: ana, role: polite_buyer, target: player}}]\nchoreography:\n  - {{who: ana, do: \"Now!\", after: warmed_up, round: 4}}\n"
        ),
    );
    let checked = check_paths(&[root]);
    assert!(
        checked.diagnostics.iter().all(|d| d.code != Code::Deadlock),
        "{:#?}",
        checked.diagnostics
    );
    assert!(checked.is_valid(false), "{:#?}", checked.diagnostics);
}

#[test]
fn references_are_checked() {
    let (_d, root) = pack("everyday-negotiation");
    write(
        &root,
        "playtests/bad_refs.yaml",
        &format!(
            "{HEAD}name: bad_refs\nmode: party\nrequires: {{difficulty: brutal}}\nroster:\n  - {{id: ana, role: nobody, target: player}}\n  - {{id: cy, role: haggler, target: stranger}}\nchoreography:\n  - {{who: zed, do: \"Hi\"}}\n"
        ),
    );
    let ds = check_paths(&[root]).diagnostics;
    for p in [
        "/roster/0/role",
        "/roster/1/target",
        "/choreography/0/who",
        "/requires/difficulty",
    ] {
        assert!(find(&ds, Code::UnknownRef, p).is_some(), "{p}: {ds:#?}");
    }
}

#[test]
fn a_shared_roster_larger_than_players_max_is_an_advisory() {
    // The manifest's players.max is 1; two agents in one shared session
    // (the second on the same seat is also SEAT).
    let (_d, root) = pack("everyday-negotiation");
    write(
        &root,
        "playtests/crowd.yaml",
        &format!(
            "{HEAD}name: crowd\nmode: party\nroster:\n  - {{id: ana, role: polite_buyer, target: player}}\n  - {{id: ben, role: haggler, target: player}}\n"
        ),
    );
    let ds = check_paths(&[root]).diagnostics;
    let adv = find(&ds, Code::Advisory, "/roster").expect("ADVISORY at /roster");
    assert_eq!(adv.severity, Severity::Warning);
    assert!(adv.message.contains("players.max is 1"));
    assert!(
        find(&ds, Code::Seat, "/roster/1/target").is_some(),
        "{ds:#?}"
    );
    // The example's parallel playtest has two agents too, one per session:
    // no ADVISORY there.
    assert!(
        !ds.iter().any(|d| d.code == Code::Advisory
            && d.location
                .file
                .as_deref()
                .is_some_and(|f| f.ends_with("two_buyers.yaml"))),
        "{ds:#?}"
    );
}

#[test]
fn conditions_are_type_checked_and_scenario_mode_needs_choreography() {
    let (_d, root) = pack("everyday-negotiation");
    write(
        &root,
        "playtests/typed.yaml",
        &format!(
            "{HEAD}name: typed\nmode: party\nroster:\n  - {{id: ana, role: polite_buyer, target: player, goals: [{{id: g, do: x, verify: \"state.patience\"}}]}}\ngroup_goals:\n  - {{id: s, do: y, verify: \"size(signals) > 0 && size(progress.ana) >= 0\"}}\n"
        ),
    );
    write(
        &root,
        "playtests/noscript.yaml",
        &format!(
            "{HEAD}name: noscript\nmode: scenario\nroster: [{{id: ana, role: polite_buyer, target: player}}]\n"
        ),
    );
    let ds = check_paths(&[root]).diagnostics;
    assert!(
        find(&ds, Code::CelType, "/roster/0/goals/0/verify").is_some(),
        "{ds:#?}"
    );
    assert!(
        find(&ds, Code::CelType, "/group_goals/0/verify").is_none(),
        "{ds:#?}"
    );
    assert!(
        ds.iter().any(|d| d.code == Code::Schema
            && d.location
                .file
                .as_deref()
                .is_some_and(|f| f.ends_with("noscript.yaml"))),
        "{ds:#?}"
    );
}

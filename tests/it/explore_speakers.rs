//! `troupe explore` treats "X speaks" as an item to reach (Format 20.5,
//! 21.6; issue 37 item 6): each cast member no player plays is a
//! `speaker <id>` item, reached by a shortest witness whose last turn has a
//! reply it authors (or whose root it authors), and a summary line says
//! whether everyone speaks and who does not.
//!
//! Expected values by hand from the packs and bundles:
//! - tenants-meeting (cast margit, dev, ruth, the tenant's seat): margit
//!   authors the opening `call_to_order`, so she is reached at the root;
//!   dev and ruth each answer some one-line input (the turn order is
//!   `natural`, so who answers depends on the draw; the witness is
//!   whatever the search reached first, replayed below).
//! - the bundle below: cast greaves, priya (muted), player seat, default
//!   turn order; a muted character is never a speaker (18.9), so no reply
//!   is ever priya's, and the outcome `done` (`turn >= 2`) ends every path
//!   at its second turn, so the search exhausts the space (every node's
//!   session is over before depth 12): `speaker priya` is unreachable.

use crate::common;

use std::path::Path;

use serde_json::{json, Value};

fn troupe(args: &[&str]) -> (i32, String, String) {
    let out = common::troupe(args);
    (
        out.status.code().unwrap_or(-1),
        common::stdout(&out),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn tenants() -> String {
    format!(
        "{}/examples/packs/tenants-meeting",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn speakers(doc: &Value) -> Vec<(String, Value)> {
    doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| {
            let label = i["item"].as_str().unwrap();
            label
                .strip_prefix("speaker ")
                .map(|id| (id.to_string(), i.clone()))
        })
        .collect()
}

#[test]
fn every_speaker_of_the_tenants_meeting_is_reached_and_replays() {
    let pack = tenants();
    let (code, out, err) = troupe(&["explore", &pack, "--json"]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let sp = speakers(&doc);
    let ids: Vec<&str> = sp.iter().map(|(id, _)| id.as_str()).collect();
    // One item per cast member no player plays, in cast order, after the
    // rules.
    assert_eq!(ids, ["margit", "dev", "ruth"]);
    let last_rule = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .rposition(|i| i["item"].as_str().unwrap().starts_with("rule "))
        .unwrap();
    let first_speaker = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .position(|i| i["item"].as_str().unwrap().starts_with("speaker "))
        .unwrap();
    assert!(last_rule < first_speaker);
    let dir = tempfile::tempdir().unwrap();
    for (id, it) in &sp {
        assert_eq!(it["status"], "reached", "{it}");
        let w = &it["witness"];
        let inputs = w["inputs"].as_array().unwrap();
        if id == "margit" {
            // The opening's author: reached at the root.
            assert!(inputs.is_empty(), "{w}");
            assert_eq!(w["opening"], "call_to_order");
            continue;
        }
        // The witness replays with `troupe run --script`: its last turn
        // has a reply by the speaker.
        let run = crate::explore::replay(&pack, &doc, w, dir.path(), id);
        let last = run["turns"].as_array().unwrap().last().unwrap();
        assert!(
            last["replies"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["author"] == id.as_str()),
            "{id}'s witness does not make {id} speak: {last}"
        );
    }
    // The text report says everyone speaks.
    let (code, out, err) = troupe(&["explore", &pack]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\nspeakers: all 3 reached\n"), "{out}");
    assert!(
        out.contains("\nspeaker margit: reached in 0 turns (call_to_order): (at the root)\n"),
        "{out}"
    );
}

/// A reaction's rule (`on: reply`, Format 18.9) is reached by the turn one
/// of whose further replies it makes (20.5: as coverage counts rules,
/// 21.6). By hand from tenants_meeting.yaml and the README's run of
/// `examples/scripts/tenants-letter.txt`: Ruth's `six_calls` answers a
/// reply that says `calls` or `log` (at m6 there), Dev's `will_sign` a reply
/// that says `sign` once `evidence >= 2` (at m11); both are reactions, never
/// a turn's first reply, so a search that counted only the first reply's
/// rule called them unreachable although the space was exhausted.
#[test]
fn a_reaction_rule_is_reached_by_the_reply_it_makes() {
    let pack = tenants();
    let (code, out, err) = troupe(&["explore", &pack, "--json"]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for rule in ["six_calls", "will_sign"] {
        let label = format!("rule {rule}");
        let it = doc["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["item"] == label.as_str())
            .unwrap_or_else(|| panic!("no item {label}: {doc}"));
        assert_eq!(it["status"], "reached", "{it}");
        let run = crate::explore::replay(&pack, &doc, &it["witness"], dir.path(), rule);
        let last = run["turns"].as_array().unwrap().last().unwrap();
        let replies = last["replies"].as_array().unwrap();
        // Made by a further reply: a reaction, not the turn's first reply.
        assert!(
            replies.iter().skip(1).any(|r| r["rule"] == rule),
            "{rule}'s witness does not end in a reaction by it: {last}"
        );
    }
    let (code, out, err) = troupe(&["explore", &pack]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("rule six_calls: unreachable"), "{out}");
    assert!(!out.contains("rule will_sign: unreachable"), "{out}");
}

fn silent_bundle(dir: &Path) -> String {
    let character = |id: &str, name: &str| json!({"id": id, "name": name, "fictional": true, "age_band": "adult"});
    let bundle = json!({
        "troupe": "0.1",
        "kind": "bundle",
        "characters": [character("greaves", "Greaves"), character("priya", "Priya")],
        "scenarios": [{
            "id": "flat",
            "name": "The flat",
            "cast": [
                {"character": "greaves"},
                {"character": "priya", "muted": true},
                {"seat": "player", "player": true}
            ],
            "outcomes": [{"id": "done", "when": "turn >= 2"}],
            "rules": [{"id": "any", "keywords": ["damp"], "replies": ["{{char}} shrugs."]}]
        }]
    });
    let path = dir.join("silent.bundle.json");
    std::fs::write(&path, serde_json::to_string_pretty(&bundle).unwrap()).unwrap();
    path.display().to_string()
}

#[test]
fn a_character_who_can_never_speak_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = silent_bundle(dir.path());
    let (code, out, err) = troupe(&["explore", &bundle, "--json"]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["search"]["exhausted"], true, "{doc}");
    let sp = speakers(&doc);
    assert_eq!(sp.len(), 2);
    assert_eq!(sp[0].0, "greaves");
    assert_eq!(sp[0].1["status"], "reached");
    // `damp` is the rule's line: one turn.
    assert_eq!(sp[0].1["witness"]["inputs"], json!(["damp"]));
    assert_eq!(sp[1].0, "priya");
    assert_eq!(sp[1].1["status"], "unreachable");
    assert_eq!(sp[1].1["witness"], Value::Null);
    let (code, out, err) = troupe(&["explore", &bundle]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("\nspeakers: 1 of 2 reached; not reached: priya\n"),
        "{out}"
    );
    assert!(
        out.contains("\nspeaker priya: unreachable (the search exhausted the space"),
        "{out}"
    );
}

#[test]
fn the_exploration_stage_can_ask_that_everyone_speaks() {
    // A copy of the tenants' meeting whose manifest asks for every
    // speaker: PASS; listing one as unreachable: FAIL naming it.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("pack");
    common::copy_dir(Path::new(&tenants()), &copy);
    let manifest = copy.join("manifest.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        format!("{text}explore:\n  reachable: [speakers]\n"),
    )
    .unwrap();
    let pack = copy.display().to_string();
    let (code, out, err) = troupe(&["test", &pack, "--json"]);
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out}{err}"));
    let stage = doc["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == "explore")
        .unwrap()
        .clone();
    assert_eq!(stage["status"], "PASS", "{stage}");
    assert_eq!(code, 0, "{out}");
    std::fs::write(
        &manifest,
        format!("{text}explore:\n  reachable: [speakers]\n  unreachable: [speaker ruth]\n"),
    )
    .unwrap();
    let (code, out, _) = troupe(&["test", &pack, "--json"]);
    assert_eq!(code, 1, "{out}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let stage = doc["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == "explore")
        .unwrap()
        .clone();
    assert_eq!(stage["status"], "FAIL");
    let msg = stage["tests"][0]["failures"][0]["message"]
        .as_str()
        .unwrap();
    assert!(
        msg.starts_with("speaker ruth is listed as unreachable but is reached in 1 turn")
            && !msg.contains("1 turns"),
        "{msg}"
    );
}

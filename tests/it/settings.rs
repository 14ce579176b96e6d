//! Settings changed in the middle of a session (Format 8.9): the host's
//! `Session::change_settings`, the settings message it writes, what reads
//! the new values and what keeps the old, branches, refusals, and that the
//! written session reads back (check, state, replay) as the CLI reads it.

use crate::common;

use serde_json::{json, Value};
use troupe::{Code, ErrorKind, Pack, RuntimeChoice, SessionOptions};

const NEGOTIATION: &str = "examples/packs/everyday-negotiation";

/// Derived by hand from the negotiation pack: on standard (time pressure
/// 30) "Let me think about it." is small talk (patience 60 - 3 = 57); after
/// the host switches to adversarial (time pressure 75) the same words are
/// stalling (57 - 10 = 47), while `patience` (started at standard's knob,
/// 60) is not reset. Undoing back before the change plays standard again.
#[test]
fn later_turns_read_the_new_values_and_branches_keep_the_old() {
    let pack = Pack::open(NEGOTIATION).unwrap();
    let mut s = pack.start(SessionOptions::default()).unwrap();
    let t1 = s.turn("Let me think about it.").unwrap();
    assert_eq!(t1.rule.as_deref(), Some("small_talk"));
    let change = s
        .change_settings(&json!({"difficulty": "adversarial"}))
        .unwrap();
    assert_eq!(change.message.as_deref(), Some("m4"));
    assert!(change.firings.is_empty());
    assert!(!change.ended);
    assert_eq!(s.current_id(), Some("m4"));
    assert_eq!(s.state()["patience"], json!(57));
    let t2 = s.turn("Let me think about it.").unwrap();
    assert_eq!(t2.rule.as_deref(), Some("stalling"));
    assert_eq!(s.state()["patience"], json!(47));
    assert_eq!(t2.messages, ["m5", "m6"]);
    let lines: Vec<&str> = s.jsonl().lines().collect();
    assert_eq!(
        lines[4],
        r#"{"id":"m4","parent":"m3","author":"narrator","settings":{"difficulty":"adversarial"}}"#
    );
    assert!(lines[5].contains(r#""parent":"m4""#));
    // Back to before the change: the branch without it is on standard.
    assert!(s.undo());
    assert_eq!(s.current_id(), Some("m4"));
    assert!(s.undo());
    assert_eq!(s.current_id(), Some("m1"));
    let t = s.turn("Let me think about it.").unwrap();
    assert_eq!(t.rule.as_deref(), Some("small_talk"));
    // The file with both branches is a conforming session whose states
    // are the engine's, as `troupe state` reads them.
    let history = s.history(&pack).unwrap();
    assert_eq!(history.state_at("m6").unwrap()["patience"], json!(47));
    assert_eq!(history.state_at("m8").unwrap()["patience"], json!(57));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    std::fs::write(&file, s.jsonl()).unwrap();
    let f = file.to_str().unwrap();
    let out = common::troupe(&["state", NEGOTIATION, f, "--at", "m6", "--json"]);
    let v: Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    assert_eq!(
        v,
        serde_json::to_value(history.state(Some("m6")).unwrap()).unwrap()
    );
}

/// The fatigue event reads the knob (the pack's golden test, turn by
/// turn): a knob change alone, without a preset, keeps the preset's ID.
#[test]
fn a_knob_change_keeps_the_preset_and_events_read_it() {
    let pack = Pack::open(NEGOTIATION).unwrap();
    let mut s = pack.start(SessionOptions::default()).unwrap();
    s.change_settings(&json!({"knobs": {"patience": 25}}))
        .unwrap();
    // 6,500 is a lowball (counter 1), 8,200 a real offer (counter 2):
    // with the knob at 25 fatigue fires above one counter.
    assert!(s.turn("Would you take 6,500?").unwrap().firings.is_empty());
    let t = s.turn("All right, 8,200 then.").unwrap();
    let fired: Vec<_> = t
        .firings
        .iter()
        .filter_map(|f| f.event.as_deref())
        .collect();
    assert_eq!(fired, ["haggle_fatigue"]);
    // time_pressure is still standard's 30: no stalling.
    let t = s.turn("Let me think about it.").unwrap();
    assert_eq!(t.rule.as_deref(), Some("small_talk"));
    let history = s.history(&pack).unwrap();
    assert_eq!(history.message_ids().len(), 8);
}

/// A refused change writes nothing and says why, with its code and where.
#[test]
fn bad_settings_are_refused_with_their_codes() {
    let pack = Pack::open(NEGOTIATION).unwrap();
    let mut s = pack.start(SessionOptions::default()).unwrap();
    let before = s.jsonl().to_string();
    for (settings, code, at) in [
        (
            json!({"knobs": {"speed": 1}}),
            Code::SettingsNotDeclared,
            "settings/knobs/speed",
        ),
        (
            json!({"difficulty": "easy"}),
            Code::SettingsNotDeclared,
            "settings/difficulty",
        ),
        (
            json!({"knobs": {"patience": "low"}}),
            Code::SettingsInvalid,
            "settings/knobs/patience",
        ),
        (json!({}), Code::SettingsInvalid, "settings"),
        (json!("hard"), Code::SettingsInvalid, "settings"),
        (
            json!({"difficulty": "hard", "by": "model"}),
            Code::UnknownField,
            "settings/by",
        ),
    ] {
        let err = s.change_settings(&settings).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Refused, "{settings}");
        assert_eq!(err.diagnostics()[0].code, code, "{settings}");
        assert_eq!(
            err.diagnostics()[0].location.pointer.as_deref(),
            Some(at),
            "{settings}"
        );
    }
    assert_eq!(s.jsonl(), before);
}

/// After the end nothing more is written; under fake nothing is written
/// at all.
#[test]
fn ended_and_fake_sessions() {
    let pack = Pack::open(NEGOTIATION).unwrap();
    let mut s = pack.start(SessionOptions::default()).unwrap();
    while !s.ended() {
        s.turn("This is ridiculous, a waste of time.").unwrap();
    }
    let before = s.jsonl().to_string();
    let err = s
        .change_settings(&json!({"difficulty": "warm"}))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Ended);
    assert_eq!(s.jsonl(), before);
    let mut fake = pack
        .start(SessionOptions::default().runtime(RuntimeChoice::Fake))
        .unwrap();
    let r = fake
        .change_settings(&json!({"difficulty": "warm"}))
        .unwrap();
    assert_eq!(r.message, None);
    let err = fake
        .change_settings(&json!({"knobs": {"speed": 1}}))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Refused);
}

/// A fixture's settings step with a knob nobody declares fails `troupe
/// check` with its code at its location (issue 17's "how we will know").
#[test]
fn a_fixture_changing_an_undeclared_knob_fails_check() {
    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join("pack");
    copy_dir(std::path::Path::new(NEGOTIATION), &pack);
    let f = pack.join("tests/golden_settings_change.yaml");
    let text = std::fs::read_to_string(&f).unwrap();
    let broken = text.replace(
        "- settings: {difficulty: adversarial}",
        "- settings: {knobs: {stubbornness: 90}}",
    );
    assert_ne!(broken, text);
    std::fs::write(&f, broken).unwrap();
    let out = common::troupe(&["check", pack.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    let text = v.to_string();
    assert!(text.contains("SETTINGS_NOT_DECLARED"), "{text}");
    assert!(
        text.contains("/turns/2/settings/knobs/stubbornness"),
        "{text}"
    );
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// `troupe state --json` shows the settings at a message after a change on
/// its path (Format 20.1), and leaves them out before it.
#[test]
fn state_shows_the_settings_changed_on_the_path() {
    let pack = Pack::open(NEGOTIATION).unwrap();
    let mut s = pack.start(SessionOptions::default()).unwrap();
    s.change_settings(&json!({"difficulty": "hard", "knobs": {"patience": 12.5}}))
        .unwrap();
    let history = s.history(&pack).unwrap();
    let at_root = serde_json::to_value(history.state(Some("m1")).unwrap()).unwrap();
    assert!(at_root.get("settings").is_none());
    let v = serde_json::to_value(history.state(Some("m2")).unwrap()).unwrap();
    assert_eq!(
        v["settings"],
        json!({"difficulty": "hard", "knobs": {"patience": 12.5, "disclosure": 30, "volatility": 55, "time_pressure": 55}})
    );
}

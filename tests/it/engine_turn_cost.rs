//! Breaker: a regular expression from an untrusted pack or a player's
//! input made one turn take seconds (a 15-byte pattern, `a[a-z]{10000}b`,
//! searched over 100,000 bytes: 12.7 s). Format 16.2 bounds every search
//! and 11.6 charges a dynamic pattern's compile; these are the examples of
//! those sections, through the library (`troupe run` and `troupe serve`
//! take turns through the same `Session::turn`).

use serde_json::{json, Value};
use troupe::{Pack, SessionOptions};

const COSTLY: &str = "a[a-z]{10000}b";

/// A scenario with `rules` and `events` (left out when empty), an int
/// `hits` and a string `h` of 100,000 `a`s.
fn bundle(rules: Value, events: Value) -> Value {
    let mut sc = json!({"id": "s", "name": "S",
        "cast": [{"character": "kai"}, {"seat": "guest", "player": true}],
        "openings": [{"id": "o", "text": "Hello."}],
        "variables": [{"id": "hits", "type": "int", "default": 0},
                      {"id": "h", "type": "string", "default": "a".repeat(100_000)}]});
    for (k, v) in [("rules", rules), ("events", events)] {
        if v.as_array().is_some_and(|a| !a.is_empty()) {
            sc[k] = v;
        }
    }
    json!({"troupe": "0.1", "kind": "bundle",
        "characters": [{"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult"}],
        "scenarios": [sc]})
}

fn open(b: &Value) -> (tempfile::TempDir, Pack) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.json");
    std::fs::write(&path, b.to_string()).unwrap();
    let pack = Pack::open(&path).unwrap_or_else(|e| panic!("{:?}", e.diagnostics()));
    (dir, pack)
}

/// Format 11.6's example: the player's input is the pattern.
#[test]
fn a_dynamic_pattern_whose_search_is_too_costly_is_false() {
    let b = bundle(
        json!([]),
        json!([{"id": "matched", "repeat": true,
                "when": "state.h.matches(last.text)",
                "changes": [{"add": {"hits": 1}}]}]),
    );
    let (_dir, pack) = open(&b);
    let mut s = pack.start(SessionOptions::default()).unwrap();
    let r = s.turn(COSTLY).unwrap();
    assert!(r.firings.is_empty(), "{:?}", r.firings);
    // The same condition with a pattern that costs little is true.
    let r = s.turn("^a+$").unwrap();
    assert_eq!(r.firings.len(), 1, "{:?}", r.firings);
    assert_eq!(s.state()["hits"], json!(1));
}

/// Format 16.2's example: a rule whose pattern would take seconds to
/// search does not match; a small search of it is exact.
#[test]
fn a_rule_pattern_whose_search_is_too_costly_does_not_match() {
    let b = bundle(
        json!([{"id": "costly", "pattern": COSTLY, "priority": 1, "replies": ["costly"]},
               {"id": "short", "pattern": "^a{1,20}$", "replies": ["short"]},
               {"id": "any", "priority": -1, "replies": ["any"]}]),
        json!([]),
    );
    let (_dir, pack) = open(&b);
    let mut s = pack.start(SessionOptions::default()).unwrap();
    let r = s.turn(&"a".repeat(100_000)).unwrap();
    assert_eq!(r.rule.as_deref(), Some("any"), "{r:?}");
    let r = s.turn(&"a".repeat(20)).unwrap();
    assert_eq!(r.rule.as_deref(), Some("short"), "{r:?}");
    // An input it matches is no different at this size: 10,007 × 10,003
    // state-bytes, and a lazy DFA that gives up (a new state every byte).
    let r = s.turn(&format!("a{}b", "c".repeat(10_000))).unwrap();
    assert_eq!(r.rule.as_deref(), Some("any"), "{r:?}");
}

/// Format 11.6's example of a shared budget: the events evaluated at one
/// message share 1,000,000 units.
#[test]
fn the_events_at_one_message_share_a_budget() {
    let xs: Vec<i64> = (0..300).collect();
    let mut events: Vec<Value> = (0..13)
        .map(|i| {
            json!({"id": format!("e{i}"),
                   "when": "turn >= 1 && state.xs.all(x, state.xs.all(y, x + y >= 0))"})
        })
        .collect();
    events.push(json!({"id": "free", "when": "turn >= 1 && state.n >= 0"}));
    let b = json!({"troupe": "0.1", "kind": "bundle",
        "characters": [{"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult"}],
        "scenarios": [{"id": "s", "name": "S",
            "cast": [{"character": "kai"}, {"seat": "guest", "player": true}],
            "openings": [{"id": "o", "text": "Hello."}],
            "variables": [{"id": "xs", "type": "list(int)", "default": xs},
                          {"id": "n", "type": "int", "default": 0}],
            "rules": [{"id": "any", "replies": ["Yes."]}],
            "events": events}]});
    let (_dir, pack) = open(&b);
    let mut s = pack.start(SessionOptions::default()).unwrap();
    // A turn is evaluated once, at its last message (9.2).
    let fired = |r: &troupe::TurnResult| -> Vec<String> {
        let last = r.messages.last().unwrap();
        assert!(r.firings.iter().all(|f| &f.message == last), "{r:?}");
        r.firings.iter().filter_map(|f| f.event.clone()).collect()
    };
    let r = s.turn("Hi.").unwrap();
    let mut first: Vec<String> = (0..=10).map(|i| format!("e{i}")).collect();
    first.push("free".into());
    assert_eq!(fired(&r), first);
    let r = s.turn("Again.").unwrap();
    assert_eq!(fired(&r), ["e11", "e12"]);
}

/// Format 16.2: for a safety pattern a search that is too costly counts as
/// a match (the category applies); a small search of it is exact.
#[test]
fn a_safety_pattern_whose_search_is_too_costly_applies() {
    let mut b = bundle(json!([{"id": "any", "replies": ["Yes."]}]), json!([]));
    b["scenarios"][0]["safety"] = json!({"policy_id": "p", "content_rating_cap": "general",
        "categories": [{"id": "costly", "action": "stop", "patterns": [COSTLY]}],
        "global_rules": ["minor_safety", "crisis_support"]});
    let (_dir, pack) = open(&b);
    let mut s = pack.start(SessionOptions::default()).unwrap();
    let r = s.turn(&"a".repeat(20)).unwrap();
    assert_eq!(format!("{:?}", r.safety_status), "Ok", "{r:?}");
    let r = s.turn(&"a".repeat(100_000)).unwrap();
    assert_eq!(format!("{:?}", r.safety_status), "Stop", "{r:?}");
}

/// Format 16.2: a `/pattern/` key (5.4) whose search is too costly does
/// not hit; one that costs little hits as before. (Keywords ignore case,
/// so `[a-z]` would take in the Kelvin sign and more: over the size
/// bound; `[0-9a]` is not.)
#[test]
fn a_regex_key_whose_search_is_too_costly_does_not_hit() {
    let b = bundle(
        json!([{"id": "costly", "keywords": ["/a[0-9a]{10000}b/"], "priority": 2, "replies": ["costly"]},
               {"id": "cheap", "keywords": ["/a+b/"], "priority": 1, "replies": ["cheap"]},
               {"id": "any", "replies": ["any"]}]),
        json!([]),
    );
    let (_dir, pack) = open(&b);
    let mut s = pack.start(SessionOptions::default()).unwrap();
    let r = s.turn(&"a".repeat(100_000)).unwrap();
    assert_eq!(r.rule.as_deref(), Some("any"), "{r:?}");
    let r = s.turn(&format!("{} aab", "a ".repeat(50_000))).unwrap();
    assert_eq!(r.rule.as_deref(), Some("cheap"), "{r:?}");
}

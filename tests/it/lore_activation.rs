//! Lore activation (Format 5.3–5.5, 11.4) on a hand-written story: every
//! expectation below is derived by hand from the spec.

use serde_json::{json, Value};
use troupe::internals::engine::Engine;
use troupe::lore::{EntryActivation, When, Why};

fn bundle() -> Value {
    json!({
      "troupe": "0.1", "kind": "bundle",
      "characters": [{"id": "pip", "name": "Pip", "fictional": true, "age_band": "adult"}],
      "worlds": [{"id": "shore", "name": "Shore", "entries": [
        {"id": "w_dragon", "content": "x", "keys": ["dragon"], "secondary_keys": ["gold"], "order": 5},
        {"id": "w_dragon2", "content": "x", "keys": ["dragon"], "secondary_keys": ["gold", "luck"],
         "logic": "not_all", "order": 5},
        {"id": "w_const", "content": "x", "constant": true, "when": "turn >= 1", "order": 50},
        {"id": "w_disabled", "content": "x", "keys": ["tea"], "enabled": false},
        {"id": "w_deep", "content": "x", "keys": ["milk"], "scan_depth": 3},
        {"id": "w_shallow", "content": "x", "keys": ["milk"]},
        {"id": "w_case", "content": "x", "keys": ["pot"], "case_sensitive": true},
        {"id": "w_hit", "content": "x", "keys": ["tea"], "when": "hit('luck') && !hit('gold')", "order": 30},
        {"id": "w_err", "content": "x", "keys": ["tea"], "when": "state.mentions.ana > 2"},
        {"id": "w_false", "content": "x", "constant": true, "when": "hit('sugar')"},
        {"id": "w_nokeys", "content": "x"},
        {"id": "w_regex", "content": "x", "keys": ["/dragonf\\w+/"], "order": 100},
        {"id": "w_roll", "content": "x", "constant": true, "when": "roll('2d6+1') == 5", "order": 1}
      ]}],
      "scenarios": [{
        "id": "tea_time", "name": "Tea Time", "worlds": ["shore"],
        "cast": [{"character": "pip"}, {"seat": "guest", "player": true}],
        "openings": [{"id": "hello", "text": "Welcome in, {{user}}! Tea?"}],
        "variables": [{"id": "mentions", "type": "int", "keys": "*"}],
        "entries": [{"id": "s_first", "content": "x", "keys": ["tea"]}]
      }]
    })
}

fn session() -> Vec<Value> {
    vec![
        json!({"troupe": "0.1", "kind": "session", "scenario": "tea_time",
               "players": [{"name": "Sam", "seat": "guest", "character": "rowan"}],
               "characters": [{"id": "rowan", "name": "Rowan", "fictional": true, "age_band": "adult"}],
               "seed": 0}),
        json!({"id": "m1", "opening": "hello", "author": "pip"}),
        json!({"id": "m2", "parent": "m1", "author": "rowan",
               "parts": [{"type": "text", "text": "Yes please. Milk, no sugar."}]}),
        json!({"id": "m3", "parent": "m2", "author": "narrator", "hidden": true,
               "parts": [{"type": "text", "text": "A dragon sleeps on its gold."}]}),
        json!({"id": "m4", "parent": "m3", "author": "pip",
               "parts": [{"type": "text", "text": "Here is your tea. A DRAGON? No, a dragonfly."},
                         {"type": "text", "text": "One for the Pot, one for luck."}]}),
    ]
}

fn engine() -> Engine {
    let lines = session();
    troupe::internals::pipeline::load(&bundle(), Some((&lines[0], &lines[1..])), None)
        .expect("the story loads")
}

fn by_id<'a>(all: &'a [EntryActivation], id: &str) -> &'a EntryActivation {
    all.iter().find(|a| a.id == id).expect(id)
}

#[test]
fn active_entries_at_m4_by_order_then_declaration() {
    let all = engine().active_entries("m4");
    let active: Vec<&str> = all
        .iter()
        .filter(|a| a.active)
        .map(|a| a.id.as_str())
        .collect();
    // w_roll (order 1) is active only at m1 (its roll is seeded by the
    // message); order 5: w_dragon2; 30: w_hit; 50: w_const; 100 in
    // declaration order: s_first (scenario first), w_deep, w_regex.
    assert_eq!(
        active,
        [
            "w_dragon2",
            "w_hit",
            "w_const",
            "s_first",
            "w_deep",
            "w_regex"
        ]
    );
    // Inactive ones follow in declaration order.
    let rest: Vec<&str> = all
        .iter()
        .filter(|a| !a.active)
        .map(|a| a.id.as_str())
        .collect();
    assert_eq!(
        rest,
        [
            "w_dragon",
            "w_disabled",
            "w_shallow",
            "w_case",
            "w_err",
            "w_false",
            "w_nokeys",
            "w_roll"
        ]
    );
    assert_eq!(all.len(), 14);
}

#[test]
fn reasons_at_m4() {
    let all = engine().active_entries("m4");
    // Scan depth 1: the hidden m3 is skipped, only m4 is scanned.
    let s = by_id(&all, "s_first");
    assert_eq!(s.why, Why::Keys);
    assert_eq!(s.scanned, ["m4"]);
    assert_eq!(
        (s.hits[0].message.as_str(), s.hits[0].start, s.hits[0].end),
        ("m4", 13, 16)
    );
    assert_eq!(s.owner, "tea_time");

    // "DRAGON" at characters 20..26 counts; "dragonfly" does not. "gold"
    // is only in the hidden m3.
    let d = by_id(&all, "w_dragon");
    assert_eq!(d.why, Why::Secondary);
    assert_eq!((d.hits[0].start, d.hits[0].end), (20, 26));
    let sec = d.secondary.as_ref().unwrap();
    assert!(!sec.held && sec.hits.is_empty() && sec.missed == ["gold"]);

    // not_all: gold misses, luck hits ("luck" on the second part: the text
    // is the parts joined by "\n", 44 + 1 + 25 = char 70).
    let d2 = by_id(&all, "w_dragon2");
    assert_eq!(d2.why, Why::Keys);
    let sec = d2.secondary.as_ref().unwrap();
    assert!(sec.held);
    assert_eq!(
        (sec.hits[0].key.as_str(), sec.hits[0].start, sec.hits[0].end),
        ("luck", 70, 74)
    );

    assert_eq!(by_id(&all, "w_const").why, Why::Constant);
    assert_eq!(by_id(&all, "w_const").when, When::Held);
    assert_eq!(by_id(&all, "w_disabled").why, Why::Disabled);
    assert_eq!(by_id(&all, "w_disabled").when, When::Absent);

    // Depth 3 reaches m2 (m4, m2, m1 are the last three non-hidden).
    let deep = by_id(&all, "w_deep");
    assert_eq!(deep.why, Why::Keys);
    assert_eq!(deep.scanned, ["m1", "m2", "m4"]);
    assert_eq!(
        (
            deep.hits[0].message.as_str(),
            deep.hits[0].start,
            deep.hits[0].end
        ),
        ("m2", 12, 16)
    );
    assert_eq!(by_id(&all, "w_shallow").why, Why::NoKeyHit);
    assert_eq!(by_id(&all, "w_shallow").missed, ["milk"]);

    // Case-sensitive "pot" does not match "Pot".
    assert_eq!(by_id(&all, "w_case").why, Why::NoKeyHit);

    assert_eq!(by_id(&all, "w_hit").when, When::Held);
    assert_eq!(by_id(&all, "w_err").why, Why::WhenError);
    assert!(matches!(by_id(&all, "w_err").when, When::Error(_)));
    // "sugar" is in m2, outside w_false's depth of 1.
    assert_eq!(by_id(&all, "w_false").why, Why::WhenFalse);
    assert_eq!(by_id(&all, "w_nokeys").why, Why::NoKeys);
    // "dragonfly": starts at char 34 (after "...No, a "), 9 characters.
    let r = by_id(&all, "w_regex");
    assert_eq!((r.hits[0].start, r.hits[0].end), (34, 43));
}

#[test]
fn roll_and_openings_at_the_root() {
    let all = engine().active_entries("m1");
    // Format 11.5's worked example: seed 0, message m1, first call
    // roll("2d6+1") is 5. w_roll is the first entry evaluated with a roll.
    let r = by_id(&all, "w_roll");
    assert!(r.active, "{r:?}");
    assert_eq!(all.first().map(|a| a.id.as_str()), Some("w_roll"));
    // The root names the opening: its text "Welcome in, {{user}}! Tea?" is
    // scanned as rendered (Format 5.3): user is the first player, rowan,
    // whose display name is "Rowan" (10.2, 11.3), so the scanned text is
    // "Welcome in, Rowan! Tea?" and "Tea" is at 12 + 5 + 2 = 19..22.
    let s = by_id(&all, "s_first");
    assert_eq!(
        (s.hits[0].message.as_str(), s.hits[0].start, s.hits[0].end),
        ("m1", 19, 22)
    );
    assert_eq!(s.hits[0].text, "Tea");
    // turn is 0 before the first player message.
    assert_eq!(by_id(&all, "w_const").why, Why::WhenFalse);
    // A hidden message is never scanned but is a place to ask at.
    let at3 = engine().active_entries("m3");
    assert_eq!(by_id(&at3, "w_deep").scanned, ["m1", "m2"]);
    assert!(engine().active_entries("nope").is_empty());
}

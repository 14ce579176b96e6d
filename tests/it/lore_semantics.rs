//! SillyTavern World Info behaviours as Troupe computes them (Format
//! 5.6–5.8): timed effects along the message path, so swipes and branches
//! reset them exactly; recursion with its flags; inclusion groups letting
//! one member through, reproducibly from the seed. Every expectation is
//! derived by hand from the spec.

use serde_json::{json, Value};
use troupe::internals::engine::Engine;
use troupe::internals::runtime::Inner;
use troupe::lore::{EntryActivation, Why};

fn engine(bundle: &Value, seed: u64, messages: &[Value]) -> Engine {
    let header = json!({"troupe": "0.1", "kind": "session", "scenario": "s", "seed": seed});
    troupe::internals::pipeline::load(bundle, Some((&header, messages)), None)
        .expect("the story loads")
}

fn bundle(entries: Value, recursion: Value) -> Value {
    json!({
      "troupe": "0.1", "kind": "bundle",
      "characters": [{"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult"}],
      "worlds": [{"id": "w", "name": "W", "recursion": recursion, "entries": entries}],
      "scenarios": [{"id": "s", "name": "S", "worlds": ["w"], "cast": [{"character": "kai"}]}]
    })
}

fn msg(id: &str, parent: Option<&str>, text: &str) -> Value {
    let mut m = json!({"id": id, "author": "kai", "parts": [{"type": "text", "text": text}]});
    if let Some(p) = parent {
        m["parent"] = json!(p);
    }
    m
}

fn active(e: &Engine, at: &str) -> Vec<String> {
    e.active_entries(at)
        .into_iter()
        .filter(|a| a.active)
        .map(|a| a.id)
        .collect()
}

fn by_id(all: &[EntryActivation], id: &str) -> EntryActivation {
    all.iter().find(|a| a.id == id).expect(id).clone()
}

/// SillyTavern keeps a sticky entry active after the message that triggered
/// it is swiped away; in Troupe a swipe is a sibling, and a sibling's path
/// has no start of the entry (5.6).
#[test]
fn a_swipe_does_not_inherit_a_sticky_start() {
    let b = bundle(
        json!([{"id": "fox", "content": "A fox.", "keys": ["fox"], "sticky": 3}]),
        json!(false),
    );
    let e = engine(
        &b,
        0,
        &[
            msg("m1", None, "hello"),
            msg("m2", Some("m1"), "a fox"),
            msg("m2b", Some("m1"), "hello again"),
            msg("m3", Some("m2"), "hello"),
            msg("m3b", Some("m2b"), "hello"),
        ],
    );
    assert!(active(&e, "m1").is_empty());
    // m2 (position 2) starts it; held at positions 3, 4, 5 of its path.
    assert_eq!(active(&e, "m2"), ["fox"]);
    let m3 = by_id(&e.active_entries("m3"), "fox");
    assert_eq!((m3.active, m3.why), (true, Why::Sticky));
    // The swipe m2b and its child see only m1: nothing started.
    assert!(active(&e, "m2b").is_empty());
    assert!(active(&e, "m3b").is_empty());
}

/// A cooldown started on one branch does not block another branch (5.6).
#[test]
fn a_cooldown_is_per_path() {
    let b = bundle(
        json!([{"id": "fox", "content": "A fox.", "keys": ["fox"], "cooldown": 2}]),
        json!(false),
    );
    let e = engine(
        &b,
        0,
        &[
            msg("m1", None, "fox"),
            msg("m2", Some("m1"), "fox"),
            msg("m3", Some("m2"), "fox"),
            msg("m4", Some("m3"), "fox"),
            msg("r2", None, "x"),
            msg("r2b", Some("r2"), "fox"),
        ],
    );
    // Starts at p1; cooling at p2, p3 (<= 1 + 0 + 2); starts again at p4.
    assert_eq!(active(&e, "m1"), ["fox"]);
    let m2 = by_id(&e.active_entries("m2"), "fox");
    assert_eq!((m2.active, m2.why), (false, Why::Cooldown));
    assert!(active(&e, "m3").is_empty());
    assert_eq!(active(&e, "m4"), ["fox"]);
    // Another root: r2b is at position 2 with no start before it.
    assert_eq!(active(&e, "r2b"), ["fox"]);
    // Asking again (cached path) gives the same.
    assert_eq!(active(&e, "m3"), Vec::<String>::new());
    assert_eq!(active(&e, "m4"), ["fox"]);
}

/// Delay counts every message of the path, hidden ones included (5.6).
#[test]
fn delay_counts_positions() {
    let b = bundle(
        json!([{"id": "late", "content": "Late.", "constant": true, "delay": 3}]),
        json!(false),
    );
    let mut hidden = msg("m2", Some("m1"), "shh");
    hidden["hidden"] = json!(true);
    let e = engine(
        &b,
        0,
        &[msg("m1", None, "a"), hidden, msg("m3", Some("m2"), "b")],
    );
    let m1 = by_id(&e.active_entries("m1"), "late");
    assert_eq!((m1.active, m1.why), (false, Why::Delayed));
    assert!(active(&e, "m2").is_empty());
    assert_eq!(active(&e, "m3"), ["late"]);
}

/// The example of 5.7: steps, flags and where a recursion hit was found.
#[test]
fn recursion_flags_and_steps() {
    let entries = json!([
        {"id": "a", "content": "The dragon guards the crown.", "keys": ["dragon"]},
        {"id": "b", "content": "The crown is cursed.", "keys": ["crown"], "prevent_recursion": true},
        {"id": "c", "content": "A curse.", "keys": ["cursed"]},
        {"id": "d", "content": "Crowns.", "keys": ["crown"], "exclude_recursion": true},
        {"id": "e", "content": "Scales.", "keys": ["dragon"], "delay_until_recursion": true}
    ]);
    let msgs = [msg("m1", None, "A dragon!")];
    let e = engine(&bundle(entries.clone(), json!(true)), 0, &msgs);
    let all = e.active_entries("m1");
    assert_eq!(active(&e, "m1"), ["a", "b", "e"]);
    assert_eq!(by_id(&all, "a").step, Some(0));
    assert_eq!(by_id(&all, "b").step, Some(1));
    assert_eq!(by_id(&all, "e").step, Some(1));
    // b's key was found in a's content: characters 22..27 of
    // "The dragon guards the crown.".
    let hit = &by_id(&all, "b").hits[0];
    assert_eq!(hit.entry.as_deref(), Some("a"));
    assert_eq!((hit.message.as_str(), hit.start, hit.end), ("", 22, 27));
    assert_eq!(hit.text, "crown");
    // d was looked at only at step 0.
    assert_eq!(by_id(&all, "d").why, Why::NoKeyHit);
    assert_eq!(by_id(&all, "c").why, Why::NoKeyHit);

    // Off: only step 0; e never reaches its level.
    let off = engine(&bundle(entries.clone(), json!(false)), 0, &msgs);
    assert_eq!(active(&off, "m1"), ["a"]);
    assert_eq!(
        by_id(&off.active_entries("m1"), "e").why,
        Why::DelayedUntilRecursion
    );
    // recursion: 1 is enough for this example.
    let one = engine(&bundle(entries, json!(1)), 0, &msgs);
    assert_eq!(active(&one, "m1"), ["a", "b", "e"]);
}

fn weather(seed: u64) -> Engine {
    let entries = json!([
        {"id": "rain", "content": "Rain.", "keys": ["weather"], "group": ["weather"]},
        {"id": "sun", "content": "Sun.", "keys": ["weather"], "group": ["weather"], "group_weight": 300}
    ]);
    engine(
        &bundle(entries, json!(false)),
        seed,
        &[msg("m1", None, "What weather!")],
    )
}

/// SillyTavern lets one member of an inclusion group through; Troupe too,
/// chosen by choose(W, "group:<seed>:<message>:<step>:<group>") (5.8).
#[test]
fn a_group_lets_one_through_reproducibly() {
    // Seed 0: r = 286 of 400 -> sun; seed 7: r = 46 -> rain (5.8 example).
    assert_eq!(active(&weather(0), "m1"), ["sun"]);
    assert_eq!(active(&weather(7), "m1"), ["rain"]);
    let lost = by_id(&weather(0).active_entries("m1"), "rain");
    assert_eq!(lost.why, Why::Group);
    assert_eq!(lost.group.as_deref(), Some("weather"));
    // The same seed chooses the same every time, in a new engine too.
    let e = weather(0);
    for _ in 0..3 {
        assert_eq!(active(&e, "m1"), ["sun"]);
    }
    assert_eq!(active(&weather(0), "m1"), ["sun"]);
}

/// A group that already has a member active from an earlier recursion
/// step admits no other (5.8 rule 1).
#[test]
fn a_group_admits_no_second_member_in_recursion() {
    let entries = json!([
        {"id": "a", "content": "The tower.", "keys": ["dragon"], "group": ["place"]},
        {"id": "b", "content": "A tower room.", "keys": ["tower"], "group": ["place"]},
        {"id": "c", "content": "x", "keys": ["tower"]}
    ]);
    let e = engine(
        &bundle(entries, json!(true)),
        0,
        &[msg("m1", None, "A dragon!")],
    );
    assert_eq!(active(&e, "m1"), ["a", "c"]);
    let b = by_id(&e.active_entries("m1"), "b");
    assert_eq!((b.why, b.group.as_deref()), (Why::Group, Some("place")));
}

fn card_with_book(entry_ext: Value) -> Value {
    json!({
      "spec": "chara_card_v2", "spec_version": "2.0",
      "data": {
        "name": "Mira", "description": "d", "personality": "", "scenario": "",
        "first_mes": "Hello.", "mes_example": "",
        "character_book": {
          "name": "Mira lore", "recursive_scanning": true,
          "entries": [{
            "keys": ["fox"], "content": "A fox.", "enabled": true, "insertion_order": 100,
            "extensions": entry_ext
          }]
        }
      }
    })
}

fn import_card(card: &Value) -> troupe_import::card::CardImport {
    let bytes = serde_json::to_vec(card).unwrap();
    let raw = troupe_import::read_card("card.json", &bytes).unwrap();
    troupe_import::card::card_to_bundle(&raw).unwrap()
}

/// A card book's SillyTavern fields become Troupe's (docs/import.md §3) and
/// export writes them back unchanged; an edited Troupe field is written.
#[test]
fn card_book_fields_import_and_export_back() {
    let ext = json!({
        "sticky": 2, "cooldown": 3, "delay": 4,
        "exclude_recursion": true, "prevent_recursion": false, "delay_until_recursion": 2,
        "group": "weather, mood", "group_weight": 250, "group_override": true,
        "use_group_scoring": true, "depth": 4, "fav": "x"
    });
    let card = card_with_book(ext.clone());
    let imported = import_card(&card);
    let world = &imported.bundle["worlds"][0];
    assert_eq!(world["recursion"], true);
    let e = &world["entries"][0];
    // SillyTavern's sticky 2 holds one message after the start (issue 44,
    // docs/import.md §3: sticky N → N − 1, cooldown as is).
    assert_eq!(e["sticky"], 1);
    assert_eq!(e["cooldown"], 3);
    assert_eq!(e["delay"], 4);
    assert_eq!(e["exclude_recursion"], true);
    assert!(e.get("prevent_recursion").is_none(), "false is the default");
    assert_eq!(e["delay_until_recursion"], 2);
    assert_eq!(e["group"], json!(["weather", "mood"]));
    assert_eq!(e["group_weight"], 250);
    assert_eq!(e["group_override"], true);
    assert_eq!(e["group_scoring"], true);
    // Each set field is a `converted` note, none is kept as data.
    let converted: Vec<&str> = imported
        .summary
        .converted
        .iter()
        .map(|n| n.at.as_str())
        .collect();
    assert!(converted.contains(&"/data/character_book/entries/0/extensions/sticky"));
    assert!(converted.contains(&"/data/character_book/recursive_scanning"));
    assert!(!imported
        .summary
        .kept
        .iter()
        .any(|n| n.at.ends_with("/sticky") || n.at.ends_with("/group")));

    // Unedited: the original extensions come back exactly.
    let back =
        troupe_import::export::card_from_bundle(&imported.bundle, &imported.character).unwrap();
    let book = &back["data"]["character_book"];
    assert_eq!(book["entries"][0]["extensions"], ext);
    assert_eq!(book["recursive_scanning"], true);

    // Edited in Troupe: the new values are written under the card names.
    let mut edited = imported.bundle.clone();
    let te = &mut edited["worlds"][0]["entries"][0];
    te["sticky"] = json!(5);
    te.as_object_mut().unwrap().remove("group_override");
    te["group"] = json!(["weather"]);
    let back = troupe_import::export::card_from_bundle(&edited, &imported.character).unwrap();
    let x = &back["data"]["character_book"]["entries"][0]["extensions"];
    // Troupe's sticky 5 is SillyTavern's 6 (docs/import.md §3).
    assert_eq!(x["sticky"], 6);
    assert_eq!(x["group_override"], false);
    assert_eq!(x["group"], "weather");
    assert_eq!(x["cooldown"], 3);
    assert_eq!(x["fav"], "x");
}

/// World Info files map the camelCase fields; a group string that does not
/// come back from its names is kept as written.
#[test]
fn world_info_fields_map_onto_troupe() {
    let doc = json!({"entries": {"0": {
        "uid": 0, "key": ["fox"], "content": "A fox.", "sticky": 1, "cooldown": null,
        "delay": 0, "excludeRecursion": false, "preventRecursion": true,
        "delayUntilRecursion": true, "group": "a, b", "groupWeight": 100,
        "groupOverride": false, "useGroupScoring": null
    }}});
    let mut summary = troupe_import::summary::Summary::default();
    let w = troupe_import::lorebook::world_info_import(
        &doc,
        "W",
        &mut std::collections::HashSet::new(),
        &mut summary,
    )
    .unwrap();
    assert_eq!(w["recursion"], true);
    let e = &w["entries"][0];
    // SillyTavern's sticky 1 holds nothing after the start: no Troupe
    // sticky (issue 44, docs/import.md §3); the 1 is kept for export.
    assert!(e.get("sticky").is_none());
    assert!(e.get("cooldown").is_none() && e.get("delay").is_none());
    assert_eq!(e["prevent_recursion"], true);
    assert!(e.get("exclude_recursion").is_none());
    assert_eq!(e["delay_until_recursion"], true);
    assert_eq!(e["group"], json!(["a", "b"]));
    assert!(e.get("group_weight").is_none() && e.get("group_scoring").is_none());
    let st = &e["extensions"]["sillytavern"];
    assert_eq!(st["group"], "a, b", "`a,b` would not give `a, b` back");
    assert_eq!(st["sticky"], 1);
    assert!(st.get("groupWeight").is_none());
    assert!(summary
        .converted
        .iter()
        .any(|n| n.at == "/entries/0/sticky"));
}

/// Keys match the rendered text (5.3): a key `user` no longer hits every
/// `{{user}}`, and a key on the player's name hits what messages render.
#[test]
fn keys_match_rendered_text() {
    let b = json!({
      "troupe": "0.1", "kind": "bundle",
      "characters": [{"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult"}],
      "worlds": [{"id": "w", "name": "W", "entries": [
        {"id": "u", "content": "U.", "keys": ["user"]},
        {"id": "name", "content": "N.", "keys": ["Sam"]}
      ]}],
      "scenarios": [{"id": "s", "name": "S", "worlds": ["w"],
        "cast": [{"character": "kai"}, {"seat": "guest", "player": true}]}]
    });
    let header = json!({"troupe": "0.1", "kind": "session", "scenario": "s",
        "characters": [{"id": "sam", "name": "Sam", "fictional": true, "age_band": "adult"}],
        "players": [{"seat": "guest", "character": "sam"}]});
    let msgs = [msg("m1", None, "Welcome, {{user}}.")];
    let e = troupe::internals::pipeline::load(&b, Some((&header, &msgs[..])), None).unwrap();
    assert_eq!(active(&e, "m1"), ["name"]);
    let hit = &by_id(&e.active_entries("m1"), "name").hits[0];
    // "Welcome, Sam.": Sam at 9..12 of the rendered text.
    assert_eq!((hit.start, hit.end, hit.text.as_str()), (9, 12, "Sam"));
}

/// `pick` outside message parts is stable per session (10.6): seeded by
/// "<seed>:pick:<k>:<template>", not by the message.
#[test]
fn pick_in_card_and_lore_text_is_stable_per_session() {
    use troupe::internals::engine::RenderFor;
    let b = bundle(
        json!([{"id": "x", "content": "x", "constant": true}]),
        json!(false),
    );
    let msgs: Vec<Value> = (1..=5)
        .map(|i| {
            let parent = format!("m{}", i - 1);
            msg(&format!("m{i}"), (i > 1).then_some(parent.as_str()), "x")
        })
        .collect();
    let e = engine(&b, 0, &msgs);
    let t = "{{pick: red, green, blue}}";
    let who = RenderFor {
        char: Some("kai"),
        owner: Some("w"),
        narrator: false,
    };
    for i in 1..=5 {
        let st = e.state_at(e.session.find(&format!("m{i}")).unwrap());
        // 0:pick:0:{{pick: red, green, blue}} -> index 1 (10.6 example).
        assert_eq!(e.render_stable(t, &st, who), "green");
    }
    // Seeded by the message (a message part), m3 gives 0:m3:pick:0 -> 2.
    let st = e.state_at(e.session.find("m3").unwrap());
    assert_eq!(e.render(t, &st, who), "blue");
}

/// A running session (rules runtime) computes timed effects as a fresh
/// engine over its session file does, turn after turn: the per-message
/// memo filled between turns stays right as the session grows (5.6).
#[test]
fn a_running_session_agrees_with_its_session_file() {
    let b = json!({
      "troupe": "0.1", "kind": "bundle",
      "characters": [{"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult"}],
      "worlds": [{"id": "w", "name": "W", "entries": [
        {"id": "fox", "content": "A fox.", "keys": ["fox"], "sticky": 1, "cooldown": 1},
        {"id": "calm", "content": "Calm.", "constant": true, "when": "state.x == 1", "sticky": 2}
      ]}],
      "scenarios": [{"id": "s", "name": "S", "worlds": ["w"],
        "cast": [{"character": "kai"}, {"seat": "guest", "player": true}],
        "openings": [{"id": "o", "text": "Hello."}],
        "variables": [{"id": "x", "type": "int", "default": 0}],
        "events": [{"id": "e1", "when": "turn == 2", "changes": [{"set": {"x": 1}}]}]}]
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.json");
    std::fs::write(&path, b.to_string()).unwrap();
    let pack = troupe::Pack::open(&path).unwrap_or_else(|e| panic!("{:?}", e.diagnostics()));
    let mut s = pack
        .start(troupe::SessionOptions::default())
        .expect("starts");
    for input in ["a fox", "x", "x", "fox", "x", "x"] {
        s.turn(input).expect("turn");
        let lines: Vec<Value> = s
            .jsonl()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let fresh =
            troupe::internals::pipeline::load(&b, Some((&lines[0], &lines[1..])), None).unwrap();
        for m in &lines[1..] {
            let id = m["id"].as_str().unwrap();
            // The running session's own engine (its memo), not a fresh one.
            let running: Vec<String> = s
                .inner()
                .engine()
                .active_entries(id)
                .into_iter()
                .filter(|a| a.active)
                .map(|a| a.id)
                .collect();
            assert_eq!(running, active(&fresh, id), "at {id} after {input:?}");
        }
    }
}

//! SillyTavern chats as found in the wild (issue 18): a null `swipe_id`,
//! an edited message (`mes` differs from `swipes[swipe_id]`), and a chat
//! imported against another character's card. Expectations derived by hand
//! from docs/import.md §7.

use serde_json::{json, Value};
use troupe_import::chat::{chat_import, ChatTarget};

fn bundle() -> Value {
    json!({"characters": [{"id": "ann", "name": "Ann"}],
        "scenarios": [{"id": "ann-chat", "cast": [{"character": "ann"}, {"seat": "player", "player": true}],
            "openings": [{"id": "first", "text": "Hi"}]}]})
}

fn import(lines: &[Value]) -> (Vec<Value>, troupe_import::summary::Summary) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let b = bundle();
    let t = ChatTarget {
        bundle: &b,
        character: "ann",
        scenario: "ann-chat",
    };
    chat_import("c.jsonl", text.as_bytes(), &t).unwrap()
}

fn ids(lines: &[Value]) -> Vec<&str> {
    lines[1..]
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .collect()
}

fn text(l: &Value) -> &str {
    l["parts"][0]["text"].as_str().unwrap()
}

#[test]
fn a_null_swipe_id_does_not_duplicate_a_swipe() {
    let (lines, summary) = import(&[
        json!({"user_name": "Bo", "character_name": "Ann"}),
        json!({"name": "Ann", "is_user": false, "mes": "a", "swipes": ["a", "b"], "swipe_id": null}),
    ]);
    // SillyTavern shows `mes`; the swipe equal to it is the shown one (0).
    assert_eq!(ids(&lines), ["m1", "m1.1"]);
    assert_eq!(text(&lines[1]), "a");
    assert_eq!(text(&lines[2]), "b");
    assert!(summary.warnings.is_empty());
    assert_eq!(summary.converted.len(), 1, "{:?}", summary.converted);
}

#[test]
fn a_missing_swipe_id_with_mes_on_a_later_swipe_picks_that_swipe() {
    let (lines, _) = import(&[
        json!({"user_name": "Bo", "character_name": "Ann"}),
        json!({"name": "Ann", "is_user": false, "mes": "b", "swipes": ["a", "b"]}),
    ]);
    assert_eq!(ids(&lines), ["m1", "m1.0"]);
    assert_eq!(text(&lines[1]), "b");
    assert_eq!(text(&lines[2]), "a");
}

#[test]
fn an_edited_message_keeps_both_texts() {
    let (lines, summary) = import(&[
        json!({"user_name": "Bo", "character_name": "Ann"}),
        json!({"name": "Bo", "is_user": true, "mes": "hello"}),
        json!({"name": "Ann", "is_user": false, "mes": "edited", "swipes": ["x", "original"], "swipe_id": 1}),
    ]);
    assert_eq!(ids(&lines), ["m1", "m2", "m2.0", "m2.1"]);
    assert_eq!(text(&lines[2]), "edited", "the shown text is `mes`");
    assert_eq!(text(&lines[3]), "x");
    assert_eq!(text(&lines[4]), "original");
    assert_eq!(lines[4]["parent"], "m1");
    assert_eq!(lines[4]["extensions"]["sillytavern"]["edited"], true);
    let created: Vec<&str> = summary
        .created
        .iter()
        .filter(|c| c.kind == "message")
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(created, ["m1", "m2", "m2.0", "m2.1"]);
}

#[test]
fn a_chat_of_another_character_is_a_warning() {
    let (lines, summary) = import(&[
        json!({"user_name": "Bo", "character_name": "Cleo"}),
        json!({"name": "Cleo", "is_user": false, "mes": "I am Cleo"}),
    ]);
    assert_eq!(summary.warnings.len(), 1);
    let w = &summary.warnings[0];
    assert_eq!(w.code.as_str(), "ADVISORY");
    assert_eq!(w.location.pointer.as_deref(), Some("line:1/character_name"));
    assert!(w.message.contains("Cleo") && w.message.contains("Ann"));
    // Attributed to the card's character, as the user asked, but not silently.
    assert_eq!(lines[1]["author"], "ann");
}

#[test]
fn the_players_seat_is_the_scenarios() {
    let (lines, summary) = import(&[json!({"user_name": "Bo", "character_name": "Ann"})]);
    assert_eq!(
        lines[0]["players"],
        json!([{"character": "bo", "seat": "player", "name": "Bo"}])
    );
    assert_eq!(summary.created[1].kind, "player");
    assert_eq!(summary.created[1].id, "bo");
}

#[test]
fn a_chat_with_a_byte_order_mark_imports_and_notes_it() {
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(
        concat!(
            "{\"user_name\":\"Bo\",\"character_name\":\"Ann\",\"chat_metadata\":{\"note_prompt\":\"x\"}}\n",
            "{\"name\":\"Ann\",\"is_user\":false,\"mes\":\"Hi\"}\n"
        )
        .as_bytes(),
    );
    let b = bundle();
    let t = ChatTarget {
        bundle: &b,
        character: "ann",
        scenario: "ann-chat",
    };
    let (lines, summary) = chat_import("c.jsonl", &bytes, &t).unwrap();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["opening"], "first");
    assert_eq!(summary.converted[0].at, "line:1");
    assert_eq!(summary.kept[0].at, "line:1/chat_metadata");
}

use crate::common;

/// `troupe import chat` of a group chat; the session and bundle it wrote.
fn import_group(
    dir: &std::path::Path,
    chat: &str,
    card: Option<&str>,
) -> (Vec<Value>, Value, String) {
    let out = dir.join("s.jsonl");
    let bundle = dir.join("b.json");
    let (o, b) = (out.to_str().unwrap(), bundle.to_str().unwrap());
    let mut args = vec!["import", "chat", chat, "-o", o, "--bundle", b];
    if let Some(c) = card {
        args.extend(["--card", c]);
    }
    let (code, text, err) = common::run(&args);
    assert_eq!(code, 0, "{text}{err}");
    let lines = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let b: Value = serde_json::from_str(&std::fs::read_to_string(&bundle).unwrap()).unwrap();
    let (code, report, _) = common::run(&["check", b_str(&bundle), o]);
    assert_eq!(code, 0, "the imported pair conforms: {report}");
    (lines, b, text)
}

fn b_str(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

fn authors(lines: &[Value]) -> Vec<(&str, &str)> {
    lines[1..]
        .iter()
        .map(|l| (l["id"].as_str().unwrap(), l["author"].as_str().unwrap()))
        .collect()
}

/// docs/import.md §7.1, derived by hand from the hand-made group chat
/// `tests/chats/tenants-group.jsonl` (no header, as SillyTavern 1.12 writes
/// group chats): the members Margit, Dev and Ruth, in the order they first
/// speak, become the cast of `group-chat` before the seat; each line keeps
/// its speaker (the hidden one too); SillyTavern's narrator line is the
/// narrator's; the user is the first user message's `name`.
#[test]
fn a_group_chat_keeps_who_spoke() {
    let dir = tempfile::tempdir().unwrap();
    let (lines, bundle, summary) =
        import_group(dir.path(), "tests/chats/tenants-group.jsonl", None);
    let ids: Vec<&str> = bundle["characters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["margit", "dev", "ruth"]);
    let sc = &bundle["scenarios"][0];
    assert_eq!(sc["id"], "group-chat");
    assert_eq!(
        sc["cast"],
        json!([{"character": "margit"}, {"character": "dev"}, {"character": "ruth"},
               {"seat": "player", "player": true}])
    );
    assert_eq!(sc["turn_order"], json!({"strategy": "natural"}));
    assert_eq!(
        authors(&lines),
        [
            ("m1", "margit"),
            ("m2", "sam"),
            ("m3", "dev"),
            ("m3.1", "dev"),
            ("m4", "ruth"),
            ("m5", "narrator"),
            ("m6", "margit")
        ]
    );
    assert_eq!(lines[5]["hidden"], true, "is_system: hidden, still Ruth's");
    assert_eq!(
        lines[0]["players"],
        json!([{"character": "sam", "seat": "player", "name": "Sam"}])
    );
    assert!(lines[0].get("extensions").is_none(), "no header line");
    assert_eq!(
        lines[1]["extensions"]["sillytavern"]["original_avatar"],
        "Margit.png"
    );
    for l in [
        "character margit (from line:1/name)",
        "character dev (from line:3/name)",
        "character ruth (from line:4/name)",
    ] {
        assert!(summary.contains(l), "{summary}");
    }
}

/// With a header that names no character, and a card: the member with the
/// card's name is the card's character; the others join its scenario's
/// cast after it; line numbers count the header.
#[test]
fn a_group_chat_with_a_header_joins_the_cards_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let body = std::fs::read_to_string("tests/chats/tenants-group.jsonl").unwrap();
    let chat = dir.path().join("g.jsonl");
    std::fs::write(
        &chat,
        format!("{{\"user_name\":\"Sam\",\"create_date\":\"2024-5-1 @10h\",\"chat_metadata\":{{}}}}\n{body}"),
    )
    .unwrap();
    let card = dir.path().join("margit.json");
    std::fs::write(
        &card,
        r#"{"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Margit"}}"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let (lines, bundle, summary) =
        import_group(&out, chat.to_str().unwrap(), Some(card.to_str().unwrap()));
    let sc = &bundle["scenarios"][0];
    assert_eq!(sc["id"], "margit-chat");
    assert_eq!(
        sc["cast"],
        json!([{"character": "margit"}, {"character": "dev"}, {"character": "ruth"},
               {"seat": "player", "player": true}])
    );
    assert_eq!(lines[0]["scenario"], "margit-chat");
    assert_eq!(lines[0]["extensions"]["sillytavern"]["user_name"], "Sam");
    assert_eq!(authors(&lines)[4], ("m4", "ruth"));
    assert!(
        summary.contains("character dev (from line:4/name)"),
        "{summary}"
    );
    assert!(
        !summary.contains("character margit (from line"),
        "{summary}"
    );
}

/// Member names that are a reserved ID or the seat's get IDs clear of both
/// (docs/import.md §1, §7.1).
#[test]
fn group_member_ids_stay_clear_of_reserved_ids_and_seats() {
    use troupe_import::chat::{add_members, group_bundle, group_members};
    let chat = concat!(
        "{\"name\":\"Narrator\",\"mes\":\"a\"}\n",
        "{\"name\":\"Player\",\"mes\":\"b\"}\n",
        "{\"name\":\"You\",\"is_user\":true,\"mes\":\"c\"}\n"
    );
    let members = group_members("g", chat.as_bytes()).unwrap();
    let mut b = group_bundle();
    let mut s = troupe_import::summary::Summary::default();
    let map = add_members(&mut b, "group-chat", "", &members, &mut s);
    assert_eq!(
        map,
        [
            ("Narrator".to_string(), "narrator-1".to_string()),
            ("Player".to_string(), "player-2".to_string())
        ]
    );
    // A one-character chat is no group chat.
    let solo =
        "{\"user_name\":\"Bo\",\"character_name\":\"Ann\"}\n{\"name\":\"Ann\",\"mes\":\"hi\"}\n";
    assert!(group_members("s", solo.as_bytes()).is_none());
}

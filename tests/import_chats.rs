//! SillyTavern chats as found in the wild (issue 18): a null `swipe_id`,
//! an edited message (`mes` differs from `swipes[swipe_id]`), and a chat
//! imported against another character's card. Expectations derived by hand
//! from docs/import.md §7.

use serde_json::{json, Value};
use troupe::import::chat::{chat_import, ChatTarget};

fn bundle() -> Value {
    json!({"characters": [{"id": "ann", "name": "Ann"}],
        "scenarios": [{"id": "ann-chat", "cast": [{"character": "ann"}, {"seat": "player", "player": true}],
            "openings": [{"id": "first", "text": "Hi"}]}]})
}

fn import(lines: &[Value]) -> (Vec<Value>, troupe::import::summary::Summary) {
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

//! Card macros as SillyTavern users write them (issue 18, item 3):
//! `setvar`/`getvar` in greetings, nested macros, `::` at the top level,
//! multi-line calls, brace escapes, `{{if}}` blocks and `{{.var}}`. Each
//! expectation is derived by hand from docs/import.md §5 (and §7 for the
//! chat whose greetings set variables); no value is copied from output.

use serde_json::{json, Value};
use troupe::internals::check::check_bundle_document;
use troupe::internals::load::parse_json;
use troupe_import::chat::{chat_import, ChatTarget};
use troupe_import::{card, export, read_card};

use crate::common;

use common::run as troupe;

fn card_json(data: Value) -> Value {
    json!({"spec": "chara_card_v2", "spec_version": "2.0", "data": data})
}

fn import(card: &Value) -> card::CardImport {
    let bytes = serde_json::to_vec(card).unwrap();
    let raw = read_card("card.json", &bytes).unwrap();
    card::card_to_bundle(&raw).unwrap()
}

fn opening<'a>(b: &'a Value, id: &str) -> &'a Value {
    b["scenarios"][0]["openings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == id)
        .unwrap()
}

fn assert_checks(bundle: &Value) {
    let text = serde_json::to_string_pretty(bundle).unwrap();
    let doc = parse_json("bundle.json", text.as_bytes()).value.unwrap();
    let ds = check_bundle_document(&doc);
    assert!(ds.is_empty(), "{ds:#?}");
}

/// The card of the first reproduction: variables set in greetings
/// and read in the description.
fn moody() -> Value {
    card_json(json!({
        "name": "Ann",
        "description": "Ann is {{getvar::mood}} today.",
        "first_mes": "{{setvar::mood::happy}}Hi {{user}}, I am {{getvar::mood}}.",
        "alternate_greetings": ["{{setvar::mood::grumpy}}{{setvar::visits::1}}Oh. You. ({{.mood}})"]
    }))
}

#[test]
fn setvar_in_greetings_become_declared_variables_and_opening_changes() {
    let imp = import(&moody());
    let b = &imp.bundle;
    // §5: the variables are declared as strings, in ID order.
    assert_eq!(
        b["scenarios"][0]["variables"],
        json!([{"id": "mood", "type": "string"}, {"id": "visits", "type": "string"}])
    );
    let first = opening(b, "first");
    assert_eq!(first["text"], "Hi {{user}}, I am happy.");
    assert_eq!(first["changes"], json!([{"set": {"mood": "happy"}}]));
    let alt = opening(b, "alt-1");
    assert_eq!(alt["text"], "Oh. You. (grumpy)");
    assert_eq!(
        alt["changes"],
        json!([{"set": {"mood": "grumpy"}}, {"set": {"visits": "1"}}])
    );
    // Outside a greeting, getvar reads the scenario variable.
    assert_eq!(b["characters"][0]["description"], "Ann is {{mood}} today.");
    assert!(
        imp.summary.warnings.is_empty(),
        "{:?}",
        imp.summary.warnings
    );
    let vars: Vec<&str> = imp
        .summary
        .created
        .iter()
        .filter(|c| c.kind == "variable")
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(vars, ["mood", "visits"]);
    assert_checks(b);
    // The way back gives the card as written (docs/import.md §6).
    let back = export::card_from_bundle(b, "ann").unwrap();
    assert_eq!(back, moody());
}

#[test]
fn nested_multiline_escaped_and_reversed_macros() {
    let imp = import(&card_json(json!({
        "name": "Seraphina",
        "first_mes": "{{random::a::{{random::b::c}}}}",
        "alternate_greetings": [
            "{{reverse::{{char}}}}",
            "{{random\n::a\n::b\n}}",
            "\\{\\{user\\}\\} is written {{user}}",
            "{{pick::x::{{random::y::z}}::w}}"
        ]
    })));
    let b = &imp.bundle;
    // a ½, b ¼, c ¼: a twice among four.
    assert_eq!(opening(b, "first")["text"], "{{random: a, a, b, c}}");
    assert_eq!(opening(b, "alt-1")["text"], "anihpareS");
    assert_eq!(opening(b, "alt-2")["text"], "{{random: a, b}}");
    assert_eq!(
        opening(b, "alt-3")["text"],
        "\\{{user}} is written {{user}}"
    );
    // Three outer options, the middle one a choice of two: L = 2.
    assert_eq!(opening(b, "alt-4")["text"], "{{pick: x, x, y, z, w, w}}");
    assert!(imp.summary.warnings.is_empty());
    assert_checks(b);
}

#[test]
fn conditionals_are_chosen_at_import_or_kept_with_a_warning() {
    let imp = import(&card_json(json!({
        "name": "Ann",
        "personality": "{{if .met}}old friend{{else}}stranger{{/if}}",
        "first_mes": "{{setvar::met::yes}}{{if .met}}Welcome back{{else}}Who are you{{/if}}, {{user}}.",
        "alternate_greetings": ["{{if .met}}Welcome back{{else}}Who are you{{/if}}."]
    })));
    let b = &imp.bundle;
    assert_eq!(opening(b, "first")["text"], "Welcome back, {{user}}.");
    assert_eq!(opening(b, "alt-1")["text"], "Who are you.");
    // Outside a greeting the condition is only known in a chat: the block
    // is left out (neither branch reaches the prompt; issue 44), a comment
    // in its place, with a warning at the field and offset 0.
    assert_eq!(
        b["characters"][0]["personality"],
        "{{// if-block left out at import}}"
    );
    let w: Vec<_> = imp
        .summary
        .warnings
        .iter()
        .map(|d| {
            (
                d.location.pointer.clone().unwrap_or_default(),
                d.message.clone(),
            )
        })
        .collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].0, "/data/personality");
    assert!(w[0].1.contains("at offset 0"), "{w:?}");
    assert!(
        w[0].1.contains("neither branch reaches the prompt"),
        "{w:?}"
    );
    assert_checks(b);
}

#[test]
fn macros_that_need_the_chat_are_kept_with_positioned_warnings() {
    let imp = import(&card_json(json!({
        "name": "Ann",
        "description": "Hi. {{random::{{user}}::you}} and {{setvar::x::1}}",
        "first_mes": "Hello"
    })));
    let b = &imp.bundle;
    assert_eq!(
        b["characters"][0]["description"],
        "Hi. \\{{random::\\{{user}}::you}} and \\{{setvar::x::1}}"
    );
    let msgs: Vec<String> = imp
        .summary
        .warnings
        .iter()
        .map(|d| d.message.to_string())
        .collect();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    // `Hi. ` is 4 characters; `{{random::{{user}}::you}}` is 25 (2 + 6 +
    // 2 + 8 + 2 + 3 + 2) and ` and ` 5 more: 4 + 25 + 5 = 34.
    assert!(msgs[0].contains("offset 4"), "{msgs:?}");
    assert!(msgs[1].contains("offset 34"), "{msgs:?}");
    assert_checks(b);
}

#[test]
fn a_chat_opened_on_a_greeting_that_sets_variables_names_its_opening() {
    let imp = import(&moody());
    // SillyTavern shows the greetings rendered: setvar renders nothing.
    let chat = [
        json!({"user_name": "Bo", "character_name": "Ann"}),
        json!({"name": "Ann", "is_user": false, "mes": "Hi Bo, I am happy.",
               "swipes": ["Hi Bo, I am happy.", "Oh. You. (grumpy)"], "swipe_id": 0}),
    ];
    let text: String = chat.iter().map(|l| format!("{l}\n")).collect();
    let t = ChatTarget {
        bundle: &imp.bundle,
        character: &imp.character,
        scenario: &imp.scenario,
    };
    let (lines, _) = chat_import("c.jsonl", text.as_bytes(), &t).unwrap();
    assert_eq!(lines[1]["id"], "m1");
    assert_eq!(lines[1]["opening"], "first");
    assert_eq!(lines[2]["id"], "m1.1");
    assert_eq!(lines[2]["opening"], "alt-1");
}

#[test]
fn the_cli_plays_a_macro_card_and_strict_refuses_a_kept_conditional() {
    let tmp = tempfile::tempdir().unwrap();
    let card = tmp.path().join("card.json");
    std::fs::write(&card, serde_json::to_vec(&moody()).unwrap()).unwrap();
    let bundle = tmp.path().join("bundle.json");
    let (code, out, err) = troupe(&[
        "import",
        "card",
        card.to_str().unwrap(),
        "-o",
        bundle.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("variable mood"), "{out}");
    let script = tmp.path().join("script.txt");
    std::fs::write(&script, "Hello.\n").unwrap();
    let session = tmp.path().join("s.jsonl");
    let (code, _, err) = troupe(&[
        "run",
        bundle.to_str().unwrap(),
        "--script",
        script.to_str().unwrap(),
        "--out",
        session.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = troupe(&["check", bundle.to_str().unwrap(), session.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    // A pack keeps the variables and the openings' changes.
    let pack = tmp.path().join("pack");
    let (code, _, err) = troupe(&[
        "import",
        "card",
        card.to_str().unwrap(),
        "--pack",
        "-o",
        pack.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = troupe(&["check", pack.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let yaml = std::fs::read_to_string(pack.join("scenarios/ann-chat.yaml")).unwrap();
    assert!(yaml.contains("mood"), "{yaml}");

    let iffy = tmp.path().join("iffy.json");
    std::fs::write(
        &iffy,
        serde_json::to_vec(&card_json(json!({"name": "Ann",
            "description": "{{if .x}}a{{else}}b{{/if}}", "first_mes": "Hi"})))
        .unwrap(),
    )
    .unwrap();
    let out_b = tmp.path().join("iffy-bundle.json");
    let (code, out, _) = troupe(&[
        "import",
        "card",
        iffy.to_str().unwrap(),
        "-o",
        out_b.to_str().unwrap(),
        "--strict",
        "--json",
    ]);
    assert_eq!(code, 1);
    assert!(!out_b.exists());
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["written"], false);
    assert_eq!(doc["warnings"][0]["pointer"], "/data/description");
}

#[test]
fn book_entries_read_the_cards_variables_and_warn_where_they_cannot() {
    let imp = import(&card_json(json!({
        "name": "Ann",
        "first_mes": "{{setvar::mood::happy}}Hi",
        "character_book": {"entries": [
            {"keys": ["ann"], "content": "Ann feels {{getvar::mood}}.", "enabled": true, "insertion_order": 0},
            {"keys": ["bob"], "content": "{{if .mood}}glad{{/if}}", "enabled": true, "insertion_order": 1}
        ]}
    })));
    let b = &imp.bundle;
    assert_eq!(
        b["scenarios"][0]["variables"],
        json!([{"id": "mood", "type": "string"}])
    );
    let entries = b["worlds"][0]["entries"].as_array().unwrap();
    assert_eq!(entries[0]["content"], "Ann feels {{mood}}.");
    assert_eq!(entries[1]["content"], "{{// if-block left out at import}}");
    let at: Vec<String> = imp
        .summary
        .warnings
        .iter()
        .map(|d| d.location.pointer.clone().unwrap_or_default())
        .collect();
    assert_eq!(at, ["/data/character_book/entries/1/content"]);
    assert_checks(b);
}

#[test]
fn a_chat_opened_on_a_greeting_with_a_choice_names_its_opening() {
    let imp = import(&card_json(json!({
        "name": "Ann",
        "first_mes": "{{random::Hello::Hi}} there, {{user}}.",
        "alternate_greetings": ["You rolled {{roll::1d6}}. {{// note}}"]
    })));
    assert_eq!(
        opening(&imp.bundle, "first")["text"],
        "{{random: Hello, Hi}} there, {{user}}."
    );
    let chat = [
        json!({"user_name": "Bo", "character_name": "Ann"}),
        json!({"name": "Ann", "is_user": false, "mes": "Hi there, Bo.",
               "swipes": ["Hi there, Bo.", "You rolled 4.", "Hey there, Bo."], "swipe_id": 0}),
    ];
    let text: String = chat.iter().map(|l| format!("{l}\n")).collect();
    let t = ChatTarget {
        bundle: &imp.bundle,
        character: &imp.character,
        scenario: &imp.scenario,
    };
    let (lines, _) = chat_import("c.jsonl", text.as_bytes(), &t).unwrap();
    assert_eq!(lines[1]["opening"], "first");
    assert_eq!(lines[2]["id"], "m1.1");
    assert_eq!(lines[2]["opening"], "alt-1");
    // `Hey` is no option of the greeting: a root without an opening.
    assert_eq!(lines[3]["id"], "m1.2");
    assert!(lines[3].get("opening").is_none(), "{}", lines[3]);
}

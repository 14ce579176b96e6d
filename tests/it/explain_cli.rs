//! `troupe explain` answers on an imported chat (issue 7): the real
//! Seraphina card (shared data, not in the repository) with a small chat
//! written here, imported with `troupe import`, explained at two messages.
//! Expectations are derived by hand from Format 5.3–5.4 and docs/import.md
//! (card books match substrings, case-insensitively, scan depth 2: SillyTavern's
//! default, given to an imported entry that sets none).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::common;

fn card() -> Option<PathBuf> {
    common::shared("data/real/st_default_Seraphina.v3.ccv3.json", "explain_cli")
}

fn troupe(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

const CHAT: &str = r#"{"user_name":"Ana","character_name":"Seraphina","create_date":1700000000000}
{"name":"Seraphina","is_user":false,"send_date":1700000001000,"mes":"Rest now."}
{"name":"Ana","is_user":true,"send_date":1700000002000,"mes":"What lurks in the WOODS of Eldoria?"}
{"name":"Seraphina","is_user":false,"send_date":1700000003000,"mes":"The Shadowfangs are beasts."}
"#;

#[test]
fn explain_on_an_imported_chat() {
    let Some(card) = card() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("s.json");
    let chat = dir.path().join("chat.jsonl");
    let session = dir.path().join("s.jsonl");
    std::fs::write(&chat, CHAT).unwrap();
    let card = card.to_str().unwrap();
    let (b, s, c) = (
        bundle.to_str().unwrap(),
        session.to_str().unwrap(),
        chat.to_str().unwrap(),
    );
    assert_eq!(troupe(&["import", "card", card, "-o", b]).0, 0);
    let (code, out) = troupe(&["import", "chat", c, "--card", card, "-o", s]);
    assert_eq!(code, 0, "{out}");

    // m2 (the user's line): entry-1 (eldoria, wood, forest, ...) matches
    // "wood" inside "WOODS" (substring, lower-cased) at 18..22 and
    // "Eldoria" at 27..34.
    let (code, out) = troupe(&["explain", b, s, "--at", "m2", "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["active"], 1);
    let e = &v["entries"][0];
    assert_eq!(e["id"], "entry-1");
    assert_eq!(e["active"], true);
    assert_eq!(e["why"], "keys");
    let hits: Vec<(String, u64, u64, String)> = e["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["key"].as_str().unwrap().into(),
                h["start"].as_u64().unwrap(),
                h["end"].as_u64().unwrap(),
                h["text"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        hits,
        [
            ("eldoria".into(), 27, 34, "Eldoria".into()),
            ("wood".into(), 18, 22, "WOOD".into())
        ]
    );
    assert_eq!(e["missed"], serde_json::json!(["forest", "magical forest"]));

    // m3: scan depth 2 sees m2 and m3: entry-1 still matches by "eldoria"
    // and "wood" in m2, entry-2 by "shadowfang" (4..14), "beast" and
    // "beasts" (20..25, 20..26) in m3; entries 3 and 4 have no key in either.
    let (code, out) = troupe(&["explain", b, s, "--at", "m3"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("lore at message m3 (scenario seraphina-chat): 2 of 4 entries active\n"),
        "{out}"
    );
    assert!(
        out.contains("entry-1 (eldoria, order 100): key `eldoria` matched \"Eldoria\" in m2 at characters 27..34; `wood` matched \"WOOD\" in m2 at characters 18..22"),
        "{out}"
    );
    assert!(
        out.contains("entry-2 (eldoria, order 100): key `shadowfang` matched \"Shadowfang\" in m3 at characters 4..14"),
        "{out}"
    );
    assert!(
        out.contains("`beasts` matched \"beasts\" in m3 at characters 20..26"),
        "{out}"
    );
    assert!(
        out.contains("not active:\n  entry-3 (eldoria, order 100): no key hit"),
        "{out}"
    );

    // An unknown message is an error.
    assert_eq!(troupe(&["explain", b, s, "--at", "nope"]).0, 1);
}

/// Issue 42: `explain` without `--at` is the last message, here the reply;
/// lore the player's line triggered is active at the input, not at the
/// reply (scan depth 1, Format 5.3), and the reply says it was written
/// from it (`written_from`, 24.3: the prompt holds the entries active at
/// the input). Derived by hand: m1 the opening, m2 "Tell me of the dragon.",
/// m3 the rules reply; the one entry keyed `dragon` hits m2 only.
#[test]
fn a_reply_says_which_lore_it_was_written_from() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("b.json");
    let mut b: Value =
        serde_json::from_str(include_str!("../../examples/bundles/tiny.bundle.json")).unwrap();
    b["scenarios"][0]["entries"] = serde_json::json!([
        {"id": "dragons", "keys": ["dragon"], "content": "Dragons sleep under the hill."}
    ]);
    b["scenarios"][0]["rules"] = serde_json::json!([{"id": "any", "replies": ["Hm."]}]);
    std::fs::write(&bundle, b.to_string()).unwrap();
    let script = dir.path().join("s.txt");
    std::fs::write(&script, "Tell me of the dragon.\n").unwrap();
    let session = dir.path().join("s.jsonl");
    let (b, s) = (bundle.to_str().unwrap(), session.to_str().unwrap());
    let (code, out) = troupe(&["run", b, "--script", script.to_str().unwrap(), "--out", s]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = troupe(&["explain", b, s, "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (&v["at"], &v["active"], &v["written_from"]),
        (
            &Value::from("m3"),
            &Value::from(0),
            &serde_json::json!({"at": "m2", "active": 1})
        )
    );
    let (code, out) = troupe(&["explain", b, s, "--at", "m2", "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["active"], 1);
    assert!(v.get("written_from").is_none(), "{v}");
    let (code, out) = troupe(&["explain", b, s]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "(message m3 is a reply, written from the lore active at the input m2: 1 of 1 entries; `--at m2` for why)"
        ),
        "{out}"
    );
}

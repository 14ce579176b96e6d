//! Lorebook keys that cannot be kept are warnings that keep the original
//! text, and every import prints a summary (`--json` a document, `--strict`
//! exit 1 on any loss). Issue 18; expectations derived by hand from
//! docs/import.md §3 and §11.

use serde_json::{json, Value};
use troupe_import::lorebook::lorebook_document;
use troupe_import::{card, export, read_card};

use crate::common;

use common::run as troupe;

fn warnings_at(s: &troupe_import::summary::Summary) -> Vec<String> {
    s.warnings
        .iter()
        .map(|d| d.location.pointer.clone().unwrap_or_default())
        .collect()
}

fn world_info() -> Value {
    json!({"entries": {
        "0": {"uid": 0, "key": ["/(?<=a)b/"], "content": "lookbehind"},
        "1": {"uid": 1, "key": "dragon, wyrm", "content": "string key"},
        "2": {"uid": 2, "content": "no key"},
        "3": {"uid": 3, "key": ["ok"], "content": "fine", "sticky": 2}
    }})
}

#[test]
fn world_info_keys_that_cannot_be_kept_warn_and_keep_their_text() {
    let (bundle, summary) = lorebook_document(&world_info(), "wi").unwrap();
    assert_eq!(
        warnings_at(&summary),
        [
            "/entries/0/key/0",
            "/entries/0",
            "/entries/1/key",
            "/entries/2"
        ]
    );
    assert!(summary
        .warnings
        .iter()
        .all(|d| d.code.as_str() == "ADVISORY"));
    let e = &bundle["worlds"][0]["entries"];
    // The refused regex: no keys, the original kept.
    assert!(e[0].get("keys").is_none());
    assert_eq!(
        e[0]["extensions"]["sillytavern"]["key"],
        json!(["/(?<=a)b/"])
    );
    // The string: read as comma-separated keys, the original kept.
    assert_eq!(e[1]["keys"], json!(["dragon", "wyrm"]));
    assert_eq!(e[1]["extensions"]["sillytavern"]["key"], "dragon, wyrm");
    // A key that came across is not repeated in the extensions.
    assert!(e[3]["extensions"]["sillytavern"].get("key").is_none());
    // `sticky` is converted to the entry's `sticky` (Format 5.6; issue 44:
    // SillyTavern's 2 holds one message after the start, Troupe's 1), no
    // longer kept as data; the file's missing recursion setting becomes
    // SillyTavern's default (docs/import.md §3), noted at the root.
    assert!(summary.kept.is_empty());
    assert_eq!(e[3]["sticky"], 1);
    let converted: Vec<&str> = summary.converted.iter().map(|n| n.at.as_str()).collect();
    assert!(converted.contains(&"/entries/3/sticky"), "{converted:?}");
    assert!(converted.contains(&""), "{converted:?}");
}

#[test]
fn card_book_keys_that_cannot_be_kept_warn_and_round_trip() {
    let card = json!({"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Ann",
    "character_book": {"entries": [
        {"keys": ["/(a)\\1/"], "content": "backreference", "enabled": true, "insertion_order": 1},
        {"keys": "a,b", "content": "string", "enabled": true, "insertion_order": 2},
        {"content": "missing", "enabled": true, "insertion_order": 3},
        {"content": "constant", "constant": true, "enabled": true, "insertion_order": 4}
    ]}}});
    let raw = read_card("c.json", card.to_string().as_bytes()).unwrap();
    let imported = card::card_to_bundle(&raw).unwrap();
    assert_eq!(
        warnings_at(&imported.summary),
        [
            "/data/character_book/entries/0/keys/0",
            "/data/character_book/entries/0",
            "/data/character_book/entries/1/keys",
            "/data/character_book/entries/2"
        ]
    );
    let back = export::card_from_bundle(&imported.bundle, &imported.character).unwrap();
    assert_eq!(back, card, "the original keys come back on export");
}

#[test]
fn the_cli_prints_a_summary_json_gives_a_document_strict_refuses_loss() {
    let tmp = tempfile::tempdir().unwrap();
    let wi = tmp.path().join("wi.json");
    std::fs::write(&wi, world_info().to_string()).unwrap();
    let out = tmp.path().join("out.json");
    let (o, w) = (out.to_str().unwrap(), wi.to_str().unwrap());

    let (code, stdout, stderr) = troupe(&["import", "lorebook", w, "-o", o]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("world wi"), "{stdout}");
    assert!(stdout.contains("entry entry-3"), "{stdout}");
    assert!(stderr.contains("warning[ADVISORY]"), "{stderr}");

    let (code, stdout, _) = troupe(&["import", "lorebook", w, "-o", o, "--json"]);
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["import"], "lorebook");
    assert_eq!(doc["written"], true);
    assert_eq!(doc["created"][0], json!({"kind": "world", "id": "wi"}));
    assert_eq!(doc["warnings"].as_array().unwrap().len(), 4);
    assert_eq!(doc["warnings"][0]["code"], "ADVISORY");
    assert_eq!(doc["kept"], json!([]));
    assert!(doc["converted"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["at"] == "/entries/3/sticky"));

    std::fs::remove_file(&out).unwrap();
    let (code, stdout, stderr) = troupe(&["import", "lorebook", w, "-o", o, "--strict", "--json"]);
    assert_eq!(code, 1, "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["written"], false);
    assert!(!out.exists(), "--strict writes nothing on a loss");

    // A lossless import passes --strict.
    let card = tmp.path().join("card.json");
    std::fs::write(&card, br#"{"name":"Ann","first_mes":"Hi"}"#).unwrap();
    let (code, stdout, stderr) = troupe(&[
        "import",
        "card",
        card.to_str().unwrap(),
        "-o",
        o,
        "--strict",
        "--json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let created: Vec<(&str, &str)> = doc["created"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["kind"].as_str().unwrap(), c["id"].as_str().unwrap()))
        .collect();
    assert_eq!(
        created,
        [
            ("character", "ann"),
            ("scenario", "ann-chat"),
            ("seat", "player"),
            ("opening", "first")
        ]
    );
    assert!(out.exists());
}

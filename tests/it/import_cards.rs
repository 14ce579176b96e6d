//! Cards as found in the wild (issue 18): a byte order mark, `null` in list
//! and optional fields, and imported cards that `troupe run` can play and
//! whose session `troupe check` accepts. Expectations derived by hand from
//! docs/import.md §1, §2, §6 and Format 3.2, 18.4.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use troupe_import::{card, export, read_card};

use crate::common;

use common::run as troupe;

fn import_bytes(bytes: &[u8]) -> card::CardImport {
    let raw = read_card("card.json", bytes).unwrap();
    card::card_to_bundle(&raw).unwrap()
}

#[test]
fn a_card_with_a_byte_order_mark_imports() {
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(
        br#"{"spec":"chara_card_v2","spec_version":"2.0","data":{"name":"Ann","first_mes":"Hi"}}"#,
    );
    let imported = import_bytes(&bytes);
    assert_eq!(imported.character, "ann");
    assert_eq!(imported.bundle["scenarios"][0]["openings"][0]["text"], "Hi");
}

#[test]
fn null_fields_import_and_come_back_as_null() {
    let card = json!({"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        "name": "Ann", "nickname": null, "description": null, "first_mes": "Hi",
        "alternate_greetings": null, "group_only_greetings": null, "tags": null,
        "character_book": {"name": "B", "entries": [
            {"keys": null, "secondary_keys": null, "content": "C", "enabled": true,
             "insertion_order": 1, "extensions": null}
        ]},
        "extensions": {}}});
    let imported = import_bytes(serde_json::to_string(&card).unwrap().as_bytes());
    let openings = imported.bundle["scenarios"][0]["openings"]
        .as_array()
        .unwrap();
    assert_eq!(openings.len(), 1, "null greetings are no greetings");
    assert!(imported.bundle["characters"][0].get("nickname").is_none());
    assert!(imported.bundle["worlds"][0]["entries"][0]
        .get("keys")
        .is_none());
    let back = export::card_from_bundle(&imported.bundle, &imported.character).unwrap();
    assert_eq!(back, card);
    assert_eq!(
        serde_json::to_string(&back).unwrap(),
        serde_json::to_string(&card).unwrap(),
        "same keys in the same order"
    );
}

#[test]
fn the_seat_is_not_reserved_and_is_clear_of_other_ids() {
    let imported = import_bytes(br#"{"name":"Player"}"#);
    assert_eq!(imported.character, "player");
    assert_eq!(imported.seat, "player-2");
    assert_eq!(
        imported.bundle["scenarios"][0]["cast"],
        json!([{"character": "player"}, {"seat": "player-2", "player": true}])
    );
}

fn cards() -> Vec<PathBuf> {
    let Some(dir) = common::shared("data/real", "import_cards") else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.ends_with(".png") || n.ends_with(".chara.json") || n.ends_with(".ccv3.json")
        })
        .collect();
    v.sort();
    v
}

fn run_and_check(target: &Path, dir: &Path, script: &Path) {
    let session = dir.join("session.jsonl");
    let _ = std::fs::remove_file(&session);
    let (code, _, err) = troupe(&[
        "run",
        target.to_str().unwrap(),
        "--script",
        script.to_str().unwrap(),
        "--out",
        session.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "run {}: {err}", target.display());
    let text = std::fs::read_to_string(&session).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    for c in header["characters"].as_array().into_iter().flatten() {
        assert_ne!(c["id"], "user", "{header}");
    }
    let (code, out, err) = troupe(&["check", target.to_str().unwrap(), session.to_str().unwrap()]);
    assert_eq!(code, 0, "check {}: {out}{err}", target.display());
    assert!(!err.contains("error"), "{err}");
}

#[test]
fn every_real_card_runs_and_its_session_checks() {
    let cards = cards();
    if cards.is_empty() {
        return;
    }
    assert_eq!(cards.len(), 6, "{cards:?}");
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("script.txt");
    std::fs::write(&script, "Hello.\nWhat is this place?\n").unwrap();
    for (i, path) in cards.iter().enumerate() {
        let dir = tmp.path().join(format!("c{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        let bundle = dir.join("bundle.json");
        let (code, _, err) = troupe(&[
            "import",
            "card",
            path.to_str().unwrap(),
            "-o",
            bundle.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{}: {err}", path.display());
        run_and_check(&bundle, &dir, &script);
        let pack = dir.join("pack");
        let (code, _, err) = troupe(&[
            "import",
            "card",
            path.to_str().unwrap(),
            "--pack",
            "-o",
            pack.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{}: {err}", path.display());
        run_and_check(&pack, &dir, &script);
    }
}

#[test]
fn a_book_with_null_entries_imports_and_round_trips() {
    let card = json!({"spec": "chara_card_v3", "spec_version": "3.0", "data": {
        "name": "Ann", "character_book": {"name": "B", "entries": null}}});
    let imported = import_bytes(card.to_string().as_bytes());
    assert!(imported.bundle["worlds"][0].get("entries").is_none());
    let back = export::card_from_bundle(&imported.bundle, &imported.character).unwrap();
    assert_eq!(back, card);
}

/// `troupe test` writes sessions too (`--accept` writes the re-played
/// session over the recording, Format 21.5): on every real card's pack, a
/// session `run` recorded is re-played and written by `test --accept`, and
/// both the pack's `check` and a second `test` accept what was written.
#[test]
fn every_real_card_pack_replays_and_checks_what_test_writes() {
    let cards = cards();
    if cards.is_empty() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("script.txt");
    std::fs::write(&script, "Hello.\nWhat is this place?\n").unwrap();
    for (i, path) in cards.iter().enumerate() {
        let pack = tmp.path().join(format!("p{i}"));
        let (code, _, err) = troupe(&[
            "import",
            "card",
            path.to_str().unwrap(),
            "--pack",
            "-o",
            pack.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{}: {err}", path.display());
        let recorded = tmp.path().join(format!("rec{i}.jsonl"));
        let (code, _, err) = troupe(&[
            "run",
            pack.to_str().unwrap(),
            "--script",
            script.to_str().unwrap(),
            "--out",
            recorded.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "run {}: {err}", path.display());
        std::fs::create_dir_all(pack.join("sessions")).unwrap();
        std::fs::copy(&recorded, pack.join("sessions/rec.jsonl")).unwrap();
        let (code, out, err) = troupe(&["test", pack.to_str().unwrap(), "--accept"]);
        assert_eq!(code, 0, "test --accept {}: {out}{err}", path.display());
        let (code, out, err) = troupe(&["check", pack.to_str().unwrap()]);
        assert_eq!(code, 0, "check {}: {out}{err}", path.display());
        assert!(!err.contains("error"), "{err}");
        let (code, out, err) = troupe(&["test", pack.to_str().unwrap()]);
        assert_eq!(code, 0, "test {}: {out}{err}", path.display());
    }
}

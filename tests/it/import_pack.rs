//! `troupe import card FILE --pack -o DIR` writes a pack that passes the
//! checks and lowers (Format 13.10) to the imported bundle, with the
//! differences docs/import.md §9 lists: the character's `text` in the NPC's
//! `extensions.text`, `group_only` openings listed in the scenario's
//! `extensions.group_only`, openings' `author` written out, the scenario's
//! `safety` from the pack's policy.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use troupe::internals::check::check_pack;
use troupe::internals::load::scan_pack;

use crate::common;

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

/// Imports `card` both ways; returns (bundle, lowered pack bundle).
fn both(card: &Path, dir: &Path) -> (Value, Value) {
    let bundle_path = dir.join("b.json");
    let pack = dir.join("pack");
    let c = card.to_str().unwrap();
    let (code, out) = troupe(&["import", "card", c, "-o", bundle_path.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = troupe(&["import", "card", c, "--pack", "-o", pack.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = troupe(&["check", pack.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    // Writing again into the now non-empty directory is refused.
    assert_eq!(
        troupe(&["import", "card", c, "--pack", "-o", pack.to_str().unwrap()]).0,
        3
    );
    let scanned = scan_pack(&pack);
    assert!(scanned.diagnostics.is_empty(), "{:?}", scanned.diagnostics);
    let (diags, lowered) = check_pack(scanned.value.as_ref().unwrap());
    assert!(diags.is_empty(), "{diags:#?}");
    let bundle: Value = serde_json::from_slice(&std::fs::read(&bundle_path).unwrap()).unwrap();
    (bundle, lowered)
}

/// The comparisons every card's pack must pass.
fn same_story(bundle: &Value, lowered: &Value) {
    let (bc, lc) = (&bundle["characters"][0], &lowered["characters"][0]);
    for f in [
        "id",
        "name",
        "nickname",
        "fictional",
        "age_band",
        "description",
        "personality",
    ] {
        assert_eq!(bc.get(f), lc.get(f), "character field {f}");
    }
    assert_eq!(bc.get("text"), lc["extensions"].get("text"));
    assert_eq!(bc["extensions"]["card"], lc["extensions"]["card"]);
    let worlds = |b: &Value| b.get("worlds").cloned().unwrap_or_else(|| json!([]));
    assert_eq!(worlds(bundle), worlds(lowered), "worlds");
    let (bs, ls) = (&bundle["scenarios"][0], &lowered["scenarios"][0]);
    for f in ["id", "name", "cast", "worlds"] {
        assert_eq!(bs.get(f), ls.get(f), "scenario field {f}");
    }
    let bo = bs["openings"].as_array().unwrap();
    let lo = ls["openings"].as_array().unwrap();
    assert_eq!(bo.len(), lo.len());
    let mut group_only = Vec::new();
    for (b, l) in bo.iter().zip(lo) {
        assert_eq!((&b["id"], &b["text"]), (&l["id"], &l["text"]));
        assert_eq!(l["author"], bc["id"]);
        if b["group_only"] == json!(true) {
            group_only.push(b["id"].clone());
        }
    }
    if group_only.is_empty() {
        assert!(ls["extensions"].get("group_only").is_none());
    } else {
        assert_eq!(ls["extensions"]["group_only"], Value::Array(group_only));
    }
}

#[test]
fn a_hand_written_card_becomes_a_pack() {
    let dir = tempfile::tempdir().unwrap();
    let card = dir.path().join("kai.json");
    let v3 = json!({"spec": "chara_card_v3", "spec_version": "3.0", "data": {
        "name": "Kai Moreno", "nickname": "Kai", "description": "A sailor: \"wry\" # not a comment",
        "personality": "yes", "scenario": "At the docks.\nLate.", "first_mes": "Hi {{user}}.",
        "alternate_greetings": ["Yo."], "group_only_greetings": ["Hello, all of you."],
        "mes_example": "", "creator_notes": "notes", "system_prompt": "", "post_history_instructions": "",
        "tags": ["sea"], "creator": "", "character_version": "", "extensions": {"depth": 1.50},
        "character_book": {"entries": [{"keys": ["dock", "/pier?s/i"], "content": "The docks.",
          "extensions": {}, "enabled": true, "insertion_order": 5, "use_regex": false,
          "constant": false}], "extensions": {}}}});
    // json! gives 1.5; the card file says 1.50.
    let text = serde_json::to_string(&v3)
        .unwrap()
        .replace("\"depth\":1.5", "\"depth\":1.50");
    assert!(text.contains("1.50"));
    std::fs::write(&card, text).unwrap();
    let (bundle, lowered) = both(&card, dir.path());
    same_story(&bundle, &lowered);
    // Hand-derived from docs/import.md §2: IDs, texts, openings.
    let c = &lowered["characters"][0];
    assert_eq!(c["id"], "kai-moreno");
    assert_eq!(c["personality"], "yes", "a YAML word stays a string");
    assert_eq!(c["extensions"]["text"]["scenario"], "At the docks.\nLate.");
    assert_eq!(c["extensions"]["text"]["creator_notes"], "notes");
    let s = &lowered["scenarios"][0];
    assert_eq!(s["id"], "kai-moreno-chat");
    let ids: Vec<&str> = s["openings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["first", "alt-1", "group-1"]);
    assert_eq!(s["extensions"]["group_only"], json!(["group-1"]));
    // The kept card data survives YAML; the number is written as the card
    // wrote it (the pack reader gives it back as the number 1.5).
    let pack = dir.path().join("pack");
    let npc = std::fs::read_to_string(pack.join("npcs/kai-moreno.yaml")).unwrap();
    assert!(npc.contains("depth: 1.50"), "{npc}");
    assert_eq!(
        c["extensions"]["card"]["data"]["kept"]["extensions"]["depth"].as_f64(),
        Some(1.5)
    );
    let mut files: Vec<String> = walk(&pack, &pack);
    files.sort();
    assert_eq!(
        files,
        [
            "manifest.yaml",
            "npcs/kai-moreno.yaml",
            "safety/default.yaml",
            "scenarios/kai-moreno-chat.yaml",
            "tests/smoke_kai-moreno-chat.yaml",
            "worlds/kai-moreno-lore.yaml"
        ]
    );
}

fn walk(root: &Path, dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(root, &p));
        } else {
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.push(rel);
        }
    }
    out
}

#[test]
fn every_real_card_becomes_a_pack_that_checks() {
    let Some(dir) = common::shared("data/real", "import_pack") else {
        return;
    };
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.ends_with(".png")
            || name.ends_with(".chara.json")
            || name.ends_with(".ccv3.json"))
        {
            continue;
        }
        let tmp = tempfile::tempdir().unwrap();
        let (bundle, lowered) = both(&e.path(), tmp.path());
        same_story(&bundle, &lowered);
        n += 1;
    }
    assert_eq!(n, 6);
}

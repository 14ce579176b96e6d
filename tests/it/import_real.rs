//! Every real card, lorebook and chat in the shared `data/real` folder
//! imports, passes the checks, and every card round-trips exactly: import
//! then export gives back a JSON value equal to the card (docs/import.md).
//! Snapshots in `snapshots/import/` pin the imported bundles. The data is
//! not in the repository (`$TROUPE_SHARED_DIR` or `../shared`).

use std::path::{Path, PathBuf};

use serde_json::Value;
use troupe::internals::check::{check_bundle_document, check_session_document};
use troupe::internals::load::{parse_json, parse_session};
use troupe_import::chat::{chat_to_session, ChatTarget};
use troupe_import::{card, export, parse_object, read_card, RawCard};

use crate::common;

fn real_dir() -> Option<PathBuf> {
    common::shared("data/real", "import_real")
}

fn files(dir: &Path, pred: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| pred(&p.file_name().unwrap().to_string_lossy()))
        .collect();
    v.sort();
    v
}

fn is_card(name: &str) -> bool {
    name.ends_with(".png") || name.ends_with(".chara.json") || name.ends_with(".ccv3.json")
}

fn check_bundle(bundle: &Value) {
    let text = serde_json::to_string_pretty(bundle).unwrap();
    let doc = parse_json("bundle.json", text.as_bytes()).value.unwrap();
    let ds = check_bundle_document(&doc);
    assert!(ds.is_empty(), "{ds:#?}");
}

fn import(path: &Path) -> (RawCard, card::CardImport) {
    let bytes = std::fs::read(path).unwrap();
    let raw = read_card(&path.display().to_string(), &bytes).unwrap();
    let imported = card::card_to_bundle(&raw).unwrap();
    (raw, imported)
}

/// The value with every string over 60 characters replaced by its length
/// and hash: the snapshot pins the structure and, through the hash, the
/// exact text, without copying the shared data into the repository.
fn redact(v: &Value) -> Value {
    match v {
        Value::String(s) if s.chars().count() > 60 => Value::String(format!(
            "<{} chars, fnv {}>",
            s.chars().count(),
            troupe_import::record::hash(v)
        )),
        Value::Array(a) => Value::Array(a.iter().map(redact).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), redact(v))).collect()),
        other => other.clone(),
    }
}

fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots/import"));
    s.set_prepend_module_to_snapshot(false);
    s
}

#[test]
fn real_cards_import_check_and_round_trip() {
    let Some(dir) = real_dir() else { return };
    let cards = files(&dir, is_card);
    assert_eq!(cards.len(), 6, "{cards:?}");
    for path in cards {
        let (raw, imported) = import(&path);
        check_bundle(&imported.bundle);
        let back = export::card_from_bundle(&imported.bundle, &imported.character).unwrap();
        assert!(back == raw.card, "{} does not round-trip", path.display());
        // The exported keys are in the card's own order, too.
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&back), keys(&raw.card));
        let name = path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .replace('.', "_");
        settings().bind(|| insta::assert_json_snapshot!(name, redact(&imported.bundle)));
    }
}

#[test]
fn png_cards_hold_the_json_cards() {
    let Some(dir) = real_dir() else { return };
    let json = |n: &str| parse_object(n, &std::fs::read(dir.join(n)).unwrap()).unwrap();
    let (v2, _) = import(&dir.join("st_default_Seraphina.v2.png"));
    assert_eq!(v2.card, json("st_default_Seraphina.v2.chara.json"));
    // Both chunks present: `ccv3` is preferred.
    let (v3, _) = import(&dir.join("st_default_Seraphina.v2v3.png"));
    assert_eq!(v3.card, json("st_default_Seraphina.v3.ccv3.json"));
}

#[test]
fn real_card_fields_land_where_docs_say() {
    let Some(dir) = real_dir() else { return };
    let (_, imported) = import(&dir.join("st_default_Seraphina.v3.ccv3.json"));
    let b = &imported.bundle;
    assert_eq!(b["characters"][0]["id"], "seraphina");
    assert_eq!(b["scenarios"][0]["id"], "seraphina-chat");
    assert_eq!(b["scenarios"][0]["openings"][0]["id"], "first");
    assert_eq!(b["scenarios"][0]["worlds"], serde_json::json!(["eldoria"]));
    let e = &b["worlds"][0]["entries"][0];
    assert_eq!(
        e["keys"],
        serde_json::json!(["eldoria", "wood", "forest", "magical forest"])
    );
    assert_eq!(e["whole_words"], false);
    assert_eq!(e["position"], "before");
    assert_eq!(e["extensions"]["card"]["kept"]["use_regex"], true);
}

#[test]
fn real_lorebook_imports_and_checks() {
    let Some(dir) = real_dir() else { return };
    let path = dir.join("st_default_Eldoria_worldinfo.json");
    let doc = parse_object("wi", &std::fs::read(&path).unwrap()).unwrap();
    let (bundle, _) =
        troupe_import::lorebook::lorebook_document(&doc, "st_default_Eldoria_worldinfo").unwrap();
    check_bundle(&bundle);
    assert_eq!(bundle["worlds"][0]["entries"].as_array().unwrap().len(), 4);
    settings()
        .bind(|| insta::assert_json_snapshot!("st_default_Eldoria_worldinfo", redact(&bundle)));
}

#[test]
fn real_chats_import_and_check() {
    let Some(dir) = real_dir() else { return };
    let chats = files(&dir, |n| n.ends_with(".jsonl"));
    assert_eq!(chats.len(), 4);
    for path in chats {
        let bytes = std::fs::read(&path).unwrap();
        let header = parse_object("h", bytes.split(|b| *b == b'\n').next().unwrap()).unwrap();
        let name = header["character_name"].as_str().unwrap();
        let raw = RawCard {
            card: serde_json::json!({"spec": "chara_card_v2", "data": {"name": name}}),
            container: troupe_import::CardContainer::Json,
            assets: vec![],
        };
        let imported = card::card_to_bundle(&raw).unwrap();
        let target = ChatTarget {
            bundle: &imported.bundle,
            character: &imported.character,
            scenario: &imported.scenario,
        };
        let lines = chat_to_session("chat", &bytes, &target).unwrap();
        let text: String = lines
            .iter()
            .map(|l| serde_json::to_string(l).unwrap() + "\n")
            .collect();
        let session = parse_session("s.jsonl", text.as_bytes());
        assert!(session.diagnostics.is_empty(), "{:?}", session.diagnostics);
        let ds = check_session_document(&imported.bundle, &session.value.unwrap());
        assert!(ds.is_empty(), "{}: {ds:#?}", path.display());
        let name = path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .replace('.', "_");
        settings()
            .bind(|| insta::assert_json_snapshot!(name, redact(&Value::Array(lines.clone()))));
    }
}

#[test]
fn seraphina_chat_maps_its_greeting() {
    let Some(dir) = real_dir() else { return };
    let (_, imported) = import(&dir.join("st_default_Seraphina.v3.ccv3.json"));
    let first = imported.bundle["scenarios"][0]["openings"][0]["text"]
        .as_str()
        .unwrap()
        .replace("{{user}}", "Ann")
        .replace("{{char}}", "Seraphina");
    let chat = format!(
        "{}\n{}\n",
        serde_json::json!({"user_name": "Ann", "character_name": "Seraphina"}),
        serde_json::json!({"name": "Seraphina", "is_user": false, "mes": first, "send_date": 1_700_000_000_000i64})
    );
    let target = ChatTarget {
        bundle: &imported.bundle,
        character: &imported.character,
        scenario: &imported.scenario,
    };
    let lines = chat_to_session("c", chat.as_bytes(), &target).unwrap();
    assert_eq!(lines[1]["opening"], "first");
    assert_eq!(lines[0]["players"][0]["seat"], "player");
}

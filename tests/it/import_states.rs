//! Every real chat steps through the state at every message (issue 7):
//! imported with its stub card (a V2 card holding only the chat's
//! `character_name`) and with the real Seraphina card (which has a lore
//! book), loaded by the engine, and the state (Format 8.6) and the active
//! lore entries (5.3) computed at every message. Snapshots in
//! `snapshots/import/` pin them, strings over 60 characters hashed as the
//! import snapshots do. The data is not in the repository
//! (`$TROUPE_SHARED_DIR` or `../shared`).

use std::path::PathBuf;

use serde_json::{json, Value};
use troupe_import::chat::{chat_to_session, ChatTarget};
use troupe_import::{card, parse_object, read_card, CardContainer, RawCard};

use crate::common;

fn real_dir() -> Option<PathBuf> {
    common::shared("data/real", "import_states")
}

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

/// The state and active entries at every message of `chat` imported
/// against `raw`, in file order.
fn states(raw: &RawCard, chat: &[u8], what: &str) -> Value {
    let imported = card::card_to_bundle(raw).unwrap();
    let target = ChatTarget {
        bundle: &imported.bundle,
        character: &imported.character,
        scenario: &imported.scenario,
    };
    let lines = chat_to_session("chat", chat, &target).unwrap();
    let engine =
        troupe::internals::pipeline::load(&imported.bundle, Some((&lines[0], &lines[1..])), None)
            .unwrap_or_else(|d| panic!("{what}: {d:#?}"));
    let mut out = Vec::new();
    for (i, m) in engine.session.messages.iter().enumerate() {
        let st = engine.state_at(i as u32);
        let ending = engine.ending(&st);
        let active: Vec<String> = engine
            .entries_at(i as u32)
            .into_iter()
            .filter(|a| a.active)
            .map(|a| a.id)
            .collect();
        out.push(json!({
            "at": &*m.id,
            "turn": st.turn,
            "round": st.round,
            "ended": ending.is_some(),
            "state": Value::Object(engine.flatten(&st)),
            "active_entries": active,
        }));
    }
    assert_eq!(out.len(), lines.len() - 1, "{what}: one state per message");
    Value::Array(out)
}

#[test]
fn real_chats_step_through_the_state_at_every_message() {
    let Some(dir) = real_dir() else { return };
    let mut chats: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    chats.sort();
    assert_eq!(chats.len(), 4);
    let seraphina_path = dir.join("st_default_Seraphina.v3.ccv3.json");
    let seraphina = read_card("s", &std::fs::read(&seraphina_path).unwrap()).unwrap();
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots/import"));
    settings.set_prepend_module_to_snapshot(false);
    for path in chats {
        let bytes = std::fs::read(&path).unwrap();
        let header = parse_object("h", bytes.split(|b| *b == b'\n').next().unwrap()).unwrap();
        let name = header["character_name"].as_str().unwrap_or("");
        let stub = RawCard {
            card: json!({"spec": "chara_card_v2", "data": {"name": name}}),
            container: CardContainer::Json,
            assets: vec![],
        };
        let what = path.display().to_string();
        let both = json!({
            "stub_card": states(&stub, &bytes, &what),
            "seraphina_card": states(&seraphina, &bytes, &what),
        });
        let snap = format!(
            "states_{}",
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .replace('.', "_")
        );
        let text = serde_json::to_string_pretty(&redact(&both)).unwrap();
        settings.bind(|| insta::assert_snapshot!(snap, text));
    }
}

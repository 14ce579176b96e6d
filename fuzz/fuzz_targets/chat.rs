//! SillyTavern chat import (`docs/import.md` §7) against a fixed card, on
//! arbitrary bytes: no input may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use troupe::import::{card, chat, CardContainer, RawCard};

fuzz_target!(|data: &[u8]| {
    let raw = RawCard {
        card: serde_json::json!({"spec": "chara_card_v2", "spec_version": "2.0",
            "data": {"name": "Aqua", "first_mes": "Hi {{user}}", "alternate_greetings": ["Yo"]}}),
        container: CardContainer::Json,
        assets: Vec::new(),
    };
    let Ok(imported) = card::card_to_bundle(&raw) else { return };
    let target = chat::ChatTarget {
        bundle: &imported.bundle,
        character: &imported.character,
        scenario: &imported.scenario,
    };
    let _ = chat::chat_to_session("c.jsonl", data, &target);
});

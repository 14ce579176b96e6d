//! Building the model runtime's prompt is linear in the length of the path
//! it covers (Format 24.3, 16.2): the transcript's messages are not each
//! replayed from the root. Work is counted, not timed: the messages the
//! engine steps (Format 8.6) while one prompt is built, for two path
//! lengths, with `model.history` as long as the path so that every message
//! is in the transcript. A quadratic build (history × depth) steps 16×
//! as many messages for 4× the path; a linear one about 4×.

use std::sync::{Arc, Mutex};

use serde_json::json;
use troupe::internals::engine::steps_taken;
use troupe::{Pack, Proposal, Runtime, SessionOptions, Structured, TurnContext};

/// An adapter that builds the prompt at each turn and keeps the number of
/// steps the last build took and its number of messages; it proposes
/// nothing (each turn writes only its input).
struct Counting(Arc<Mutex<(u64, usize)>>);

impl Runtime for Counting {
    fn name(&self) -> &str {
        "counting"
    }
    fn propose(&mut self, ctx: &TurnContext<'_>) -> Option<Proposal> {
        let before = steps_taken();
        let messages = ctx.prompt(Structured::JsonSchema);
        *self.0.lock().unwrap() = (steps_taken() - before, messages.len());
        None
    }
}

/// The steps one prompt build takes after `turns` turns.
fn steps(turns: usize) -> u64 {
    let bundle = json!({"troupe": "0.1", "kind": "bundle",
        "characters": [{"id": "rosa", "name": "Rosa", "fictional": true, "age_band": "adult"}],
        "scenarios": [{"id": "stall", "name": "Stall",
            "cast": [{"character": "rosa"}, {"seat": "player", "player": true}],
            "openings": [{"id": "o", "text": "Hello.", "author": "rosa"}],
            "variables": [{"id": "mood", "type": "int", "default": 0}],
            "model": {"history": 100000}}]});
    let pack = Pack::from_bundle(&bundle.to_string()).unwrap();
    let seen = Arc::new(Mutex::new((0, 0)));
    let mut session = pack
        .start(SessionOptions::default().adapter(Counting(seen.clone())))
        .unwrap();
    for i in 0..turns {
        session.turn(&format!("line {i}")).unwrap();
    }
    let (steps, messages) = *seen.lock().unwrap();
    // The system message, the root and every input.
    assert_eq!(messages, turns + 2);
    steps
}

#[test]
fn a_prompt_is_linear_in_its_path() {
    let _serial = crate::serial();
    let small = steps(100);
    let large = steps(400);
    assert!(
        large < small * 8,
        "4× the path took {large} steps against {small}: not linear"
    );
    // A few walks along the path, never one per message.
    assert!(large <= 8 * 401, "{large} steps for a path of 401 messages");
}

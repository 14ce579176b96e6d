//! `troupe prompt` without `--char` (Format 24.3) against who speaks next
//! (`Session::next_speaker`, the page's `/next` route; 18.9), issue 40
//! item 3. Both ask the turn order's "first reply" of one input message,
//! drawn (`natural`) with `choose(W, "speaker:<seed>:<id of m_in>")`: the
//! prompt at message ID takes ID itself as `m_in` (24.3: "with ID as
//! `m_in` and its rendered text … as the input"), and next_speaker the
//! input not yet written, whose ID is the one it would get. So the prompt
//! at an input is for the speaker next_speaker foretold for that input
//! before it was said; the prompt at a reply takes the reply as the input
//! (24.3), which is not the next input.
//!
//! Expected values by hand from the spec: 24.3's own example — in
//! tenants-meeting (seed 0, `natural`, talkativeness Dev 30, Ruth 20), the
//! input `m2` "Good evening, everyone." names no one, L is Margit (the
//! opening's author), the draw over Dev and Ruth is 15, so Dev; "Dev here."
//! (the reply the rules give Dev for it, `sessions/letter.jsonl` m3) names
//! Dev, a speaker, as a whole word (bare names count under `natural`).

use serde_json::Value;
use troupe::model_runtime::Settings;
use troupe::{Pack, SessionOptions};

fn first_line(pack: &Pack, jsonl: &str, at: &str) -> String {
    let history = pack.history(jsonl).expect("the session reads back");
    let prompt = history
        .prompt(Some(at), None, &Settings::default())
        .expect("a prompt");
    let system = prompt.body["messages"][0]["content"]
        .as_str()
        .expect("a system message")
        .to_string();
    system.lines().next().unwrap_or_default().to_string()
}

fn line_of(jsonl: &str, id: &str) -> Value {
    jsonl
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|m| m["id"] == id)
        .unwrap_or(Value::Null)
}

#[test]
fn the_prompt_at_an_input_is_for_the_speaker_foretold_for_it() {
    let pack = Pack::open("examples/packs/tenants-meeting").expect("the pack");
    let mut session = pack
        .start(SessionOptions::default().seed(0))
        .expect("a session");
    let input = "Good evening, everyone.";
    let next = session.next_speaker(input, None).expect("next");
    assert_eq!(next.speaker, "dev");
    assert_eq!(next.input, "m2");
    assert_eq!(next.chosen, serde_json::json!({"why": "drawn", "draw": 15}));
    session.turn(input).expect("the turn");
    let jsonl = session.jsonl().to_string();
    let reply = line_of(&jsonl, "m3");
    assert_eq!(
        (&reply["parent"], &reply["author"]),
        (&"m2".into(), &"dev".into())
    );
    assert_eq!(reply["chosen"], next.chosen, "the turn chose as foretold");
    // The prompt at the input m2: the same speaker (24.3's example).
    assert_eq!(first_line(&pack, &jsonl, "m2"), "You are Dev. Stay in character and answer as Dev would, in a few sentences. Never speak for Player.");
    // The prompt at the reply m3 takes m3 as the input: it names Dev.
    assert!(first_line(&pack, &jsonl, "m3").starts_with("You are Dev."));
    // An input naming someone: foretold and prompted alike.
    let input = "Ruth, what does the log say?";
    let next = session.next_speaker(input, None).expect("next");
    assert_eq!((next.speaker.as_str(), next.input.as_str()), ("ruth", "m4"));
    assert_eq!(
        next.chosen,
        serde_json::json!({"why": "addressed", "name": "Ruth"})
    );
    session.turn(input).expect("the turn");
    let jsonl = session.jsonl().to_string();
    assert_eq!(line_of(&jsonl, "m5")["author"], "ruth");
    assert!(first_line(&pack, &jsonl, "m4").starts_with("You are Ruth."));
}

//! The embedding API at the crate root (docs/embedding.md): what it promises
//! embedders, and that it gives the same answers as the CLI.

use crate::common;

use serde_json::{json, Value};
use troupe::{
    ErrorKind, History, Knowable, Pack, Proposal, RenderOptions, Runtime, Session, SessionOptions,
    TurnContext,
};

const NEGOTIATION: &str = "examples/packs/everyday-negotiation";
const HARBOR: &str = "examples/packs/harbor-lights";

/// `Pack` is shared between threads, a `Session` moves to another thread
/// (a server, a Python object): checked at compile time.
#[test]
fn pack_is_send_and_sync_and_session_is_send() {
    fn send<T: Send>() {}
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Pack>();
    send_sync::<History>();
    send::<Session>();
    send::<SessionOptions>();
    send_sync::<troupe::Error>();
}

fn script() -> Vec<&'static str> {
    vec![
        "Hello Marco, I like the hatchback.",
        "I can offer 7,000 cash today.",
        "The tyres are worn, so 8,000 is fair.",
        "Deal at 8,200?",
    ]
}

/// Four turns from Rust serialize to exactly the turns of `troupe run
/// --json` with the same script and seed.
#[test]
fn turn_results_are_the_run_json_turn_documents() {
    let pack = Pack::open(NEGOTIATION).unwrap();
    let mut session = pack.start(SessionOptions::default().seed(3)).unwrap();
    let mut turns = Vec::new();
    for line in script() {
        if session.ended() {
            break;
        }
        turns.push(serde_json::to_value(session.turn(line).unwrap()).unwrap());
    }
    let dir = tempfile::tempdir().unwrap();
    let script_file = dir.path().join("script.txt");
    std::fs::write(&script_file, script().join("\n")).unwrap();
    let out = common::troupe(&[
        "run",
        NEGOTIATION,
        "--seed",
        "3",
        "--json",
        "--script",
        script_file.to_str().unwrap(),
    ]);
    let doc: Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    assert_eq!(doc["turns"], Value::Array(turns));
    assert_eq!(
        doc["opening"],
        serde_json::to_value(session.opening()).unwrap()
    );
    assert_eq!(doc["score"], serde_json::to_value(session.score()).unwrap());
}

/// A History answers as `troupe state|ended|knows --json` do.
#[test]
fn history_answers_as_the_cli_does() {
    let pack = Pack::open(HARBOR).unwrap();
    let history = pack.recorded_history("inn.jsonl").unwrap();
    let file = "examples/packs/harbor-lights/sessions/inn.jsonl";
    for id in history.message_ids() {
        let cli = common::troupe(&["state", HARBOR, file, "--at", id, "--json"]);
        let cli: Value = serde_json::from_str(&common::stdout(&cli)).unwrap();
        assert_eq!(
            cli,
            serde_json::to_value(history.state(Some(id)).unwrap()).unwrap(),
            "{id}"
        );
        let cli = common::troupe(&["ended", HARBOR, file, "--at", id, "--json"]);
        let cli: Value = serde_json::from_str(&common::stdout(&cli)).unwrap();
        assert_eq!(
            cli,
            serde_json::to_value(history.ended_at(id).unwrap()).unwrap()
        );
        let cli = common::troupe(&["explain", HARBOR, file, "--at", id, "--json"]);
        let cli: Value = serde_json::from_str(&common::stdout(&cli)).unwrap();
        assert_eq!(
            cli,
            serde_json::to_value(history.explain(id).unwrap()).unwrap()
        );
    }
    let cli = common::troupe(&[
        "knows",
        HARBOR,
        file,
        "--message",
        "m2",
        "--part",
        "0",
        "--json",
    ]);
    let cli: Value = serde_json::from_str(&common::stdout(&cli)).unwrap();
    assert_eq!(cli, json!(history.knows("m2", Knowable::Part(0)).unwrap()));
    let err = history.state_at("m99").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    let who = RenderOptions::default();
    let err = history.render("{{oops", None, &who).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid);
    assert_eq!(err.diagnostics()[0].code, troupe::Code::TemplateSyntax);
}

/// A session played from Rust reads back as a History with the same state
/// at its last message.
#[test]
fn a_played_session_reads_back_as_history() {
    let pack = Pack::open(NEGOTIATION).unwrap();
    let mut session = pack.start(SessionOptions::default()).unwrap();
    session.turn("I can offer 7,000 cash today.").unwrap();
    let history = session.history(&pack).unwrap();
    let last = session.current_id().unwrap().to_string();
    assert_eq!(history.state_at(&last).unwrap(), session.state());
    assert_eq!(history.last_id(), Some(last.as_str()));
}

/// Bundles and packages from memory open like files; `compile` gives the
/// bytes `troupe compile` writes.
#[test]
fn bundles_and_packages_open_from_memory() {
    let pack = Pack::open(NEGOTIATION).unwrap();
    let bytes = pack.compile().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.troupe");
    let o = common::troupe(&["compile", NEGOTIATION, "-o", out.to_str().unwrap()]);
    assert!(o.status.success());
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
    let from_bytes = Pack::from_package(&bytes).unwrap();
    assert!(from_bytes.from_ir());
    assert_eq!(from_bytes.compile().unwrap(), bytes);
    let from_file = Pack::open(&out).unwrap();
    assert!(from_file.from_ir());
    let text = serde_json::to_string(pack.bundle()).unwrap();
    let from_text = Pack::from_bundle(&text).unwrap();
    assert_eq!(from_text.scenarios(), pack.scenarios());
    // The same story, the same turn.
    let mut a = from_bytes.start(SessionOptions::default()).unwrap();
    let mut b = from_text.start(SessionOptions::default()).unwrap();
    assert_eq!(a.turn("Hello").unwrap(), b.turn("Hello").unwrap());
}

/// Errors carry a kind, the diagnostics and a plain message.
#[test]
fn errors_have_kinds_and_diagnostics() {
    let e = Pack::open("examples/no-such-pack").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    let e = Pack::open("examples/broken/cel-syntax.bundle.json").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.diagnostics().iter().any(|d| d.is_error()));
    assert!(e.to_string().starts_with("the input does not conform"));
    assert!(!e.render().is_empty());
    let e = Pack::from_package(b"not a zip").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    let pack = Pack::open(NEGOTIATION).unwrap();
    let e = pack
        .start(SessionOptions::default().difficulty("impossible"))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Refused);
    let e = pack.history("{}\n").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    let e = pack.recorded_history("none.jsonl").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
}

/// An adapter proposes literal replies; the engine does everything else.
struct Echo;

impl Runtime for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn propose(&mut self, ctx: &TurnContext<'_>) -> Option<Proposal> {
        Some(Proposal::adapter(
            Some(format!("You said: {}", ctx.input)),
            vec![],
        ))
    }
}

#[test]
fn an_adapter_plugs_in() {
    let pack = Pack::open(NEGOTIATION).unwrap();
    let mut session = pack.start(SessionOptions::default().adapter(Echo)).unwrap();
    let r = session.turn("{{user}} hi").unwrap();
    assert_eq!(r.reply.as_deref(), Some("You said: {{user}} hi"));
    assert_eq!(r.rule, None);
    // Moving a session to another thread works.
    let handle = std::thread::spawn(move || session.turn("again").map(|r| r.turn));
    assert_eq!(handle.join().unwrap().unwrap(), 2);
}

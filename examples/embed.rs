//! Troupe embedded in a Rust program (docs/embedding.md).
//!
//! `cargo run --release --example embed` plays four turns of the
//! negotiation pack under the rules runtime, one turn under a tiny custom
//! runtime (an adapter), and prints the state at a message of a recorded
//! session of the harbor-lights pack.

use std::fmt::Write as _;

use troupe::{Pack, Proposal, Runtime, SessionOptions, TurnContext};

/// A custom runtime: echoes the input and proposes no changes. A model
/// adapter does the same with a model's reply (Format 18.7); the engine
/// still checks safety, applies changes and fires events.
struct Echo;

impl Runtime for Echo {
    fn name(&self) -> &str {
        "echo"
    }

    fn propose(&mut self, ctx: &TurnContext<'_>) -> Option<Proposal> {
        Some(Proposal::adapter(
            Some(format!("(echo) {}", ctx.input)),
            vec![],
        ))
    }
}

/// The transcript the example prints.
pub fn transcript() -> Result<String, troupe::Error> {
    let mut out = String::new();

    // Open once (checked here), start any number of sessions.
    let pack = Pack::open("examples/packs/everyday-negotiation")?;
    let mut session = pack.start(SessionOptions::default().seed(7))?;
    if let Some(opening) = session.opening() {
        let who = session.author_name(&opening.message);
        writeln!(out, "{who}: {}", opening.text.unwrap_or_default()).ok();
    }
    for line in [
        "Hi Marco, the hatchback looks great.",
        "I can offer 7,000 cash today.",
        "The tyres are worn; 8,000 is fair.",
        "Deal at 8,200?",
    ] {
        if session.ended() {
            break;
        }
        let turn = session.turn(line)?;
        writeln!(out, "You: {line}").ok();
        if let (Some(reply), Some(id)) = (&turn.reply, turn.messages.last()) {
            writeln!(out, "{}: {reply}", session.author_name(id)).ok();
        }
        let delta: Vec<String> = turn
            .state_delta
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        writeln!(out, "  [turn {}; changed: {}]", turn.turn, delta.join(", ")).ok();
    }
    writeln!(
        out,
        "ended: {}; outcome: {}; score: {}",
        session.ended(),
        session.outcome().as_deref().unwrap_or("none"),
        session
            .score()
            .and_then(|s| s.total)
            .map_or("none".to_string(), |t| t.to_string())
    )
    .ok();

    // The same story under a custom runtime.
    let mut echo = pack.start(SessionOptions::default().adapter(Echo))?;
    let turn = echo.turn("Is the price negotiable?")?;
    writeln!(out, "echo runtime: {}", turn.reply.unwrap_or_default()).ok();

    // A recorded session: the state at one of its messages.
    let harbor = Pack::open("examples/packs/harbor-lights")?;
    let history = harbor.recorded_history("inn.jsonl")?;
    let view = history.state(Some("m3"))?;
    writeln!(out, "harbor-lights inn.jsonl at m3 (turn {}):", view.turn).ok();
    for (name, value) in &view.state {
        writeln!(out, "  {name} = {value}").ok();
    }
    Ok(out)
}

fn main() {
    match transcript() {
        Ok(text) => print!("{text}"),
        Err(e) => {
            eprint!("{}", e.render());
            std::process::exit(1);
        }
    }
}

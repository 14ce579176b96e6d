//! `troupe state BUNDLE SESSION [--at ID] [--json]` (Format 8.6).

use std::path::PathBuf;

use serde_json::{json, Value};

/// Arguments of `troupe state`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A bundle file or a pack directory.
    pub bundle: PathBuf,
    /// A session file (for a pack, also looked for in its `sessions/`).
    pub session: PathBuf,
    /// The message; the initial state when omitted.
    #[arg(long)]
    pub at: Option<String>,
    /// Print JSON for programs.
    #[arg(long)]
    pub json: bool,
}

/// Prints the flattened state at `--at`.
pub fn run(args: Args) -> i32 {
    let engine = match super::open_engine(&args.bundle, Some(&args.session)) {
        Ok(e) => e,
        Err(code) => return code,
    };
    let state = match &args.at {
        Some(id) => match super::message_index(&engine, id) {
            Ok(m) => engine.state_at(m),
            Err(code) => return code,
        },
        None => engine.initial().clone(),
    };
    let flat = engine.flatten(&state);
    let ending = engine.ending(&state);
    if args.json {
        let out = json!({
            "at": args.at,
            "turn": state.turn,
            "round": state.round,
            "ended": ending.is_some(),
            "outcome": ending.as_ref().filter(|e| e.outcome).map(|e| e.id.clone()),
            "state": Value::Object(flat),
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return 0;
    }
    match &args.at {
        Some(id) => println!(
            "state at message {id}: turn {}, round {}",
            state.turn, state.round
        ),
        None => println!("initial state"),
    }
    if let Some(e) = &ending {
        let what = if e.outcome { "outcome" } else { "event" };
        println!("ended by {what} `{}` at message {}", e.id, e.message);
    }
    for (k, v) in &flat {
        println!(
            "  {}",
            crate::diag::render::escape_controls(&format!("{k} = {v}"))
        );
    }
    0
}

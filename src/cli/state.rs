//! `troupe state BUNDLE SESSION [--at ID] [--json]` (Format 8.6).

use std::path::PathBuf;

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
    let history = match super::open_history(&args.bundle, Some(&args.session)) {
        Ok(h) => h,
        Err(code) => return code,
    };
    let view = match history.state(args.at.as_deref()) {
        Ok(v) => v,
        Err(e) => return super::report(&e),
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&view).unwrap_or_default()
        );
        return 0;
    }
    match &args.at {
        Some(id) => println!(
            "state at message {id}: turn {}, round {}",
            view.turn, view.round
        ),
        None => println!("initial state"),
    }
    if let Some(id) = &args.at {
        if let Ok(ended) = history.ended_at(id) {
            if let Some(e) = &ended.ending {
                println!("ended by {} `{}` at message {}", e.kind, e.id, e.message);
            }
        }
    }
    if let Some(set) = &view.settings {
        // Settings a message on the path changed (Format 8.9).
        println!(
            "{}",
            troupe::escape_controls(&format!("settings changed on the path: {set}"))
        );
    }
    for (k, v) in &view.state {
        println!("  {}", troupe::escape_controls(&format!("{k} = {v}")));
    }
    0
}

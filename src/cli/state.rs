//! `troupe state BUNDLE SESSION [--at ID | --initial] [--json]` (Format
//! 8.6, 20.1): by default at the session's last message in file order, as
//! `ended`, `explain` and `plot`.

use std::path::PathBuf;

/// Arguments of `troupe state`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A bundle file or a pack directory.
    pub bundle: PathBuf,
    /// A session file (for a pack, also looked for in its `sessions/`).
    pub session: PathBuf,
    /// The message (default: the session's last message in file order).
    #[arg(long, conflicts_with = "initial")]
    pub at: Option<String>,
    /// The initial state, before any message (Format 8.6).
    #[arg(long)]
    pub initial: bool,
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
    // One default across state, ended, explain and plot: the last message
    // in file order (the initial state for a session without messages).
    let at = match (&args.at, args.initial) {
        (Some(id), _) => Some(id.clone()),
        (None, true) => None,
        (None, false) => history.last_id().map(str::to_string),
    };
    let view = match history.state(at.as_deref()) {
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
    match &at {
        Some(id) => println!(
            "state at message {id}: turn {}, round {}",
            view.turn, view.round
        ),
        None => println!("initial state"),
    }
    if let Some(id) = &at {
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

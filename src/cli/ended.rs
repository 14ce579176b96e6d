//! `troupe ended BUNDLE SESSION --at ID [--json]` (Format 9.3).

use std::path::PathBuf;

use serde_json::json;

/// Arguments of `troupe ended`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A bundle file or a pack directory.
    pub bundle: PathBuf,
    /// A session file.
    pub session: PathBuf,
    /// The message.
    #[arg(long)]
    pub at: String,
    /// Print JSON for programs.
    #[arg(long)]
    pub json: bool,
}

/// Prints whether the story has ended at `--at`, and how.
pub fn run(args: Args) -> i32 {
    let engine = match super::open_engine(&args.bundle, Some(&args.session)) {
        Ok(e) => e,
        Err(code) => return code,
    };
    let m = match super::message_index(&engine, &args.at) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let ending = engine.ending(&engine.state_at(m));
    if args.json {
        let out = json!({
            "at": args.at,
            "ended": ending.is_some(),
            "ending": ending.as_ref().map(|e| json!({
                "id": e.id, "kind": if e.outcome { "outcome" } else { "event" }, "message": e.message
            })),
            "outcome": ending.as_ref().filter(|e| e.outcome).map(|e| e.id.clone()),
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return 0;
    }
    match ending {
        Some(e) if e.outcome => println!(
            "ended: outcome `{}` (recorded at message {})",
            e.id, e.message
        ),
        Some(e) => println!(
            "ended: event `{}` (recorded at message {}); no outcome",
            e.id, e.message
        ),
        None => println!("not ended"),
    }
    0
}

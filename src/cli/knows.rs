//! `troupe knows BUNDLE SESSION --message ID (--part N | --summary) [--json]`
//! (Format 7.4, 12.5).

use std::path::PathBuf;

/// Arguments of `troupe knows`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["part", "summary"])))]
pub struct Args {
    /// A bundle file or a pack directory.
    pub bundle: PathBuf,
    /// A session file.
    pub session: PathBuf,
    /// The message.
    #[arg(long)]
    pub message: String,
    /// The index of one of its parts.
    #[arg(long)]
    pub part: Option<usize>,
    /// The message's summary instead of a part.
    #[arg(long)]
    pub summary: bool,
    /// Print JSON for programs.
    #[arg(long)]
    pub json: bool,
}

/// Prints who knows the part or summary, in code point order.
pub fn run(args: Args) -> i32 {
    let history = match super::open_history(&args.bundle, Some(&args.session)) {
        Ok(h) => h,
        Err(code) => return code,
    };
    let what = match args.part {
        Some(p) if !args.summary => troupe::Knowable::Part(p),
        _ => troupe::Knowable::Summary,
    };
    let who = match history.knows(&args.message, what) {
        Ok(w) => w,
        Err(e) => return super::report(&e),
    };
    if args.json {
        println!("{}", serde_json::Value::from(who));
    } else if who.is_empty() {
        println!("nobody");
    } else {
        println!("{}", troupe::escape_controls(&who.join(", ")));
    }
    0
}

//! `troupe transcript PACK SESSION [--at ID] [--format text|json|markdown]`
//! (Format 20): every message of a path with its text rendered as its
//! audience reads it, so a program reading a session need not implement
//! macros.

use std::path::PathBuf;

/// The output form of `troupe transcript`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Form {
    /// `[ID] Name: text`, one line per part.
    Text,
    /// The transcript document (`{scenario, at, messages}`).
    Json,
    /// One paragraph per message, `**Name:** text`.
    Markdown,
}

/// Arguments of `troupe transcript`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A pack directory, a bundle or a package (.troupe).
    pub pack: PathBuf,
    /// The session file (or a package's `sessions/` entry).
    pub session: PathBuf,
    /// The last message of the path shown (default: the last message in
    /// file order).
    #[arg(long)]
    pub at: Option<String>,
    /// The output form.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Form,
}

/// Prints the transcript; returns the exit code.
pub fn run(args: Args) -> i32 {
    let history = match super::open_history(&args.pack, Some(&args.session)) {
        Ok(h) => h,
        Err(code) => return code,
    };
    let t = match history.transcript(args.at.as_deref()) {
        Ok(t) => t,
        Err(e) => return super::report(&e),
    };
    match args.format {
        Form::Json => match serde_json::to_string_pretty(&t) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("troupe: {e}");
                return 1;
            }
        },
        Form::Text => print!("{}", troupe::escape_controls(&t.to_text())),
        Form::Markdown => print!("{}", troupe::escape_controls(&t.to_markdown())),
    }
    0
}

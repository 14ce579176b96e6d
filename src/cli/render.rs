//! `troupe render BUNDLE --text T [--session S --at ID] [--char C]
//! [--owner O] [--narrator] [--per-chat] [--json]` (Format 10, 10.6).

use std::path::PathBuf;

/// Arguments of `troupe render`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A bundle file or a pack directory.
    pub bundle: PathBuf,
    /// The template text.
    #[arg(long)]
    pub text: String,
    /// A session file, for `--at`.
    #[arg(long)]
    pub session: Option<PathBuf>,
    /// The message whose state the macros read (initial state when omitted).
    #[arg(long, requires = "session")]
    pub at: Option<String>,
    /// The character `{{char}}` means.
    #[arg(long = "char")]
    pub char_id: Option<String>,
    /// The owner `own` means (a character, world or the scenario).
    #[arg(long)]
    pub owner: Option<String>,
    /// The text is for a narrator message.
    #[arg(long)]
    pub narrator: bool,
    /// Render the text as a template outside message parts (a description,
    /// an entry's content), as the prompt does: `{{pick}}` is stable per
    /// chat (Format 10.6) instead of drawn per message.
    #[arg(long)]
    pub per_chat: bool,
    /// Print JSON (a string) for programs.
    #[arg(long)]
    pub json: bool,
}

/// Prints the rendered text.
pub fn run(args: Args) -> i32 {
    // The text is a template (Format 10.1): a malformed one is reported, not
    // rendered as written.
    if let Err(e) = troupe::check_template(&args.text) {
        let d = &e.diagnostics()[0];
        eprintln!(
            "error[TEMPLATE_SYNTAX]: {} (line {}, column {} of --text)",
            d.message,
            d.location.line.unwrap_or(0),
            d.location.column.unwrap_or(0)
        );
        return 1;
    }
    let history = match super::open_history(&args.bundle, args.session.as_deref()) {
        Ok(h) => h,
        Err(code) => return code,
    };
    let who = {
        let mut o = troupe::RenderOptions::default();
        o.char = args.char_id.clone();
        o.owner = args.owner.clone();
        o.narrator = args.narrator;
        o.per_chat = args.per_chat;
        o
    };
    let out = match history.render(&args.text, args.at.as_deref(), &who) {
        Ok(t) => t,
        Err(e) => return super::report(&e),
    };
    if args.json {
        println!("{}", serde_json::Value::String(out));
    } else {
        println!("{}", troupe::escape_controls(&out));
    }
    0
}

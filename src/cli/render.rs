//! `troupe render BUNDLE --text T [--session S --at ID] [--char C]
//! [--owner O] [--narrator] [--json]` (Format 10).

use std::path::PathBuf;

use crate::engine::macros::RenderFor;

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
    /// Print JSON (a string) for programs.
    #[arg(long)]
    pub json: bool,
}

/// Prints the rendered text.
pub fn run(args: Args) -> i32 {
    // The text is a template (Format 10.1): a malformed one is reported, not
    // rendered as written.
    if let Err(e) = crate::template::parse(&args.text) {
        eprintln!(
            "error[TEMPLATE_SYNTAX]: {} (line {}, column {} of --text)",
            e.message, e.line, e.column
        );
        return 1;
    }
    let engine = match super::open_engine(&args.bundle, args.session.as_deref()) {
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
    let out = match engine.render_checked(
        &args.text,
        &state,
        RenderFor {
            char: args.char_id.as_deref(),
            owner: args.owner.as_deref(),
            narrator: args.narrator,
        },
    ) {
        Ok(out) => out,
        Err(e) => {
            // Format 16.2: the result is bounded; nothing is printed.
            eprintln!(
                "error[LIMIT]: the text renders to more than {} bytes (Format 16.2); nothing is printed",
                e.limit
            );
            return 1;
        }
    };
    if args.json {
        println!("{}", serde_json::Value::String(out));
    } else {
        println!("{}", crate::diag::render::escape_controls(&out));
    }
    0
}

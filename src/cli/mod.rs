//! The command line: argument parsing (clap) and wiring of library calls.
//! Each subcommand lives in its own file and only calls the library.
//!
//! Exit codes everywhere: 0 success / valid, 1 invalid input or failed test,
//! 2 usage error (clap), 3 unexpected system error.

use clap::{Parser, Subcommand};

pub mod cel;
pub mod check;
pub mod conformance;
pub mod ended;
pub mod explain;
pub mod export;
pub mod import;
pub mod knows;
pub mod render;
pub mod state;

/// Troupe: check, compile, step and test scenario packs.
#[derive(Debug, Parser)]
#[command(name = "troupe", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check packs, bundles, packages or sessions (Format 17).
    #[command(visible_alias = "validate-pack")]
    Check(check::Args),
    /// Check and evaluate CEL conditions (Format 11).
    #[command(subcommand)]
    Cel(cel::Command),
    /// Run the conformance suite (Format 20).
    Conformance(conformance::Args),
    /// The state at a message of a session (Format 8.6).
    State(state::Args),
    /// Render a template (Format 10).
    Render(render::Args),
    /// Who knows a part or a summary (Format 7.4, 12.5).
    Knows(knows::Args),
    /// Whether the story has ended at a message (Format 9.3).
    Ended(ended::Args),
    /// Which lore entries are active at a message, and why (Format 5.3).
    Explain(explain::Args),
    /// Import Character Cards, lorebooks and chat logs (docs/import.md).
    #[command(subcommand)]
    Import(import::Command),
    /// Export a bundle's character as a Character Card (docs/import.md).
    #[command(subcommand)]
    Export(export::Command),
}

/// Parses the process arguments, runs the subcommand and returns the exit code.
pub fn run() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match cli.command {
        Command::Check(args) => check::run(args),
        Command::Cel(cmd) => cel::run(cmd),
        Command::Conformance(args) => conformance::run(args),
        Command::State(args) => state::run(args),
        Command::Render(args) => render::run(args),
        Command::Knows(args) => knows::run(args),
        Command::Ended(args) => ended::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Import(cmd) => import::run(cmd),
        Command::Export(cmd) => export::run(cmd),
    }
}

/// Opens a bundle (file or pack directory) and optional session for the
/// engine commands; on failure prints the diagnostics and returns the exit
/// code (1 for non-conforming input).
pub(crate) fn open_engine(
    bundle: &std::path::Path,
    session: Option<&std::path::Path>,
) -> Result<crate::engine::Engine, i32> {
    crate::engine::load::open(bundle, session).map_err(|diags| {
        let sources = crate::diag::render::Sources::new();
        eprint!("{}", crate::diag::render::render_human(&diags, &sources));
        eprintln!("the input does not conform (Format 17.1); nothing was computed");
        1
    })
}

/// Resolves a message ID of the engine's session, printing an error.
pub(crate) fn message_index(engine: &crate::engine::Engine, id: &str) -> Result<u32, i32> {
    engine.session.find(id).ok_or_else(|| {
        eprintln!("the session has no message `{id}`");
        1
    })
}

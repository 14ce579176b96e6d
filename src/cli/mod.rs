//! The command line: argument parsing (clap) and wiring of library calls.
//! Each subcommand lives in its own file and only calls the library.
//!
//! Exit codes everywhere: 0 success / valid, 1 invalid input or failed test,
//! 2 usage error (clap), 3 unexpected system error.

use clap::{Parser, Subcommand};

pub mod cel;
pub mod check;
pub mod compile;
pub mod conformance;
pub mod docs;
pub mod ended;
pub mod explain;
pub mod explore;
pub mod export;
pub mod graph;
pub mod import;
pub mod init;
pub mod knows;
pub mod play;
pub mod playtest;
pub mod plot;
pub mod prompt;
pub mod render;
pub mod run;
pub mod schema;
#[cfg(feature = "server")]
pub mod serve;
pub mod state;
pub mod test;
pub mod transcript;

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
    /// Import Character Cards, lorebooks and chat logs (docs/import.md).
    #[command(subcommand)]
    Import(import::Command),
    /// Export a bundle's character as a Character Card (docs/import.md).
    #[command(subcommand)]
    Export(export::Command),
    /// Play a script's inputs as the first player (Format 18, 20).
    Run(run::Args),
    /// Play interactively in a terminal (Format 20).
    Play(play::Args),
    /// Run a pack's playtests: scripted agents, goals verified with evidence (Format 22).
    Playtest(playtest::Args),
    /// Write the compiled package (Format 14.4).
    Compile(compile::Args),
    /// Run the conformance suite (Format 20).
    Conformance(conformance::Args),
    /// The state at a message of a session (Format 8.6).
    State(state::Args),
    /// Render a template (Format 10).
    Render(render::Args),
    /// Every message of a session's path with its text rendered (Format 20).
    Transcript(transcript::Args),
    /// Who knows a part or a summary (Format 7.4, 12.5).
    Knows(knows::Args),
    /// Whether the story has ended at a message (Format 9.3).
    Ended(ended::Args),
    /// Run a pack's tests: check, static assertions, fixtures, sessions, playtests (Format 21).
    #[command(visible_alias = "test-pack")]
    Test(test::Args),
    /// Generate the reference section of a pack's README.md, or check it is current (Format 20.3).
    Docs(docs::Args),
    /// Scaffold a new pack with tests and a CI workflow (Format 21).
    Init(init::Args),
    /// Which lore entries are active at a message, and why (Format 5.3).
    Explain(explain::Args),
    /// Search a scenario's states for a replayable witness of every event, outcome and rule, or play seeded random playthroughs (Format 20.5).
    Explore(explore::Args),
    /// Draw the scenario's wiring as a graph: DOT, Mermaid or SVG (Format 20.2).
    Graph(graph::Args),
    /// Plot a session's variables over its messages as SVG (Format 20.4).
    Plot(plot::Args),
    /// Print a JSON Schema of the format (for editors, offline), or list them.
    Schema(schema::Args),
    /// Print what the model runtime would send when a character answers a message (Format 24.3).
    Prompt(prompt::Args),
    /// Serve the tools and the spec to an authoring agent: an MCP server over stdio (docs/mcp.md).
    #[cfg(feature = "mcp")]
    Mcp(McpArgs),
    /// Serve sessions over HTTP/JSON on SQLite or PostgreSQL (docs/server.md).
    #[cfg(feature = "server")]
    Serve(serve::Args),
}

/// Arguments of `troupe mcp` (docs/mcp.md; the server is the crate
/// `troupe-mcp`).
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// The folder every path argument is resolved in; paths outside it
    /// (also through `..` or symbolic links) are refused (default: the
    /// working directory).
    #[arg(long, value_name = "DIR")]
    pub root: Option<std::path::PathBuf>,
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
        Command::Import(cmd) => import::run(cmd),
        Command::Export(cmd) => export::run(cmd),
        Command::Run(args) => run::run(args),
        Command::Play(args) => play::run(args),
        Command::Playtest(args) => playtest::run(args),
        Command::Compile(args) => compile::run(args),
        Command::Test(args) => test::run(args),
        Command::Init(args) => init::run(args),
        Command::Docs(args) => docs::run(args),
        Command::Conformance(args) => conformance::run(args),
        Command::State(args) => state::run(args),
        Command::Render(args) => render::run(args),
        Command::Transcript(args) => transcript::run(args),
        Command::Knows(args) => knows::run(args),
        Command::Ended(args) => ended::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Explore(args) => explore::run(args),
        Command::Graph(args) => graph::run(args),
        Command::Plot(args) => plot::run(args),
        Command::Schema(args) => schema::run(args),
        Command::Prompt(args) => prompt::run(args),
        #[cfg(feature = "mcp")]
        Command::Mcp(args) => troupe_mcp::run(args.root),
        #[cfg(feature = "server")]
        Command::Serve(args) => serve::run(args),
    }
}

/// Opens a bundle, pack directory or package and a session of it through
/// the embedding API ([`troupe::History`]); on failure prints why and
/// returns the exit code (1 for non-conforming input, 3 for a package
/// session that is neither a file nor an entry). `None` for `session`: the
/// initial state of the first scenario.
pub(crate) fn open_history(
    bundle: &std::path::Path,
    session: Option<&std::path::Path>,
) -> Result<troupe::History, i32> {
    let package = bundle.extension().and_then(|e| e.to_str()) == Some("troupe");
    let refused = |e: &troupe::Error, what: &str| {
        eprint!("{}", e.render());
        eprintln!("the input does not conform (Format 17.1); nothing was {what}");
        1
    };
    if package && !bundle.exists() {
        eprintln!("troupe: no such file or folder: {}", bundle.display());
        return Err(3);
    }
    let pack = troupe::Pack::open(bundle).map_err(|e| {
        if package {
            refused(&e, "run")
        } else {
            refused(&e, "computed")
        }
    })?;
    if package && !pack.warnings().is_empty() {
        eprint!("{}", troupe::render_diagnostics(pack.warnings()));
    }
    let Some(path) = session else {
        return pack.initial(None).map_err(|e| refused(&e, "computed"));
    };
    let history = if package && !path.is_file() {
        let name = path.to_string_lossy();
        let name = name.strip_prefix("sessions/").unwrap_or(&name).to_string();
        if !pack.recorded().contains(&name.as_str()) {
            eprintln!("troupe: no session file or package session `{name}`");
            return Err(3);
        }
        pack.recorded_history(&name)
    } else if !path.exists() && bundle.is_dir() {
        pack.history_file(bundle.join("sessions").join(path))
    } else {
        pack.history_file(path)
    };
    history.map_err(|e| refused(&e, "computed"))
}

/// The arguments of a question about one message of a session
/// (`troupe ended`, `troupe explain`).
#[derive(Debug, clap::Args)]
pub struct SessionAt {
    /// A bundle file, a pack directory or a package.
    pub bundle: std::path::PathBuf,
    /// A session file (for a pack, also looked for in its `sessions/`).
    pub session: std::path::PathBuf,
    /// The message (default: the session's last message in file order).
    #[arg(long, alias = "message")]
    pub at: Option<String>,
    /// Print JSON for programs.
    #[arg(long)]
    pub json: bool,
}

impl SessionAt {
    /// Opens the session and finds `--at` (the last message in file order
    /// when it is not given); on failure prints why and returns the exit
    /// code.
    pub(crate) fn open(&self) -> Result<(troupe::History, String), i32> {
        let history = open_history(&self.bundle, Some(&self.session))?;
        let at = match &self.at {
            Some(id) => id.clone(),
            None => match history.last_id() {
                Some(id) => id.to_string(),
                None => {
                    eprintln!("the session has no message to ask about");
                    return Err(1);
                }
            },
        };
        Ok((history, at))
    }
}

/// [`run::open_pack_with`] through the embedding API: the same messages and
/// exit codes, a [`troupe::Pack`] instead of the runtime's bundle.
pub(crate) fn open_pack_api(
    path: &std::path::Path,
    options: troupe::OpenOptions,
) -> Result<troupe::Pack, i32> {
    if !path.exists() {
        eprintln!("troupe: no such file or folder: {}", path.display());
        return Err(3);
    }
    match troupe::Pack::open_with(path, options) {
        Ok(p) => {
            if !p.warnings().is_empty() {
                eprint!("{}", troupe::render_diagnostics(p.warnings()));
            }
            Ok(p)
        }
        Err(e) => {
            eprint!("{}", e.render());
            eprintln!("the input does not conform (Format 17.1); nothing was run or written");
            Err(1)
        }
    }
}

/// Prints an error of the embedding API about a message (an unknown ID, a
/// missing part) and returns exit code 1.
pub(crate) fn report(e: &troupe::Error) -> i32 {
    eprintln!("{e}");
    1
}

/// `--temperature`: a number within Format 24.1's bound
/// ([`troupe::model_runtime::check_temperature`]); clap reports the
/// message as a usage error (exit 2).
pub(crate) fn parse_temperature(s: &str) -> Result<f64, String> {
    let t: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    troupe::model_runtime::check_temperature(t).map(|()| t)
}

/// `--max-tokens`: an int within Format 24.1's bound
/// ([`troupe::model_runtime::check_max_tokens`]).
pub(crate) fn parse_max_tokens(s: &str) -> Result<u32, String> {
    let n: u32 = s
        .parse()
        .map_err(|_| format!("`{s}` is not an int from 1 to 4294967295"))?;
    troupe::model_runtime::check_max_tokens(n).map(|()| n)
}

//! The command line: argument parsing (clap) and wiring of library calls.
//! Each subcommand lives in its own file and only calls the library.
//!
//! Exit codes everywhere: 0 success / valid, 1 invalid input or failed test,
//! 2 usage error (clap), 3 unexpected system error.

use clap::{Parser, Subcommand};

pub mod cel;
pub mod check;
pub mod export;
pub mod import;

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
    }
}

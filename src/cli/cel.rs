//! `troupe cel check|eval|run`.

/// The `troupe cel` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Parse and type-check an expression.
    Check {
        /// The CEL expression.
        expr: String,
    },
}

/// Runs a `troupe cel` subcommand; returns the exit code.
pub fn run(_cmd: Command) -> i32 {
    eprintln!("troupe cel: not built yet");
    3
}

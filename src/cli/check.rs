//! `troupe check PATH...` (alias `validate-pack`).

/// Arguments of `troupe check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Pack directories, bundles (.json/.yaml), packages (.troupe) or sessions (.jsonl).
    #[arg(required = true)]
    pub paths: Vec<std::path::PathBuf>,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// Make warnings fail.
    #[arg(long)]
    pub strict: bool,
}

/// Runs the check; returns the exit code.
pub fn run(_args: Args) -> i32 {
    eprintln!("troupe check: not built yet");
    3
}

//! `troupe conformance [DIR]`: runs the conformance suite (Format 20).

use std::path::PathBuf;

/// Arguments of `troupe conformance`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The suite folder (its `cases/` is searched when present).
    #[arg(default_value = "conformance")]
    pub dir: PathBuf,
}

/// Runs the suite; prints failures and `N passed, M failed`; exit 1 on any
/// failure, 3 when the folder does not exist.
pub fn run(args: Args) -> i32 {
    if !args.dir.is_dir() {
        eprintln!(
            "troupe conformance: `{}` is not a folder",
            args.dir.display()
        );
        return 3;
    }
    let report = troupe::tools::conformance(&args.dir);
    print!("{}", report.to_text());
    if report.failed() > 0 {
        1
    } else {
        0
    }
}

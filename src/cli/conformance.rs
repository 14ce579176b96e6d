//! `troupe conformance [PATH]`: runs the conformance suite, or one case
//! file of it (Format 20, conformance/README.md).

use std::path::PathBuf;

/// Arguments of `troupe conformance`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The suite folder (its `cases/` is searched when present), or one
    /// case file.
    #[arg(default_value = "conformance")]
    pub dir: PathBuf,
}

/// Runs the suite; prints failures and `N passed, M failed`; exit 1 on any
/// failure, 3 when the path is neither a folder nor a file.
pub fn run(args: Args) -> i32 {
    if !args.dir.is_dir() && !args.dir.is_file() {
        eprintln!(
            "troupe conformance: `{}` is not a folder or a case file",
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

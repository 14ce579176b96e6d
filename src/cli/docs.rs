//! `troupe docs PACK [--check]` (Format 20.3): writes, or with `--check`
//! compares, the generated reference section of the pack's `README.md`.
//!
//! Exit codes: 0 written or current; 1 the pack does not check, the
//! README's markers are malformed, or (`--check`) the section is missing or
//! stale (the diff is printed); 3 an I/O error.

use std::path::PathBuf;

use crate::testing::docs::{self, DocsError, Status};

/// Arguments of `troupe docs`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The pack directory.
    pub pack: PathBuf,
    /// Compare only: exit 1 with a diff when the section is missing or stale; never writes.
    #[arg(long)]
    pub check: bool,
}

/// Runs `troupe docs`; returns the exit code.
pub fn run(args: Args) -> i32 {
    if !args.pack.is_dir() {
        eprintln!(
            "troupe docs: {} is not a pack directory",
            args.pack.display()
        );
        // A usage error, as for `troupe test` (Format 20).
        return 2;
    }
    let readme = docs::readme_path(&args.pack);
    let result = if args.check {
        docs::check(&args.pack).map(|s| match s {
            Status::Current => {
                println!("{} is current", readme.display());
                0
            }
            Status::Stale(diff) => {
                print!("{diff}");
                eprintln!(
                    "troupe docs: the generated section of {} is missing or stale; run `troupe docs {}`",
                    readme.display(),
                    args.pack.display()
                );
                1
            }
        })
    } else {
        docs::write(&args.pack).map(|written| {
            if written {
                println!("wrote {}", readme.display());
            } else {
                println!("{} is current", readme.display());
            }
            0
        })
    };
    match result {
        Ok(code) => code,
        Err(DocsError::Invalid(diags, sources)) => {
            eprint!("{}", crate::diag::render::render_human(&diags, &sources));
            eprintln!(
                "troupe docs: the pack does not conform (Format 17.1); no docs were generated"
            );
            1
        }
        Err(e @ DocsError::Markers(..)) => {
            eprintln!("troupe docs: {e}");
            1
        }
        Err(e) => {
            eprintln!("troupe docs: {e}");
            3
        }
    }
}

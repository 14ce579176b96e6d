//! `troupe docs PACK [--check]` (Format 20.3): writes, or with `--check`
//! compares, the generated reference section of the pack's `README.md`.
//!
//! Exit codes: 0 written or current; 1 the pack does not check, the
//! README's markers are malformed, or (`--check`) the section is missing or
//! stale (the diff is printed); 3 an I/O error.

use std::path::PathBuf;

use troupe::tools::{docs_check, docs_readme, docs_write, DocsStatus};
use troupe::ErrorKind;

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
    let readme = docs_readme(&args.pack);
    let result = if args.check {
        docs_check(&args.pack).map(|s| match s {
            DocsStatus::Current => {
                println!("{} is current", readme.display());
                0
            }
            DocsStatus::Stale(diff) => {
                print!("{diff}");
                eprintln!(
                    "troupe docs: the generated section of {} is missing or stale; run `troupe docs {}`",
                    readme.display(),
                    args.pack.display()
                );
                1
            }
            _ => {
                eprintln!("troupe docs: {} is in a state this version cannot report", readme.display());
                2
            }
        })
    } else {
        docs_write(&args.pack).map(|written| {
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
        Err(e) if e.kind() == ErrorKind::Invalid && !e.diagnostics().is_empty() => {
            eprint!("{}", e.render());
            eprintln!(
                "troupe docs: the pack does not conform (Format 17.1); no docs were generated"
            );
            1
        }
        Err(e) if e.kind() == ErrorKind::Invalid => {
            eprintln!("troupe docs: {e}");
            1
        }
        Err(e) => {
            eprintln!("troupe docs: {e}");
            3
        }
    }
}

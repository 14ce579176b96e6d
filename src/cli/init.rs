//! `troupe init DIR`: scaffolds a pack that passes `troupe check` and
//! `troupe test`, with a CI workflow (Format 21).
//!
//! Exit codes: 0 written; 1 the folder is not empty (or a file appeared
//! meanwhile: nothing is overwritten); 3 an I/O error.

use std::path::PathBuf;

use troupe::tools::{init, init_pins_source};
use troupe::ErrorKind;

/// Arguments of `troupe init`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The folder to create (new or empty).
    pub dir: PathBuf,
}

/// Writes the scaffold; returns the exit code.
pub fn run(args: Args) -> i32 {
    match init(&args.dir) {
        Ok(files) => {
            println!("created a pack in {}:", args.dir.display());
            for f in files {
                println!("  {f}");
            }
            println!(
                "next: troupe check {0} && troupe test {0}",
                args.dir.display()
            );
            if !init_pins_source() {
                println!(
                    "note: this troupe was built without TROUPE_GIT_URL and TROUPE_GIT_REV, so the CI workflow's TROUPE_GIT and TROUPE_REV are placeholders: set them to Troupe's git URL and a full commit before the workflow can install Troupe"
                );
            }
            0
        }
        Err(e) if e.kind() == ErrorKind::Refused => {
            eprintln!("troupe init: {e}");
            1
        }
        Err(e) => {
            eprintln!("troupe init: {e}");
            3
        }
    }
}

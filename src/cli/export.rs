//! `troupe export card PACK --character ID -o FILE(.json|.png|.charx)`: writes
//! the character card a character came from (`docs/import.md` §6); PACK
//! is a bundle, a pack directory or a package.
//!
//! Exit codes: 0 written, 1 the bundle or character was refused, 3 the
//! output could not be written.

use std::path::PathBuf;

use troupe_import::cards::{card_charx, card_png, export_card};

/// What to export.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// A character of a bundle, pack or package → a Character Card (JSON,
    /// or PNG or CHARX by extension).
    Card {
        /// A bundle file, a pack directory or a package (.troupe).
        bundle: PathBuf,
        /// The character's ID.
        #[arg(long)]
        character: String,
        /// The card file to write: `.png` writes a PNG, `.charx` a CHARX
        /// archive (a V3 card), anything else JSON.
        #[arg(short, long)]
        output: PathBuf,
        /// For PNG output: the picture to put the card in (else one
        /// transparent pixel).
        #[arg(long)]
        image: Option<PathBuf>,
    },
}

/// Runs an export; returns the exit code.
pub fn run(cmd: Command) -> i32 {
    let Command::Card {
        bundle,
        character,
        output,
        image,
    } = cmd;
    let mut inputs = vec![bundle.as_path()];
    inputs.extend(image.as_deref());
    if let Err(msg) = troupe::files::refuse_inputs(&[&output], &inputs) {
        eprintln!("troupe export: {msg}");
        return 2;
    }
    let card = match export_card(&bundle, &character) {
        Ok(c) => c,
        Err(e) => {
            eprint!("{}", troupe::render_diagnostics(e.diagnostics()));
            return 1;
        }
    };
    let is = |ext: &str| {
        output
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case(ext))
    };
    let bytes = if is("charx") {
        card_charx(&card)
    } else if is("png") {
        match card_png(&card, image.as_deref()) {
            Ok(b) => b,
            Err(e) => {
                eprint!("{}", troupe::render_diagnostics(e.diagnostics()));
                return 1;
            }
        }
    } else {
        serde_json::to_string_pretty(&card)
            .unwrap_or_default()
            .into_bytes()
    };
    match troupe::files::write_atomic(&output, &bytes) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("troupe export: {e}");
            3
        }
    }
}

//! `troupe export card BUNDLE --character ID -o FILE(.json|.png)`: writes
//! the character card a bundle's character came from (`docs/import.md` §6).
//!
//! Exit codes: 0 written, 1 the bundle or character was refused, 3 the
//! output could not be written.

use std::path::PathBuf;

use serde_json::Value;

use crate::import::export::card_from_bundle;
use crate::import::png::write_card_png;
use crate::load::{read_bundle, text::read_bounded};

/// What to export.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// A character of a bundle → a Character Card (JSON, or PNG by extension).
    Card {
        /// The bundle.
        bundle: PathBuf,
        /// The character's ID.
        #[arg(long)]
        character: String,
        /// The card file to write: `.png` writes a PNG, anything else JSON.
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
    let loaded = read_bundle(&bundle);
    if loaded.has_errors() {
        eprint!("{}", troupe::render_diagnostics(&loaded.diagnostics));
        return 1;
    }
    let Some(doc) = loaded.value else { return 1 };
    let card = match card_from_bundle(&doc.value, &character) {
        Ok(c) => c,
        Err(d) => {
            eprint!("{}", troupe::render_diagnostics(&[d.in_file(&doc.file)]));
            return 1;
        }
    };
    let json = serde_json::to_string(&card).unwrap_or_default();
    let is_png = output
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    let bytes = if is_png {
        let picture = match image
            .as_ref()
            .map(|p| read_bounded(&p.display().to_string(), p))
        {
            Some(Err(d)) => {
                eprint!("{}", troupe::render_diagnostics(&[d]));
                return 1;
            }
            Some(Ok(b)) => Some(b),
            None => None,
        };
        let v3 = card.get("spec").and_then(Value::as_str) == Some("chara_card_v3");
        match write_card_png(picture.as_deref(), if v3 { "ccv3" } else { "chara" }, &json) {
            Ok(b) => b,
            Err(d) => {
                eprint!("{}", troupe::render_diagnostics(&[d]));
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

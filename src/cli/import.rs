//! `troupe import card|lorebook|chat` (`docs/import.md`): reads what users
//! already have and writes Troupe bundles and sessions.
//!
//! Exit codes: 0 written, 1 the input was refused (diagnostics printed),
//! 3 the output could not be written.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::diag::render::{render_human, Sources};
use crate::diag::Diagnostic;
use crate::import::{card, chat, lorebook, parse_object, read_card};
use crate::load::text::read_bounded;

/// What to import.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// A Character Card V1/V2/V3 (.json, .png, .charx) → a bundle, or a
    /// pack directory with `--pack`.
    Card {
        /// The card file.
        file: PathBuf,
        /// Where to write the bundle (JSON), or the pack directory (new or
        /// empty) with `--pack`.
        #[arg(short, long)]
        output: PathBuf,
        /// Write a pack directory (Format 13) instead of a bundle.
        #[arg(long)]
        pack: bool,
    },
    /// A V3 lorebook or SillyTavern World Info JSON → a bundle with one world.
    Lorebook {
        /// The lorebook file.
        file: PathBuf,
        /// Where to write the bundle (JSON).
        #[arg(short, long)]
        output: PathBuf,
    },
    /// A SillyTavern chat log (.jsonl) → a session of the card's scenario.
    Chat {
        /// The chat file.
        file: PathBuf,
        /// The character's card; without one, a card with only the chat's
        /// `character_name` is used.
        #[arg(long)]
        card: Option<PathBuf>,
        /// Where to write the session (JSON Lines).
        #[arg(short, long)]
        output: PathBuf,
        /// Where to write the card's bundle, which the session is checked with.
        #[arg(long)]
        bundle: Option<PathBuf>,
    },
}

fn fail(diagnostics: &[Diagnostic]) -> i32 {
    eprint!("{}", render_human(diagnostics, &Sources::new()));
    1
}

fn write(path: &Path, text: &str) -> i32 {
    match std::fs::write(path, text) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("troupe import: cannot write {}: {e}", path.display());
            3
        }
    }
}

fn read(path: &Path) -> Result<(String, Vec<u8>), Vec<Diagnostic>> {
    let file = path.display().to_string();
    read_bounded(&file, path)
        .map(|b| (file, b))
        .map_err(|d| vec![d])
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

fn import_card(path: &Path) -> Result<card::CardImport, Vec<Diagnostic>> {
    let (file, bytes) = read(path)?;
    let raw = read_card(&file, &bytes)?;
    card::card_to_bundle(&raw).map_err(|ds| ds.into_iter().map(|d| d.in_file(&file)).collect())
}

/// Runs an import; returns the exit code.
pub fn run(cmd: Command) -> i32 {
    match cmd {
        Command::Card { file, output, pack } => match import_card(&file) {
            Ok(imported) if pack => write_pack(&output, &imported),
            Ok(imported) => write(&output, &pretty(&imported.bundle)),
            Err(ds) => fail(&ds),
        },
        Command::Lorebook { file, output } => {
            let result = read(&file).and_then(|(name, bytes)| {
                let doc = parse_object(&name, &bytes)?;
                lorebook_bundle(&doc, &file).map_err(|d| vec![d.in_file(&name)])
            });
            match result {
                Ok(bundle) => write(&output, &pretty(&bundle)),
                Err(ds) => fail(&ds),
            }
        }
        Command::Chat {
            file,
            card: card_path,
            output,
            bundle,
        } => {
            let result = read(&file).and_then(|(name, bytes)| {
                let imported = match &card_path {
                    Some(p) => import_card(p)?,
                    None => stub_card(&name, &bytes)?,
                };
                let target = chat::ChatTarget {
                    bundle: &imported.bundle,
                    character: &imported.character,
                    scenario: &imported.scenario,
                };
                let lines = chat::chat_to_session(&name, &bytes, &target)?;
                Ok((imported.bundle.clone(), lines))
            });
            match result {
                Ok((b, lines)) => {
                    let text: String = lines
                        .iter()
                        .map(|l| serde_json::to_string(l).unwrap_or_default() + "\n")
                        .collect();
                    let code = write(&output, &text);
                    match (code, bundle) {
                        (0, Some(p)) => write(&p, &pretty(&b)),
                        (c, _) => c,
                    }
                }
                Err(ds) => fail(&ds),
            }
        }
    }
}

/// Writes an imported card as a pack directory; refuses a directory that
/// exists and is not empty (exit 3), so nothing is overwritten.
fn write_pack(dir: &Path, imported: &card::CardImport) -> i32 {
    if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
        eprintln!(
            "troupe import: {} exists and is not empty; give a new or empty directory",
            dir.display()
        );
        return 3;
    }
    let files =
        crate::import::pack::card_pack(&imported.bundle, &imported.character, &imported.scenario);
    for f in files {
        let path = dir.join(&f.path);
        if let Some(parent) = path.parent() {
            if let Err(e) = std::fs::create_dir_all(parent) {
                eprintln!("troupe import: cannot create {}: {e}", parent.display());
                return 3;
            }
        }
        let code = write(&path, &crate::import::pack::to_yaml(&f.value));
        if code != 0 {
            return code;
        }
    }
    0
}

/// A lorebook document → a bundle with its world: a V3 `lorebook_v3`, a bare
/// card book (`entries` a list), or SillyTavern World Info (`entries` an
/// object keyed by uid). Another `spec` is SCHEMA.
pub fn lorebook_bundle(doc: &Value, path: &Path) -> Result<Value, Diagnostic> {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut taken = Default::default();
    let world = match doc.get("spec") {
        Some(Value::String(s)) if s == "lorebook_v3" => {
            let mut ctx = lorebook::BookContext {
                fallback_name: stem,
                ..Default::default()
            };
            lorebook::book_to_world(doc.get("data").unwrap_or(&Value::Null), "/data", &mut ctx)?
        }
        Some(other) => {
            return Err(crate::diag::Diagnostic::error(
                crate::diag::Code::Schema,
                format!("not a lorebook: `spec` is {other}; expected `lorebook_v3`"),
            )
            .at("/spec"))
        }
        None if doc.get("entries").is_some_and(Value::is_array) => {
            let mut ctx = lorebook::BookContext {
                fallback_name: stem,
                ..Default::default()
            };
            lorebook::book_to_world(doc, "", &mut ctx)?
        }
        None => lorebook::world_info_to_world(doc, &stem, &mut taken)?,
    };
    Ok(json!({"troupe": "0.1", "kind": "bundle", "worlds": [world]}))
}

/// The card a chat without `--card` is imported with: a V2 card holding
/// only the chat header's `character_name`.
fn stub_card(file: &str, bytes: &[u8]) -> Result<card::CardImport, Vec<Diagnostic>> {
    let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    let header = parse_object(file, first.strip_suffix(b"\r").unwrap_or(first))?;
    let name = header
        .get("character_name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("Character");
    let raw = crate::import::RawCard {
        card: json!({"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": name}}),
        container: crate::import::CardContainer::Json,
        assets: Vec::new(),
    };
    card::card_to_bundle(&raw)
}

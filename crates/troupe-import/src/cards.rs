//! Importing and exporting SillyTavern content (`docs/import.md`, feature
//! `import`): Character Cards V1/V2/V3 (`.json`, `.png`, `.charx`),
//! lorebooks and World Info, and chat logs become Troupe bundles, packs
//! and sessions; a bundle's character becomes a card again. What `troupe
//! import` and `troupe export` do, for programs.
//!
//! Every import returns its [`Summary`] (`docs/import.md` §11): what was
//! created, converted and kept, and the warnings for what was lost.
//! Refused input is [`ErrorKind::Invalid`] with its diagnostics, each in
//! the file it came from.
//!
//! ```
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("mara.json");
//! let text = r#"{"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Mara"}}"#;
//! std::fs::write(&path, text)?;
//! let card = troupe_import::cards::import_card(&path)?;
//! assert!(troupe_import::cards::check_import(&card.bundle, "bundle", None).is_empty());
//! let bundle = dir.path().join("bundle.json");
//! std::fs::write(&bundle, serde_json::to_string(&card.bundle)?)?;
//! let exported = troupe_import::cards::export_card(&bundle, &card.character)?;
//! assert_eq!(exported["data"]["name"], "Mara");
//! assert!(troupe_import::cards::card_png(&exported, None)?.starts_with(b"\x89PNG"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::Path;

use serde_json::{json, Value};

use crate::{card, chat, lorebook, parse_object, read_card};
use troupe::Diagnostic;
use troupe::{Error, ErrorKind, Result};

pub use crate::summary::{Created, Note, Summary};

/// A card imported (`docs/import.md` §3–§5): its bundle and what its
/// character and scenario are called there.
#[derive(Debug, Clone)]
pub struct CardImport {
    /// The bundle (Format 13).
    pub bundle: Value,
    /// The character's ID.
    pub character: String,
    /// The scenario's ID.
    pub scenario: String,
    /// What the import did.
    pub summary: Summary,
}

/// A chat log imported (`docs/import.md` §8): the session of the card's
/// scenario, line by line, and the card's bundle it belongs to.
#[derive(Debug, Clone)]
pub struct ChatImport {
    /// The card's bundle (the session is checked against it).
    pub bundle: Value,
    /// The session's lines (Format 12): the header, then the messages.
    pub lines: Vec<Value>,
    /// What the import did (the card's summary first when a card was
    /// given).
    pub summary: Summary,
}

impl ChatImport {
    /// The session file's text: one JSON line per element of
    /// [`ChatImport::lines`].
    pub fn jsonl(&self) -> String {
        self.lines
            .iter()
            .map(|l| serde_json::to_string(l).unwrap_or_default() + "\n")
            .collect()
    }
}

fn refused(diagnostics: Vec<Diagnostic>) -> Error {
    Error::from_diagnostics(diagnostics)
}

/// The bytes of input `path`, read as the load stage reads (bounded, a
/// regular file), with its name for diagnostics.
fn read(path: &Path) -> std::result::Result<(String, Vec<u8>), Vec<Diagnostic>> {
    let file = path.display().to_string();
    troupe::internals::load::read_bounded(&file, path)
        .map(|b| (file, b))
        .map_err(|d| vec![d])
}

fn card_import(i: card::CardImport) -> CardImport {
    CardImport {
        bundle: i.bundle,
        character: i.character,
        scenario: i.scenario,
        summary: i.summary,
    }
}

fn read_card_import(path: &Path) -> std::result::Result<CardImport, Vec<Diagnostic>> {
    let (file, bytes) = read(path)?;
    let raw = read_card(&file, &bytes)?;
    let mut imported = card::card_to_bundle(&raw)
        .map_err(|ds| ds.into_iter().map(|d| d.in_file(&file)).collect::<Vec<_>>())?;
    if bytes.starts_with(crate::UTF8_BOM) {
        imported
            .summary
            .converted("", "a byte order mark was dropped");
    }
    Ok(card_import(imported))
}

/// Imports the Character Card at `path` (V1, V2 or V3; JSON, PNG or
/// CHARX) as a bundle with one character and one scenario.
///
/// Errors: [`ErrorKind::Invalid`] with the diagnostics when the file
/// cannot be read or is not a card.
pub fn import_card(path: impl AsRef<Path>) -> Result<CardImport> {
    read_card_import(path.as_ref()).map_err(refused)
}

/// Imports the V3 lorebook or SillyTavern World Info at `path` as a bundle
/// with one world (named after the file's stem); returns the bundle and
/// the summary.
///
/// Errors: [`ErrorKind::Invalid`] with the diagnostics when the file
/// cannot be read or is not a lorebook.
pub fn import_lorebook(path: impl AsRef<Path>) -> Result<(Value, Summary)> {
    let path = path.as_ref();
    let (name, bytes) = read(path).map_err(refused)?;
    let doc = parse_object(&name, &bytes).map_err(refused)?;
    let (bundle, mut summary) = lorebook::lorebook_document(&doc, &stem(path))
        .map_err(|d| refused(vec![d.in_file(&name)]))?;
    if bytes.starts_with(crate::UTF8_BOM) {
        summary.converted("", "a byte order mark was dropped");
    }
    Ok((bundle, summary))
}

/// Imports the SillyTavern chat log at `path` (JSON Lines) as a session of
/// the scenario of the card at `card` (`None`: a card with only the chat's
/// `character_name`). A group chat (`docs/import.md` §7.1) keeps who spoke:
/// each member becomes a character of the scenario (the card's own
/// character when it has the card's name) and says its own lines.
///
/// Errors: [`ErrorKind::Invalid`] with the diagnostics when a file cannot
/// be read or is not what it should be.
pub fn import_chat(path: impl AsRef<Path>, card: Option<&Path>) -> Result<ChatImport> {
    let (name, bytes) = read(path.as_ref()).map_err(refused)?;
    let group = chat::group_members(&name, &bytes);
    let mut imported = match (card, &group) {
        (Some(p), _) => read_card_import(p),
        // A group chat without a card: its members are the cast (§7.1).
        (None, Some(_)) => Ok(CardImport {
            bundle: chat::group_bundle(),
            character: String::new(),
            scenario: "group-chat".to_string(),
            summary: Summary::default(),
        }),
        (None, None) => stub_card(&name, &bytes),
    }
    .map_err(refused)?;
    let mut added = Summary::default();
    let members = match &group {
        Some(g) => chat::add_members(
            &mut imported.bundle,
            &imported.scenario,
            &imported.character,
            g,
            &mut added,
        ),
        None => Vec::new(),
    };
    let target = chat::ChatTarget {
        bundle: &imported.bundle,
        character: &imported.character,
        scenario: &imported.scenario,
    };
    let (lines, chat_summary) =
        chat::chat_import_group(&name, &bytes, &target, &members).map_err(refused)?;
    let mut summary = added;
    summary.extend(chat_summary);
    // The card's own summary matters only when it was given.
    if card.is_some() {
        let mut all = imported.summary.clone();
        all.extend(summary);
        summary = all;
    }
    Ok(ChatImport {
        bundle: imported.bundle,
        lines,
        summary,
    })
}

/// The card a chat without a card is imported with: a V2 card holding
/// only the chat header's `character_name`.
fn stub_card(file: &str, bytes: &[u8]) -> std::result::Result<CardImport, Vec<Diagnostic>> {
    let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    let header = parse_object(file, first.strip_suffix(b"\r").unwrap_or(first))?;
    let name = header
        .get("character_name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("Character");
    let raw = crate::RawCard {
        card: json!({"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": name}}),
        container: crate::CardContainer::Json,
        assets: Vec::new(),
    };
    card::card_to_bundle(&raw).map(card_import)
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The errors `troupe check` would report for what an import is about to
/// write (Format 16.5): `bundle` (named `bundle_name` in diagnostics) and,
/// when given, a session `(name, JSONL text)` against it. Empty when both
/// conform; warnings are left out.
pub fn check_import(
    bundle: &Value,
    bundle_name: &str,
    session: Option<(&str, &str)>,
) -> Vec<Diagnostic> {
    let doc = troupe::internals::load::bare_document(bundle_name, bundle);
    let mut diags = troupe::internals::check::check_bundle_document(&doc);
    if let Some((name, text)) = session {
        let loaded = troupe::internals::load::parse_session(name, text.as_bytes());
        diags.extend(loaded.diagnostics);
        if let Some(s) = &loaded.value {
            diags.extend(troupe::internals::check::check_session_document(bundle, s));
        }
    }
    diags.retain(Diagnostic::is_error);
    diags
}

/// Writes an imported card as the pack directory `dir` (Format 13): the
/// pack goes to a partial folder beside `dir`, is checked, and only then
/// renamed into place, so nothing is left when it fails.
///
/// Errors: [`ErrorKind::Refused`] when `dir` exists and is not empty
/// (nothing is overwritten); [`ErrorKind::Invalid`] with the first 20
/// errors when the pack does not conform; [`ErrorKind::Io`] when writing
/// fails (the message names the file).
pub fn write_card_pack(dir: impl AsRef<Path>, imported: &CardImport) -> Result<()> {
    let dir = dir.as_ref();
    if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(Error::new(
            ErrorKind::Refused,
            format!(
                "{} exists and is not empty; give a new or empty directory",
                dir.display()
            ),
        ));
    }
    let partial = troupe::internals::load::partial_path(dir);
    let _ = std::fs::remove_dir_all(&partial);
    let written = write_pack_files(&partial, imported).and_then(|()| {
        let checked = troupe::internals::check::check_paths(std::slice::from_ref(&partial));
        let errors: Vec<Diagnostic> = checked
            .diagnostics
            .into_iter()
            .filter(Diagnostic::is_error)
            .take(20)
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(refused(errors))
        }
    });
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(e);
    }
    let _ = std::fs::remove_dir(dir);
    std::fs::rename(&partial, dir).map_err(|e| {
        let _ = std::fs::remove_dir_all(&partial);
        Error::new(
            ErrorKind::Io,
            format!("cannot write {}: {e}", dir.display()),
        )
    })
}

fn write_pack_files(dir: &Path, imported: &CardImport) -> Result<()> {
    let files = crate::pack::card_pack(&imported.bundle, &imported.character, &imported.scenario);
    for f in files {
        let path = dir.join(&f.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                Error::new(
                    ErrorKind::Io,
                    format!("cannot create {}: {e}", parent.display()),
                )
            })?;
        }
        std::fs::write(&path, crate::pack::to_yaml(&f.value)).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("cannot write {}: {e}", path.display()),
            )
        })?;
    }
    Ok(())
}

/// Character `character` of the story at `bundle` as a Character Card
/// (`docs/import.md` §6): the card it was imported from, or a V2 card made
/// from it. `bundle` is a bundle file, or a pack directory or a package
/// (`.troupe`), which are opened and checked as [`troupe::Pack::open`]
/// does and export from their bundle.
///
/// Errors: [`ErrorKind::Invalid`] with the diagnostics when the bundle
/// does not read (a pack or package: does not conform) or has no such
/// character.
pub fn export_card(bundle: impl AsRef<Path>, character: &str) -> Result<Value> {
    let path = bundle.as_ref();
    let is_package = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("troupe"));
    if path.is_dir() || is_package {
        let pack = troupe::Pack::open(path)?;
        let file = path.display().to_string();
        return crate::export::card_from_bundle(pack.bundle(), character)
            .map_err(|d| refused(vec![d.in_file(&file)]));
    }
    let loaded = troupe::internals::load::read_bundle(path);
    if loaded.has_errors() {
        return Err(refused(loaded.diagnostics));
    }
    let Some(doc) = loaded.value else {
        return Err(refused(Vec::new()));
    };
    crate::export::card_from_bundle(&doc.value, character)
        .map_err(|d| refused(vec![d.in_file(&doc.file)]))
}

/// `card` (from [`export_card`]) as a CHARX archive: a ZIP with the card
/// as `card.json` at its root, upgraded to V3 when it is V1 or V2, as CHARX
/// holds V3 cards (`docs/import.md` §6). The card's assets are not carried.
pub fn card_charx(card: &Value) -> Vec<u8> {
    crate::charx::write_charx(card)
}

/// `card` (from [`export_card`]) inside a PNG (a V3 card in both a
/// `chara` text chunk, as V2, and a `ccv3` one; any other in `chara`): in
/// the picture at `picture`, or in one transparent pixel.
///
/// Errors: [`ErrorKind::Invalid`] with the diagnostic when the picture
/// cannot be read or is not a PNG.
pub fn card_png(card: &Value, picture: Option<&Path>) -> Result<Vec<u8>> {
    let picture = match picture {
        Some(p) => Some(
            troupe::internals::load::read_bounded(&p.display().to_string(), p)
                .map_err(|d| refused(vec![d]))?,
        ),
        None => None,
    };
    let json = serde_json::to_string(card).unwrap_or_default();
    let v3 = card.get("spec").and_then(Value::as_str) == Some("chara_card_v3");
    let png = if v3 {
        // Readers that know only V2 read `chara`: the same card with V2's
        // `spec` and `spec_version` (its V3-only fields are unknown fields
        // to them), as SillyTavern writes it.
        let mut v2 = card.clone();
        v2["spec"] = Value::from("chara_card_v2");
        v2["spec_version"] = Value::from("2.0");
        let v2 = serde_json::to_string(&v2).unwrap_or_default();
        crate::png::write_card_png_chunks(picture.as_deref(), &[("chara", &v2), ("ccv3", &json)])
    } else {
        crate::png::write_card_png(picture.as_deref(), "chara", &json)
    };
    png.map_err(|d| refused(vec![d]))
}

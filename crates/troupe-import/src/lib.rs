//! Import of what users already have (`docs/import.md`): Character Card
//! V1/V2/V3 (JSON, PNG `tEXt` chunks, CHARX archives), standalone lorebooks
//! (V3 `lorebook_v3` and SillyTavern World Info) and SillyTavern chat logs,
//! into Troupe bundles and sessions; and the way back (`export`), which
//! writes a card equal to the one imported.
//!
//! A crate of its own beside the core (`troupe-rules`): it reaches the core
//! through its public API and the curated `troupe::internals` (reading
//! within the budgets, the checks, the macro language); the core knows
//! nothing of it. [`cards`] is what `troupe import` and `troupe export`
//! call. Every failure is a [`Diagnostic`] (PARSE, LIMIT, PATH_TRAVERSAL,
//! SCHEMA), never a panic.

#![deny(missing_docs)]

pub mod card;
pub mod cards;
pub mod charx;
pub mod chat;
pub mod export;
pub mod ids;
pub mod lorebook;
pub mod macros;
pub mod pack;
pub mod png;
pub mod record;
pub mod summary;

use serde_json::Value;

use troupe::internals::load::parse_json;
use troupe::{Code, Diagnostic};

/// Largest card or lorebook JSON text Troupe decodes, in bytes: 16 MiB. A
/// PNG `tEXt` chunk or CHARX `card.json` over it is LIMIT.
pub const MAX_CARD_JSON_BYTES: usize = 16 * 1024 * 1024;

/// Where a card came from, for `docs/import.md` and the bundle's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardContainer {
    /// A `.json` file holding the card.
    Json,
    /// A PNG with a `ccv3` or `chara` `tEXt` chunk.
    Png,
    /// A CHARX (ZIP) archive with `card.json`.
    Charx,
}

/// A card read from its container: the card JSON and where it came from.
#[derive(Debug, Clone)]
pub struct RawCard {
    /// The card object.
    pub card: Value,
    /// The container it was read from.
    pub container: CardContainer,
    /// CHARX entries other than `card.json` (assets), by name.
    pub assets: Vec<String>,
}

/// Reads a card from the bytes of a JSON, PNG or CHARX file, told apart by
/// their first bytes (PNG signature, ZIP `PK`, else JSON).
///
/// Errors: PARSE (not JSON, a damaged PNG or ZIP, bad base64, no card
/// chunk), LIMIT (a card text over [`MAX_CARD_JSON_BYTES`]), PATH_TRAVERSAL
/// (a CHARX entry name that leaves the archive), each with `file`.
pub fn read_card(file: &str, bytes: &[u8]) -> Result<RawCard, Vec<Diagnostic>> {
    let (json, container, assets) = if bytes.starts_with(png::SIGNATURE) {
        (
            png::card_text(file, bytes).map_err(|d| vec![d])?,
            CardContainer::Png,
            Vec::new(),
        )
    } else if bytes.starts_with(b"PK") {
        let (json, assets) = charx::card_json(file, bytes)?;
        (json, CardContainer::Charx, assets)
    } else {
        (bytes.to_vec(), CardContainer::Json, Vec::new())
    };
    let card = parse_object(file, &json)?;
    Ok(RawCard {
        card,
        container,
        assets,
    })
}

/// The UTF-8 byte order mark. Format 2.1 refuses it in Troupe files; files
/// made by other programs often start with one, and import drops it
/// (`docs/import.md` §2).
pub const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// `bytes` without a leading UTF-8 byte order mark, and whether it had one.
pub fn strip_bom(bytes: &[u8]) -> (&[u8], bool) {
    match bytes.strip_prefix(UTF8_BOM) {
        Some(rest) => (rest, true),
        None => (bytes, false),
    }
}

/// Parses JSON text that must be one object, with the loader's rules
/// (Format 2.2, 16: encoding, depth, duplicate keys), except that a leading
/// byte order mark is dropped (see [`strip_bom`]).
pub fn parse_object(file: &str, bytes: &[u8]) -> Result<Value, Vec<Diagnostic>> {
    let loaded = parse_json(file, strip_bom(bytes).0);
    if loaded.has_errors() {
        return Err(loaded.diagnostics);
    }
    loaded
        .value
        .map(|d| d.value)
        .ok_or_else(|| vec![Diagnostic::error(Code::Parse, "no JSON object").in_file(file)])
}

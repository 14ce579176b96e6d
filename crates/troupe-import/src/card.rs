//! Character cards → a bundle (`docs/import.md` §2, §6).
//!
//! A card (V1 flat, V2 `chara_card_v2`, V3 `chara_card_v3`) becomes one
//! character, a world for its `character_book`, and one scenario, "Chat
//! with <name>", whose cast is the character and a player seat `user`, whose
//! openings are the card's greetings. Every field Troupe has no place for is
//! kept in `extensions.card` (see [`super::record`]), so that
//! [`super::export::card_from_bundle`] writes the same card back.

use std::collections::HashSet;

use serde_json::{json, Map, Value};

use troupe::{Code, Diagnostic};

use super::export;
use super::ids::{slug, unique};
use super::lorebook::{book_to_world, BookContext, EMPTY_CONTENT};
use super::macros;
use super::record;
use super::summary::Summary;
use super::{CardContainer, RawCard};

/// Fields of `data` (or of a V1 card) that the character, its scenario and
/// its world hold.
pub const DATA_MAPPED: &[&str] = &[
    "name",
    "nickname",
    "description",
    "personality",
    "scenario",
    "system_prompt",
    "post_history_instructions",
    "mes_example",
    "creator_notes",
    "first_mes",
    "alternate_greetings",
    "group_only_greetings",
    "character_book",
];

/// Card text fields kept in the character's `text` map (Format 4).
pub const TEXT_FIELDS: &[&str] = &[
    "scenario",
    "system_prompt",
    "post_history_instructions",
    "mes_example",
    "creator_notes",
];

/// V1 fields that V2/V3 cards repeat at their root (SillyTavern does).
pub const ROOT_MIRRORS: &[&str] = &[
    "name",
    "description",
    "personality",
    "scenario",
    "first_mes",
    "mes_example",
];

/// The ID of the player seat of an imported scenario (made unique against
/// the bundle's other IDs). Not `user`: a runtime fills a seat with a
/// character whose ID is the seat's (Format 18.4), and `user` is reserved
/// (3.2).
pub const USER_SEAT: &str = "player";

/// The result of importing a card.
#[derive(Debug, Clone)]
pub struct CardImport {
    /// The bundle (Format 2.5).
    pub bundle: Value,
    /// The character's ID.
    pub character: String,
    /// The scenario's ID.
    pub scenario: String,
    /// The scenario's player seat.
    #[allow(dead_code)] // read by the tests only
    pub seat: String,
    /// What the import created, converted and kept, and its warnings
    /// (`docs/import.md` §11).
    pub summary: Summary,
}

/// The card's format as recorded: `v1`, `v2` or `v3`.
fn format_of(card: &Map<String, Value>) -> Result<&'static str, Diagnostic> {
    match card.get("spec") {
        None if card.get("name").is_some_and(Value::is_string) => Ok("v1"),
        None => {
            let d = Diagnostic::error(
                Code::Schema,
                "not a character card: no `spec` and no `name`",
            )
            .at("");
            // A World Info file or a lorebook has `entries` and no name.
            Err(if card.contains_key("entries") {
                d.with_help("this looks like a lorebook (it has `entries`): use `troupe import lorebook`")
            } else {
                d
            })
        }
        Some(Value::String(s)) if s == "chara_card_v2" => Ok("v2"),
        Some(Value::String(s)) if s == "chara_card_v3" => Ok("v3"),
        Some(other) => Err(Diagnostic::error(
            Code::Schema,
            format!("not a character card: `spec` is {other}; expected `chara_card_v2` or `chara_card_v3`"),
        )
        .at("/spec")),
    }
}

/// Imports a card read by [`super::read_card`] into a bundle.
///
/// Errors: SCHEMA for a card of another spec, a `data` that is not an
/// object, a missing or non-string `name`, a greeting list or book of the
/// wrong shape (located by JSON Pointer in the card).
pub fn card_to_bundle(raw: &RawCard) -> Result<CardImport, Vec<Diagnostic>> {
    let one = |d: Diagnostic| vec![d];
    let card = raw
        .card
        .as_object()
        .ok_or_else(|| one(Diagnostic::error(Code::Schema, "a card must be an object").at("")))?;
    let format = format_of(card).map_err(one)?;
    let (data, base) = if format == "v1" {
        (card, "")
    } else {
        let d = card.get("data").and_then(Value::as_object).ok_or_else(|| {
            one(Diagnostic::error(Code::Schema, "`data` must be an object").at("/data"))
        })?;
        (d, "/data")
    };
    let name = data.get("name").and_then(Value::as_str).ok_or_else(|| {
        one(
            Diagnostic::error(Code::Schema, "the card has no `name` string")
                .at(format!("{base}/name")),
        )
    })?;
    let str_of = |k: &str| {
        data.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let list_of = |k: &str| -> Result<Vec<String>, Vec<Diagnostic>> {
        match data.get(k) {
            // `null` is common in the wild; it is kept for export by the
            // record (`was`), as the Troupe form `[]` does not give it back.
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_str().map(str::to_string).ok_or_else(|| {
                        one(
                            Diagnostic::error(Code::Schema, "a greeting must be a string")
                                .at(format!("{base}/{k}/{i}")),
                        )
                    })
                })
                .collect(),
            Some(_) => Err(one(Diagnostic::error(
                Code::Schema,
                format!("`{k}` must be a list of strings"),
            )
            .at(format!("{base}/{k}")))),
        }
    };

    let mut taken = HashSet::new();
    let char_id = unique(&slug(name, "character"), &mut taken);
    let display = if name.is_empty() { "Unnamed" } else { name };

    // The character (Format 4).
    let mut character = Map::new();
    character.insert("id".into(), json!(char_id));
    character.insert("name".into(), json!(display));
    if let Some(n) = str_of("nickname") {
        character.insert("nickname".into(), json!(n));
    }
    character.insert("fictional".into(), json!(true));
    character.insert("age_band".into(), json!("adult"));
    // Card macros (docs/import.md §5): converted with the character's
    // display name known; greetings give their openings' changes; every
    // variable named anywhere is declared on the scenario.
    let char_name = str_of("nickname").unwrap_or(display);
    let mut msum = Summary::default();
    let mut variables = std::collections::BTreeSet::new();
    // Macros 2.0 defaults (`{{.x ?? 0}}`): variable ID → default; and the
    // variables read without one (docs/import.md §5).
    let mut defaults: std::collections::BTreeMap<String, String> = Default::default();
    let mut plain_reads = std::collections::BTreeSet::new();
    let mut note_defaults = |c: &macros::Converted, at: &str, msum: &mut Summary| {
        for (id, d) in &c.defaults {
            match defaults.get(id) {
                None => {
                    defaults.insert(id.clone(), d.clone());
                }
                Some(first) if first != d => msum.warn(
                    at,
                    format!("variable `{id}` is read with the default `{d}` here and `{first}` elsewhere; Troupe declares one default, `{first}`, so this read shows `{first}` until the variable is set"),
                ),
                Some(_) => {}
            }
        }
        plain_reads.extend(c.plain_reads.iter().cloned());
    };
    let mut conv = |t: &str, at: String, greeting: bool| {
        let c = macros::convert(
            t,
            macros::Field {
                at: &at,
                char_name: Some(char_name),
                greeting,
            },
            &mut msum,
        );
        variables.extend(c.variables.iter().cloned());
        note_defaults(&c, &at, &mut msum);
        c
    };
    for k in ["description", "personality"] {
        if let Some(t) = str_of(k) {
            character.insert(k.into(), json!(conv(t, format!("{base}/{k}"), false).text));
        }
    }
    let mut text = Map::new();
    for k in TEXT_FIELDS {
        if let Some(t) = str_of(k) {
            text.insert(
                (*k).to_string(),
                json!(conv(t, format!("{base}/{k}"), false).text),
            );
        }
    }
    if !text.is_empty() {
        character.insert("text".into(), Value::Object(text));
    }

    // The openings (Format 6.3): greetings in card order.
    let mut openings = Vec::new();
    let mut greetings = Vec::new();
    let mut opening = |id: String, t: &str, at: String, group_only: bool| {
        let c = conv(t, at, true);
        let mut o = Map::new();
        o.insert("id".into(), json!(id));
        o.insert(
            "text".into(),
            json!(if c.text.is_empty() {
                EMPTY_CONTENT.to_string()
            } else {
                c.text
            }),
        );
        if group_only {
            o.insert("group_only".into(), json!(true));
        }
        if !c.sets.is_empty() {
            o.insert(
                "changes".into(),
                Value::Array(
                    c.sets
                        .into_iter()
                        .map(|(v, x)| json!({"set": {v: x}}))
                        .collect(),
                ),
            );
        }
        Value::Object(o)
    };
    match str_of("first_mes") {
        Some(t) => {
            openings.push(opening(
                "first".into(),
                t,
                format!("{base}/first_mes"),
                false,
            ));
            greetings.push(Some("first".to_string()));
        }
        None => greetings.push(None),
    }
    for (k, t) in list_of("alternate_greetings")?.iter().enumerate() {
        let id = format!("alt-{}", k + 1);
        openings.push(opening(
            id.clone(),
            t,
            format!("{base}/alternate_greetings/{k}"),
            false,
        ));
        greetings.push(Some(id));
    }
    for (k, t) in list_of("group_only_greetings")?.iter().enumerate() {
        openings.push(opening(
            format!("group-{}", k + 1),
            t,
            format!("{base}/group_only_greetings/{k}"),
            true,
        ));
    }
    // Variables read by the book's entries (converted in `lorebook`).
    if let Some(Value::Array(es)) = data.get("character_book").and_then(|b| b.get("entries")) {
        for (i, e) in es.iter().enumerate() {
            if let Some(t) = e.get("content").and_then(Value::as_str) {
                let mut scratch = Summary::default();
                let at = format!("{base}/character_book/entries/{i}/content");
                let c = macros::convert(
                    t,
                    macros::Field {
                        at: &at,
                        char_name: Some(char_name),
                        greeting: false,
                    },
                    &mut scratch,
                );
                variables.extend(c.variables.iter().cloned());
                note_defaults(&c, &at, &mut msum);
            }
        }
    }

    let mut summary_vars: Vec<String> = Vec::new();
    // The world of the character book (Format 5).
    let scenario_id = unique(&format!("{char_id}-chat"), &mut taken);
    let seat_id = unique(USER_SEAT, &mut taken);
    let mut ctx = BookContext {
        greetings,
        fallback_name: format!("{display} lore"),
        taken,
        summary: Summary::default(),
    };
    let world = match data.get("character_book") {
        Some(book) if !book.is_null() => {
            Some(book_to_world(book, &format!("{base}/character_book"), &mut ctx).map_err(one)?)
        }
        _ => None,
    };

    // The scenario (Format 6).
    let mut scenario = Map::new();
    scenario.insert("id".into(), json!(scenario_id));
    scenario.insert("name".into(), json!(format!("Chat with {display}")));
    if let Some(w) = &world {
        scenario.insert("worlds".into(), json!([w["id"]]));
    }
    if !variables.is_empty() {
        scenario.insert(
            "variables".into(),
            Value::Array(
                variables
                    .iter()
                    .map(|v| match defaults.get(v) {
                        Some(d) if !d.is_empty() => {
                            json!({"id": v, "type": "string", "default": d})
                        }
                        _ => json!({"id": v, "type": "string"}),
                    })
                    .collect(),
            ),
        );
        for (v, d) in &defaults {
            if plain_reads.contains(v) {
                msum.warn(
                    base,
                    format!("variable `{v}` is read with the default `{d}` (`{{{{.{v} ?? {d}}}}}`) and without one elsewhere; Troupe declares one default, so those other reads show `{d}` before the variable is set, where SillyTavern shows nothing"),
                );
            }
        }
        for v in &variables {
            summary_vars.push(v.clone());
        }
    }
    scenario.insert(
        "cast".into(),
        json!([{"character": char_id}, {"seat": seat_id, "player": true}]),
    );
    if !openings.is_empty() {
        scenario.insert("openings".into(), Value::Array(openings.clone()));
    }
    scenario.insert("extensions".into(), json!({"card": {"character": char_id}}));

    // The records for the way back (docs/import.md §6).
    let view = export::data_view(&character, &openings);
    let book_back = world.as_ref().map(super::lorebook::world_to_book);
    let data_inverse = |k: &str| export::data_inverse(k, &character, &openings, book_back.as_ref());
    let data_rec = record::build(data, DATA_MAPPED, &view, data_inverse);
    let mut card_ext = Map::new();
    card_ext.insert("format".into(), json!(format));
    if format != "v1" {
        let restored_data = Value::Object(record::restore(&data_rec, &view, data_inverse));
        let root_inverse = |k: &str| export::root_inverse(k, &restored_data);
        let root_rec = record::build(card, &root_mapped(card), &view, root_inverse);
        card_ext.insert("root".into(), root_rec);
    }
    card_ext.insert("data".into(), data_rec);
    card_ext.insert(
        "container".into(),
        json!(match raw.container {
            CardContainer::Json => "json",
            CardContainer::Png => "png",
            CardContainer::Charx => "charx",
        }),
    );
    if !raw.assets.is_empty() {
        card_ext.insert("assets".into(), json!(raw.assets));
    }
    character.insert("extensions".into(), json!({ "card": card_ext }));

    let mut summary = Summary::default();
    summary.created("character", &char_id, Some(&format!("{base}/name")));
    summary.created("scenario", &scenario_id, None);
    summary.created("seat", &seat_id, None);
    for o in &openings {
        if let Some(id) = o.get("id").and_then(Value::as_str) {
            summary.created("opening", id, None);
        }
    }
    for v in &summary_vars {
        summary.created("variable", v, None);
    }
    if format == "v1" {
        summary.converted("", "a V1 card (no `spec`): read as V2");
    }
    for (k, v) in data {
        if v.is_null() {
            summary.converted(
                &format!("{base}/{k}"),
                "`null`: read as absent, kept for export",
            );
        }
    }
    if let Some(Value::Object(x)) = data.get("extensions") {
        for k in x.keys() {
            summary.kept(
                &format!(
                    "{base}/extensions/{}",
                    troupe::internals::diag::escape_token(k)
                ),
                "an application's extension: kept verbatim for export, not read by Troupe",
            );
        }
    }
    summary.extend(msum);
    summary.extend(ctx.summary);

    let mut bundle = Map::new();
    bundle.insert("troupe".into(), json!("0.1"));
    bundle.insert("kind".into(), json!("bundle"));
    bundle.insert("characters".into(), json!([character]));
    if let Some(w) = world {
        bundle.insert("worlds".into(), json!([w]));
    }
    bundle.insert("scenarios".into(), json!([scenario]));
    Ok(CardImport {
        bundle: Value::Object(bundle),
        character: char_id,
        scenario: scenario_id,
        seat: seat_id,
        summary,
    })
}

/// The root fields of a V2/V3 card that are rebuilt rather than kept:
/// `data`, and the V1 mirrors present at the root.
fn root_mapped(card: &Map<String, Value>) -> Vec<&'static str> {
    let mut m = vec!["data"];
    m.extend(ROOT_MIRRORS.iter().filter(|k| card.contains_key(**k)));
    m
}

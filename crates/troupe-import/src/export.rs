//! Bundle → character card, the way back of [`super::card`]
//! (`docs/import.md` §6): `troupe export card`.
//!
//! The card is rebuilt from the character, the openings of its scenario and
//! the world of its book, with the records left in their `extensions.card`;
//! fields edited since the import are written as edited.

use serde_json::{json, Map, Value};

use troupe::{Code, Diagnostic};

use super::card::{DATA_MAPPED, ROOT_MIRRORS, TEXT_FIELDS};
use super::lorebook::{world_to_book, EMPTY_CONTENT};
use super::macros;
use super::record;

/// The Troupe form of a card's `data` fields (what its record hashes): the
/// character without its extensions, and the scenario's openings.
pub fn data_view(character: &Map<String, Value>, openings: &[Value]) -> Value {
    let mut c = character.clone();
    c.remove("extensions");
    json!({"character": c, "openings": openings})
}

fn opening_text(o: &Value) -> String {
    match o.get("text").and_then(Value::as_str) {
        Some(t) if t == EMPTY_CONTENT => String::new(),
        Some(t) => macros::from_troupe(t),
        None => o
            .get("parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .map(macros::from_troupe)
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// The card value of a mapped `data` field from the character, the
/// scenario's openings and the book rebuilt from the world.
pub fn data_inverse(
    k: &str,
    character: &Map<String, Value>,
    openings: &[Value],
    book: Option<&Value>,
) -> Option<Value> {
    let text_of = |v: Option<&Value>| {
        json!(v
            .and_then(Value::as_str)
            .map(macros::from_troupe)
            .unwrap_or_default())
    };
    let id_of = |o: &Value| {
        o.get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let group = |o: &Value| o.get("group_only").and_then(Value::as_bool) == Some(true);
    Some(match k {
        "name" => character.get("name").cloned()?,
        "nickname" => character.get("nickname").cloned()?,
        "description" | "personality" => text_of(character.get(k)),
        _ if TEXT_FIELDS.contains(&k) => text_of(character.get("text").and_then(|t| t.get(k))),
        "first_mes" => json!(openings
            .iter()
            .find(|o| id_of(o) == "first")
            .map(opening_text)
            .unwrap_or_default()),
        "alternate_greetings" => json!(openings
            .iter()
            .filter(|o| !group(o) && id_of(o) != "first")
            .map(opening_text)
            .collect::<Vec<_>>()),
        "group_only_greetings" => json!(openings
            .iter()
            .filter(|o| group(o))
            .map(opening_text)
            .collect::<Vec<_>>()),
        "character_book" => book.cloned()?,
        _ => return None,
    })
}

/// The card value of a mapped root field: `data`, or a V1 mirror of a
/// `data` field.
pub fn root_inverse(k: &str, data: &Value) -> Option<Value> {
    if k == "data" {
        Some(data.clone())
    } else if ROOT_MIRRORS.contains(&k) {
        data.get(k).cloned()
    } else {
        None
    }
}

/// Writes the card of character `character_id` of `bundle`: a V1, V2 or V3
/// card as it was imported (a V3 card for a character made in Troupe).
///
/// Errors: UNKNOWN_REF when the bundle has no such character.
pub fn card_from_bundle(bundle: &Value, character_id: &str) -> Result<Value, Diagnostic> {
    let list = |k: &str| {
        bundle
            .get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let characters = list("characters");
    let (ci, character) = characters
        .iter()
        .enumerate()
        .find(|(_, c)| c.get("id").and_then(Value::as_str) == Some(character_id))
        .ok_or_else(|| {
            Diagnostic::error(
                Code::UnknownRef,
                format!(
                    "the bundle has no character `{character_id}`{}",
                    troupe::internals::diag::one_of(
                        character_id,
                        characters
                            .iter()
                            .filter_map(|c| c.get("id").and_then(Value::as_str))
                    )
                ),
            )
            .at("/characters")
        })?;
    let _ = ci;
    let character = character.as_object().cloned().unwrap_or_default();
    let scenarios = list("scenarios");
    let scenario = scenarios
        .iter()
        .find(|s| {
            s.pointer("/extensions/card/character")
                .and_then(Value::as_str)
                == Some(character_id)
        })
        .or_else(|| {
            scenarios.iter().find(|s| {
                s.get("cast").and_then(Value::as_array).is_some_and(|c| {
                    c.iter()
                        .any(|e| e.get("character").and_then(Value::as_str) == Some(character_id))
                })
            })
        });
    let openings: Vec<Value> = scenario
        .and_then(|s| s.get("openings"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let worlds = list("worlds");
    let world = scenario
        .and_then(|s| s.get("worlds"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .find_map(|w| {
            worlds
                .iter()
                .find(|x| x.get("id").and_then(Value::as_str) == Some(w))
        });
    let book = world.map(world_to_book);
    let view = data_view(&character, &openings);
    let inverse = |k: &str| data_inverse(k, &character, &openings, book.as_ref());
    let ext = character.get("extensions").and_then(|e| e.get("card"));
    let Some(ext) = ext else {
        let mut data = Map::new();
        for k in DATA_MAPPED {
            if let Some(v) = inverse(k) {
                data.insert((*k).to_string(), v);
            }
        }
        for k in ["tags", "creator", "character_version"] {
            data.entry(k)
                .or_insert(if k == "tags" { json!([]) } else { json!("") });
        }
        data.insert("extensions".into(), json!({}));
        return Ok(json!({"spec": "chara_card_v3", "spec_version": "3.0", "data": data}));
    };
    let empty = json!({});
    let data = Value::Object(record::restore(
        ext.get("data").unwrap_or(&empty),
        &view,
        inverse,
    ));
    if ext.get("format").and_then(Value::as_str) == Some("v1") {
        return Ok(data);
    }
    let root = ext.get("root").unwrap_or(&empty);
    Ok(Value::Object(record::restore(root, &view, |k| {
        root_inverse(k, &data)
    })))
}

//! The format's data types (Format 3–12): what a bundle and a session hold,
//! as typed Rust values. A base module like `diag`: stages read it, it reads
//! no stage.
//!
//! These types are lenient on purpose: they are built from documents that may
//! have failed their schema, so that the semantic checks still run on the
//! parts that can be read (Format 17.1: one value can fail several checks).
//! Items that cannot be read at all are skipped by [`read_items`]; the schema
//! check has already reported them.

pub mod bundle;
pub mod firing;
pub mod fixture;
pub mod items;
pub mod json;
pub mod manifest;
pub mod playtest;
pub mod script;
pub mod session;
pub mod types;

pub use bundle::*;
pub use session::*;
pub use types::{ScalarType, VarType};

/// A scenario's fields in the order Format 6 lists them (the order of a
/// compiled package's `bundle.json`, Format 14.4).
pub const SCENARIO_FIELDS: &[&str] = &[
    "id",
    "name",
    "description",
    "narrator",
    "voice",
    "worlds",
    "cast",
    "openings",
    "scene",
    "variables",
    "events",
    "outcomes",
    "rules",
    "entries",
    "difficulty",
    "rubric",
    "safety",
    "emotion",
    "model",
    "turn_order",
    "extensions",
];

/// IDs that are never a character, world, scenario or variable ID (Format 3.2).
pub const RESERVED_IDS: &[&str] = &[
    "narrator",
    "scene",
    "state",
    "char",
    "user",
    "own",
    "self",
    "turn",
    "round",
    "opening",
    "last",
    "elapsed",
    "hour",
    "weekday",
    "players",
    "difficulty",
];

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The integer an integer field holds (Format 2.2): a JSON number with a
/// zero fractional part, however written (`3`, `3.0`, `3e0`, `30e-1`), in
/// the signed 64-bit range. `None` for anything else.
pub fn integer(v: &Value) -> Option<i64> {
    let Value::Number(n) = v else { return None };
    if let Some(i) = n.as_i64() {
        return Some(i);
    }
    let text = n.to_string();
    let d = rust_decimal::Decimal::from_str_exact(&text)
        .or_else(|_| rust_decimal::Decimal::from_scientific(&text))
        .ok()?;
    if !d.fract().is_zero() {
        return None;
    }
    i64::try_from(d.trunc()).ok()
}

/// [`integer`] as an unsigned value (`None` when negative).
pub fn integer_u64(v: &Value) -> Option<u64> {
    integer(v).and_then(|i| u64::try_from(i).ok())
}

/// Deserializes an integer field as [`integer`] reads it (Format 2.2).
pub fn de_int<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64>,
{
    let v = Value::deserialize(d)?;
    integer(&v)
        .and_then(|i| T::try_from(i).ok())
        .ok_or_else(|| serde::de::Error::custom(format!("{v} is not an integer of this field")))
}

/// [`de_int`] for an optional field.
pub fn de_opt_int<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64>,
{
    de_int(d).map(Some)
}

/// Reads the array at `value[field]` item by item, keeping each item's index.
/// Items that do not deserialize as `T` are skipped (their schema diagnostics
/// have been reported already).
pub fn read_items<T: DeserializeOwned>(value: &Value, field: &str) -> Vec<(usize, T)> {
    match value.get(field) {
        Some(Value::Array(items)) => read_list(items),
        _ => Vec::new(),
    }
}

/// Reads the items of `list` as [`read_items`] does.
pub fn read_list<T: DeserializeOwned>(list: &[Value]) -> Vec<(usize, T)> {
    list.iter()
        .enumerate()
        .filter_map(|(i, v)| T::deserialize(v).ok().map(|t| (i, t)))
        .collect()
}

/// The ID grammar (Format 3.1, `^[a-z][a-z0-9_-]{0,63}$`): true when `s` is
/// an ID: a lower-case ASCII letter, then up to 63 lower-case
/// letters, digits, `_` or `-`.
pub fn is_id(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_lowercase()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_' || *c == b'-')
}

/// The members of the array field `field` of `v` (none when the field is
/// absent or not an array: a schema-checked document has an array there
/// or nothing).
pub fn array<'v>(v: &'v serde_json::Value, field: &str) -> &'v [serde_json::Value] {
    v.get(field)
        .and_then(serde_json::Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The string at `v[field]`, if it is one (a field of another type reads
/// as absent: its schema diagnostic is reported already).
pub(crate) fn text<'a>(v: &'a serde_json::Value, field: &str) -> Option<&'a str> {
    v.get(field).and_then(serde_json::Value::as_str)
}

/// The array at `v[field]`, if it is one.
pub(crate) fn list<'a>(v: &'a serde_json::Value, field: &str) -> Option<&'a [serde_json::Value]> {
    v.get(field)
        .and_then(serde_json::Value::as_array)
        .map(Vec::as_slice)
}

/// Whether `v[field]` is `true`.
pub(crate) fn flag(v: &serde_json::Value, field: &str) -> bool {
    v.get(field).and_then(serde_json::Value::as_bool) == Some(true)
}

/// The strings among `items` (a list of terms, patterns, keys, …), in
/// order; an item that is no string is left out (its schema diagnostic is
/// reported already).
pub fn strings(items: &[serde_json::Value]) -> impl Iterator<Item = &str> {
    items.iter().filter_map(serde_json::Value::as_str)
}

/// The strings of `v` when it is a list (a list of character IDs such as
/// `scene.present`, `enter` or `leave`, Format 6.4, 8.5), in order; nothing
/// when it is not one.
pub fn id_list(v: &serde_json::Value) -> impl Iterator<Item = &str> {
    strings(v.as_array().map_or(&[][..], Vec::as_slice))
}

/// The ID of a declared item (a character, world, scenario, variable,
/// event, opening, …: Format 3.1), when it has a string `id`.
pub fn id_of(item: &serde_json::Value) -> Option<&str> {
    item.get("id").and_then(serde_json::Value::as_str)
}

/// `bundle`'s scenarios, in bundle order (Format 6).
pub fn scenarios(bundle: &serde_json::Value) -> &[serde_json::Value] {
    array(bundle, "scenarios")
}

/// `bundle`'s characters, in bundle order (Format 4).
pub fn characters(bundle: &serde_json::Value) -> &[serde_json::Value] {
    array(bundle, "characters")
}

/// `bundle`'s worlds, in bundle order (Format 5).
pub fn worlds(bundle: &serde_json::Value) -> &[serde_json::Value] {
    array(bundle, "worlds")
}

/// The IDs of `bundle`'s scenarios, in bundle order (Format 6).
pub fn scenario_ids(bundle: &serde_json::Value) -> impl Iterator<Item = &str> {
    scenarios(bundle).iter().filter_map(id_of)
}

/// The index in `bundle`'s `scenarios` of the scenario whose ID is `id`
/// (Format 6).
pub fn scenario_index(bundle: &serde_json::Value, id: &str) -> Option<usize> {
    scenarios(bundle).iter().position(|s| id_of(s) == Some(id))
}

/// The scenario of `bundle` whose ID is `id`, as written (Format 6).
pub fn scenario<'b>(bundle: &'b serde_json::Value, id: &str) -> Option<&'b serde_json::Value> {
    array(bundle, "scenarios").get(scenario_index(bundle, id)?)
}

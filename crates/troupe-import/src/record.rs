//! What an imported object keeps for the way back (`docs/import.md` §6).
//!
//! Each card object (the card's root, `data`, the book, each entry) leaves a
//! record in the `extensions.card` of the Troupe object made from it:
//!
//! - `order`: the object's keys in their original order;
//! - `kept`: the values of the fields Troupe has no place for, verbatim
//!   (the card's own `extensions` among them);
//! - `was`: for mapped fields whose Troupe form does not give the original
//!   back (a `<USER>` tag became `{{user}}`, an empty text was left out),
//!   the original value;
//! - `hash`: an FNV-1a-64 hash of the Troupe fields as imported. On export
//!   the `was` values are used only while the Troupe fields still hash the
//!   same; once someone edits them, the edited values are written instead.

use serde_json::{Map, Value};

/// FNV-1a-64 of the compact JSON text of `value`, as 16 hex digits.
pub fn hash(value: &Value) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Builds the record of `original`. `mapped` names the fields Troupe holds
/// elsewhere; `view` is the Troupe form of them (what is hashed); `inverse`
/// gives the card value of a mapped field back from the Troupe form.
pub fn build(
    original: &Map<String, Value>,
    mapped: &[&str],
    view: &Value,
    inverse: impl Fn(&str) -> Option<Value>,
) -> Value {
    let mut kept = Map::new();
    let mut was = Map::new();
    let order: Vec<Value> = original.keys().map(|k| Value::String(k.clone())).collect();
    for (k, v) in original {
        if mapped.contains(&k.as_str()) {
            if inverse(k).as_ref() != Some(v) {
                was.insert(k.clone(), v.clone());
            }
        } else {
            kept.insert(k.clone(), v.clone());
        }
    }
    let mut out = Map::new();
    out.insert("order".into(), Value::Array(order));
    if !kept.is_empty() {
        out.insert("kept".into(), Value::Object(kept));
    }
    if !was.is_empty() {
        out.insert("was".into(), Value::Object(was));
        out.insert("hash".into(), Value::String(hash(view)));
    }
    Value::Object(out)
}

/// Rebuilds the card object from its `record` and the Troupe form `view` of
/// the mapped fields (see the module doc). Keys come in the recorded order;
/// a mapped field whose `inverse` is `None` is left out.
pub fn restore(
    record: &Value,
    view: &Value,
    inverse: impl Fn(&str) -> Option<Value>,
) -> Map<String, Value> {
    let empty = Map::new();
    let kept = record
        .get("kept")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let was = record
        .get("was")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let unchanged = record.get("hash").and_then(Value::as_str) == Some(hash(view).as_str());
    let mut out = Map::new();
    for key in record
        .get("order")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if let Some(v) = kept.get(key) {
            out.insert(key.into(), v.clone());
        } else if let Some(v) = was.get(key).filter(|_| unchanged) {
            out.insert(key.into(), v.clone());
        } else if let Some(v) = inverse(key) {
            out.insert(key.into(), v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kept_was_and_order_round_trip() {
        let original = json!({"b": "<USER>", "a": 1, "c": "same"});
        let view = json!({"b": "{{user}}", "c": "same"});
        let inverse = |k: &str| view.get(k).cloned();
        let rec = build(original.as_object().unwrap(), &["b", "c"], &view, inverse);
        assert_eq!(rec["kept"], json!({"a": 1}));
        assert_eq!(rec["was"], json!({"b": "<USER>"}));
        let back = restore(&rec, &view, inverse);
        assert_eq!(Value::Object(back.clone()), original);
        assert_eq!(back.keys().collect::<Vec<_>>(), ["b", "a", "c"]);
    }

    #[test]
    fn an_edit_wins_over_was() {
        let original = json!({"b": "<USER>"});
        let view = json!({"b": "{{user}}"});
        let rec = build(original.as_object().unwrap(), &["b"], &view, |k| {
            view.get(k).cloned()
        });
        let edited = json!({"b": "{{user}}!"});
        let back = restore(&rec, &edited, |k| edited.get(k).cloned());
        assert_eq!(back["b"], "{{user}}!");
    }
}

//! Reading the compiled IR's shared strings (Format 14.4, `ir.json`). A base
//! module like `diag`: every stage may use it, it uses none.
//!
//! serde reads an `Arc<str>` through a `String` and a `Box<str>` and then
//! copies it into the `Arc`: two allocations and a copy per string. An IR
//! holds thousands of them (IDs, replies, keys), so these functions, used
//! with `#[serde(deserialize_with = …)]`, build each `Arc<str>` from the
//! text the deserializer hands over, in one allocation. What they accept is
//! what serde's own implementation accepts (a JSON string).
//!
//! ```
//! # use std::sync::Arc;
//! #[derive(serde::Deserialize)]
//! struct Rule {
//!     #[serde(deserialize_with = "troupe::internals::wire::shared_str")]
//!     id: Arc<str>,
//!     #[serde(deserialize_with = "troupe::internals::wire::shared_strs")]
//!     replies: Vec<Arc<str>>,
//! }
//! let r: Rule = serde_json::from_str(r#"{"id": "r\u0031", "replies": ["a", "b"]}"#).unwrap();
//! assert_eq!(&*r.id, "r1");
//! assert_eq!(r.replies, vec![Arc::from("a"), Arc::from("b")]);
//! ```

use std::fmt;
use std::sync::Arc;

use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

mod nesting;
pub mod strings;

pub use nesting::Nesting;

struct SharedStr;

impl Visitor<'_> for SharedStr {
    type Value = Arc<str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Arc<str>, E> {
        // A string of `ir.compact`'s table: its one shared copy.
        Ok(strings::interned(v).unwrap_or_else(|| Arc::from(v)))
    }
}

/// One `Arc<str>`.
pub fn shared_str<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<str>, D::Error> {
    d.deserialize_str(SharedStr)
}

/// An `Option<Arc<str>>` (`null` is `None`).
pub fn shared_str_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Arc<str>>, D::Error> {
    struct Opt;
    impl<'de> Visitor<'de> for Opt {
        type Value = Option<Arc<str>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string or null")
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            shared_str(d).map(Some)
        }
    }
    d.deserialize_option(Opt)
}

/// A `Vec<Arc<str>>`, built at the size the deserializer announces (never
/// more than 4,096 ahead of the elements read, so a false hint costs
/// little).
pub fn shared_strs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Arc<str>>, D::Error> {
    struct Seq;
    impl<'de> Visitor<'de> for Seq {
        type Value = Vec<Arc<str>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list of strings")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
            while let Some(s) = seq.next_element_seed(Element)? {
                out.push(s);
            }
            Ok(out)
        }
    }
    struct Element;
    impl<'de> serde::de::DeserializeSeed<'de> for Element {
        type Value = Arc<str>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Arc<str>, D::Error> {
            shared_str(d)
        }
    }
    d.deserialize_seq(Seq)
}

/// A map keyed by `Arc<str>` (the IR's state-name index), each key read
/// as [`shared_str`]: in `ir.compact`, the table's one `Arc<str>` of it,
/// so a key that is also a variable's name is no allocation of its own.
/// A repeated key keeps its last value, as serde's own map reading does.
pub fn shared_str_map<'de, V, H, D>(
    d: D,
) -> Result<std::collections::HashMap<Arc<str>, V, H>, D::Error>
where
    V: serde::Deserialize<'de>,
    H: std::hash::BuildHasher + Default,
    D: Deserializer<'de>,
{
    struct Map<V, H>(std::marker::PhantomData<(V, H)>);
    impl<'de, V: serde::Deserialize<'de>, H: std::hash::BuildHasher + Default> Visitor<'de>
        for Map<V, H>
    {
        type Value = std::collections::HashMap<Arc<str>, V, H>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map with string keys")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = std::collections::HashMap::with_capacity_and_hasher(
                map.size_hint().unwrap_or(0).min(4096),
                H::default(),
            );
            while let Some(k) = map.next_key_seed(Key)? {
                out.insert(k, map.next_value()?);
            }
            Ok(out)
        }
    }
    struct Key;
    impl<'de> serde::de::DeserializeSeed<'de> for Key {
        type Value = Arc<str>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Arc<str>, D::Error> {
            shared_str(d)
        }
    }
    d.deserialize_map(Map(std::marker::PhantomData))
}

/// A string of the IR that is read whole and rarely (a CEL program's
/// source): read from `ir.compact`, a range of its string table's text,
/// which every such string of the IR shares (no allocation of its own);
/// otherwise its own text.
#[derive(Clone)]
pub struct TableStr {
    text: Arc<str>,
    range: std::ops::Range<u32>,
}

impl TableStr {
    /// `s`, in a text of its own.
    pub fn new(s: &str) -> TableStr {
        TableStr {
            text: Arc::from(s),
            range: 0..s.len() as u32,
        }
    }
}

impl From<&str> for TableStr {
    fn from(s: &str) -> TableStr {
        TableStr::new(s)
    }
}

impl From<String> for TableStr {
    fn from(s: String) -> TableStr {
        TableStr::new(&s)
    }
}

impl From<Arc<str>> for TableStr {
    fn from(text: Arc<str>) -> TableStr {
        let range = 0..text.len() as u32;
        TableStr { text, range }
    }
}

impl PartialEq for TableStr {
    fn eq(&self, other: &TableStr) -> bool {
        **self == **other
    }
}

impl Eq for TableStr {}

impl fmt::Display for TableStr {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self)
    }
}

impl std::ops::Deref for TableStr {
    type Target = str;
    fn deref(&self) -> &str {
        self.text
            .get(self.range.start as usize..self.range.end as usize)
            .unwrap_or("")
    }
}

impl fmt::Debug for TableStr {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl serde::Serialize for TableStr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

impl<'de> Deserialize<'de> for TableStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TableStr, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = TableStr;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<TableStr, E> {
                Ok(match strings::slice_of(v) {
                    Some((text, range)) => TableStr { text, range },
                    None => TableStr::new(v),
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// A JSON value the compiled IR holds as its text (Format 14.4), built
/// the first time it is read: reading `ir.json` then costs one string
/// for it rather than a tree of maps and strings that most sessions never
/// look at (the model runtime's answer schema, read only by a model
/// runtime). Written as its text: made from a value, that is the value's
/// compact JSON, so `ir.json`'s bytes do not depend on it; read, it is
/// written again as it was read.
///
/// Reading checks that the text is JSON nested at most
/// [`JsonText::MAX_DEPTH`] deep, so building the value later cannot fail:
/// a text that is not is refused when it is read (an IR that holds one is
/// not used, Format 14.4).
///
/// ```
/// # use troupe::internals::wire::JsonText;
/// let t: JsonText = serde_json::from_str(r#"{"a":[1,{"b":null}]}"#).unwrap();
/// assert_eq!(t["a"][1]["b"], serde_json::Value::Null);
/// assert_eq!(serde_json::to_string(&t).unwrap(), r#"{"a":[1,{"b":null}]}"#);
/// let made = JsonText::new(serde_json::json!({"a": [1, {"b": null}]}));
/// assert_eq!(made, t);
/// let deep = format!("{}{}", "[".repeat(101), "]".repeat(101));
/// assert!(serde_json::from_str::<JsonText>(&deep).is_err());
/// ```
pub struct JsonText {
    /// One JSON value's text, checked as JSON when made or read (read from
    /// `ir.compact`, a range of its string table: no copy).
    text: TableStr,
    value: std::sync::OnceLock<serde_json::Value>,
}

impl JsonText {
    /// How deep a text's arrays and objects may nest: below serde_json's
    /// own recursion limit (128), so that the value always builds.
    pub const MAX_DEPTH: usize = 100;

    /// The text of `value` (compact), with `value` already built.
    pub fn new(value: serde_json::Value) -> JsonText {
        let text = serde_json::to_string(&value).unwrap_or_else(|_| "null".to_string());
        JsonText {
            text: TableStr::new(&text),
            value: std::sync::OnceLock::from(value),
        }
    }

    /// The value, built from the text the first time it is asked for.
    pub fn value(&self) -> &serde_json::Value {
        self.value.get_or_init(|| {
            // Checked when read: JSON, nested less deep than serde_json's
            // limit, so `Null` is not reached.
            serde_json::from_str(&self.text).unwrap_or(serde_json::Value::Null)
        })
    }

    /// The compact JSON text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Reads a `JsonText` as its `Deserialize` does, and something of it
    /// with `read` (a view of the text, say), reading the text once in the
    /// IR's binary form: there `read` is the text's one check as JSON, so
    /// it must read the whole text as one JSON value and refuse what is
    /// not (as `serde_json::from_str` of any type does). In `ir.json` the
    /// raw value read is the check and `read` runs after it.
    pub fn deserialize_reading<'de, D: Deserializer<'de>, T>(
        d: D,
        read: impl FnOnce(&str) -> Result<T, serde_json::Error>,
    ) -> Result<(JsonText, T), D::Error> {
        let text = if d.is_human_readable() {
            TableStr::new(Box::<serde_json::value::RawValue>::deserialize(d)?.get())
        } else {
            TableStr::deserialize(d)?
        };
        let got = read(&text).map_err(|e| {
            serde::de::Error::custom(format_args!("not JSON text of its shape ({e})"))
        })?;
        Ok((JsonText::checked(text)?, got))
    }

    /// A text read as JSON, checked for what building its value needs.
    fn checked<E: serde::de::Error>(text: TableStr) -> Result<JsonText, E> {
        if nests_deeper_than(&text, JsonText::MAX_DEPTH) {
            return Err(E::custom(format_args!(
                "a JSON value nested more than {} deep",
                JsonText::MAX_DEPTH
            )));
        }
        // serde_json's raw reader skips `\u` escapes without pairing
        // surrogates, but a value with a lone one does not build: a text
        // that may hold one is built now, so that building cannot fail
        // later (it would read as `null`).
        let value = std::sync::OnceLock::new();
        if may_hold_surrogate(&text) {
            let v: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| E::custom(format_args!("a JSON value that does not build ({e})")))?;
            let _ = value.set(v);
        }
        Ok(JsonText { text, value })
    }
}

/// Whether the arrays and objects of JSON text `s` nest deeper than
/// `max`. A text with at most `max` opening brackets in all (strings
/// included) cannot, and counting them is a loop the compiler vectorizes;
/// only a text with more is walked ([`json_depth`]).
pub(crate) fn nests_deeper_than(s: &str, max: usize) -> bool {
    let opening = s.bytes().filter(|&b| b == b'[' || b == b'{').count();
    opening > max && json_depth(s) > max
}

/// How deeply the arrays and objects of JSON text `s` nest (strings and
/// their escapes skipped).
fn json_depth(s: &str) -> usize {
    let (mut depth, mut max, mut in_str, mut escaped) = (0usize, 0usize, false, false);
    for &b in s.as_bytes() {
        if in_str {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

impl std::ops::Deref for JsonText {
    type Target = serde_json::Value;
    fn deref(&self) -> &serde_json::Value {
        self.value()
    }
}

impl Default for JsonText {
    fn default() -> JsonText {
        JsonText::new(serde_json::Value::Null)
    }
}

impl Clone for JsonText {
    fn clone(&self) -> JsonText {
        JsonText {
            text: self.text.clone(),
            value: self.value.clone(),
        }
    }
}

/// Two texts are equal when their values are.
impl PartialEq for JsonText {
    fn eq(&self, other: &JsonText) -> bool {
        *self.text == *other.text || self.value() == other.value()
    }
}

impl fmt::Debug for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl serde::Serialize for JsonText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            // The text is JSON (checked when made or read): written as it is.
            serde_json::from_str::<&serde_json::value::RawValue>(&self.text)
                .map_err(serde::ser::Error::custom)?
                .serialize(s)
        } else {
            s.serialize_str(&self.text)
        }
    }
}

impl<'de> serde::Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<JsonText, D::Error> {
        if d.is_human_readable() {
            let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
            return JsonText::checked(TableStr::new(raw.get()));
        }
        // The binary form (Format 14.4, `ir.compact`) holds the text as a
        // string: checked as JSON by reading it whole.
        JsonText::deserialize_reading(d, |t| {
            serde_json::from_str::<serde::de::IgnoredAny>(t).map(|_| ())
        })
        .map(|(t, ())| t)
    }
}

/// Whether JSON text `s` may escape a UTF-16 surrogate (`\uD800` to
/// `\uDFFF`): an escape `\u` followed by `D` and one of `8`–`F`. An
/// escaped backslash followed by such text also counts (it only costs
/// building the value when read).
fn may_hold_surrogate(s: &str) -> bool {
    let b = s.as_bytes();
    memchr::memmem::find_iter(b, b"\\u").any(|i| {
        matches!(b.get(i + 2), Some(b'd' | b'D'))
            && matches!(b.get(i + 3), Some(b'8' | b'9' | b'a'..=b'f' | b'A'..=b'F'))
    })
}

thread_local! {
    static EVERY_FIELD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` writing the IR's binary form (Format 14.4, `ir.compact`): a
/// format without field names cannot leave a field out, so every field
/// `ir.json` leaves out when it holds its default ([`skip_none`],
/// [`skip_false`], [`skip_empty`]) is written.
pub fn writing_every_field<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            EVERY_FIELD.with(|b| b.set(self.0));
        }
    }
    let _reset = Reset(EVERY_FIELD.with(|b| b.replace(true)));
    f()
}

/// Whether every field is written ([`writing_every_field`]).
pub fn writes_every_field() -> bool {
    EVERY_FIELD.with(std::cell::Cell::get)
}

/// `skip_serializing_if` of an optional field `ir.json` leaves out when
/// absent (read back as absent: `#[serde(default)]`).
pub fn skip_none<T>(o: &Option<T>) -> bool {
    o.is_none() && !writes_every_field()
}

/// `skip_serializing_if` of a flag `ir.json` leaves out when false.
pub fn skip_false(b: &bool) -> bool {
    !*b && !writes_every_field()
}

/// `skip_serializing_if` of a list `ir.json` leaves out when empty.
#[allow(clippy::ptr_arg)] // serde passes the field: `&Vec<T>`.
pub fn skip_empty<T>(v: &Vec<T>) -> bool {
    v.is_empty() && !writes_every_field()
}

/// A field of `ir.json` that the IR's binary form (`ir.compact`, Format
/// 14.4) leaves out because its reader derives it (a rule's lowered
/// changes): itself in `ir.json`, nothing in a format without types; read
/// from one as its default, which the reader then replaces.
pub mod json_only {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Writes `v` (nothing in a binary format).
    pub fn serialize<T: Serialize, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            v.serialize(s)
        } else {
            s.serialize_unit()
        }
    }

    /// Reads what [`serialize`] wrote (the default in a binary format).
    pub fn deserialize<'de, T: Deserialize<'de> + Default, D: Deserializer<'de>>(
        d: D,
    ) -> Result<T, D::Error> {
        if d.is_human_readable() {
            T::deserialize(d)
        } else {
            <()>::deserialize(d).map(|()| T::default())
        }
    }
}

/// JSON values the IR carries as they are (a default header's players and
/// characters): themselves in `ir.json`, their JSON text in a format
/// without types (`ir.compact`), which cannot read a value of unknown shape.
pub mod json_values {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    /// Writes `v`.
    pub fn serialize<S: Serializer>(v: &Vec<Value>, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            v.serialize(s)
        } else {
            let text = serde_json::to_string(v).map_err(serde::ser::Error::custom)?;
            s.serialize_str(&text)
        }
    }

    /// Reads what [`serialize`] wrote.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Value>, D::Error> {
        if d.is_human_readable() {
            Vec::<Value>::deserialize(d)
        } else {
            // Read where the string lies (no copy of the text).
            struct Text;
            impl serde::de::Visitor<'_> for Text {
                type Value = Vec<Value>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("a string holding a JSON list")
                }
                fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Vec<Value>, E> {
                    serde_json::from_str(v).map_err(E::custom)
                }
            }
            d.deserialize_str(Text)
        }
    }
}

#[cfg(test)]
mod json_depth_tests {
    use super::*;

    #[test]
    fn depth_skips_strings_and_escapes() {
        assert_eq!(json_depth(r#"{"a":[1,{"b":"[[[{"}]}"#), 3);
        assert_eq!(json_depth(r#"["\"", "\\[", [[]]]"#), 3);
        assert_eq!(json_depth("1"), 0);
        // Many brackets inside strings: counted by the quick test, not by
        // the walk.
        let text = format!("[{:?}]", "[".repeat(500));
        assert!(!nests_deeper_than(&text, 100));
        let deep = format!("{}{}", "[{\"a\":".repeat(51), "1}]".repeat(51));
        assert_eq!(json_depth(&deep), 102);
        assert!(nests_deeper_than(&deep, 101));
        assert!(!nests_deeper_than(&deep, 102));
    }
}

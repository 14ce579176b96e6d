//! State values (Format 8.2, 8.3): what a state slot holds, how a JSON value
//! is read into one exactly, how values are normalized, and how they are
//! written back as JSON.

use std::str::FromStr;
use std::sync::Arc;

use rust_decimal::{Decimal, RoundingStrategy};
use serde_json::Value as Json;

use crate::model::{ScalarType, VarType};

/// A value in a state slot (Format 8.2). Cloning is cheap: strings, lists and
/// maps are shared.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Val {
    /// No value: an absent derived variable (Format 8.1).
    Absent,
    /// `int`.
    Int(i64),
    /// `number`: an exact decimal.
    Num(#[serde(with = "decimal_text")] Decimal),
    /// `bool`.
    Bool(bool),
    /// `string`.
    Str(#[serde(deserialize_with = "crate::wire::shared_str")] Arc<str>),
    /// `list(T)`.
    List(Arc<[Val]>),
    /// `map(string, T)`, and the present keys of a `"*"` keyed variable; keys
    /// in code point order.
    Map(ValMap),
}

impl Val {
    /// Feeds the value to `h` in a canonical form: the same value feeds the
    /// same bytes (a number by its decimal with its scale, which rendering
    /// shows), different values different bytes (each kind tagged, each
    /// list and map with its length).
    pub fn hash_canonical<H: std::hash::Hasher>(&self, h: &mut H) {
        use std::hash::Hash;
        match self {
            Val::Absent => h.write_u8(0),
            Val::Int(i) => {
                h.write_u8(1);
                h.write_i64(*i);
            }
            Val::Num(d) => {
                h.write_u8(2);
                d.serialize().hash(h);
            }
            Val::Bool(b) => {
                h.write_u8(3);
                h.write_u8(u8::from(*b));
            }
            Val::Str(s) => {
                h.write_u8(4);
                s.hash(h);
            }
            Val::List(items) => {
                h.write_u8(5);
                h.write_usize(items.len());
                for v in items.iter() {
                    v.hash_canonical(h);
                }
            }
            Val::Map(m) => {
                h.write_u8(6);
                h.write_usize(m.size());
                for (k, v) in m.iter() {
                    k.hash(h);
                    v.hash_canonical(h);
                }
            }
        }
    }
}

/// The map of a [`Val::Map`]: keys in code point order, persistent (a
/// red-black tree whose nodes are shared), so cloning a state is O(1) and a
/// change copies O(log n) nodes. States along a path, checkpoints and
/// branches share the keys they have in common, which keeps a session whose
/// messages each add a key to a `"*"` variable linear in memory (Format 16.2).
pub type ValMap = rpds::RedBlackTreeMapSync<Arc<str>, Val>;

/// Bounds and rounding of a numeric variable (Format 8.3).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Norm {
    /// Lower bound (an int or a decimal, as the variable's type).
    #[serde(with = "opt_decimal_text")]
    pub min: Option<Decimal>,
    /// Upper bound.
    #[serde(with = "opt_decimal_text")]
    pub max: Option<Decimal>,
    /// Decimal places of a `number` (default 2).
    pub places: u32,
}

impl Val {
    /// True for [`Val::Absent`].
    pub fn is_absent(&self) -> bool {
        matches!(self, Val::Absent)
    }

    /// Reads a JSON value as a value of `ty` (Format 8.2): ints must be
    /// written as integers, numbers are read exactly from their source text.
    /// `None` when the value does not fit the type.
    pub fn from_json<'a>(ty: VarType, v: impl JsonView<'a>) -> Option<Val> {
        match ty {
            VarType::Scalar(s) => scalar_from_json(s, v),
            VarType::List(s) => Some(Val::List(
                v.items()?
                    .map(|i| scalar_from_json(s, i))
                    .collect::<Option<Vec<_>>>()?
                    .into(),
            )),
            VarType::Map(s) => {
                let mut out = ValMap::new_sync();
                for (k, i) in v.members()? {
                    out.insert_mut(Arc::from(k), scalar_from_json(s, i)?);
                }
                Some(Val::Map(out))
            }
        }
    }

    /// The value as JSON (Format 8.2: numbers in plain notation without
    /// trailing fractional zeros; `-0` as `0`). Absent is `null`.
    pub fn to_json(&self) -> Json {
        match self {
            Val::Absent => Json::Null,
            Val::Int(i) => Json::from(*i),
            Val::Num(d) => decimal_json(*d),
            Val::Bool(b) => Json::Bool(*b),
            Val::Str(s) => Json::String(s.to_string()),
            Val::List(l) => Json::Array(l.iter().map(Val::to_json).collect()),
            Val::Map(m) => Json::Object(
                m.iter()
                    .map(|(k, v)| (k.to_string(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

/// Reads one scalar JSON value as `ty`.
pub fn scalar_from_json<'a>(ty: ScalarType, v: impl JsonView<'a>) -> Option<Val> {
    match ty {
        ScalarType::Int => {
            // The number's own text (serde_json's `arbitrary_precision`):
            // no copy of it.
            let text = v.number_text()?;
            if text.contains(['.', 'e', 'E']) {
                return None;
            }
            text.parse::<i64>().ok().map(Val::Int)
        }
        ScalarType::Number => decimal_from_text(v.number_text()?).map(Val::Num),
        ScalarType::Bool => v.as_bool().map(Val::Bool),
        ScalarType::String => v.as_str().map(|s| Val::Str(Arc::from(s))),
    }
}

/// Reads a JSON number exactly from its source text (Format 2.2); `-0` is 0.
pub fn json_decimal(v: &Json) -> Option<Decimal> {
    decimal_from_text(v.number_text()?)
}

/// [`json_decimal`] of a JSON number's source text.
fn decimal_from_text(text: &str) -> Option<Decimal> {
    let d = Decimal::from_str(text)
        .or_else(|_| Decimal::from_scientific(text))
        .ok()?;
    Some(if d.is_zero() { Decimal::ZERO } else { d })
}

/// Writes a decimal as a JSON number in plain notation, trailing fractional
/// zeros removed (Format 8.2, 10.4).
pub fn decimal_json(d: Decimal) -> Json {
    let text = format_decimal(d);
    serde_json::from_str::<serde_json::Number>(&text)
        .map(Json::Number)
        .unwrap_or(Json::Null)
}

/// Formats a decimal as Format 10.4 says: plain, trailing fractional zeros
/// and a trailing `.` removed, never an exponent, `-0` as `0`.
pub fn format_decimal(d: Decimal) -> String {
    let n = d.normalize();
    if n.is_zero() {
        "0".to_string()
    } else {
        n.to_string()
    }
}

impl Norm {
    /// The bounds and places a declaration states (Format 8.3; `places`
    /// defaults to 2 and is at most 28).
    pub fn of(d: &crate::model::Variable) -> Norm {
        Norm {
            min: d.min.as_ref().and_then(json_decimal),
            max: d.max.as_ref().and_then(json_decimal),
            places: d.places.unwrap_or(2).min(28),
        }
    }

    /// Rounds (numbers: half away from zero to `places`) then clamps (Format
    /// 8.3) a scalar, list item or map item of type `ty`.
    pub fn scalar(&self, ty: ScalarType, v: Val) -> Val {
        match (ty, v) {
            (ScalarType::Int, Val::Int(i)) => {
                let mut i = i;
                if let Some(min) = self.min.and_then(|m| i64::try_from(m).ok()) {
                    i = i.max(min);
                }
                if let Some(max) = self.max.and_then(|m| i64::try_from(m).ok()) {
                    i = i.min(max);
                }
                Val::Int(i)
            }
            (ScalarType::Number, Val::Num(d)) => {
                let mut d =
                    d.round_dp_with_strategy(self.places, RoundingStrategy::MidpointAwayFromZero);
                if let Some(min) = self.min
                    && d < min
                {
                    d = min;
                }
                if let Some(max) = self.max
                    && d > max
                {
                    d = max;
                }
                if d.is_zero() {
                    d = Decimal::ZERO;
                }
                Val::Num(d)
            }
            (_, v) => v,
        }
    }

    /// Normalizes a whole value of type `ty` (lists and maps item by item).
    pub fn value(&self, ty: VarType, v: Val) -> Val {
        match (ty, v) {
            (VarType::Scalar(s), v) => self.scalar(s, v),
            (VarType::List(s), Val::List(items)) if self.applies(s) => Val::List(
                items
                    .iter()
                    .map(|i| self.scalar(s, i.clone()))
                    .collect::<Vec<_>>()
                    .into(),
            ),
            (VarType::Map(s), Val::Map(m)) if self.applies(s) => Val::Map(
                m.iter()
                    .map(|(k, i)| (k.clone(), self.scalar(s, i.clone())))
                    .collect(),
            ),
            (_, v) => v,
        }
    }

    fn applies(&self, s: ScalarType) -> bool {
        matches!(s, ScalarType::Int | ScalarType::Number)
    }
}

/// Adds `amount` to `current` (Format 8.3: an int sum outside i64 saturates;
/// a decimal sum that overflows saturates at the decimal range).
pub fn add(current: &Val, amount: &Val) -> Option<Val> {
    match (current, amount) {
        (Val::Int(a), Val::Int(b)) => Some(Val::Int(a.saturating_add(*b))),
        (Val::Num(a), Val::Num(b)) => Some(Val::Num(in_range(a.saturating_add(*b)))),
        (Val::Num(a), Val::Int(b)) => Some(Val::Num(in_range(a.saturating_add(Decimal::from(*b))))),
        _ => None,
    }
}

/// The largest decimal of Format 2.2: 28 nines (the range is |x| < 10^28).
pub const MAX_DECIMAL: Decimal =
    Decimal::from_parts(0x0FFF_FFFF, 0x3E25_0261, 0x204F_CE5E, false, 0);

/// Saturates a sum outside the decimal range of Format 2.2 at its largest
/// value of that sign (8.3).
fn in_range(d: Decimal) -> Decimal {
    if d > MAX_DECIMAL {
        MAX_DECIMAL
    } else if d < -MAX_DECIMAL {
        -MAX_DECIMAL
    } else {
        d
    }
}

/// A JSON value as state values and change lists are read from it (Format
/// 8.2, 8.5): a `serde_json::Value`, or [`RawJson`], a borrowed view of
/// JSON text that builds no value. Reading is written once, generic over
/// the view, so both give the same answers.
pub trait JsonView<'a>: Copy {
    /// The string, if the value is one.
    fn as_str(self) -> Option<&'a str>;
    /// The boolean, if the value is one.
    fn as_bool(self) -> Option<bool>;
    /// A number's source text, if the value is one.
    fn number_text(self) -> Option<&'a str>;
    /// An array's items in order, if the value is one.
    fn items(self) -> Option<impl Iterator<Item = Self>>;
    /// An object's members as `serde_json::Value` keeps them (Format 2.2
    /// leaves a repeated key to the reader: a repeated key keeps its first
    /// position and its last value), if the value is one.
    fn members(self) -> Option<impl Iterator<Item = (&'a str, Self)>>;
}

impl<'a> JsonView<'a> for &'a Json {
    fn as_str(self) -> Option<&'a str> {
        Json::as_str(self)
    }
    fn as_bool(self) -> Option<bool> {
        Json::as_bool(self)
    }
    fn number_text(self) -> Option<&'a str> {
        match self {
            // The number's own text (serde_json's `arbitrary_precision`).
            Json::Number(n) => Some(n.as_str()),
            _ => None,
        }
    }
    fn items(self) -> Option<impl Iterator<Item = Self>> {
        self.as_array().map(|a| a.iter())
    }
    fn members(self) -> Option<impl Iterator<Item = (&'a str, Self)>> {
        self.as_object()
            .map(|m| m.iter().map(|(k, v)| (k.as_str(), v)))
    }
}

/// A borrowed view of the text of one JSON value that holds no escape (no
/// `\\` anywhere: every string and key is its text between its quotes),
/// read as a `serde_json::Value` of it would be without building one: an
/// array's items and an object's members are found by walking the text as
/// they are asked for. The text must be valid JSON (a `RawValue`'s is);
/// other text gives wrong answers but never a panic.
#[derive(Debug, Clone, Copy)]
pub struct RawJson<'a>(&'a str);

impl<'a> RawJson<'a> {
    /// The view of `text`, one valid JSON value, or `None` when it holds a
    /// `\\` (read it as a `serde_json::Value` then: an escape must be
    /// decoded, and a lone surrogate refuses the whole text).
    pub fn new(text: &'a str) -> Option<RawJson<'a>> {
        (!text.contains('\\')).then(|| RawJson(text.trim_matches(JSON_WS)))
    }

    fn first(self) -> Option<u8> {
        self.0.as_bytes().first().copied()
    }

    /// The members of an object, in order, repeats included.
    fn all_members(self) -> Members<'a> {
        Members(Walk {
            text: self.0,
            at: 1,
            close: b'}',
        })
    }
}

/// JSON's insignificant whitespace (RFC 8259 §2).
const JSON_WS: &[char] = &[' ', '\t', '\n', '\r'];

/// A walk over the members of one array or object of escape-free JSON
/// text, from byte `at` (after its opening bracket, or after a member).
#[derive(Clone)]
struct Walk<'a> {
    text: &'a str,
    at: usize,
    close: u8,
}

impl<'a> Walk<'a> {
    fn skip_ws(&mut self) {
        let b = self.text.as_bytes();
        while b
            .get(self.at)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    /// The value starting at `at` (after whitespace), and `at` moved past
    /// it and its separator; `None` at the closing bracket.
    fn value(&mut self) -> Option<&'a str> {
        self.skip_ws();
        let b = self.text.as_bytes();
        let start = self.at;
        let mut i = start;
        match *b.get(i)? {
            c if c == self.close => return None,
            b'"' => {
                // No escape: the string ends at the next quote.
                i += 1 + b.get(i + 1..)?.iter().position(|&c| c == b'"')? + 1;
            }
            b'[' | b'{' => {
                let (mut depth, mut in_str) = (0usize, false);
                loop {
                    let c = *b.get(i)?;
                    i += 1;
                    match c {
                        b'"' => in_str = !in_str,
                        _ if in_str => {}
                        b'[' | b'{' => depth += 1,
                        b']' | b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {
                while b.get(i).is_some_and(|c| {
                    !matches!(c, b',' | b']' | b'}' | b':' | b' ' | b'\t' | b'\n' | b'\r')
                }) {
                    i += 1;
                }
            }
        }
        let v = self.text.get(start..i)?;
        self.at = i;
        self.skip_ws();
        if matches!(b.get(self.at), Some(b',' | b':')) {
            self.at += 1;
        }
        Some(v)
    }
}

impl<'a> Iterator for Walk<'a> {
    type Item = RawJson<'a>;
    fn next(&mut self) -> Option<RawJson<'a>> {
        self.value().map(RawJson)
    }
}

/// An object's members in order, repeats included.
#[derive(Clone)]
struct Members<'a>(Walk<'a>);

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, RawJson<'a>);
    fn next(&mut self) -> Option<Self::Item> {
        let k = self.0.value()?;
        let v = self.0.value()?;
        Some((k.get(1..k.len().saturating_sub(1))?, RawJson(v)))
    }
}

/// At most this many distinct members an object's repeated keys are found
/// by comparing each key with those before it, on the stack; past that,
/// through an index.
const WALKED_MEMBERS: usize = 16;

impl<'a> JsonView<'a> for RawJson<'a> {
    fn as_str(self) -> Option<&'a str> {
        // No escape: the string is its text between the quotes.
        (self.first() == Some(b'"') && self.0.len() >= 2).then(|| &self.0[1..self.0.len() - 1])
    }
    fn as_bool(self) -> Option<bool> {
        match self.0 {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    }
    fn number_text(self) -> Option<&'a str> {
        matches!(self.first(), Some(b'-' | b'0'..=b'9')).then_some(self.0)
    }
    fn items(self) -> Option<impl Iterator<Item = Self>> {
        (self.first() == Some(b'[')).then_some(Walk {
            text: self.0,
            at: 1,
            close: b']',
        })
    }
    fn members(self) -> Option<impl Iterator<Item = (&'a str, Self)>> {
        if self.first() != Some(b'{') {
            return None;
        }
        // A repeated key: its first position, its last value. Up to
        // `WALKED_MEMBERS` distinct keys are gathered in one walk into an
        // array on the stack, each new key compared with those before it;
        // an object with more is gathered again through an index.
        let mut few = Few {
            items: [("", RawJson("")); WALKED_MEMBERS],
            len: 0,
            next: 0,
        };
        let mut more = false;
        for (k, v) in self.all_members() {
            if let Some(slot) = few.items[..few.len].iter_mut().find(|(x, _)| *x == k) {
                slot.1 = v;
            } else if few.len < WALKED_MEMBERS {
                few.items[few.len] = (k, v);
                few.len += 1;
            } else {
                more = true;
                break;
            }
        }
        Some(if !more {
            either_walked(few)
        } else {
            let mut out: Vec<(&'a str, RawJson<'a>)> = Vec::new();
            let mut index = std::collections::HashMap::new();
            for (k, v) in self.all_members() {
                match index.get(k) {
                    Some(&i) => out[i] = (k, v),
                    None => {
                        index.insert(k, out.len());
                        out.push((k, v));
                    }
                }
            }
            either_indexed(out.into_iter())
        })
    }
}

/// An object's members gathered on the stack ([`RawJson::members`]).
struct Few<'a> {
    items: [(&'a str, RawJson<'a>); WALKED_MEMBERS],
    len: usize,
    next: usize,
}

impl<'a> Iterator for Few<'a> {
    type Item = (&'a str, RawJson<'a>);
    fn next(&mut self) -> Option<Self::Item> {
        let item = self.items[..self.len].get(self.next).copied()?;
        self.next += 1;
        Some(item)
    }
}

/// The two ways [`RawJson::members`] finds repeats, as one iterator type.
enum Either<A, B> {
    Walked(A),
    Indexed(B),
}

fn either_walked<A, B>(a: A) -> Either<A, B> {
    Either::Walked(a)
}

fn either_indexed<A, B>(b: B) -> Either<A, B> {
    Either::Indexed(b)
}

impl<T, A: Iterator<Item = T>, B: Iterator<Item = T>> Iterator for Either<A, B> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        match self {
            Either::Walked(a) => a.next(),
            Either::Indexed(b) => b.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything a [`JsonView`] answers about a value, as one string
    /// (numbers also as the decimals and ints they read as).
    fn walk<'a>(v: impl JsonView<'a>) -> String {
        if let Some(s) = v.as_str() {
            return format!("s:{s}");
        }
        if let Some(b) = v.as_bool() {
            return format!("b:{b}");
        }
        if v.number_text().is_some() {
            let int = scalar_from_json(ScalarType::Int, v);
            let num = scalar_from_json(ScalarType::Number, v);
            return format!("n:{int:?}/{num:?}");
        }
        if let Some(items) = v.items() {
            return format!("[{}]", items.map(walk).collect::<Vec<_>>().join(","));
        }
        if let Some(m) = v.members() {
            let m: Vec<String> = m.map(|(k, v)| format!("{k}={}", walk(v))).collect();
            return format!("{{{}}}", m.join(","));
        }
        "null".into()
    }

    #[test]
    fn the_borrowed_view_reads_as_a_json_value_reads() {
        let mut many = String::from("{");
        for i in 0..40 {
            many.push_str(&format!("\"k{}\":{i},", i % 23));
        }
        many.push_str("\"k0\":\"last\"}");
        // 16 and 17 distinct keys, with repeats: on the stack, and not.
        let distinct = |n: usize| {
            let mut t = String::from("{");
            for i in 0..n + 4 {
                t.push_str(&format!("\"k{}\":{i},", (i * 7) % n));
            }
            t.push_str("\"k1\":[]}");
            t
        };
        let (sixteen, seventeen) = (distinct(16), distinct(17));
        for text in [
            r#"[{"add":{"a":1,"b":-2}},{"set":{"c":"x y","d":true,"e":null}}]"#,
            // A repeated key: its first position, its last value.
            r#"{"set":{"a":1},"add":{"b":2},"set":{"c":3}}"#,
            r#"{"a":{"x":1,"x":[1,2]},"b":[]}"#,
            // Brackets, commas and colons inside strings.
            r#"{"a]":"]}[{,:","b":[{"c}":"}"},[],{}],"a]":[":",","]}"#,
            r#"[[[]],[{}],{"x":[[1],[2,[3]]]},"[",-1.5e3,true,null]"#,
            // Numbers by their text: exponents, signs, zeros, places.
            r#"[1,-0,0.0,1.50,-2.25,1e2,1E2,1e+2,1.5e-3,2E-1,12345678901234567890,9007199254740993.5]"#,
            " \n [ 1 , { \"a\" : [ true , false ] } ]\t",
            r#""text""#,
            r#""""#,
            "{}",
            "[]",
            "17",
            &many,
            &sixteen,
            &seventeen,
        ] {
            let value: Json = serde_json::from_str(text).unwrap();
            let raw = RawJson::new(text).unwrap();
            assert_eq!(walk(raw), walk(&value), "{text}");
        }
        // An escape anywhere: read as a value instead.
        assert!(RawJson::new(r#"["a\"b"]"#).is_none());
    }

    fn num(s: &str) -> Val {
        Val::Num(Decimal::from_str(s).unwrap())
    }

    fn norm(places: u32, min: Option<&str>, max: Option<&str>) -> Norm {
        Norm {
            places,
            min: min.map(|m| Decimal::from_str(m).unwrap()),
            max: max.map(|m| Decimal::from_str(m).unwrap()),
        }
    }

    #[test]
    fn rounding_is_half_away_from_zero_then_clamping() {
        // Format 8.3 worked examples.
        let n = norm(2, None, None);
        assert_eq!(n.scalar(ScalarType::Number, num("12.345")), num("12.35"));
        assert_eq!(n.scalar(ScalarType::Number, num("-0.125")), num("-0.13"));
        assert_eq!(n.scalar(ScalarType::Number, num("0.005")), num("0.01"));
        let z = n.scalar(ScalarType::Number, num("-0.004"));
        assert_eq!(z.to_json().to_string(), "0");
        let n = norm(0, Some("0"), Some("10"));
        assert_eq!(n.scalar(ScalarType::Number, num("10.4")), num("10"));
        assert_eq!(n.scalar(ScalarType::Number, num("10.5")), num("10"));
        assert_eq!(n.scalar(ScalarType::Number, num("-0.5")), num("0"));
    }

    #[test]
    fn ints_clamp_and_adds_saturate() {
        let n = norm(2, None, Some("100"));
        assert_eq!(n.scalar(ScalarType::Int, Val::Int(250)), Val::Int(100));
        let s = add(&Val::Int(9223372036854775800), &Val::Int(100)).unwrap();
        assert_eq!(s, Val::Int(i64::MAX));
        assert_eq!(MAX_DECIMAL.to_string(), "9".repeat(28));
        let top = Val::Num(MAX_DECIMAL);
        assert_eq!(add(&top, &Val::Int(1)), Some(top.clone()));
        let low = Val::Num(-MAX_DECIMAL);
        assert_eq!(add(&low, &Val::Num(Decimal::NEGATIVE_ONE)), Some(low));
    }

    #[test]
    fn numbers_read_exactly_and_write_plainly() {
        let v: Json = serde_json::from_str("12345678901234567.89").unwrap();
        let d = Val::from_json(VarType::Scalar(ScalarType::Number), &v).unwrap();
        assert_eq!(d.to_json().to_string(), "12345678901234567.89");
        let v: Json = serde_json::from_str("1E+3").unwrap();
        assert_eq!(format_decimal(json_decimal(&v).unwrap()), "1000");
        assert_eq!(format_decimal(Decimal::from_str("12.50").unwrap()), "12.5");
        assert_eq!(format_decimal(Decimal::from_str("3.00").unwrap()), "3");
        let one: Json = serde_json::from_str("1.0").unwrap();
        assert!(Val::from_json(VarType::Scalar(ScalarType::Int), &one).is_none());
    }
}

/// A decimal in the IR (Format 14.4): its exact text (`"12.50"`).
mod decimal_text {
    use std::str::FromStr;

    use rust_decimal::Decimal;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(d)
    }

    /// Reads the text where the deserializer holds it (serde's `Cow<str>`
    /// would copy it into a `String` first).
    pub(crate) struct Text;

    impl serde::de::Visitor<'_> for Text {
        type Value = Decimal;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a decimal's text")
        }
        fn visit_str<E: serde::de::Error>(self, t: &str) -> Result<Decimal, E> {
            Decimal::from_str(t).map_err(E::custom)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
        d.deserialize_str(Text)
    }
}

/// An optional decimal in the IR: its text, or `null`.
pub(crate) mod opt_decimal_text {
    use rust_decimal::Decimal;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Decimal>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            // A format without types marks `Some` (JSON's `null` is enough).
            Some(d) if !s.is_human_readable() => s.serialize_some(&d.to_string()),
            Some(d) => s.collect_str(d),
            None => s.serialize_none(),
        }
    }

    struct Opt;

    impl<'de> serde::de::Visitor<'de> for Opt {
        type Value = Option<Decimal>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a decimal's text or null")
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_str(super::decimal_text::Text).map(Some)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Decimal>, D::Error> {
        d.deserialize_option(Opt)
    }
}

//! A rule's changes as written (Format 18.1, 14.4), as the IR holds them:
//! JSON text in `ir.json` (and as compile makes them), or, read from
//! `ir.compact`, the JSON value as a flat list of tokens in pre-order.
//!
//! The tokens are what `ir.compact` writes for a rule's `changes_json`
//! (this implementation's encoding `troupe-compact-3`): the value the
//! text reads as, so that its reader neither checks nor walks JSON text —
//! it lowers the changes from the tokens (through [`JsonView`], the
//! reading the lowering of `ir.json`'s text and of a bundle's values
//! share) — and makes the value (for the session file) only when the rule
//! is chosen. Tokens are checked when read: one value, each array's and
//! object's members present, an object's keys strings and each key once
//! (as a JSON value reads them: a repeated key cannot be told apart from
//! the value it reads as, and compile never writes one), numbers JSON
//! numbers, nested at most [`MAX_DEPTH`] deep (serde_json's own limit on
//! the value the text reads as).

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::value::JsonView;

/// How deep the tokens' arrays and objects may nest: the deepest value
/// serde_json reads from text (its recursion limit, 128, refuses the
/// 128th level), as for `ir.json`'s text of the same changes.
pub const MAX_DEPTH: usize = 127;

/// A rule's changes as written.
#[derive(Clone)]
pub enum WrittenChanges {
    /// JSON text (compile, `ir.json`).
    Text(Box<RawValue>),
    /// The value as tokens (`ir.compact`), checked when read.
    Tokens(Box<[Tok]>),
}

impl std::fmt::Debug for WrittenChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            WrittenChanges::Text(t) => f.write_str(t.get()),
            WrittenChanges::Tokens(_) => write!(f, "{}", Value::Array(self.values())),
        }
    }
}

impl From<Box<RawValue>> for WrittenChanges {
    fn from(t: Box<RawValue>) -> Self {
        WrittenChanges::Text(t)
    }
}

impl WrittenChanges {
    /// The changes as JSON values (Format 18.1: what the session file
    /// records); empty when they are not a list (the loader refuses an IR
    /// whose changes as written are not one).
    pub fn values(&self) -> Vec<Value> {
        match self {
            WrittenChanges::Text(t) => serde_json::from_str(t.get()).unwrap_or_default(),
            WrittenChanges::Tokens(toks) => match value_at(toks, 0) {
                Value::Array(a) => a,
                _ => Vec::new(),
            },
        }
    }

    /// The JSON text (compact for tokens, as compile writes it).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            WrittenChanges::Text(t) => t.get().into(),
            WrittenChanges::Tokens(_) => Value::Array(self.values()).to_string().into(),
        }
    }

    /// The tokens' view of the value, when held as tokens.
    pub fn tokens(&self) -> Option<TokView<'_>> {
        match self {
            WrittenChanges::Text(_) => None,
            WrittenChanges::Tokens(t) => Some(TokView(t)),
        }
    }
}

/// A string of a token: read from `ir.compact`, a range of its string
/// table's text (no allocation of its own).
pub type Small = crate::wire::TableStr;

/// One token of a JSON value in pre-order. An array or object is followed
/// by its `len` members (an object's each a [`Tok::Str`] key, then its
/// value); `size` is how many tokens it takes with them.
#[derive(Clone)]
pub enum Tok {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, its JSON text.
    Num(Small),
    /// A string (or an object's key).
    Str(Small),
    /// An array of `len` items.
    Arr {
        /// Its items.
        len: u32,
        /// Its tokens, its items' included.
        size: u32,
    },
    /// An object of `len` members.
    Obj {
        /// Its members.
        len: u32,
        /// Its tokens, its members' included.
        size: u32,
    },
}

impl Tok {
    fn size(&self) -> usize {
        match self {
            Tok::Arr { size, .. } | Tok::Obj { size, .. } => *size as usize,
            _ => 1,
        }
    }
}

/// The value at token `at` (checked tokens: every index is in range).
fn value_at(toks: &[Tok], at: usize) -> Value {
    let view = TokView(&toks[at.min(toks.len())..]);
    match view.0.first() {
        None | Some(Tok::Null) => Value::Null,
        Some(Tok::Bool(b)) => Value::Bool(*b),
        Some(Tok::Num(n)) => n
            .parse::<serde_json::Number>()
            .map_or(Value::Null, Value::Number),
        Some(Tok::Str(s)) => Value::String(s.to_string()),
        Some(Tok::Arr { .. }) => Value::Array(
            view.items()
                .into_iter()
                .flatten()
                .map(|v| value_at(v.0, 0))
                .collect(),
        ),
        Some(Tok::Obj { .. }) => Value::Object(
            view.members()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.to_string(), value_at(v.0, 0)))
                .collect(),
        ),
    }
}

/// A view of one value's tokens (its first token first).
#[derive(Clone, Copy)]
pub struct TokView<'a>(&'a [Tok]);

/// The members of an array (`step` 1) or an object (`step` 2: key, value),
/// each a view from its first token.
struct Walk<'a> {
    toks: &'a [Tok],
    at: usize,
    left: u32,
}

impl<'a> Walk<'a> {
    fn next_view(&mut self) -> Option<TokView<'a>> {
        let t = self.toks.get(self.at..)?;
        self.at += t.first()?.size();
        Some(TokView(t))
    }
}

impl<'a> Iterator for Walk<'a> {
    type Item = TokView<'a>;
    fn next(&mut self) -> Option<TokView<'a>> {
        self.left = self.left.checked_sub(1)?;
        self.next_view()
    }
}

/// An object's members (key, value).
struct Members<'a>(Walk<'a>);

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, TokView<'a>);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.left = self.0.left.checked_sub(1)?;
        let k = self.0.next_view()?.as_str()?;
        Some((k, self.0.next_view()?))
    }
}

impl<'a> JsonView<'a> for TokView<'a> {
    fn as_str(self) -> Option<&'a str> {
        match self.0.first()? {
            Tok::Str(s) => Some(s),
            _ => None,
        }
    }
    fn as_bool(self) -> Option<bool> {
        match self.0.first()? {
            Tok::Bool(b) => Some(*b),
            _ => None,
        }
    }
    fn number_text(self) -> Option<&'a str> {
        match self.0.first()? {
            Tok::Num(n) => Some(n),
            _ => None,
        }
    }
    fn items(self) -> Option<impl Iterator<Item = Self>> {
        match self.0.first()? {
            Tok::Arr { len, .. } => Some(Walk {
                toks: self.0,
                at: 1,
                left: *len,
            }),
            _ => None,
        }
    }
    /// Keys are each written once (checked when read), so the members are
    /// as written.
    fn members(self) -> Option<impl Iterator<Item = (&'a str, Self)>> {
        match self.0.first()? {
            Tok::Obj { len, .. } => Some(Members(Walk {
                toks: self.0,
                at: 1,
                left: *len,
            })),
            _ => None,
        }
    }
}

impl TokView<'_> {
    /// Whether the value is an array.
    pub fn is_array(self) -> bool {
        matches!(self.0.first(), Some(Tok::Arr { .. }))
    }
}

/// The tokens of `v`, appended to `out`.
fn tokens_of(v: &Value, out: &mut Vec<Tok>) {
    let at = out.len();
    match v {
        Value::Null => out.push(Tok::Null),
        Value::Bool(b) => out.push(Tok::Bool(*b)),
        Value::Number(n) => out.push(Tok::Num(Small::new(n.as_str()))),
        Value::String(s) => out.push(Tok::Str(Small::new(s))),
        Value::Array(a) => {
            out.push(Tok::Null);
            for x in a {
                tokens_of(x, out);
            }
            let size = (out.len() - at) as u32;
            out[at] = Tok::Arr {
                len: a.len() as u32,
                size,
            };
        }
        Value::Object(m) => {
            out.push(Tok::Null);
            for (k, x) in m {
                out.push(Tok::Str(Small::new(k)));
                tokens_of(x, out);
            }
            let size = (out.len() - at) as u32;
            out[at] = Tok::Obj {
                len: m.len() as u32,
                size,
            };
        }
    }
}

/// Checks tokens read from `ir.compact` and fills in each array's and
/// object's `size`: the value from token `at`, nested `depth` deep, ends
/// before the returned index.
fn check(toks: &mut [Tok], at: usize, depth: usize) -> Result<usize, &'static str> {
    let (len, obj) = match toks.get(at).ok_or("tokens end inside a value")? {
        Tok::Num(n) => {
            if !is_json_number(n) {
                return Err("a number token that is not a JSON number");
            }
            return Ok(at + 1);
        }
        Tok::Null | Tok::Bool(_) | Tok::Str(_) => return Ok(at + 1),
        Tok::Arr { len, .. } => (*len, false),
        Tok::Obj { len, .. } => (*len, true),
    };
    if depth >= MAX_DEPTH {
        return Err("a value nested deeper than a JSON value reads");
    }
    let mut next = at + 1;
    for i in 0..len as usize {
        if obj {
            let Some(Tok::Str(k)) = toks.get(next) else {
                return Err("an object's key that is not a string");
            };
            // Each key once: compared with the keys before it (a long
            // object's through an index).
            let key: &str = k;
            let repeated = if len <= 16 {
                let mut j = at + 1;
                let mut seen = false;
                for _ in 0..i {
                    seen |= matches!(&toks[j], Tok::Str(p) if **p == *key);
                    j += 1 + toks[j + 1].size();
                }
                seen
            } else {
                false
            };
            if repeated {
                return Err("an object with a repeated key");
            }
            next += 1;
        }
        next = check(toks, next, depth + 1)?;
    }
    if obj && len > 16 {
        let mut keys = std::collections::HashSet::with_capacity((len as usize).min(toks.len()));
        let mut j = at + 1;
        for _ in 0..len {
            if let Tok::Str(k) = &toks[j]
                && !keys.insert(&**k)
            {
                return Err("an object with a repeated key");
            }
            j += 1 + toks[j + 1].size();
        }
    }
    let size = u32::try_from(next - at).map_err(|_| "too many tokens")?;
    match &mut toks[at] {
        Tok::Arr { size: s, .. } | Tok::Obj { size: s, .. } => *s = size,
        _ => {}
    }
    Ok(next)
}

/// Whether `s` is a JSON number (RFC 8259 §6: `-`, an integer part
/// without leading zeros, a fraction, an exponent), checked in place.
fn is_json_number(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// A token as `ir.compact` writes it (an array's or object's `size` is
/// not written: its reader works it out).
enum Wire<'a> {
    Null,
    Bool(bool),
    Num(&'a str),
    Str(&'a str),
    Arr(u32),
    Obj(u32),
}

/// The kinds of [`Wire`] tokens as written.
mod kind {
    pub const NULL: u8 = 0;
    pub const FALSE: u8 = 1;
    pub const TRUE: u8 = 2;
    pub const NUM: u8 = 3;
    pub const STR: u8 = 4;
    pub const ARR: u8 = 5;
    pub const OBJ: u8 = 6;
}

/// Tokens written flat: one sequence of plain elements — the number of
/// tokens, then each token's kind followed, for a number or string, by
/// its text and, for an array or object, by its member count. Plain
/// elements, not an enum per token: reading an enum's variant and its
/// payload through serde costs several calls a token.
struct Flat<'a>(&'a [Wire<'a>]);

impl Serialize for Flat<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let payloads = self
            .0
            .iter()
            .filter(|t| !matches!(t, Wire::Null | Wire::Bool(_)))
            .count();
        let mut seq = s.serialize_seq(Some(1 + self.0.len() + payloads))?;
        seq.serialize_element(&(self.0.len() as u32))?;
        for t in self.0 {
            match t {
                Wire::Null => seq.serialize_element(&kind::NULL)?,
                Wire::Bool(false) => seq.serialize_element(&kind::FALSE)?,
                Wire::Bool(true) => seq.serialize_element(&kind::TRUE)?,
                Wire::Num(n) => {
                    seq.serialize_element(&kind::NUM)?;
                    seq.serialize_element(n)?;
                }
                Wire::Str(x) => {
                    seq.serialize_element(&kind::STR)?;
                    seq.serialize_element(x)?;
                }
                Wire::Arr(n) => {
                    seq.serialize_element(&kind::ARR)?;
                    seq.serialize_element(n)?;
                }
                Wire::Obj(n) => {
                    seq.serialize_element(&kind::OBJ)?;
                    seq.serialize_element(n)?;
                }
            }
        }
        seq.end()
    }
}

impl Serialize for WrittenChanges {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            return match self {
                WrittenChanges::Text(t) => t.serialize(s),
                WrittenChanges::Tokens(_) => Value::Array(self.values()).serialize(s),
            };
        }
        let made;
        let toks: &[Tok] = match self {
            WrittenChanges::Tokens(t) => t,
            WrittenChanges::Text(t) => {
                let v: Value = serde_json::from_str(t.get()).map_err(serde::ser::Error::custom)?;
                let mut out = Vec::new();
                tokens_of(&v, &mut out);
                made = out;
                &made
            }
        };
        let wire: Vec<Wire> = toks
            .iter()
            .map(|t| match t {
                Tok::Null => Wire::Null,
                Tok::Bool(b) => Wire::Bool(*b),
                Tok::Num(n) => Wire::Num(n),
                Tok::Str(x) => Wire::Str(x),
                Tok::Arr { len, .. } => Wire::Arr(*len),
                Tok::Obj { len, .. } => Wire::Obj(*len),
            })
            .collect();
        Flat(&wire).serialize(s)
    }
}

impl<'de> Deserialize<'de> for WrittenChanges {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<WrittenChanges, D::Error> {
        if d.is_human_readable() {
            return Box::<RawValue>::deserialize(d).map(WrittenChanges::Text);
        }
        let mut toks = d.deserialize_seq(Toks)?;
        match check(&mut toks, 0, 0) {
            Ok(end) if end == toks.len() => Ok(WrittenChanges::Tokens(toks.into_boxed_slice())),
            Ok(_) => Err(de::Error::custom("tokens after the changes as written")),
            Err(m) => Err(de::Error::custom(m)),
        }
    }
}

/// Reads the tokens written [`Flat`].
struct Toks;

impl<'de> Visitor<'de> for Toks {
    type Value = Vec<Tok>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("the tokens of a JSON value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Tok>, A::Error> {
        let short = || de::Error::custom("tokens cut short");
        let n: u32 = seq.next_element()?.ok_or_else(short)?;
        // At most as many tokens as the sequence has elements (a count
        // that says more is refused below), and never much room ahead.
        let room = (n as usize).min(seq.size_hint().unwrap_or(0)).min(4096);
        let mut out = Vec::with_capacity(room);
        for _ in 0..n {
            let k: u8 = seq.next_element()?.ok_or_else(short)?;
            out.push(match k {
                kind::NULL => Tok::Null,
                kind::FALSE => Tok::Bool(false),
                kind::TRUE => Tok::Bool(true),
                kind::NUM => Tok::Num(seq.next_element_seed(SmallStr)?.ok_or_else(short)?),
                kind::STR => Tok::Str(seq.next_element_seed(SmallStr)?.ok_or_else(short)?),
                kind::ARR => Tok::Arr {
                    len: seq.next_element()?.ok_or_else(short)?,
                    size: 0,
                },
                kind::OBJ => Tok::Obj {
                    len: seq.next_element()?.ok_or_else(short)?,
                    size: 0,
                },
                _ => return Err(de::Error::custom("not a token of a JSON value")),
            });
        }
        // Nothing may follow them (postcard says how many elements are
        // left; a format that does not is asked for one more).
        let more = match seq.size_hint() {
            Some(left) => left > 0,
            None => seq.next_element::<de::IgnoredAny>()?.is_some(),
        };
        if more {
            return Err(de::Error::custom("elements after the tokens"));
        }
        Ok(out)
    }
}

/// Reads a token's string (a range of the string table when read from
/// `ir.compact`).
struct SmallStr;

impl<'de> de::DeserializeSeed<'de> for SmallStr {
    type Value = Small;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Small, D::Error> {
        Small::deserialize(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binary(w: &WrittenChanges) -> Vec<u8> {
        crate::wire::writing_every_field(|| postcard::to_allocvec(w).unwrap())
    }

    fn read(b: &[u8]) -> Result<WrittenChanges, postcard::Error> {
        postcard::from_bytes(b)
    }

    fn text(t: &str) -> WrittenChanges {
        RawValue::from_string(t.to_string()).unwrap().into()
    }

    /// The tokens read back give the value the text reads as, its text, and
    /// the same lowering view as the value.
    #[test]
    fn tokens_read_back_to_the_value_of_the_text() {
        let long = "x".repeat(40);
        for t in [
            r#"[{"add":{"patience":-30,"impression":-15}}]"#.to_string(),
            r#"[{"set":{"a":1.50,"b":"two","c":true,"d":null,"e":[1,[2]],"f":{}}},{"enter":["kai"]}]"#.into(),
            format!(r#"[{{"set":{{"{long}":"{long}"}}}}]"#),
            r#"[]"#.into(),
            r#"[{"set":{"s":"a\"b\\c\u00e9"}}]"#.into(),
        ] {
            let w = text(&t);
            let back = read(&binary(&w)).unwrap();
            assert!(matches!(back, WrittenChanges::Tokens(_)));
            assert_eq!(back.values(), w.values(), "{t}");
            assert_eq!(back.text(), serde_json::to_string(&w.values()).unwrap());
            assert_eq!(binary(&back), binary(&w));
            assert_eq!(
                serde_json::to_string(&back).unwrap(),
                serde_json::to_string(&w.values()).unwrap()
            );
        }
    }

    /// A number token is checked as serde_json reads a number (with
    /// `arbitrary_precision`, as this crate builds it).
    #[test]
    fn number_tokens_are_json_numbers() {
        for t in [
            "0", "-0", "7", "-30", "1.50", "0.5e-3", "1E+9", "12e400", "1", "1x", "01", "1.", ".5",
            "-", "1e", "+1", " 1", "1 ", "0x1", "NaN", "--1", "1.5.5", "",
        ] {
            let serde = serde_json::from_str::<serde_json::Number>(t).is_ok() && t.trim() == t;
            assert_eq!(is_json_number(t), serde, "{t:?}");
        }
    }

    /// Tokens that are not one JSON value of the text's reading are
    /// refused, never a panic: a value cut short, tokens after it, a key
    /// that is not a string, a repeated key (short and long objects), a
    /// number that is not one, nesting past serde_json's limit.
    #[test]
    fn tokens_that_are_not_one_value_are_refused() {
        let enc = |toks: &[Wire]| postcard::to_allocvec(&Flat(toks)).unwrap();
        use Wire::*;
        let bad: Vec<Vec<Wire>> = vec![
            vec![Arr(2), Null],
            vec![Arr(0), Null],
            vec![Obj(1), Null, Null],
            vec![Obj(2), Str("a"), Null, Str("a"), Null],
            vec![Num("1x")],
            vec![Num("")],
            vec![Num("01")],
            vec![Num("1.")],
            vec![Num("-")],
            vec![Num("1e")],
            vec![Num("+1")],
            vec![Num(" 1")],
            vec![],
        ];
        for toks in &bad {
            assert!(read(&enc(toks)).is_err());
        }
        // A token count that says fewer or more tokens than follow.
        let mut b = enc(&[Arr(1), Null]);
        assert!(read(&b).is_ok());
        b[1] = 1;
        assert!(read(&b).is_err());
        b[1] = 3;
        assert!(read(&b).is_err());
        let keys: Vec<String> = (0..20).map(|i| format!("k{i}")).collect();
        let mut long = vec![Obj(20)];
        for k in &keys {
            long.push(Str(k));
            long.push(Null);
        }
        assert!(read(&enc(&long)).is_ok());
        long[39] = Str("k0");
        assert!(read(&enc(&long)).is_err());
        let nest = |n: usize| {
            let mut t: Vec<Wire> = (0..n).map(|_| Arr(1)).collect();
            t.push(Null);
            t
        };
        assert!(read(&enc(&nest(127))).is_ok());
        assert!(read(&enc(&nest(128))).is_err());
        // Any truncation or byte change: read or refused, never a panic.
        let b = binary(&text(r#"[{"add":{"patience":-30,"impression":-15}}]"#));
        for n in 0..b.len() {
            let _ = read(&b[..n]);
            for x in [0u8, 1, 5, 0x7f, 0xff] {
                let mut e = b.clone();
                e[n] = x;
                if let Ok(w) = read(&e) {
                    let _ = (w.values(), w.text());
                }
            }
        }
    }
}

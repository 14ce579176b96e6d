//! CEL runtime values (Format 11.1) and their JSON forms: plain JSON
//! (`serde_json::Value`) and the tagged JSON of the CEL test data
//! (`{"int": "5"}`, `{"list": [...]}`, `{"map": [[k, v], ...]}`).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use indexmap::{Equivalent, IndexMap};
use serde_json::{json, Map as JsonMap, Value as Json};

/// A CEL value. Cloning is cheap: strings, lists and maps are shared.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum Value {
    /// `bool`.
    Bool(bool),
    /// `int`.
    Int(i64),
    /// `double`.
    Double(f64),
    /// `string`.
    String(#[serde(deserialize_with = "crate::wire::shared_str")] Arc<str>),
    /// `list(T)`.
    List(Arc<Vec<Value>>),
    /// `map(K, V)`; entries keep their insertion order (serialized as a
    /// list of `[key, value]` pairs: keys need not be strings).
    Map(#[serde(with = "map_pairs")] Arc<MapValue>),
}

/// A map key: CEL allows bool, int and string keys in Troupe's subset.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Key {
    /// A bool key.
    Bool(bool),
    /// An int key.
    Int(i64),
    /// A string key.
    String(Arc<str>),
}

/// A borrowed map key, to look up without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRef<'a> {
    /// A bool key.
    Bool(bool),
    /// An int key.
    Int(i64),
    /// A string key.
    Str(&'a str),
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_ref().hash(state)
    }
}

impl Hash for KeyRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            KeyRef::Bool(b) => {
                0u8.hash(state);
                b.hash(state)
            }
            KeyRef::Int(i) => {
                1u8.hash(state);
                i.hash(state)
            }
            KeyRef::Str(s) => {
                2u8.hash(state);
                s.hash(state)
            }
        }
    }
}

impl Equivalent<Key> for KeyRef<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        *self == key.as_ref()
    }
}

impl Key {
    /// The key as a borrowed key.
    pub fn as_ref(&self) -> KeyRef<'_> {
        match self {
            Key::Bool(b) => KeyRef::Bool(*b),
            Key::Int(i) => KeyRef::Int(*i),
            Key::String(s) => KeyRef::Str(s),
        }
    }

    /// The key as a value.
    pub fn to_value(&self) -> Value {
        match self {
            Key::Bool(b) => Value::Bool(*b),
            Key::Int(i) => Value::Int(*i),
            Key::String(s) => Value::String(s.clone()),
        }
    }
}

/// The entries of a map value.
pub type MapValue = IndexMap<Key, Value, foldhash::fast::RandomState>;

impl<'a> KeyRef<'a> {
    /// The key a value stands for in a lookup (`in`, `[]`, `has`); a double
    /// with an integral value looks up the int key (CEL numeric equality).
    /// `None` when the value cannot be a key (a list, map or fractional double).
    pub fn from_value(v: &'a Value) -> Option<KeyRef<'a>> {
        match v {
            Value::Bool(b) => Some(KeyRef::Bool(*b)),
            Value::Int(i) => Some(KeyRef::Int(*i)),
            Value::String(s) => Some(KeyRef::Str(s)),
            Value::Double(d) => {
                let i = *d as i64;
                (i as f64 == *d && d.is_finite() && *d < 9.2e18).then_some(KeyRef::Int(i))
            }
            _ => None,
        }
    }
}

impl Value {
    /// The type of a bound value (`troupe cel eval --var`, `cel_eval`):
    /// lists and maps take their elements' common type, or `dyn` when they
    /// differ or are empty.
    pub fn bound_type(&self) -> super::types::Type {
        use super::types::Type;
        fn common<'a>(mut it: impl Iterator<Item = &'a Value>) -> Type {
            let Some(first) = it.next() else {
                return Type::Dyn;
            };
            let t = first.bound_type();
            if it.all(|v| v.bound_type() == t) {
                t
            } else {
                Type::Dyn
            }
        }
        match self {
            Value::Bool(_) => Type::Bool,
            Value::Int(_) => Type::Int,
            Value::Double(_) => Type::Double,
            Value::String(_) => Type::String,
            Value::List(l) => Type::list(common(l.iter())),
            Value::Map(m) => Type::map(Type::String, common(m.values())),
        }
    }

    /// A string value.
    pub fn string(s: &str) -> Value {
        Value::String(Arc::from(s))
    }

    /// The CEL type name of the value's kind (`int`, `list`, ...), for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Double(_) => "double",
            Value::String(_) => "string",
            Value::List(_) => "list",
            Value::Map(_) => "map",
        }
    }

    /// The bool, if the value is one.
    #[cfg(any(test, feature = "internals"))]
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// CEL equality (`==`): numeric values compare by value across int and
    /// double (heterogeneous equality), NaN equals nothing, lists elementwise,
    /// maps as sets of entries; values of different kinds are unequal.
    pub fn cel_eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Double(a), Value::Double(b)) => a == b,
            (Value::Int(a), Value::Double(b)) | (Value::Double(b), Value::Int(a)) => {
                int_double_eq(*a, *b)
            }
            (Value::String(a), Value::String(b)) => a == b,
            (Value::List(a), Value::List(b)) => {
                Arc::ptr_eq(a, b)
                    || (a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.cel_eq(y)))
            }
            (Value::Map(a), Value::Map(b)) => {
                a.len() == b.len()
                    && a.iter().all(|(k, v)| match b.get(&k.as_ref()) {
                        Some(w) => v.cel_eq(w),
                        None => false,
                    })
            }
            _ => false,
        }
    }

    /// Converts plain JSON to a value: numbers without a fraction or exponent
    /// that fit i64 become `int`, other numbers `double`; `null` is refused.
    pub fn from_json(j: &Json) -> Result<Value, String> {
        Ok(match j {
            Json::Null => return Err("null is not a CEL value in Troupe".into()),
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Value::Int(i)
                } else if let Some(f) = n.as_f64() {
                    Value::Double(f)
                } else {
                    return Err(format!("number {n} is out of range"));
                }
            }
            Json::String(s) => Value::string(s),
            Json::Array(a) => Value::List(Arc::new(
                a.iter().map(Value::from_json).collect::<Result<_, _>>()?,
            )),
            Json::Object(o) => {
                let mut m = MapValue::with_capacity_and_hasher(o.len(), Default::default());
                for (k, v) in o {
                    m.insert(Key::String(Arc::from(k.as_str())), Value::from_json(v)?);
                }
                Value::Map(Arc::new(m))
            }
        })
    }

    /// Converts the value to plain JSON. Non-finite doubles become strings
    /// (`"NaN"`, `"Infinity"`, `"-Infinity"`); map keys become strings.
    pub fn to_json(&self) -> Json {
        match self {
            Value::Bool(b) => Json::Bool(*b),
            Value::Int(i) => json!(i),
            Value::Double(d) => double_json(*d),
            Value::String(s) => Json::String(s.to_string()),
            Value::List(l) => Json::Array(l.iter().map(Value::to_json).collect()),
            Value::Map(m) => {
                let mut o = JsonMap::new();
                for (k, v) in m.iter() {
                    let key = match k {
                        Key::Bool(b) => b.to_string(),
                        Key::Int(i) => i.to_string(),
                        Key::String(s) => s.to_string(),
                    };
                    o.insert(key, v.to_json());
                }
                Json::Object(o)
            }
        }
    }

    /// Reads a tagged value of the CEL test data (`data/cel/FORMAT.md`):
    /// `{"bool": b}`, `{"int": "decimal"}`, `{"double": n | "NaN" | "Infinity" |
    /// "-Infinity"}`, `{"string": s}`, `{"list": [..]}`, `{"map": [[k, v], ..]}`.
    /// Other tags (uint, bytes, null, ...) are errors.
    pub fn from_tagged(j: &Json) -> Result<Value, String> {
        let o = j
            .as_object()
            .filter(|o| o.len() == 1)
            .ok_or_else(|| format!("a tagged value is an object with one key, not {j}"))?;
        let (tag, v) = o.iter().next().ok_or("empty tagged value")?;
        let bad = || format!("bad tagged value {j}");
        Ok(match tag.as_str() {
            "bool" => Value::Bool(v.as_bool().ok_or_else(bad)?),
            "int" => Value::Int(match v {
                Json::String(s) => s.parse().map_err(|_| bad())?,
                Json::Number(n) => n.as_i64().ok_or_else(bad)?,
                _ => return Err(bad()),
            }),
            "double" => Value::Double(match v {
                Json::String(s) => match s.as_str() {
                    "NaN" => f64::NAN,
                    "Infinity" => f64::INFINITY,
                    "-Infinity" => f64::NEG_INFINITY,
                    _ => s.parse().map_err(|_| bad())?,
                },
                Json::Number(n) => n.as_f64().ok_or_else(bad)?,
                _ => return Err(bad()),
            }),
            "string" => Value::string(v.as_str().ok_or_else(bad)?),
            "list" => Value::List(Arc::new(
                v.as_array()
                    .ok_or_else(bad)?
                    .iter()
                    .map(Value::from_tagged)
                    .collect::<Result<_, _>>()?,
            )),
            "map" => {
                let mut m = MapValue::default();
                for e in v.as_array().ok_or_else(bad)? {
                    let pair = e.as_array().filter(|p| p.len() == 2).ok_or_else(bad)?;
                    let k = Value::from_tagged(&pair[0])?;
                    let key = k.to_key().ok_or_else(bad)?;
                    m.insert(key, Value::from_tagged(&pair[1])?);
                }
                Value::Map(Arc::new(m))
            }
            other => return Err(format!("`{other}` values are not in Troupe's CEL subset")),
        })
    }

    /// The tagged JSON form (see [`Value::from_tagged`]).
    #[cfg(any(test, feature = "internals"))]
    pub fn to_tagged(&self) -> Json {
        match self {
            Value::Bool(b) => json!({ "bool": b }),
            Value::Int(i) => json!({ "int": i.to_string() }),
            Value::Double(d) => json!({ "double": double_json(*d) }),
            Value::String(s) => json!({ "string": s.as_ref() }),
            Value::List(l) => json!({ "list": l.iter().map(Value::to_tagged).collect::<Vec<_>>() }),
            Value::Map(m) => json!({
                "map": m.iter().map(|(k, v)| json!([k.to_value().to_tagged(), v.to_tagged()])).collect::<Vec<_>>()
            }),
        }
    }

    /// The map key this value is, when it can be one (bool, int, string).
    pub fn to_key(&self) -> Option<Key> {
        match self {
            Value::Bool(b) => Some(Key::Bool(*b)),
            Value::Int(i) => Some(Key::Int(*i)),
            Value::String(s) => Some(Key::String(s.clone())),
            _ => None,
        }
    }
}

fn int_double_eq(i: i64, d: f64) -> bool {
    // Exact comparison: i64 → f64 may round, so compare through i128 when the
    // double is integral and in range.
    if d.fract() != 0.0 || !d.is_finite() || !(-9.3e18..9.3e18).contains(&d) {
        return false;
    }
    (d as i128) == i128::from(i)
}

fn double_json(d: f64) -> Json {
    if d.is_nan() {
        Json::String("NaN".into())
    } else if d.is_infinite() {
        Json::String(if d > 0.0 { "Infinity" } else { "-Infinity" }.into())
    } else {
        // `json!(f64)` keeps the shortest round-trip text.
        serde_json::Number::from_f64(d)
            .map(Json::Number)
            .unwrap_or(Json::Null)
    }
}

impl PartialEq for Value {
    /// Structural equality as the test data compares values: kinds must
    /// match (int ≠ double), maps ignore order, NaN equals NaN, 0.0 == -0.0.
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Double(a), Value::Double(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Value::String(a), Value::String(b)) => a == b,
            (Value::List(a), Value::List(b)) => a == b,
            (Value::Map(a), Value::Map(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(k, v)| b.get(&k.as_ref()).is_some_and(|w| v == w))
            }
            _ => false,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::String(s) => write!(f, "{}", Json::String(s.to_string())),
            Value::Double(d) if d.is_finite() && d.fract() == 0.0 && d.abs() < 1e16 => {
                write!(f, "{d:.1}")
            }
            Value::List(l) => {
                f.write_str("[")?;
                for (i, v) in l.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Value::Map(m) => {
                f.write_str("{")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: {v}", k.to_value())?;
                }
                f.write_str("}")
            }
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Double(d) => write!(f, "{d}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagged_round_trip() {
        let j: Json = serde_json::from_str(
            r#"{"map": [[{"string": "a"}, {"list": [{"int": "-9223372036854775808"}, {"double": "NaN"}, {"double": 1.38e-23}]}]]}"#,
        )
        .unwrap();
        let v = Value::from_tagged(&j).unwrap();
        assert_eq!(Value::from_tagged(&v.to_tagged()).unwrap(), v);
        assert!(Value::from_tagged(&json!({"uint": "1"})).is_err());
    }

    #[test]
    fn cel_equality_is_numeric_across_kinds() {
        assert!(Value::Int(1).cel_eq(&Value::Double(1.0)));
        assert!(!Value::Int(i64::MAX).cel_eq(&Value::Double(super::super::eval::TWO_63)));
        assert!(!Value::Double(f64::NAN).cel_eq(&Value::Double(f64::NAN)));
        assert!(!Value::Int(1).cel_eq(&Value::string("1")));
    }

    #[test]
    fn plain_json() {
        let v = Value::from_json(&json!({"a": [1, 2.5, "x", true]})).unwrap();
        assert_eq!(v.to_json(), json!({"a": [1, 2.5, "x", true]}));
        assert!(Value::from_json(&json!(null)).is_err());
    }
}

/// Serializes a map value as its `[key, value]` pairs in order (the IR,
/// Format 14.4): CEL map keys may be bools or ints, which JSON object keys
/// cannot be.
mod map_pairs {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serializer};

    use super::{Key, MapValue, Value};

    pub fn serialize<S: Serializer>(m: &Arc<MapValue>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(m.iter())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<MapValue>, D::Error> {
        let pairs = Vec::<(Key, Value)>::deserialize(d)?;
        Ok(Arc::new(pairs.into_iter().collect()))
    }
}

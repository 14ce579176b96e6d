//! A bundle read only when something needs it (Format 14.4): a package
//! whose compiled form is used keeps `bundle.json`'s bytes and parses them
//! the first time a caller asks for the bundle (a session whose header
//! seats other characters, a query that compiles an expression).

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

/// A checked bundle, held as a value or as the bytes of `bundle.json`
/// parsed on first use. Cloning is cheap (shared). Dereferences to the
/// bundle's JSON value; bytes that do not parse (never the case for a
/// package whose hashes agree) read as `null`.
#[derive(Clone, Default)]
pub struct LazyBundle(Arc<Inner>);

#[derive(Default)]
struct Inner {
    bytes: Option<Vec<u8>>,
    value: OnceLock<Value>,
}

impl LazyBundle {
    /// A bundle already parsed.
    pub fn from_value(value: Value) -> LazyBundle {
        let cell = OnceLock::new();
        let _ = cell.set(value);
        LazyBundle(Arc::new(Inner {
            bytes: None,
            value: cell,
        }))
    }

    /// The bytes of `bundle.json`, parsed when first needed (kept as
    /// given, not copied).
    pub fn from_bytes(bytes: Vec<u8>) -> LazyBundle {
        LazyBundle(Arc::new(Inner {
            bytes: Some(bytes),
            value: OnceLock::new(),
        }))
    }

    /// Whether the bundle has been parsed (or was given parsed).
    pub fn is_parsed(&self) -> bool {
        self.0.value.get().is_some()
    }

    /// The bundle's value (parsing it now if it was not yet).
    pub fn value(&self) -> &Value {
        self.0.value.get_or_init(|| {
            self.0
                .bytes
                .as_deref()
                .and_then(|b| serde_json::from_slice(b).ok())
                .unwrap_or(Value::Null)
        })
    }
}

impl Deref for LazyBundle {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.value()
    }
}

impl From<Value> for LazyBundle {
    fn from(v: Value) -> LazyBundle {
        LazyBundle::from_value(v)
    }
}

impl fmt::Debug for LazyBundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.value.get() {
            Some(v) => f.debug_tuple("LazyBundle").field(v).finish(),
            None => f.write_str("LazyBundle(<unparsed>)"),
        }
    }
}

impl fmt::Display for LazyBundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.value(), f)
    }
}

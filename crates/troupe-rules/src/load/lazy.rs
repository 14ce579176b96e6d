//! A bundle read only when something needs it (Format 14.4): a package
//! whose compiled form is used does not hold `bundle.json` (a session needs
//! only the IR); the first caller that asks for the bundle (a session whose
//! header seats other characters, a query that compiles an expression)
//! reads it again from the package file, with its hash checked, or parses
//! the bytes kept for a package that was never a file.

use std::fmt;
use std::ops::Deref;
use std::path::PathBuf;
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
    /// A package file and the hash its `bundle.json` had when it was
    /// opened (`content_hash`).
    file: Option<(PathBuf, String)>,
    value: OnceLock<Value>,
}

/// `bundle.json` of the package at `path` when its hash is still `hash`;
/// `None` when the file is gone, changed or unreadable.
fn reread(path: &std::path::Path, hash: &str) -> Option<Vec<u8>> {
    let name = path.display().to_string();
    let bytes =
        super::text::read_at_most(&name, path, super::limits::MAX_PACKAGE_FILE_BYTES).ok()?;
    let screened = super::screen_package(&name, &bytes).value?;
    let (_, bundle) = screened
        .kept
        .into_iter()
        .find(|(k, _)| k == "bundle.json")?;
    (super::compiled::content_hash(&bundle) == hash).then_some(bundle)
}

impl LazyBundle {
    /// A bundle already parsed.
    pub fn from_value(value: Value) -> LazyBundle {
        let cell = OnceLock::new();
        let _ = cell.set(value);
        LazyBundle(Arc::new(Inner {
            value: cell,
            ..Inner::default()
        }))
    }

    /// The bytes of `bundle.json`, parsed when first needed (kept as
    /// given, not copied).
    pub fn from_bytes(bytes: Vec<u8>) -> LazyBundle {
        LazyBundle(Arc::new(Inner {
            bytes: Some(bytes),
            ..Inner::default()
        }))
    }

    /// `bundle.json` of the package file at `path`, whose hash was checked
    /// to be `hash` when it was opened: nothing is held until a caller asks
    /// for the bundle, which is then read again from the file. A file that
    /// has gone or whose `bundle.json` no longer has that hash reads as
    /// `null`, as bytes that do not parse do.
    pub fn from_package_file(path: PathBuf, hash: String) -> LazyBundle {
        LazyBundle(Arc::new(Inner {
            file: Some((path, hash)),
            ..Inner::default()
        }))
    }

    /// Whether the bundle has been parsed (or was given parsed).
    #[cfg(any(test, feature = "internals"))]
    pub fn is_parsed(&self) -> bool {
        self.0.value.get().is_some()
    }

    /// The bundle's value (parsing it now if it was not yet).
    pub fn value(&self) -> &Value {
        self.0.value.get_or_init(|| {
            let reread = match (&self.0.bytes, &self.0.file) {
                (None, Some((path, hash))) => reread(path, hash),
                _ => None,
            };
            self.0
                .bytes
                .as_deref()
                .or(reread.as_deref())
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

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
pub mod session;
pub mod types;

pub use bundle::*;
pub use session::*;
pub use types::{ScalarType, VarType};

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Reads the array at `value[field]` item by item, keeping each item's index.
/// Items that do not deserialize as `T` are skipped (their schema diagnostics
/// have been reported already).
pub fn read_items<T: DeserializeOwned>(value: &Value, field: &str) -> Vec<(usize, T)> {
    match value.get(field) {
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, v)| serde_json::from_value(v.clone()).ok().map(|t| (i, t)))
            .collect(),
        _ => Vec::new(),
    }
}

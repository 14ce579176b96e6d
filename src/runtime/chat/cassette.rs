//! Cassettes (Format 24.5): recorded requests and their answers, so a
//! model-backed session can be replayed with no model.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// A cassette's interactions: each request in canonical form (the request
/// body, never a header) with the answer's body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cassette {
    interactions: Vec<(Value, Value)>,
    used: Vec<bool>,
}

/// The largest cassette read, in bytes (Format 16).
pub const MAX_CASSETTE_BYTES: u64 = 64 << 20;

impl Cassette {
    /// Reads a cassette file; `Err` says why it cannot be used.
    pub fn read(path: &Path) -> Result<Cassette, String> {
        let len = std::fs::metadata(path)
            .map_err(|e| format!("cannot read the cassette {}: {e}", path.display()))?
            .len();
        if len > MAX_CASSETTE_BYTES {
            return Err(format!(
                "the cassette {} is {len} bytes; at most {MAX_CASSETTE_BYTES}",
                path.display()
            ));
        }
        let bytes = std::fs::read(path)
            .map_err(|e| format!("cannot read the cassette {}: {e}", path.display()))?;
        let doc: Value = serde_json::from_slice(&bytes)
            .map_err(|e| format!("the cassette {} is not JSON: {e}", path.display()))?;
        Cassette::from_value(&doc).map_err(|e| format!("the cassette {}: {e}", path.display()))
    }

    /// A cassette from its JSON document (Format 24.5).
    pub fn from_value(doc: &Value) -> Result<Cassette, String> {
        if doc.get("kind").and_then(Value::as_str) != Some("cassette") {
            return Err("not a cassette (`kind` is not \"cassette\")".into());
        }
        let list = doc
            .get("interactions")
            .and_then(Value::as_array)
            .ok_or("`interactions` is not a list")?;
        let mut interactions = Vec::new();
        for (i, x) in list.iter().enumerate() {
            match (x.get("request"), x.get("response")) {
                (Some(q), Some(r)) if q.is_object() => interactions.push((q.clone(), r.clone())),
                _ => {
                    return Err(format!(
                        "interaction {i} has no `request` object or `response`"
                    ))
                }
            }
        }
        Ok(Cassette {
            used: vec![false; interactions.len()],
            interactions,
        })
    }

    /// The answer body recorded for `request`: the first unused interaction
    /// whose request equals it (then marked used).
    pub fn answer(&mut self, request: &Value) -> Option<String> {
        let i = self
            .interactions
            .iter()
            .zip(&self.used)
            .position(|((q, _), used)| !used && q == request)?;
        self.used[i] = true;
        let r = &self.interactions[i].1;
        Some(match r {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }

    /// How many interactions it holds, and how many are unused.
    pub fn counts(&self) -> (usize, usize) {
        (
            self.interactions.len(),
            self.used.iter().filter(|u| !**u).count(),
        )
    }

    /// Adds an interaction: the answer is kept as JSON when it is JSON.
    pub fn push(&mut self, request: Value, body: &str) {
        let r = serde_json::from_str(body).unwrap_or_else(|_| Value::String(body.to_string()));
        self.interactions.push((request, r));
        self.used.push(true);
    }

    /// The cassette as its document (pretty JSON, one trailing newline).
    pub fn to_text(&self) -> String {
        let doc = json!({
            "troupe": "0.1",
            "kind": "cassette",
            "interactions": self.interactions.iter().map(|(q, r)| json!({"request": q, "response": r})).collect::<Vec<_>>(),
        });
        let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Writes the cassette to `path` whole (a temporary file beside it,
    /// then renamed: a crash leaves the old file or the new one).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "cassette".into());
        let tmp: PathBuf = path.with_file_name(format!(".{name}.troupe-partial"));
        std::fs::write(&tmp, self.to_text())?;
        std::fs::rename(&tmp, path)
    }
}

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
        Cassette::parse(&path.display().to_string(), &bytes)
    }

    /// A cassette from the bytes of file `file` (named in messages), read
    /// as every JSON document is (Format 16): the size, the value budget
    /// and the nesting are checked before any value is built, and a member
    /// name twice is refused (2.2). `Err` says why it cannot be used.
    pub fn parse(file: &str, bytes: &[u8]) -> Result<Cassette, String> {
        let doc = crate::load::json::parse_json_at(file, bytes, 1).map_err(|d| {
            let at = d.location.line.map_or(String::new(), |l| {
                format!(" (line {l}, column {})", d.location.column.unwrap_or(1))
            });
            format!(
                "the cassette {file} cannot be read: {} {}{at}",
                d.code, d.message
            )
        })?;
        Cassette::from_value(doc.value).map_err(|e| format!("the cassette {file}: {e}"))
    }

    /// A cassette from its JSON document (Format 24.5).
    /// It takes the document, so its requests and answers are moved, not
    /// copied.
    pub fn from_value(mut doc: Value) -> Result<Cassette, String> {
        if doc.get("kind").and_then(Value::as_str) != Some("cassette") {
            return Err("not a cassette (`kind` is not \"cassette\")".into());
        }
        let list = match doc.get_mut("interactions").map(Value::take) {
            Some(Value::Array(list)) => list,
            _ => return Err("`interactions` is not a list".into()),
        };
        drop(doc);
        let mut interactions = Vec::with_capacity(list.len());
        for (i, mut x) in list.into_iter().enumerate() {
            let q = x.get_mut("request").map(Value::take);
            let r = x.get_mut("response").map(Value::take);
            match (q, r) {
                (Some(q), Some(r)) if q.is_object() => interactions.push((q, r)),
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

    /// Where `request` first differs from the nearest recorded request
    /// (Format 24.5): `(interaction index, JSON Pointer)`, or `None` when
    /// the cassette holds no interaction. The nearest is the unused
    /// interaction (any, when all are used) with the most scalar values
    /// equal before its first difference, the earliest among equals.
    /// Linear in the cassette's size.
    pub fn nearest(&self, request: &Value) -> Option<(usize, String)> {
        let any_unused = self.used.iter().any(|u| !u);
        let mut best: Option<(usize, usize, String)> = None;
        for (i, ((q, _), used)) in self.interactions.iter().zip(&self.used).enumerate() {
            if any_unused && *used {
                continue;
            }
            let mut equal = 0;
            let mut pointer = String::new();
            if !first_difference(request, q, &mut pointer, &mut equal) {
                pointer.clear();
            }
            let at = pointer;
            if best.as_ref().is_none_or(|(_, e, _)| equal > *e) {
                best = Some((i, equal, at));
            }
        }
        best.map(|(i, _, p)| (i, p))
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
        let tmp: PathBuf = path.with_file_name(crate::load::pack::partial_file_name(&name));
        std::fs::write(&tmp, self.to_text())?;
        std::fs::rename(&tmp, path)
    }
}

/// Walks `sent` and `recorded` together depth first (Format 24.5): an
/// object's members in `sent`'s order, then those only `recorded` has; an
/// array's items in order. Returns `true` at the first difference, with
/// `pointer` pointing at it; `equal` counts the scalar values equal before.
fn first_difference(
    sent: &Value,
    recorded: &Value,
    pointer: &mut String,
    equal: &mut usize,
) -> bool {
    let len = pointer.len();
    let push = |pointer: &mut String, key: &str| {
        pointer.push('/');
        pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
    };
    match (sent, recorded) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                push(pointer, k);
                match b.get(k) {
                    Some(w) => {
                        if first_difference(v, w, pointer, equal) {
                            return true;
                        }
                    }
                    None => return true,
                }
                pointer.truncate(len);
            }
            if let Some(k) = b.keys().find(|k| !a.contains_key(*k)) {
                push(pointer, k);
                return true;
            }
            false
        }
        (Value::Array(a), Value::Array(b)) => {
            for i in 0..a.len().max(b.len()) {
                push(pointer, &i.to_string());
                match (a.get(i), b.get(i)) {
                    (Some(v), Some(w)) => {
                        if first_difference(v, w, pointer, equal) {
                            return true;
                        }
                    }
                    _ => return true,
                }
                pointer.truncate(len);
            }
            false
        }
        (a, b) if a == b => {
            *equal += 1;
            false
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cassette(requests: &[Value]) -> Cassette {
        let mut c = Cassette::default();
        for q in requests {
            c.push(q.clone(), "{}");
        }
        c.used = vec![false; requests.len()];
        c
    }

    #[test]
    fn the_pointer_names_the_first_difference_from_the_nearest_request() {
        // Derived by hand from Format 24.5: interaction 1 shares the model
        // and the first message (2 scalars) before `/messages/1/content`;
        // interaction 0 differs at once at `/model` (0 scalars).
        let c = cassette(&[
            json!({"model": "x", "messages": [{"role": "system", "content": "A"}]}),
            json!({"model": "m", "messages": [{"role": "system", "content": "A"}, {"role": "user", "content": "Hi"}]}),
        ]);
        let sent = json!({"model": "m", "messages": [{"role": "system", "content": "A"}, {"role": "user", "content": "Hello"}]});
        assert_eq!(c.nearest(&sent), Some((1, "/messages/1/content".into())));
        // An item only the recorded one has: interaction 1 shares `model`
        // and the whole first message (3 scalars) before `/messages/1`;
        // interaction 0 still differs at once at `/model`.
        let short = json!({"model": "m", "messages": [{"role": "system", "content": "A"}]});
        assert_eq!(c.nearest(&short), Some((1, "/messages/1".into())));
        // A member only the recorded one has, and an item only the sent one
        // has.
        let c = cassette(&[json!({"model": "m", "messages": [], "seed": 1})]);
        assert_eq!(
            c.nearest(&json!({"model": "m", "messages": [{"role": "user"}]})),
            Some((0, "/messages/0".into()))
        );
        assert_eq!(
            c.nearest(&json!({"model": "m", "messages": []})),
            Some((0, "/seed".into()))
        );
        assert_eq!(
            cassette(&[json!({"a/b~": 1})]).nearest(&json!({"a/b~": 2})),
            Some((0, "/a~1b~0".into()))
        );
        assert_eq!(Cassette::default().nearest(&json!({})), None);
    }
}

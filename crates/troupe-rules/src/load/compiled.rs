//! The compiled form of a package as a loader sees it (Format 14.4): the
//! IR version this implementation reads, the hashes that bind `ir.json`,
//! `bundle.json` and `manifest.json` together, and whether a package's
//! `ir.json` may be used instead of checking its `bundle.json`.
//!
//! `ir.json` is the compiled form (see `crate::compile::package`); this
//! stage checks only what binds it to its package (hashes and versions),
//! before anything reads it.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::diag::{Code, Diagnostic, Severity};

/// The IR version this implementation writes and accepts.
pub const IR_VERSION: &str = "troupe-ir-8";

/// `"sha256:" + lower-case hex SHA-256` of `bytes`.
pub fn content_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(7 + 64);
    s.push_str("sha256:");
    // Two digits a byte, without a formatted string per byte (an open
    // hashes twice).
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in digest {
        s.push(char::from(HEX[usize::from(b >> 4)]));
        s.push(char::from(HEX[usize::from(b & 15)]));
    }
    s
}

/// The bytes of `bundle.json` for `bundle`: Troupe JSON and `\n`.
pub fn bundle_json(bundle: &Value) -> Vec<u8> {
    // The scenarios written side by side: the same bytes.
    let mut out = Vec::new();
    crate::model::json::write_value_items_side_by_side(bundle, "scenarios", &mut out);
    let mut s = crate::model::json::into_string(out);
    s.push('\n');
    s.into_bytes()
}

/// An IR_MISMATCH diagnostic in entry `entry` of package `file`.
pub fn ir_mismatch(file: &str, entry: &str, pointer: &str, msg: &str) -> Diagnostic {
    Diagnostic::error(Code::IrMismatch, msg.to_string())
        .with_severity(Severity::Warning)
        .in_file(format!("{file}!{entry}"))
        .at(pointer)
}

/// The name of the compact entry (Format 14.1, 14.4): the IR of `ir.json`
/// in the implementation's compact encoding.
pub const COMPACT_ENTRY: &str = "ir.compact";

/// The bytes of `ir.compact` (Format 14.4): its record — the hash of the
/// `ir.json` entry it encodes (`ir_json_hash`, as `content_hash` writes
/// it) and the hash of `body`, one line each — then `body`, the encoded
/// IR.
pub fn compact_entry(ir_json_hash: &str, body: &[u8]) -> Vec<u8> {
    let record = compact_record(ir_json_hash, body);
    let mut out = Vec::with_capacity(record.len() + body.len());
    out.extend_from_slice(record.as_bytes());
    out.extend_from_slice(body);
    out
}

/// The record that begins `ir.compact` (Format 14.4): `ir_json_hash` and
/// the hash of `body`, one line each; [`compact_entry`] is this record
/// and then `body` (a writer can store the two without joining them).
pub fn compact_record(ir_json_hash: &str, body: &[u8]) -> String {
    let body_hash = content_hash(body);
    let mut out = String::with_capacity(ir_json_hash.len() + body_hash.len() + 2);
    out.push_str(ir_json_hash);
    out.push('\n');
    out.push_str(&body_hash);
    out.push('\n');
    out
}

/// `ir.compact` taken apart: the `ir.json` hash it records, the hash it
/// records of its encoded IR, and that IR's bytes; `None` when it does not
/// begin with its two record lines (each `sha256:` and 64 hex digits).
fn split_compact(bytes: &[u8]) -> Option<(&str, &str, &[u8])> {
    let first = record_line(bytes)?;
    let second = record_line(&bytes[RECORD_LINE + 1..])?;
    Some((first, second, &bytes[COMPACT_RECORD_LEN..]))
}

/// The length of `ir.compact`'s record (Format 14.4): two lines of
/// `sha256:` and 64 hex digits, each with its `\n`; the encoded IR follows.
pub const COMPACT_RECORD_LEN: usize = 2 * (RECORD_LINE + 1);

/// The length of a record line of `ir.compact` without its `\n`.
const RECORD_LINE: usize = 7 + 64;

/// The record line `b` begins with (`sha256:`, 64 lower-case hex digits,
/// then `\n`, which is not returned).
fn record_line(b: &[u8]) -> Option<&str> {
    let (l, rest) = (b.get(..RECORD_LINE)?, b.get(RECORD_LINE..)?);
    let l = std::str::from_utf8(l).ok()?;
    let hex = l.strip_prefix("sha256:")?;
    (rest.first() == Some(&b'\n')
        && hex
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)))
    .then_some(l)
}

/// What a loader may do with a screened package's `ir.compact` (Format
/// 14.4).
#[derive(Debug)]
pub enum Compact<'a> {
    /// The package has no `ir.compact`.
    Absent,
    /// Not used, for a cause [`verify_ir`] reports (no or unreadable
    /// `manifest.json`, `content_hash` or `ir_version` differs).
    Skipped,
    /// Not used: IR_MISMATCH at `ir.compact`.
    Refused(Diagnostic),
    /// Its record and the manifest agree: the encoded IR (still to be read
    /// and checked as `ir.json` is) and `bundle.json`'s hash, which the
    /// IR's own `bundle_hash` must equal.
    Bound {
        /// `content_hash` of `bundle.json`.
        bundle_hash: String,
        /// The encoded IR, after the record.
        ir: &'a [u8],
    },
}

/// Whether a screened package's `ir.compact` is bound to it (Format 14.4):
/// `ir.json` and `manifest.json` present, `content_hash` and `ir_version`
/// agreeing, the `ir.json` hash it records equal to the manifest's
/// `ir_hash`, and the hash it records of its encoded IR equal to those
/// bytes' hash. `ir.json` is neither read nor hashed.
pub fn verify_compact<'a, B: AsRef<[u8]>>(file: &str, entries: &'a [(String, B)]) -> Compact<'a> {
    let get = |n: &str| {
        entries
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, b)| b.as_ref())
    };
    let Some(compact) = get(COMPACT_ENTRY) else {
        return Compact::Absent;
    };
    let refused = |msg: &str| Compact::Refused(ir_mismatch(file, COMPACT_ENTRY, "", msg));
    if get("ir.json").is_none() {
        return refused("the package has ir.compact but no ir.json; ir.compact is not used");
    }
    let Some(manifest) = get("manifest.json").and_then(ManifestHashes::read) else {
        return Compact::Skipped;
    };
    let bundle_hash = content_hash(get("bundle.json").unwrap_or_default());
    if manifest.content_hash.as_deref() != Some(&bundle_hash)
        || manifest.ir_version.as_deref() != Some(IR_VERSION)
    {
        return Compact::Skipped;
    }
    let Some((ir_json_hash, ir_hash, ir)) = split_compact(compact) else {
        return refused("ir.compact does not begin with its record (the hash of ir.json and the hash of its IR, one line each); it is not used");
    };
    if manifest.ir_hash.as_deref() != Some(ir_json_hash) {
        return refused("ir.compact is not the encoding of this package's ir.json (the ir.json hash it records differs from the manifest's ir_hash); it is not used");
    }
    if content_hash(ir) != ir_hash {
        return refused("ir.compact changed after it was compiled (its IR's hash differs from the one it records); it is not used");
    }
    Compact::Bound { bundle_hash, ir }
}

/// The three fields of `manifest.json` that bind the compiled form
/// (Format 14.1, 14.4), read as `serde_json::Value` reads them — the
/// manifest a JSON object, a field that is not a string counting as
/// absent, a repeated field's last value — without building the value:
/// each field borrows from the bytes unless it holds an escape.
#[derive(Default)]
struct ManifestHashes<'a> {
    content_hash: Option<std::borrow::Cow<'a, str>>,
    ir_hash: Option<std::borrow::Cow<'a, str>>,
    ir_version: Option<std::borrow::Cow<'a, str>>,
}

impl<'a> ManifestHashes<'a> {
    /// `None` when `bytes` is not one JSON object.
    fn read(bytes: &'a [u8]) -> Option<ManifestHashes<'a>> {
        use serde::de::{Deserializer, MapAccess, Visitor};
        use serde_json::value::RawValue;
        use std::borrow::Cow;
        /// A string, borrowed when it holds no escape (serde's own
        /// `Cow<str>` always copies).
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = Cow<'de, str>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                v: &'de str,
            ) -> Result<Self::Value, E> {
                Ok(Cow::Borrowed(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Cow::Owned(v.to_string()))
            }
        }
        impl<'de> serde::de::DeserializeSeed<'de> for Text {
            type Value = Cow<'de, str>;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_str(self)
            }
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ManifestHashes<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut out = ManifestHashes::default();
                while let Some(k) = m.next_key_seed(Text)? {
                    let raw: &'de RawValue = m.next_value()?;
                    let slot = match &*k {
                        "content_hash" => &mut out.content_hash,
                        "ir_hash" => &mut out.ir_hash,
                        "ir_version" => &mut out.ir_version,
                        _ => continue,
                    };
                    // Not a string: as absent (`Value::as_str` is `None`).
                    let mut one = serde_json::Deserializer::from_str(raw.get());
                    *slot = one.deserialize_str(Text).ok();
                }
                Ok(out)
            }
        }
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let m = (&mut de).deserialize_map(V).ok()?;
        de.end().ok()?;
        Some(m)
    }
}

/// Verifies that a screened package's compiled form belongs to it (Format
/// 14.4): the manifest's `content_hash` must be the hash of `bundle.json`,
/// its `ir_hash` the hash of `ir.json`, and its `ir_version` this
/// implementation's. `Ok(Some(hash))`: they agree, and `hash` is
/// `bundle.json`'s (what `ir.json`'s own `bundle_hash` must be, checked
/// with the rest of the IR when it is read). `Ok(None)`: the package has no
/// `ir.json` (it is simply compiled). `Err`: IR_MISMATCH warnings; the
/// caller compiles `bundle.json` afresh.
pub fn verify_ir<B: AsRef<[u8]>>(
    file: &str,
    entries: &[(String, B)],
) -> Result<Option<String>, Vec<Diagnostic>> {
    let get = |n: &str| {
        entries
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, b)| b.as_ref())
    };
    let Some(ir) = get("ir.json") else {
        return Ok(None);
    };
    let mismatch = |entry: &str, pointer: &str, msg: &str| ir_mismatch(file, entry, pointer, msg);
    let Some(manifest) = get("manifest.json") else {
        return Err(vec![mismatch(
            "ir.json",
            "",
            "the package has ir.json but no manifest.json; the IR is not used and bundle.json is compiled afresh",
        )]);
    };
    let manifest: Value = match serde_json::from_slice(manifest) {
        Ok(v) => v,
        Err(_) => {
            return Err(vec![mismatch(
                "manifest.json",
                "",
                "manifest.json cannot be read; the IR is not used",
            )])
        }
    };
    let bundle_hash = content_hash(get("bundle.json").unwrap_or_default());
    let mut out = Vec::new();
    if manifest.get("content_hash").and_then(Value::as_str) != Some(&bundle_hash) {
        out.push(mismatch(
            "manifest.json",
            "/content_hash",
            "bundle.json changed after it was compiled (its hash differs from content_hash); the IR is not used and bundle.json is compiled afresh",
        ));
    }
    if manifest.get("ir_hash").and_then(Value::as_str) != Some(&content_hash(ir)) {
        out.push(mismatch(
            "manifest.json",
            "/ir_hash",
            "ir.json changed after it was compiled (its hash differs from ir_hash); the IR is not used and bundle.json is compiled afresh",
        ));
    }
    if manifest.get("ir_version").and_then(Value::as_str) != Some(IR_VERSION) {
        out.push(mismatch(
            "manifest.json",
            "/ir_version",
            &format!("the package was compiled for another IR version (this Troupe reads `{IR_VERSION}`); the IR is not used"),
        ));
    }
    if !out.is_empty() {
        return Err(out);
    }
    Ok(Some(bundle_hash))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(bundle: &str, manifest: Option<String>, ir: &[u8]) -> Vec<(String, Vec<u8>)> {
        let mut e = vec![
            ("bundle.json".to_string(), bundle.as_bytes().to_vec()),
            ("ir.json".to_string(), ir.to_vec()),
        ];
        if let Some(m) = manifest {
            e.push(("manifest.json".to_string(), m.into_bytes()));
        }
        e
    }

    fn manifest(bundle: &str, ir: &[u8], version: &str) -> String {
        format!(
            r#"{{"troupe":"0.1","kind":"package","ir_version":"{version}","content_hash":"{}","ir_hash":"{}"}}"#,
            content_hash(bundle.as_bytes()),
            content_hash(ir)
        )
    }

    fn pointers(r: Result<Option<String>, Vec<crate::diag::Diagnostic>>) -> Vec<(String, String)> {
        r.unwrap_err()
            .into_iter()
            .map(|d| {
                (
                    d.location.file.unwrap_or_default(),
                    d.location.pointer.unwrap_or_default(),
                )
            })
            .collect()
    }

    #[test]
    fn the_manifest_hashes_read_as_a_json_value_reads_them() {
        let read = |t: &str| {
            ManifestHashes::read(t.as_bytes()).map(|m| {
                [m.content_hash, m.ir_hash, m.ir_version].map(|f| f.map(|c| c.into_owned()))
            })
        };
        let by_value = |t: &str| {
            serde_json::from_str::<Value>(t).ok().map(|v| {
                ["content_hash", "ir_hash", "ir_version"]
                    .map(|k| v.get(k).and_then(Value::as_str).map(str::to_string))
            })
        };
        for t in [
            r#"{"troupe":"0.1","kind":"package","ir_version":"v","content_hash":"a","ir_hash":"b"}"#,
            r#"{"content_hash":"a","content_hash":"c","x-n":{"ir_hash":"z"}}"#,
            r#"{"content_hash":5,"ir_hash":null,"ir_version":["v"]}"#,
            r#"{"content_hash":5,"content_hash":"a"}"#,
            r#"{"content\u005fhash":"a\u0062","ir_hash":"b"}"#,
            r#"["a","b","v"]"#,
            r#""content_hash""#,
            r#"{"content_hash":"a"} x"#,
            r#"{"content_hash":"a""#,
            "{}",
        ] {
            // Not a JSON object, or not JSON: every field absent either
            // way (the compact entry is then not used).
            assert_eq!(
                read(t).unwrap_or_default(),
                by_value(t).unwrap_or_default(),
                "{t}"
            );
        }
    }

    #[test]
    fn ir_compact_is_bound_by_its_record_as_14_4_says() {
        let v: Value = serde_json::from_str(r#"{"troupe":"0.1","kind":"bundle"}"#).unwrap();
        let b = String::from_utf8(bundle_json(&v)).unwrap();
        let ir = b"{\"ir_version\":\"x\"}\n".to_vec();
        let body = b"\x0bsome IR".to_vec();
        let compact = compact_entry(&content_hash(&ir), &body);
        let with = |m: Option<String>, c: &[u8]| {
            let mut e = entries(&b, m, &ir);
            e.push((COMPACT_ENTRY.to_string(), c.to_vec()));
            e
        };
        let m = || Some(manifest(&b, &ir, IR_VERSION));
        let e = with(m(), &compact);
        match verify_compact("p", &e) {
            Compact::Bound { bundle_hash, ir } => {
                assert_eq!(bundle_hash, content_hash(b.as_bytes()));
                assert_eq!(ir, &body[..]);
            }
            other => panic!("{other:?}"),
        }
        let refused = |e: &[(String, Vec<u8>)]| match verify_compact("p", e) {
            Compact::Refused(d) => (
                d.location.file.unwrap_or_default(),
                d.location.pointer.unwrap_or_default(),
            ),
            other => panic!("{other:?}"),
        };
        let at = ("p!ir.compact".to_string(), String::new());
        // Its IR edited (or truncated) after compiling.
        let mut edited = compact.clone();
        *edited.last_mut().unwrap() ^= 1;
        assert_eq!(refused(&with(m(), &edited)), at);
        assert_eq!(refused(&with(m(), &compact[..compact.len() - 1])), at);
        // Cut inside its record, or no record at all.
        assert_eq!(refused(&with(m(), &compact[..100])), at);
        assert_eq!(refused(&with(m(), &body)), at);
        // The encoding of another ir.json.
        let other = compact_entry(&content_hash(b"{}\n"), &body);
        assert_eq!(refused(&with(m(), &other)), at);
        // Without ir.json.
        let alone = vec![
            ("bundle.json".to_string(), b.as_bytes().to_vec()),
            (COMPACT_ENTRY.to_string(), compact.clone()),
        ];
        assert_eq!(refused(&alone), at);
        // A manifest fault is verify_ir's to report.
        let stale = Some(manifest(&b, &ir, "other-9"));
        assert!(matches!(
            verify_compact("p", &with(stale, &compact)),
            Compact::Skipped
        ));
        assert!(matches!(
            verify_compact("p", &with(None, &compact)),
            Compact::Skipped
        ));
        assert!(matches!(
            verify_compact("p", &entries(&b, m(), &ir)),
            Compact::Absent
        ));
    }

    #[test]
    fn the_ir_is_used_only_when_everything_matches_as_14_4_says() {
        let v: Value = serde_json::from_str(r#"{"troupe":"0.1","kind":"bundle"}"#).unwrap();
        let b = String::from_utf8(bundle_json(&v)).unwrap();
        let ir = b"{\"ir_version\":\"x\"}\n".to_vec();
        // All present and matching: the hashes agree (the IR itself is
        // read and validated by the compile stage).
        let ok = verify_ir("p", &entries(&b, Some(manifest(&b, &ir, IR_VERSION)), &ir));
        assert_eq!(ok.unwrap(), Some(content_hash(b.as_bytes())));
        // Another IR version.
        let r = verify_ir("p", &entries(&b, Some(manifest(&b, &ir, "other-9")), &ir));
        assert_eq!(
            pointers(r),
            [("p!manifest.json".into(), "/ir_version".into())]
        );
        // ir.json edited after compiling: its hash differs.
        let mut edited = ir.clone();
        edited.insert(1, b' ');
        let r = verify_ir(
            "p",
            &entries(&b, Some(manifest(&b, &ir, IR_VERSION)), &edited),
        );
        assert_eq!(pointers(r), [("p!manifest.json".into(), "/ir_hash".into())]);
        // ... and with the manifest fixed up, the hashes agree (only a
        // recompilation tells the IR is not bundle.json's).
        assert!(verify_ir(
            "p",
            &entries(&b, Some(manifest(&b, &edited, IR_VERSION)), &edited)
        )
        .is_ok());
        // ir.json without manifest.json.
        let r = verify_ir("p", &entries(&b, None, &ir));
        assert_eq!(pointers(r), [("p!ir.json".into(), "".into())]);
        // No ir.json at all: simply compiled, no diagnostic.
        let none = vec![("bundle.json".to_string(), b.as_bytes().to_vec())];
        assert!(verify_ir("p", &none).unwrap().is_none());
    }
}

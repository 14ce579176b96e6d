//! The compiled package (Format 14.4): `bundle.json`, `ir.json`,
//! `manifest.json` and the sessions, stored with fixed times so the same
//! input gives the same bytes.
//!
//! This implementation's `ir.json` (IR version [`IR_VERSION`]) holds the
//! checked bundle itself, so a load whose hash and version match reads one
//! JSON document and skips YAML, lowering and every check (17.3); the CEL
//! programs and templates are lowered again from that checked text when a
//! session starts.

use std::io::{Cursor, Write};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

/// The IR version this implementation writes and accepts.
pub const IR_VERSION: &str = "troupe-ir-1";

/// `"sha256:" + lower-case hex SHA-256` of `bytes`.
pub fn content_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(7 + 64);
    s.push_str("sha256:");
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The bytes of `bundle.json` for `bundle`: Troupe JSON and `\n`.
pub fn bundle_bytes(bundle: &Value) -> Vec<u8> {
    let mut s = bundle.to_string();
    s.push('\n');
    s.into_bytes()
}

/// The bytes of `ir.json`.
pub fn ir_bytes(bundle: &Value) -> Vec<u8> {
    let mut m = Map::new();
    m.insert("ir_version".into(), IR_VERSION.into());
    m.insert("checked".into(), true.into());
    m.insert("bundle".into(), bundle.clone());
    let mut s = Value::Object(m).to_string();
    s.push('\n');
    s.into_bytes()
}

/// Writes the package of a checked `bundle` and its sessions (`name` →
/// bytes; names without the `sessions/` prefix). Entries are in code point
/// order of names, stored, dated 1980-01-01 00:00:00.
pub fn write_package(bundle: &Value, sessions: &[(String, Vec<u8>)]) -> std::io::Result<Vec<u8>> {
    let bundle = &super::canonical::canonical_bundle(bundle);
    let bundle_json = bundle_bytes(bundle);
    let mut manifest = Map::new();
    manifest.insert("troupe".into(), "0.1".into());
    manifest.insert("kind".into(), "package".into());
    manifest.insert("ir_version".into(), IR_VERSION.into());
    manifest.insert("content_hash".into(), content_hash(&bundle_json).into());
    let mut manifest_json = Value::Object(manifest).to_string();
    manifest_json.push('\n');
    let mut entries: Vec<(String, Vec<u8>)> = vec![
        ("bundle.json".into(), bundle_json),
        ("ir.json".into(), ir_bytes(bundle)),
        ("manifest.json".into(), manifest_json.into_bytes()),
    ];
    let mut sess: Vec<(String, Vec<u8>)> = sessions
        .iter()
        .map(|(n, b)| (format!("sessions/{n}"), b.clone()))
        .collect();
    sess.sort_by(|a, b| a.0.cmp(&b.0));
    entries.extend(sess);
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Stored)
        .last_modified_time(DateTime::default())
        .unix_permissions(0o644);
    for (name, data) in &entries {
        zip.start_file(name.as_str(), options)
            .map_err(std::io::Error::other)?;
        zip.write_all(data)?;
    }
    let cursor = zip.finish().map_err(std::io::Error::other)?;
    Ok(cursor.into_inner())
}

/// Verifies a screened package's compiled form (Format 14.4) and returns
/// the bundle `ir.json` carries. `Ok(None)`: the package has no `ir.json`
/// (it is simply compiled). `Err`: IR_MISMATCH warnings; the caller
/// compiles `bundle.json` afresh.
pub fn verify_ir(
    file: &str,
    entries: &[(String, Vec<u8>)],
) -> Result<Option<Value>, Vec<crate::diag::Diagnostic>> {
    use crate::diag::{Code, Diagnostic, Severity};
    let get = |n: &str| {
        entries
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, b)| b.as_slice())
    };
    let Some(ir) = get("ir.json") else {
        return Ok(None);
    };
    let mismatch = |entry: &str, pointer: &str, msg: &str| {
        Diagnostic::error(Code::IrMismatch, msg.to_string())
            .with_severity(Severity::Warning)
            .in_file(format!("{file}!{entry}"))
            .at(pointer)
    };
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
    let bundle = get("bundle.json").unwrap_or_default();
    let mut out = Vec::new();
    if manifest.get("content_hash").and_then(Value::as_str) != Some(&content_hash(bundle)) {
        out.push(mismatch(
            "manifest.json",
            "/content_hash",
            "bundle.json changed after it was compiled (its hash differs from content_hash); the IR is not used and bundle.json is compiled afresh",
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
    let ir: Option<Value> = serde_json::from_slice(ir).ok();
    match ir {
        Some(Value::Object(mut m))
            if m.get("ir_version").and_then(Value::as_str) == Some(IR_VERSION)
                && m.get("checked") == Some(&Value::Bool(true))
                && m.get("bundle").is_some_and(Value::is_object) =>
        {
            Ok(m.remove("bundle"))
        }
        _ => Err(vec![mismatch(
            "ir.json",
            "",
            "ir.json cannot be read as this Troupe's IR; it is not used and bundle.json is compiled afresh",
        )]),
    }
}

//! The compiled package (Format 14.4): `bundle.json`, `ir.json`,
//! `manifest.json` and the sessions, stored with fixed times so the same
//! input gives the same bytes.
//!
//! This implementation's `ir.json` (IR version [`IR_VERSION`]) holds the
//! checked bundle itself with the hash of `bundle.json`, and the manifest
//! records the hashes of both, so a load whose hashes and versions match
//! reads one JSON document and skips YAML, lowering and every check (17.3);
//! the CEL programs and templates are lowered again from that checked text
//! when a session starts.

use std::io::{Cursor, Write};

use serde_json::{Map, Value};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

pub use crate::load::compiled::{content_hash, verify_ir, IR_VERSION};

/// The bytes of `bundle.json` for `bundle`: Troupe JSON and `\n`.
pub fn bundle_bytes(bundle: &Value) -> Vec<u8> {
    crate::load::compiled::bundle_json(bundle)
}

/// The bytes of `ir.json` for `bundle` (see
/// [`crate::load::compiled::ir_json`]).
pub fn ir_bytes(bundle: &Value) -> Vec<u8> {
    crate::load::compiled::ir_json(bundle)
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
    let ir_json = ir_bytes(bundle);
    manifest.insert("ir_hash".into(), content_hash(&ir_json).into());
    let mut manifest_json = Value::Object(manifest).to_string();
    manifest_json.push('\n');
    let mut entries: Vec<(String, Vec<u8>)> = vec![
        ("bundle.json".into(), bundle_json),
        ("ir.json".into(), ir_json),
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

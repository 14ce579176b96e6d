//! Bundle files (`.json`, `.yaml`, `.yml`) → a [`Document`] (Format 2).

use std::path::Path;

use crate::diag::{Code, Diagnostic};

use super::document::Document;
use super::json::parse_json;
use super::loaded::Loaded;
use super::text::read_bounded;
use super::yaml::parse_yaml;

/// Reads a bundle: `.json` as JSON, `.yaml`/`.yml` as YAML (extension
/// compared without case), anything else PARSE. Only a regular file is read
/// (a symlink is followed; a folder, FIFO, device or socket is
/// FORBIDDEN_FILE), with a hard cap of 64 MiB + 1 byte (LIMIT past 64 MiB):
/// see [`read_bounded`]. The document's file name is `path` as displayed.
pub fn read_bundle(path: &Path) -> Loaded<Document> {
    let file = path.display().to_string();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let parse: fn(&str, &[u8]) -> Loaded<Document> = match ext.as_deref() {
        Some("json") => parse_json,
        Some("yaml" | "yml") => parse_yaml,
        _ => {
            return Loaded::fail(
                Diagnostic::error(
                    Code::Parse,
                    "a bundle file must end in .json, .yaml or .yml",
                )
                .in_file(file),
            )
        }
    };
    match read_bounded(&file, path) {
        Ok(bytes) => parse(&file, &bytes),
        Err(d) => Loaded::fail(d),
    }
}

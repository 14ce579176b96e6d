//! CHARX archives (`docs/import.md` §2): a ZIP with the card as `card.json`
//! at its root and assets beside it. Read with the package rules of Format
//! 14/16 (`load::package`): every entry name is screened (PATH_TRAVERSAL for
//! `..`, absolute names, NUL, backslash), methods are stored/deflate only,
//! entry counts and sizes are bounded by declared size and by the bytes
//! actually inflated. Only `card.json` is read; assets are listed by name.
//! Export writes an archive of `card.json` alone ([`write_charx`]).

use std::io::{Cursor, Read, Write};

use serde_json::Value;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipArchive, ZipWriter};

use troupe::internals::load::bad_name;
use troupe::internals::load::MAX_ZIP_ENTRIES;
use troupe::{Code, Diagnostic};

use super::MAX_CARD_JSON_BYTES;

/// Reads `card.json` from a CHARX archive, and the names of the other
/// entries (assets, in archive order).
///
/// Errors (file = `file`, pointer = the entry name): PARSE (not a ZIP, an
/// unreadable, encrypted or duplicated entry, a method other than
/// stored/deflate, no `card.json`), PATH_TRAVERSAL (a bad entry name), LIMIT
/// (over 10,000 entries, or `card.json` over 16 MiB declared or inflated).
/// Any entry problem refuses the whole archive.
pub fn card_json(file: &str, bytes: &[u8]) -> Result<(Vec<u8>, Vec<String>), Vec<Diagnostic>> {
    let one = |code, at: &str, msg: String| Diagnostic::error(code, msg).in_file(file).at(at);
    let mut zip = ZipArchive::new(Cursor::new(bytes)).map_err(|e| {
        vec![one(
            Code::Parse,
            "",
            format!("not a readable ZIP archive: {e}"),
        )]
    })?;
    if zip.len() > MAX_ZIP_ENTRIES {
        return Err(vec![one(
            Code::Limit,
            "",
            format!(
                "the archive has {} entries; the limit is {MAX_ZIP_ENTRIES}",
                zip.len()
            ),
        )]);
    }
    if zip.has_duplicate_names() {
        return Err(vec![one(
            Code::Parse,
            "",
            "two entries of the archive share a name".into(),
        )]);
    }
    let mut diagnostics = Vec::new();
    let mut card_index = None;
    let mut assets = Vec::new();
    for i in 0..zip.len() {
        let entry = match zip.by_index_raw(i) {
            Ok(e) => e,
            Err(e) => {
                diagnostics.push(one(
                    Code::Parse,
                    "",
                    format!("entry {i} cannot be read: {e}"),
                ));
                break;
            }
        };
        let name = String::from_utf8_lossy(entry.name_raw()).into_owned();
        if let Some(why) = bad_name(entry.name_raw()) {
            diagnostics.push(one(
                Code::PathTraversal,
                &name,
                format!("the entry name `{}` {why}", name.escape_debug()),
            ));
            continue;
        }
        if entry.encrypted() {
            diagnostics.push(one(Code::Parse, &name, format!("`{name}` is encrypted")));
            continue;
        }
        if !matches!(
            entry.compression(),
            CompressionMethod::Stored | CompressionMethod::Deflated
        ) {
            diagnostics.push(one(
                Code::Parse,
                &name,
                format!("`{name}` uses a method other than stored or deflate"),
            ));
            continue;
        }
        if entry.is_dir() {
            continue;
        }
        if name == "card.json" {
            if entry.size() > MAX_CARD_JSON_BYTES as u64 {
                diagnostics.push(one(
                    Code::Limit,
                    &name,
                    format!(
                        "`card.json` declares {} bytes; the limit is {MAX_CARD_JSON_BYTES}",
                        entry.size()
                    ),
                ));
                continue;
            }
            card_index = Some(i);
        } else {
            assets.push(name);
        }
    }
    if !diagnostics.is_empty() {
        return Err(diagnostics);
    }
    let Some(i) = card_index else {
        return Err(vec![one(
            Code::Parse,
            "card.json",
            "the archive has no `card.json` at its root".into(),
        )]);
    };
    let mut data = Vec::new();
    let read = zip.by_index(i).and_then(|entry| {
        entry
            .take(MAX_CARD_JSON_BYTES as u64 + 1)
            .read_to_end(&mut data)
            .map_err(zip::result::ZipError::from)
    });
    if data.len() > MAX_CARD_JSON_BYTES {
        return Err(vec![one(
            Code::Limit,
            "card.json",
            format!("`card.json` inflates past {MAX_CARD_JSON_BYTES} bytes"),
        )]);
    }
    if let Err(e) = read {
        let code = if e.to_string().contains("larger than its declared") {
            Code::Limit
        } else {
            Code::Parse
        };
        return Err(vec![one(
            code,
            "card.json",
            format!("`card.json` cannot be read: {e}"),
        )]);
    }
    Ok((data, assets))
}

/// A CHARX archive holding `card` as its `card.json` (`docs/import.md` §6):
/// a V3 card as it is; a V2 card as V3 (the same `data`, with `spec`
/// `chara_card_v3`, `spec_version` `3.0` and an empty
/// `group_only_greetings` when it has none), as CHARX holds only V3 cards;
/// a V1 card (fields at the root) first as V2 with V2's other fields
/// empty. Deflated, with a fixed time stamp, so the same card gives the
/// same bytes.
pub fn write_charx(card: &Value) -> Vec<u8> {
    let v3 = as_v3(card);
    let json = serde_json::to_string_pretty(&v3).unwrap_or_default();
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .last_modified_time(DateTime::default())
        .unix_permissions(0o644);
    // Writing to memory fails only on a ZIP over 4 GiB, which a card
    // bounded by MAX_CARD_JSON_BYTES cannot reach.
    let written = zip
        .start_file("card.json", options)
        .and_then(|()| zip.write_all(json.as_bytes()).map_err(Into::into));
    debug_assert!(written.is_ok());
    zip.finish().map(Cursor::into_inner).unwrap_or_default()
}

/// `card` as a V3 card (see [`write_charx`]).
fn as_v3(card: &Value) -> Value {
    match card.get("spec").and_then(Value::as_str) {
        Some("chara_card_v3") => card.clone(),
        Some(_) => {
            let mut v3 = card.clone();
            v3["spec"] = Value::from("chara_card_v3");
            v3["spec_version"] = Value::from("3.0");
            if let Some(data) = v3.get_mut("data").and_then(Value::as_object_mut) {
                data.entry("group_only_greetings")
                    .or_insert_with(|| Value::Array(Vec::new()));
            }
            v3
        }
        None => {
            // V1: its fields at the root (the ones V2 mirrors there) become
            // V2's `data`.
            let mut data = serde_json::Map::new();
            for &k in super::card::ROOT_MIRRORS {
                let v = card.get(k).cloned().unwrap_or_else(|| Value::from(""));
                data.insert(k.into(), v);
            }
            for k in [
                "creator_notes",
                "system_prompt",
                "post_history_instructions",
                "creator",
                "character_version",
            ] {
                data.insert(k.into(), Value::from(""));
            }
            for k in ["alternate_greetings", "tags"] {
                data.insert(k.into(), Value::Array(Vec::new()));
            }
            data.insert("extensions".into(), Value::Object(Default::default()));
            as_v3(&serde_json::json!({
                "spec": "chara_card_v2", "spec_version": "2.0", "data": data
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A V1 card goes into CHARX as V3: its root fields in `data`, V2's
    /// other fields empty, `group_only_greetings` added (docs/import.md §6).
    #[test]
    fn a_v1_card_is_written_as_v3() {
        let v1 = serde_json::json!({"name": "Bo", "description": "d", "first_mes": "Hi."});
        let zip = write_charx(&v1);
        let (json, assets) = card_json("bo.charx", &zip).unwrap();
        assert!(assets.is_empty());
        let card: Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(card["spec"], "chara_card_v3");
        assert_eq!(card["spec_version"], "3.0");
        let data = &card["data"];
        assert_eq!(
            (&data["name"], &data["first_mes"]),
            (&Value::from("Bo"), &Value::from("Hi."))
        );
        assert_eq!(data["personality"], "");
        assert_eq!(data["alternate_greetings"], serde_json::json!([]));
        assert_eq!(data["group_only_greetings"], serde_json::json!([]));
    }
}

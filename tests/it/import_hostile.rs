//! Hostile inputs to `troupe import` give diagnostics, never panics
//! (docs/import.md §8): damaged PNGs, bad base64, an oversized tEXt chunk,
//! a card of the wrong spec, a CHARX with a `../` entry.

use std::io::Write;

use troupe::Code;
use troupe_import::png::write_card_png;
use troupe_import::{card, read_card};

fn codes(bytes: &[u8]) -> Vec<Code> {
    match read_card("card", bytes) {
        Ok(raw) => match card::card_to_bundle(&raw) {
            Ok(_) => vec![],
            Err(ds) => ds.iter().map(|d| d.code).collect(),
        },
        Err(ds) => ds.iter().map(|d| d.code).collect(),
    }
}

/// A PNG chunk: length, type, data, CRC over type and data.
fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let mut h = crc32fast::Hasher::new();
    h.update(kind);
    h.update(data);
    out.extend_from_slice(&h.finalize().to_be_bytes());
    out
}

/// A valid one-pixel PNG with the chunk `extra` inserted before IEND.
fn png_with(extra: &[u8]) -> Vec<u8> {
    let base = write_card_png(None, "x-none", "-").unwrap();
    let iend = base.len() - 12;
    let mut out = base[..iend].to_vec();
    out.extend_from_slice(extra);
    out.extend_from_slice(&base[iend..]);
    out
}

fn card_png() -> Vec<u8> {
    write_card_png(
        None,
        "chara",
        r#"{"spec":"chara_card_v2","data":{"name":"Ann"}}"#,
    )
    .unwrap()
}

#[test]
fn a_good_png_card_imports() {
    assert_eq!(codes(&card_png()), vec![]);
}

#[test]
fn truncated_png_chunk_is_parse() {
    let png = card_png();
    for cut in [png.len() - 5, png.len() / 2, 20, 9] {
        assert_eq!(codes(&png[..cut]), vec![Code::Parse], "cut at {cut}");
    }
}

#[test]
fn bad_crc_is_parse() {
    let mut png = png_with(&chunk(b"tEXt", b"chara\0eyJ9"));
    let n = png.len();
    // Flip a bit of the tEXt chunk's CRC (the 4 bytes before IEND's 12).
    png[n - 13] ^= 1;
    assert_eq!(codes(&png), vec![Code::Parse]);
}

#[test]
fn bad_base64_is_parse() {
    let png = png_with(&chunk(b"tEXt", b"chara\0not base64 at all!"));
    assert_eq!(codes(&png), vec![Code::Parse]);
}

#[test]
fn base64_of_not_json_is_parse() {
    let png = png_with(&chunk(b"tEXt", b"chara\0bm90IGpzb24="));
    assert_eq!(codes(&png), vec![Code::Parse]);
}

#[test]
fn a_50_mb_text_chunk_is_limit() {
    let mut data = b"chara\0".to_vec();
    data.resize(50 * 1024 * 1024, b'A');
    let png = png_with(&chunk(b"tEXt", &data));
    assert_eq!(codes(&png), vec![Code::Limit]);
}

#[test]
fn wrong_spec_is_schema() {
    for card in [
        r#"{"spec":"lorebook_v3","data":{"entries":[]}}"#,
        r#"{"spec":"chara_card_v9","data":{"name":"A"}}"#,
        r#"{"spec":"chara_card_v2","data":[]}"#,
        r#"{"spec":"chara_card_v2","data":{"name":5}}"#,
        r#"{"spec":"chara_card_v3","data":{"name":"A","alternate_greetings":"hi"}}"#,
        r#"{"description":"no name, no spec"}"#,
    ] {
        assert_eq!(codes(card.as_bytes()), vec![Code::Schema], "{card}");
    }
    assert_eq!(codes(b"[1, 2]"), vec![Code::Parse]);
    assert_eq!(codes(b"{\"name\": "), vec![Code::Parse]);
}

fn charx(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (name, data) in entries {
            zip.start_file(*name, opts).unwrap();
            zip.write_all(data).unwrap();
        }
        zip.finish().unwrap();
    }
    buf.into_inner()
}

#[test]
fn charx_reads_card_json_and_refuses_traversal() {
    let card = br#"{"spec":"chara_card_v3","data":{"name":"Ann"}}"#;
    let good = charx(&[("card.json", card), ("assets/icon/images/main.png", b"x")]);
    let raw = read_card("c.charx", &good).unwrap();
    assert_eq!(raw.assets, vec!["assets/icon/images/main.png".to_string()]);
    assert_eq!(codes(&good), vec![]);
    let bad = charx(&[("card.json", card), ("../evil.png", b"x")]);
    let ds = read_card("c.charx", &bad).unwrap_err();
    assert_eq!(ds.len(), 1);
    assert_eq!(ds[0].code, Code::PathTraversal);
    assert_eq!(ds[0].location.pointer.as_deref(), Some("../evil.png"));
    assert_eq!(codes(&charx(&[("other.json", card)])), vec![Code::Parse]);
    assert_eq!(codes(b"PK\x03\x04 not a zip"), vec![Code::Parse]);
}

#[test]
fn a_lorebook_given_as_a_card_points_at_import_lorebook() {
    // A World Info file has `entries` and neither `spec` nor `name`.
    let raw = read_card(
        "book.json",
        br#"{"entries": {"0": {"key": ["x"], "content": "y"}}}"#,
    );
    let ds = match raw {
        Ok(raw) => card::card_to_bundle(&raw).expect_err("not a card"),
        Err(ds) => ds,
    };
    assert_eq!(ds[0].code, Code::Schema);
    let help = ds[0].help.as_deref().unwrap_or_default();
    assert!(help.contains("troupe import lorebook"), "{help}");
}

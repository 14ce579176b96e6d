//! Cards in PNG files (`docs/import.md` §2): the card is the base64 of its
//! UTF-8 JSON in a `tEXt` chunk named `ccv3` (V3) or `chara` (V2); `ccv3`
//! wins when both are present. Reading and writing use the `png` crate, with
//! its allocation limit bounding every chunk.

use std::io::Cursor;

use base64::Engine;

use troupe::{Code, Diagnostic};

use super::MAX_CARD_JSON_BYTES;

/// The eight bytes every PNG file starts with.
pub const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// Most bytes the PNG decoder may allocate for chunks (text included) while
/// reading a card: 48 MiB, room for the base64 of a 16 MiB card and its
/// copy. A larger `tEXt` chunk is LIMIT before it is read whole.
const MAX_PNG_ALLOC: usize = 48 * 1024 * 1024;

/// Returns the card JSON bytes of a PNG card: the `ccv3` chunk if present,
/// else `chara`, base64-decoded.
///
/// Errors (all with `file`): PARSE for a damaged PNG (truncated chunk, bad
/// CRC, bad header), a PNG with neither chunk, or text that is not base64;
/// LIMIT when a chunk or the decoded card is over the bounds.
pub fn card_text(file: &str, bytes: &[u8]) -> Result<Vec<u8>, Diagnostic> {
    let err = |code, msg: String| Diagnostic::error(code, msg).in_file(file);
    // The decoder skips an ancillary chunk whose CRC is wrong, so a damaged
    // card chunk would read as "no card": check every chunk's CRC first.
    if let Some(msg) = damaged_chunk(bytes) {
        return Err(err(Code::Parse, msg));
    }
    let mut decoder = png::Decoder::new(Cursor::new(bytes));
    decoder.set_limits(png::Limits {
        bytes: MAX_PNG_ALLOC,
    });
    let png_err = |e: png::DecodingError| match e {
        png::DecodingError::LimitsExceeded => err(
            Code::Limit,
            format!("a chunk of the PNG is over the bound of {MAX_PNG_ALLOC} bytes"),
        ),
        e => err(Code::Parse, format!("not a readable PNG: {e}")),
    };
    let mut reader = decoder.read_info().map_err(png_err)?;
    // Text chunks may follow the image data: decode the image, then read to
    // the end so that every chunk has been seen.
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| err(Code::Limit, "the PNG image is too large".into()))?;
    if size > MAX_PNG_ALLOC {
        return Err(err(
            Code::Limit,
            format!("the PNG image needs {size} bytes; the bound is {MAX_PNG_ALLOC}"),
        ));
    }
    let mut buf = vec![0; size];
    reader.next_frame(&mut buf).map_err(png_err)?;
    reader.finish().map_err(png_err)?;
    let texts = &reader.info().uncompressed_latin1_text;
    let chunk = texts
        .iter()
        .find(|t| t.keyword == "ccv3")
        .or_else(|| texts.iter().find(|t| t.keyword == "chara"))
        .ok_or_else(|| {
            err(
                Code::Parse,
                "the PNG has no `ccv3` or `chara` tEXt chunk: it holds no card".into(),
            )
        })?;
    if chunk.text.len() > MAX_CARD_JSON_BYTES * 4 / 3 + 4 {
        return Err(err(
            Code::Limit,
            format!(
                "the `{}` chunk is {} bytes; a card is at most {MAX_CARD_JSON_BYTES} bytes",
                chunk.keyword,
                chunk.text.len()
            ),
        ));
    }
    base64::engine::general_purpose::STANDARD
        .decode(chunk.text.trim().as_bytes())
        .map_err(|e| {
            err(
                Code::Parse,
                format!("the `{}` chunk is not base64: {e}", chunk.keyword),
            )
        })
}

/// The first damage in the chunk structure after the signature: a chunk
/// cut short or one whose CRC-32 (over its type and data) is wrong.
fn damaged_chunk(bytes: &[u8]) -> Option<String> {
    let mut at = SIGNATURE.len();
    while at < bytes.len() {
        let head = bytes.get(at..at + 8)?;
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let kind = String::from_utf8_lossy(&head[4..8]).into_owned();
        let Some(body) = bytes.get(at + 4..at + 8 + len) else {
            return Some(format!(
                "the PNG is damaged: its `{kind}` chunk at byte {at} is cut short"
            ));
        };
        let Some(crc) = bytes.get(at + 8 + len..at + 12 + len) else {
            return Some(format!(
                "the PNG is damaged: its `{kind}` chunk at byte {at} is cut short"
            ));
        };
        let want = u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]);
        if crc32fast::hash(body) != want {
            return Some(format!(
                "the PNG is damaged: its `{kind}` chunk at byte {at} has a wrong CRC"
            ));
        }
        if kind == "IEND" {
            return None;
        }
        at += 12 + len;
    }
    None
}

/// Writes a PNG holding `card_json` in a `tEXt` chunk named `keyword`
/// (`chara` or `ccv3`). The image is `image` (a PNG, decoded and written
/// again with its own pixels and without its old card chunks) or, without
/// one, a single transparent pixel.
///
/// Errors: PARSE when `image` is not a readable PNG.
pub fn write_card_png(
    image: Option<&[u8]>,
    keyword: &str,
    card_json: &str,
) -> Result<Vec<u8>, Diagnostic> {
    write_card_png_chunks(image, &[(keyword, card_json)])
}

/// [`write_card_png`] with several card chunks, each `(keyword, card
/// JSON)`, written in the order given: a V3 card is written as `chara`
/// (its V2 form, for readers that know only V2) and `ccv3`, as
/// SillyTavern writes it (`docs/import.md` §9).
///
/// Errors: PARSE when `image` is not a readable PNG.
pub fn write_card_png_chunks(
    image: Option<&[u8]>,
    chunks: &[(&str, &str)],
) -> Result<Vec<u8>, Diagnostic> {
    let (width, height, color, depth, pixels) = match image {
        Some(bytes) => {
            let mut decoder = png::Decoder::new(Cursor::new(bytes));
            decoder.set_ignore_text_chunk(true);
            // Palette and low-depth images come out as plain RGB(A), which
            // the encoder writes without a palette.
            decoder.set_transformations(png::Transformations::EXPAND);
            let bad = |e: png::DecodingError| {
                Diagnostic::error(Code::Parse, format!("the image is not a readable PNG: {e}"))
            };
            let mut reader = decoder.read_info().map_err(bad)?;
            let size = reader
                .output_buffer_size()
                .filter(|s| *s <= MAX_PNG_ALLOC)
                .ok_or_else(|| Diagnostic::error(Code::Limit, "the image is too large"))?;
            let mut buf = vec![0; size];
            let info = reader.next_frame(&mut buf).map_err(bad)?;
            buf.truncate(info.buffer_size());
            (
                info.width,
                info.height,
                info.color_type,
                info.bit_depth,
                buf,
            )
        }
        None => (
            1,
            1,
            png::ColorType::Rgba,
            png::BitDepth::Eight,
            vec![0, 0, 0, 0],
        ),
    };
    let mut out = Vec::new();
    let io = |e: png::EncodingError| {
        Diagnostic::error(Code::Parse, format!("cannot write the PNG: {e}"))
    };
    {
        let mut encoder = png::Encoder::new(&mut out, width, height);
        encoder.set_color(color);
        encoder.set_depth(depth);
        for (keyword, card_json) in chunks {
            let encoded = base64::engine::general_purpose::STANDARD.encode(card_json.as_bytes());
            encoder
                .add_text_chunk((*keyword).to_string(), encoded)
                .map_err(io)?;
        }
        let mut writer = encoder.write_header().map_err(io)?;
        writer.write_image_data(&pixels).map_err(io)?;
        writer.finish().map_err(io)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_card_reads_back() {
        let png = write_card_png(None, "chara", "{\"name\":\"Ann\"}").unwrap();
        assert_eq!(card_text("t.png", &png).unwrap(), b"{\"name\":\"Ann\"}");
    }

    #[test]
    fn both_chunks_are_written_and_ccv3_is_preferred() {
        let png =
            write_card_png_chunks(None, &[("chara", "{\"v\":2}"), ("ccv3", "{\"v\":3}")]).unwrap();
        assert_eq!(card_text("t.png", &png).unwrap(), b"{\"v\":3}");
        let decoder = png::Decoder::new(Cursor::new(&png));
        let reader = decoder.read_info().unwrap();
        let names: Vec<&str> = reader
            .info()
            .uncompressed_latin1_text
            .iter()
            .map(|t| t.keyword.as_str())
            .collect();
        assert_eq!(names, ["chara", "ccv3"]);
    }

    #[test]
    fn a_png_without_card_is_parse() {
        let png = write_card_png(None, "other", "x").unwrap();
        assert_eq!(card_text("t.png", &png).unwrap_err().code, Code::Parse);
    }
}

//! The version check every loaded file gets first (Format 2.3).

use crate::diag::{escape_token, Code, Diagnostic};

use super::document::Document;

/// The one format version this implementation reads (Format 2.3).
pub const SUPPORTED_VERSION: &str = "0.1";

/// True for `MAJOR.MINOR` (`^[0-9]+\.[0-9]+$`).
fn well_formed(v: &str) -> bool {
    match v.split_once('.') {
        Some((a, b)) => {
            let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
            digits(a) && digits(b)
        }
        None => false,
    }
}

/// UNSUPPORTED_VERSION when the top-level member `field` (`troupe` in bundles
/// and session headers, `schema_version` in pack files) is a well-formed
/// version other than [`SUPPORTED_VERSION`] (Format 2.3); the diagnostic's
/// pointer is `pointer_prefix` + `/` + `field` (`header/troupe` for a session
/// header when `pointer_prefix` is `header`), at the value's line and column.
/// A missing or malformed version gives `None`: the schema reports it.
pub fn check_version(doc: &Document, field: &str, pointer_prefix: &str) -> Option<Diagnostic> {
    let v = doc.value.get(field)?.as_str()?;
    if !well_formed(v) || v == SUPPORTED_VERSION {
        return None;
    }
    let inner = format!("/{}", escape_token(field));
    let mut d = Diagnostic::error(
        Code::UnsupportedVersion,
        format!(
            "format version {v} is not supported; this implementation reads {SUPPORTED_VERSION}"
        ),
    )
    .in_file(doc.file.clone())
    .at(format!("{pointer_prefix}{inner}"));
    if let Some(at) = doc.spans.locate(&inner) {
        d = d.at_line_col(at.line, at.column);
    }
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::json::parse_json;

    fn check(src: &str) -> Option<Diagnostic> {
        let doc = parse_json("b.json", src.as_bytes()).value.unwrap();
        check_version(&doc, "troupe", "")
    }

    #[test]
    fn versions() {
        assert!(check(r#"{"troupe": "0.1"}"#).is_none());
        assert!(check(r#"{"troupe": "1"}"#).is_none());
        assert!(check(r#"{"troupe": "0.1.0"}"#).is_none());
        assert!(check(r#"{"troupe": 0.2}"#).is_none());
        assert!(check(r#"{}"#).is_none());
        let d = check("{\n \"troupe\": \"0.2\"}").unwrap();
        assert_eq!(d.code, Code::UnsupportedVersion);
        assert_eq!(d.location.pointer.as_deref(), Some("/troupe"));
        assert_eq!((d.location.line, d.location.column), (Some(2), Some(12)));
        let doc = parse_json("s", br#"{"troupe": "10.0"}"#).value.unwrap();
        let d = check_version(&doc, "troupe", "header").unwrap();
        assert_eq!(d.location.pointer.as_deref(), Some("header/troupe"));
    }
}

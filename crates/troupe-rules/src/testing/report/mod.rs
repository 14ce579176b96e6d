//! The reports of a run (Format 21.2): readable text, one JSON document,
//! JUnit XML for CI dashboards, and (feature `pictures`) one HTML page.

#[cfg(feature = "pictures")]
pub mod html;
pub mod json;
pub mod junit;
pub mod text;

pub use json::to_json;
pub use junit::to_junit;
pub use text::to_text;

/// `s` with the characters XML 1.0 cannot hold or that draw nothing —
/// control characters but those in `keep`, and U+FFFE, U+FFFF — as spaces:
/// the one rule of the XML reports and pictures (JUnit, SVG, HTML).
pub fn xml_chars<'a>(s: &'a str, keep: &[char]) -> std::borrow::Cow<'a, str> {
    let bad =
        |c: char| (c.is_control() && !keep.contains(&c)) || c == '\u{fffe}' || c == '\u{ffff}';
    if s.chars().any(bad) {
        s.chars().map(|c| if bad(c) { ' ' } else { c }).collect()
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// `s` escaped for XML text and quoted attributes (`&amp;`, `&lt;`,
/// `&gt;`, `&quot;`, `&apos;`), after [`xml_chars`] with `keep`.
pub fn xml_escape(s: &str, keep: &[char]) -> String {
    quick_xml::escape::escape(xml_chars(s, keep).as_ref()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::{xml_chars, xml_escape};

    #[test]
    fn one_rule_for_characters_xml_cannot_hold() {
        // Control characters (C0, DEL, C1) and U+FFFE/U+FFFF become spaces
        // unless kept; the five markup characters become entities.
        assert_eq!(xml_chars("a\u{1b}b\u{7f}c\u{85}d\u{fffe}", &[]), "a b c d ");
        assert_eq!(xml_chars("a\tb\nc", &['\t']), "a\tb c");
        assert!(matches!(
            xml_chars("plain", &[]),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            xml_escape("<a href=\"x\">'&'\u{7}</a>", &[]),
            "&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos; &lt;/a&gt;"
        );
    }
}

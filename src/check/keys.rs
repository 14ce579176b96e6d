//! Lore entry keys (Format 5): a plain key, or `/regex/flags` in RE2 syntax
//! with flags `i`, `m`, `s`.

use regex::{Regex, RegexBuilder};

/// Compiles one key to a regular expression that finds it in scanned text.
///
/// A plain key matches literally, case-insensitively unless
/// `case_sensitive`; whole-word matching is applied by the caller. A
/// `/re/flags` key is a regular expression; its own `i` flag makes it
/// case-insensitive. Errors: an invalid regular expression or flag, as a
/// plain message.
pub fn compile_key(key: &str, case_sensitive: bool) -> Result<Regex, String> {
    if let Some((pattern, flags)) = split_regex_key(key) {
        let mut b = RegexBuilder::new(pattern);
        b.size_limit(1 << 20);
        for f in flags.chars() {
            match f {
                'i' => b.case_insensitive(true),
                'm' => b.multi_line(true),
                's' => b.dot_matches_new_line(true),
                other => return Err(format!("key `{key}`: unknown regex flag `{other}`")),
            };
        }
        return b
            .build()
            .map_err(|e| format!("key `{key}` is not a valid regular expression: {e}"));
    }
    RegexBuilder::new(&regex::escape(key))
        .case_insensitive(!case_sensitive)
        .build()
        .map_err(|e| format!("key `{key}`: {e}"))
}

/// Splits `/pattern/flags` into its parts; `None` for a plain key.
pub fn split_regex_key(key: &str) -> Option<(&str, &str)> {
    let rest = key.strip_prefix('/')?;
    let end = rest.rfind('/')?;
    let flags = &rest[end + 1..];
    if flags.chars().all(|c| c.is_ascii_alphabetic()) && end > 0 {
        Some((&rest[..end], flags))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_regex_keys() {
        assert!(compile_key("Sword", false).unwrap().is_match("a sword!"));
        assert!(!compile_key("Sword", true).unwrap().is_match("a sword!"));
        assert!(compile_key("/dr[a-z]+on/i", false)
            .unwrap()
            .is_match("DRAGON"));
        assert!(compile_key("/(/", false).is_err());
        assert!(compile_key("/a/q", false).is_err());
        assert_eq!(split_regex_key("/"), None);
        assert_eq!(split_regex_key("a/b/"), None);
    }
}

//! Key matching for rules and safety (Format 5.4 with `case_sensitive`
//! false and `whole_words` true; 18.2, 19.2): plain keys and `/re/flags`
//! keys, compiled once.

use regex::{Regex, RegexBuilder};

use crate::check::keys::split_regex_key;

/// A compiled key (Format 5.4).
#[derive(Debug, Clone)]
pub enum Key {
    /// Plain text, lower-cased character by character.
    Plain(String),
    /// A `/pattern/flags` key, compiled with the `i` flag.
    Regex(Regex),
}

/// Lower-cases `text` character by character (Unicode `to_lowercase`).
pub fn lower(text: &str) -> String {
    text.chars().flat_map(char::to_lowercase).collect()
}

impl Key {
    /// Compiles a key; an invalid regular expression is an error message
    /// (the check reports it as SCHEMA first, so a conforming input never
    /// has one).
    pub fn new(key: &str) -> Result<Key, String> {
        match split_regex_key(key) {
            Some((pattern, flags)) => {
                let mut b = RegexBuilder::new(pattern);
                b.size_limit(1 << 20).case_insensitive(true);
                for f in flags.chars() {
                    match f {
                        'i' => b.case_insensitive(true),
                        'm' => b.multi_line(true),
                        's' => b.dot_matches_new_line(true),
                        other => return Err(format!("key `{key}`: unknown flag `{other}`")),
                    };
                }
                b.build()
                    .map(Key::Regex)
                    .map_err(|e| format!("key `{key}` is not a valid regular expression: {e}"))
            }
            None => Ok(Key::Plain(lower(key))),
        }
    }

    /// Whether the key hits `lowered` (a text already lower-cased with
    /// [`lower`]): some occurrence is not preceded or followed by a Unicode
    /// alphanumeric character or `_`. Every occurrence is tried.
    pub fn hits(&self, lowered: &str) -> bool {
        match self {
            Key::Plain(k) if k.is_empty() => false,
            Key::Plain(k) => {
                let mut from = 0;
                while let Some(pos) = lowered.get(from..).and_then(|t| t.find(k.as_str())) {
                    let start = from + pos;
                    let end = start + k.len();
                    if whole(lowered, start, end) {
                        return true;
                    }
                    // Next candidate: one character further.
                    from = start + lowered[start..].chars().next().map_or(1, char::len_utf8);
                }
                false
            }
            Key::Regex(re) => {
                let mut from = 0;
                while from <= lowered.len() {
                    let Some(m) = re.find_at(lowered, from) else {
                        return false;
                    };
                    if whole(lowered, m.start(), m.end()) {
                        return true;
                    }
                    from = m.start()
                        + lowered[m.start()..]
                            .chars()
                            .next()
                            .map_or(1, char::len_utf8);
                }
                false
            }
        }
    }
}

fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn whole(text: &str, start: usize, end: usize) -> bool {
    let before = text[..start].chars().next_back();
    let after = text[end..].chars().next();
    !before.is_some_and(word_char) && !after.is_some_and(word_char)
}

/// Compiles a list of keys, skipping invalid ones.
pub fn compile_keys<'a>(keys: impl IntoIterator<Item = &'a str>) -> Vec<Key> {
    keys.into_iter().filter_map(|k| Key::new(k).ok()).collect()
}

/// Compiles an RE2 pattern for an unanchored, case-sensitive search (unless
/// it says `(?i)`).
pub fn compile_pattern(p: &str) -> Result<Regex, String> {
    RegexBuilder::new(p)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| format!("`{p}` is not a valid regular expression: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(key: &str, text: &str) -> bool {
        Key::new(key).unwrap().hits(&lower(text))
    }

    #[test]
    fn format_19_2_example() {
        assert!(hits("gore", "GORE!"));
        assert!(hits("blood bath", "a blood bath."));
        assert!(!hits("gore", "gored"));
        assert!(!hits("blood bath", "bloodbath"));
    }

    #[test]
    fn format_5_4_example_every_occurrence_is_tried() {
        assert!(hits("dragon", "Dragons? No, a DRAGON."));
        assert!(hits("/nice(ly)?/", "That is NICELY done"));
        assert!(!hits("cheap", "Cheapest?"));
        assert!(hits("cheap", "Hello! Is this cheap?"));
    }
}

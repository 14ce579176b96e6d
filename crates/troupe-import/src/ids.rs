//! Troupe IDs for imported things (Format 3.1): names become lower-case
//! slugs, made unique and kept clear of the reserved IDs (3.2).

use std::collections::HashSet;

use troupe::internals::model::RESERVED_IDS as RESERVED;

/// A slug of `name` that matches the ID grammar `^[a-z][a-z0-9_-]{0,63}$`:
/// ASCII letters lower-cased, digits kept, every other run of characters one
/// `-`, trimmed of `-`. Returns `fallback` when nothing is left; a slug that
/// starts with a digit gets `fallback-` in front; reserved IDs get `-1`.
/// `fallback` must itself be an ID.
pub fn slug(name: &str, fallback: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let mut s = out.trim_end_matches('-').to_string();
    if s.is_empty() {
        s = fallback.to_string();
    } else if !s.starts_with(|c: char| c.is_ascii_lowercase()) {
        s = format!("{fallback}-{s}");
    }
    s.truncate(60);
    let s = s.trim_end_matches('-').to_string();
    if RESERVED.contains(&s.as_str()) {
        format!("{s}-1")
    } else {
        s
    }
}

/// `base`, or `base-2`, `base-3`, … : the first not in `taken`, which it is
/// then added to.
pub fn unique(base: &str, taken: &mut HashSet<String>) -> String {
    let mut id = base.to_string();
    let mut n = 2;
    while taken.contains(&id) {
        id = format!("{base}-{n}");
        n += 1;
    }
    taken.insert(id.clone());
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_the_id_grammar() {
        assert_eq!(slug("Seraphina", "character"), "seraphina");
        assert_eq!(slug("Coding Sensei!", "character"), "coding-sensei");
        assert_eq!(slug("  ", "character"), "character");
        assert_eq!(slug("Ærø", "character"), "r");
        assert_eq!(slug("2B", "character"), "character-2b");
        assert_eq!(slug("User", "character"), "user-1");
        assert_eq!(slug(&"a".repeat(100), "c").len(), 60);
    }

    #[test]
    fn unique_counts_up() {
        let mut taken = HashSet::new();
        assert_eq!(unique("a", &mut taken), "a");
        assert_eq!(unique("a", &mut taken), "a-2");
        assert_eq!(unique("a", &mut taken), "a-3");
    }
}

//! The ID grammar (Format 3.1): `^[a-z][a-z0-9_-]{0,63}$`.

/// IDs that are never a character, world, scenario or variable ID (Format 3.2).
pub use crate::model::RESERVED_IDS;

/// True when `s` is an ID: a lower-case ASCII letter, then up to 63 lower-case
/// letters, digits, `_` or `-`.
pub fn is_id(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_lowercase()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_' || *c == b'-')
}

#[cfg(test)]
mod tests {
    use super::is_id;

    #[test]
    fn grammar() {
        assert!(is_id("kai"));
        assert!(is_id("a-b_9"));
        assert!(!is_id("Kai"));
        assert!(!is_id("9a"));
        assert!(!is_id(""));
        assert!(!is_id(&"a".repeat(65)));
    }
}

//! The ID grammar (Format 3.1): `^[a-z][a-z0-9_-]{0,63}$`.

#[cfg(test)]
pub use crate::model::is_id;

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

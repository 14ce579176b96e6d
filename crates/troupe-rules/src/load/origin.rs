//! Where a lowered bundle's values came from: a table from bundle pointers to
//! (pack file, pointer in that file), so that a diagnostic found on the
//! lowered bundle points at the YAML the author wrote (Format 13).

/// One mapping: every bundle pointer under `bundle` comes from `file` under
/// `source`.
#[derive(Debug, Clone)]
struct Mapping {
    bundle: String,
    file: String,
    source: String,
}

/// The origin table of a lowered pack.
#[derive(Debug, Clone, Default)]
pub struct Origins {
    maps: Vec<Mapping>,
}

impl Origins {
    /// Records that bundle pointer `bundle` (and everything under it) comes
    /// from `file` at `source`.
    pub fn map(&mut self, bundle: impl Into<String>, file: &str, source: impl Into<String>) {
        self.maps.push(Mapping {
            bundle: bundle.into(),
            file: file.to_string(),
            source: source.into(),
        });
    }

    /// Appends `other`'s mappings after this table's (a table built in
    /// parts, in order, is the table built in one go).
    pub fn extend(&mut self, other: Origins) {
        self.maps.extend(other.maps);
    }

    /// Translates a bundle pointer to (file, pointer) by the longest mapped
    /// prefix (a prefix ends at a `/` boundary). `None` when nothing maps.
    pub fn translate(&self, pointer: &str) -> Option<(String, String)> {
        let best = self
            .maps
            .iter()
            .filter(|m| {
                pointer == m.bundle
                    || (pointer.starts_with(&m.bundle)
                        && pointer.as_bytes().get(m.bundle.len()) == Some(&b'/'))
                    || m.bundle.is_empty()
            })
            .max_by_key(|m| m.bundle.len())?;
        Some((
            best.file.clone(),
            format!("{}{}", best.source, &pointer[best.bundle.len()..]),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins_at_segment_boundaries() {
        let mut o = Origins::default();
        o.map("/scenarios/0", "scenarios/a.yaml", "");
        o.map(
            "/scenarios/0/variables/1",
            "scenarios/a.yaml",
            "/state/variables/trust",
        );
        o.map("/scenarios/1", "scenarios/b.yaml", "");
        assert_eq!(
            o.translate("/scenarios/0/variables/1/default"),
            Some((
                "scenarios/a.yaml".into(),
                "/state/variables/trust/default".into()
            ))
        );
        assert_eq!(
            o.translate("/scenarios/10/id"),
            None,
            "/scenarios/1 must not match /scenarios/10"
        );
        assert_eq!(
            o.translate("/scenarios/1/id"),
            Some(("scenarios/b.yaml".into(), "/id".into()))
        );
    }
}

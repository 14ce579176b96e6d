//! A YAML script's root (Format 20, `troupe run --script`): a mapping
//! `{inputs: [string], scenario?: id, seed?: int ≥ 0, opening?: id,
//! difficulty?: id}`, each field as written (the script reader says what is
//! wrong with a field, so the view keeps the values untyped).

use serde_json::{Map, Value};

/// The fields of a script's root (Format 20), as written.
#[derive(Debug, Clone, Copy)]
pub struct ScriptRoot<'a> {
    /// `inputs`: the player's lines.
    pub inputs: Option<&'a Value>,
    /// `scenario`: the scenario played.
    pub scenario: Option<&'a Value>,
    /// `seed`: the session seed (18.4).
    pub seed: Option<&'a Value>,
    /// `opening`: the root's opening.
    pub opening: Option<&'a Value>,
    /// `difficulty`: the root's preset.
    pub difficulty: Option<&'a Value>,
}

impl<'a> ScriptRoot<'a> {
    /// The keys of a script's root; any other is refused.
    pub const KEYS: [&'static str; 5] = ["inputs", "scenario", "seed", "opening", "difficulty"];

    /// Reads the mapping `m`.
    pub fn read(m: &'a Map<String, Value>) -> ScriptRoot<'a> {
        ScriptRoot {
            inputs: m.get("inputs"),
            scenario: m.get("scenario"),
            seed: m.get("seed"),
            opening: m.get("opening"),
            difficulty: m.get("difficulty"),
        }
    }

    /// `scenario`, `opening` and `difficulty` with their keys (for
    /// messages).
    pub fn ids(&self) -> [(&'static str, Option<&'a Value>); 3] {
        [
            ("scenario", self.scenario),
            ("opening", self.opening),
            ("difficulty", self.difficulty),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_script_root_keeps_each_field_as_written() {
        let v = json!({"inputs": "hello", "seed": -1, "scenario": ["a"], "x-note": 1});
        let r = ScriptRoot::read(v.as_object().unwrap());
        assert_eq!(
            (r.inputs, r.seed),
            (Some(&json!("hello")), Some(&json!(-1)))
        );
        assert_eq!(r.ids()[0], ("scenario", Some(&json!(["a"]))));
        assert!(r.opening.is_none() && r.difficulty.is_none());
        assert!(!ScriptRoot::KEYS.contains(&"x-note"));
    }
}

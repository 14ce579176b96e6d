//! Bundles (Format 3–11): characters, worlds and scenarios.
//!
//! Every field the format marks optional is `Option` or defaults to empty, so
//! that a document read before its schema passes still yields what it can.

use serde::Deserialize;
use serde_json::Value;

/// A character (Format 4). `fictional` and `age_band` are enforced by the schema.
#[derive(Debug, Clone, Deserialize)]
pub struct Character {
    /// The character's ID (Format 3).
    pub id: String,
    /// The full name.
    #[serde(default)]
    pub name: String,
    /// What `{{char}}` renders when present (Format 10).
    #[serde(default)]
    pub nickname: Option<String>,
    /// Further names that address the character (Format 4, 18.9).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The character's own variables, state names `<id>.<variable>` (Format 8.7).
    #[serde(default)]
    pub variables: Vec<Value>,
    /// `description` (a template, Format 4).
    #[serde(default)]
    pub description: Option<String>,
    /// `personality` (a template, Format 4).
    #[serde(default)]
    pub personality: Option<String>,
    /// `text`: free named texts for runtimes, in written order (Format 4).
    #[serde(default)]
    pub text: indexmap::IndexMap<String, String>,
}

impl Character {
    /// The name macros render: the nickname when there is one, else the name.
    pub fn display_name(&self) -> &str {
        self.nickname.as_deref().unwrap_or(&self.name)
    }
}

/// A world with variables and lore entries (Format 5).
#[derive(Debug, Clone, Deserialize)]
pub struct World {
    /// The world's ID.
    pub id: String,
    /// The world's name.
    #[allow(dead_code)] // the typed model's field; its readers still read the raw document (issue 38 item 1)
    #[serde(default)]
    pub name: String,
    /// The world's variables, state names `<id>.<variable>`.
    #[serde(default)]
    pub variables: Vec<Value>,
    /// Lore entries.
    #[serde(default)]
    pub entries: Vec<Value>,
    /// Recursive activation (Format 5.1, 5.7): `true`, an int ≥ 1 (the
    /// most steps), or `false`.
    #[serde(default)]
    pub recursion: Option<Value>,
}

/// A lore entry (Format 5).
#[derive(Debug, Clone, Deserialize)]
pub struct Entry {
    /// The entry's ID.
    pub id: String,
    /// The text the entry contributes when active.
    #[serde(default)]
    pub content: String,
    /// Primary keys; a key `/re/flags` is a regular expression.
    #[serde(default)]
    pub keys: Vec<String>,
    /// Secondary keys, combined by `logic`; `None` when not written (an
    /// empty list written is secondary keys that match nothing, Format 5.3).
    #[serde(default)]
    pub secondary_keys: Option<Vec<String>>,
    /// `and_any` (default), `and_all`, `not_any` or `not_all`.
    #[serde(default)]
    pub logic: Option<String>,
    /// Always active (when enabled and `when` holds).
    #[serde(default)]
    pub constant: bool,
    /// Keys match case-sensitively.
    #[serde(default)]
    pub case_sensitive: bool,
    /// Keys match whole words only (default true).
    #[serde(default = "yes")]
    pub whole_words: bool,
    /// How many messages back the keys scan (default 1).
    #[serde(default = "one", deserialize_with = "super::de_int")]
    pub scan_depth: u32,
    /// Listing order, ascending (default 100).
    #[serde(default = "hundred", deserialize_with = "super::de_int")]
    pub order: i64,
    /// `before` (default) or `after`.
    #[serde(default)]
    pub position: Option<String>,
    /// A disabled entry is never active (default true).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// An extra CEL condition, with `hit()` available (Format 11.4).
    #[serde(default)]
    pub when: Option<String>,
    /// Messages the entry stays active after it starts (Format 5.6).
    #[serde(default, deserialize_with = "super::de_opt_int")]
    pub sticky: Option<u64>,
    /// Messages it cannot be active after its start and sticky ones (5.6).
    #[serde(default, deserialize_with = "super::de_opt_int")]
    pub cooldown: Option<u64>,
    /// The position a path must reach before it can be active (5.6).
    #[serde(default, deserialize_with = "super::de_opt_int")]
    pub delay: Option<u64>,
    /// Never activated by a recursion step (Format 5.7).
    #[serde(default)]
    pub exclude_recursion: bool,
    /// Its content is not put in the recursion buffer (5.7).
    #[serde(default)]
    pub prevent_recursion: bool,
    /// `true` (level 1), an int ≥ 1, or `false` (level 0) (5.7).
    #[serde(default)]
    pub delay_until_recursion: Option<Value>,
    /// The inclusion groups it belongs to (Format 5.8).
    #[serde(default)]
    pub group: Vec<String>,
    /// Its weight in a group's weighted choice (default 100, 5.8).
    #[serde(default = "hundred_u", deserialize_with = "super::de_int")]
    pub group_weight: u64,
    /// Prioritize inclusion (5.8).
    #[serde(default)]
    pub group_override: bool,
    /// Group scoring (5.8).
    #[serde(default)]
    pub group_scoring: bool,
}

fn yes() -> bool {
    true
}
fn one() -> u32 {
    1
}
fn hundred() -> i64 {
    100
}
fn hundred_u() -> u64 {
    100
}

/// A variable declaration (Format 8.1).
#[derive(Debug, Clone, Deserialize)]
pub struct Variable {
    /// The variable's ID.
    pub id: String,
    /// The declared type as written (`int`, `list(string)`, ...).
    #[serde(rename = "type")]
    pub ty: String,
    /// The default value as written.
    #[serde(default)]
    pub default: Option<Value>,
    /// The difficulty knob the variable starts at (Format 8.1, 6.5).
    #[serde(default)]
    pub knob: Option<String>,
    /// Lower bound (int and number only).
    #[serde(default)]
    pub min: Option<Value>,
    /// Upper bound (int and number only).
    #[serde(default)]
    pub max: Option<Value>,
    /// Decimal places of a number (default 2).
    #[serde(default, deserialize_with = "super::de_opt_int")]
    pub places: Option<u32>,
    /// `[ids]`, `"cast"` or `"*"` for a keyed variable (Format 8.4).
    #[serde(default)]
    pub keys: Option<Keys>,
    /// A CEL expression for a derived variable.
    #[serde(default)]
    pub derived: Option<String>,
    /// `visible` (default) or `hidden`.
    #[serde(default)]
    pub visibility: Option<String>,
}

/// The key set of a keyed variable (Format 8.4).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Keys {
    /// A fixed list of keys, each always present.
    List(Vec<String>),
    /// `"cast"` (the cast's character IDs) or `"*"` (any key, present once set).
    Word(String),
}

/// A cast entry (Format 6.1).
#[derive(Debug, Clone, Deserialize)]
pub struct CastEntry {
    /// A character in the cast.
    #[serde(default)]
    pub character: Option<String>,
    /// A seat, filled by a session's players.
    #[serde(default)]
    pub seat: Option<String>,
    /// Whether a player plays this member (always true for seats).
    #[serde(default)]
    pub player: Option<bool>,
}

/// An opening (Format 6.3).
#[derive(Debug, Clone, Deserialize)]
pub struct Opening {
    /// The opening's ID.
    pub id: String,
    /// A character ID or `narrator`.
    #[serde(default)]
    pub author: Option<String>,
    /// The opening's parts.
    #[serde(default)]
    pub parts: Vec<Value>,
    /// Short form: one text part.
    #[serde(default)]
    pub text: Option<String>,
    /// Changes applied at the root (Format 8.5).
    #[serde(default)]
    pub changes: Vec<Value>,
    /// Scene the root starts in.
    #[serde(default)]
    pub scene: Option<Scene>,
    /// Only for sessions with several players.
    #[serde(default)]
    pub group_only: bool,
}

/// A scene (Format 6.4).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Scene {
    /// Where the scene is.
    #[serde(default)]
    pub location: Option<String>,
    /// Who is present (cast members).
    #[serde(default)]
    pub present: Option<Vec<String>>,
}

/// A condition: a CEL string, or the pack shape `{type, variable, threshold}`
/// (Format 9, lowered to CEL).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Condition {
    /// A CEL expression.
    Cel(String),
    /// `{type: variable_above|variable_below|variable_equals, variable, threshold}`.
    Threshold {
        /// The comparison.
        #[serde(rename = "type")]
        kind: String,
        /// The variable's state name.
        variable: String,
        /// The threshold, as written.
        threshold: Value,
    },
}

impl Condition {
    /// Reads the condition `when` (a CEL string or the threshold shape;
    /// `None` for anything else), borrowing it: no copy of `when` is made
    /// first (the checks and the compile read every condition,
    /// docs/performance.md, Run AE).
    ///
    /// Read by hand as the derived (untagged) reading reads it — a string
    /// is CEL; an object with string `type` and `variable` and any
    /// `threshold` (other members ignored) is a Threshold; nothing else is
    /// a condition — without serde's buffered copy
    /// of `when` that an untagged enum makes (docs/performance.md, Run AJ).
    pub fn read(when: &Value) -> Option<Condition> {
        let threshold = |kind: &Value, variable: &Value, threshold: &Value| {
            Some(Condition::Threshold {
                kind: kind.as_str()?.to_string(),
                variable: variable.as_str()?.to_string(),
                threshold: threshold.clone(),
            })
        };
        match when {
            Value::String(s) => Some(Condition::Cel(s.clone())),
            Value::Object(m) => threshold(m.get("type")?, m.get("variable")?, m.get("threshold")?),
            _ => None,
        }
    }
}

/// A scenario (Format 6).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Scenario {
    /// The scenario's ID.
    pub id: String,
    /// The scenario's name.
    #[serde(default)]
    pub name: String,
    /// The scenario's `description` (a template, Format 6).
    #[serde(default)]
    pub description: Option<String>,
    /// The narrator (Format 6.2).
    #[serde(default)]
    pub narrator: Option<Narrator>,
    /// `cast` (default) or `single` (Format 7.4).
    #[serde(default)]
    pub voice: Option<String>,
    /// The worlds the scenario uses, by ID.
    #[serde(default)]
    pub worlds: Vec<Value>,
    /// The cast, in order.
    #[serde(default)]
    pub cast: Vec<Value>,
    /// Openings.
    #[serde(default)]
    pub openings: Vec<Value>,
    /// The initial scene.
    #[serde(default)]
    pub scene: Option<Scene>,
    /// The scenario's own variables.
    #[serde(default)]
    pub variables: Vec<Value>,
    /// Events, in declaration order.
    #[serde(default)]
    pub events: Vec<Value>,
    /// Outcomes, in declaration order.
    #[serde(default)]
    pub outcomes: Vec<Value>,
    /// Rules of the rules runtime (Format 18).
    #[serde(default)]
    pub rules: Vec<Value>,
    /// Scenario-level lore entries.
    #[serde(default)]
    pub entries: Vec<Value>,
    /// Difficulty presets.
    #[serde(default)]
    pub difficulty: Option<Value>,
    /// The emotion expression (CEL, Format 18.6).
    #[serde(default)]
    pub emotion: Option<Value>,
    /// The model block (Format 24.2).
    #[serde(default)]
    pub model: Option<Value>,
    /// The rubric.
    #[serde(default)]
    pub rubric: Option<Value>,
    /// The safety policy.
    #[serde(default)]
    pub safety: Option<Value>,
    /// The turn order (Format 18.9).
    #[serde(default)]
    pub turn_order: Option<Value>,
}

/// The fields of [`Scenario`] other than its lists and blocks, typed as
/// there ([`Scenario::read_checked`]).
#[derive(Deserialize)]
struct ScenarioFields {
    id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    narrator: Option<Narrator>,
    #[serde(default)]
    voice: Option<String>,
    #[serde(default)]
    scene: Option<Scene>,
}

/// A scenario's lists of format items (Format 6), named as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    /// `cast` (6.1).
    Cast,
    /// `openings` (6.3).
    Openings,
    /// `variables` (8.1).
    Variables,
    /// `events` (9).
    Events,
    /// `outcomes` (9.4).
    Outcomes,
    /// `rules` (18.1).
    Rules,
    /// `entries` (5).
    Entries,
}

impl List {
    /// The field's name in the format.
    pub fn name(self) -> &'static str {
        match self {
            List::Cast => "cast",
            List::Openings => "openings",
            List::Variables => "variables",
            List::Events => "events",
            List::Outcomes => "outcomes",
            List::Rules => "rules",
            List::Entries => "entries",
        }
    }
}

impl std::fmt::Display for List {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Scenario {
    /// Reads a scenario object (Format 6) as `Scenario::deserialize` does,
    /// moving its lists and blocks out of `value` instead of rebuilding
    /// them: the same result (`None` where deserializing fails) without a
    /// second copy of the scenario's items. Unlike serde, a value that is
    /// no object is no scenario (serde would read an array's items as the
    /// fields by position). The reference [`Scenario::read_checked`] is
    /// tested against.
    #[cfg(test)]
    pub fn from_value(value: Value) -> Option<Scenario> {
        let Value::Object(mut m) = value else {
            return None;
        };
        // `#[serde(default)] Vec<Value>`: absent is empty, anything but an
        // array (null included) fails.
        let mut list = |k: &str| match m.remove(k) {
            None => Some(Vec::new()),
            Some(Value::Array(items)) => Some(items),
            Some(_) => None,
        };
        let (worlds, cast, openings, variables) = (
            list("worlds")?,
            list("cast")?,
            list("openings")?,
            list("variables")?,
        );
        let (events, outcomes, rules, entries) = (
            list("events")?,
            list("outcomes")?,
            list("rules")?,
            list("entries")?,
        );
        // `#[serde(default)] Option<Value>`: absent or null is `None`.
        let mut block = |k: &str| m.remove(k).filter(|v| !v.is_null());
        let (difficulty, emotion, model) = (block("difficulty"), block("emotion"), block("model"));
        let (rubric, safety, turn_order) = (block("rubric"), block("safety"), block("turn_order"));
        let rest = Scenario::deserialize(Value::Object(m)).ok()?;
        Some(Scenario {
            worlds,
            cast,
            openings,
            variables,
            events,
            outcomes,
            rules,
            entries,
            difficulty,
            emotion,
            model,
            rubric,
            safety,
            turn_order,
            ..rest
        })
    }

    /// Reads the scenario as the checks and the compiler read it (Format
    /// 6): its format fields copied out of `value`, without the
    /// `extensions` of the scenario and of the items of its lists (other
    /// tools' free JSON, which no check reads) and without unknown fields
    /// (which the schema check reports), so that a scenario carrying
    /// megabytes of either is not copied with them (Format 16.2's memory
    /// bound). What `Scenario::from_value` (its tests' reference) gives
    /// for such a copy, built without an intermediate object: each field
    /// is copied once, each item's members without hashing them again
    /// (docs/performance.md, Run AJ).
    pub fn read_checked(value: &Value) -> Option<Scenario> {
        let m = value.as_object()?;
        let item = |v: &Value| match v {
            Value::Object(o) if o.contains_key("extensions") => Value::Object(
                o.iter()
                    .filter(|(k, _)| k.as_str() != "extensions")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            v => v.clone(),
        };
        // As `from_value`: absent is empty, anything but an array fails.
        let list = |k: &str| match m.get(k) {
            None => Some(Vec::new()),
            Some(Value::Array(items)) => Some(items.iter().map(item).collect()),
            Some(_) => None,
        };
        let (worlds, cast, openings, variables) = (
            list("worlds")?,
            list("cast")?,
            list("openings")?,
            list("variables")?,
        );
        let (events, outcomes, rules, entries) = (
            list("events")?,
            list("outcomes")?,
            list("rules")?,
            list("entries")?,
        );
        let block = |k: &str| m.get(k).filter(|v| !v.is_null()).cloned();
        let (difficulty, emotion, model) = (block("difficulty"), block("emotion"), block("model"));
        let (rubric, safety, turn_order) = (block("rubric"), block("safety"), block("turn_order"));
        // The other fields, read in place (serde skips the members it
        // does not name without copying them).
        let head = ScenarioFields::deserialize(value).ok()?;
        Some(Scenario {
            id: head.id,
            name: head.name,
            description: head.description,
            narrator: head.narrator,
            voice: head.voice,
            scene: head.scene,
            worlds,
            cast,
            openings,
            variables,
            events,
            outcomes,
            rules,
            entries,
            difficulty,
            emotion,
            model,
            rubric,
            safety,
            turn_order,
        })
    }

    /// The items of the list `l`, in order.
    pub fn list(&self, l: List) -> &[Value] {
        match l {
            List::Cast => &self.cast,
            List::Openings => &self.openings,
            List::Variables => &self.variables,
            List::Events => &self.events,
            List::Outcomes => &self.outcomes,
            List::Rules => &self.rules,
            List::Entries => &self.entries,
        }
    }

    /// The difficulty presets (Format 6.5), when the scenario has them.
    pub fn difficulty(&self) -> Option<super::items::Difficulty<'_>> {
        self.difficulty.as_ref().map(super::items::Difficulty::read)
    }

    /// The cast entries (Format 6.1), in order.
    pub fn cast_entries(&self) -> impl Iterator<Item = super::items::Cast<'_>> {
        self.cast.iter().map(super::items::Cast::read)
    }

    /// The rules (Format 18.1), in order.
    pub fn rule_items(&self) -> impl Iterator<Item = super::items::Rule<'_>> {
        self.rules.iter().map(super::items::Rule::read)
    }

    /// The items of `l`, `List::Events` or `List::Outcomes` (Format 9,
    /// 9.4), read as events, in order.
    pub fn event_items(&self, l: List) -> impl Iterator<Item = super::items::Event<'_>> {
        self.list(l).iter().map(super::items::Event::read)
    }

    /// The turn order (Format 18.9; all absent without one).
    pub fn turn_order(&self) -> super::items::TurnOrder<'_> {
        super::items::TurnOrder::read(self.turn_order.as_ref())
    }

    /// The rubric's criteria (Format 19.6; `None` without a rubric).
    pub fn criteria(&self) -> Option<impl Iterator<Item = super::items::Criterion<'_>>> {
        super::items::Criterion::of_rubric(self.rubric.as_ref()?)
    }

    /// The safety policy's categories (Format 19.1), in order.
    pub fn categories(&self) -> impl Iterator<Item = super::items::Category<'_>> {
        super::items::Category::all(self.safety.as_ref())
    }

    /// The emotion expression (Format 18.6), when written as text.
    pub fn emotion(&self) -> Option<&str> {
        self.emotion.as_ref().and_then(Value::as_str)
    }

    /// The model block's `changes` (Format 24.2), when written as an object.
    pub fn model_changes(&self) -> Option<&serde_json::Map<String, Value>> {
        self.model.as_ref()?.get("changes")?.as_object()
    }

    /// The model block's `prompt` (Format 24.3), when written as text.
    pub fn model_prompt(&self) -> Option<&str> {
        self.model.as_ref()?.get("prompt")?.as_str()
    }

    /// Who the scene starts with (Format 6.4), when written.
    pub fn present(&self) -> Option<&[String]> {
        self.scene.as_ref()?.present.as_deref()
    }
}

/// The narrator (Format 6.2).
#[derive(Debug, Clone, Deserialize)]
pub struct Narrator {
    /// The narrator's name (default `Narrator`).
    #[serde(default)]
    pub name: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `Scenario::from_value` reads what `Scenario::deserialize` reads, and
    /// fails where it fails.
    /// `read_checked` is `from_value` of the scenario's format fields,
    /// `extensions` left out at the top and in the lists' items (the
    /// copy the resolver made before Run AJ).
    #[test]
    fn read_checked_is_from_value_of_the_checked_fields() {
        const LISTS: &[&str] = &[
            "worlds",
            "cast",
            "openings",
            "variables",
            "events",
            "outcomes",
            "rules",
            "entries",
        ];
        let strip = |item: &Value| match item.as_object() {
            Some(m) => Value::Object(
                m.iter()
                    .filter(|(k, _)| k.as_str() != "extensions")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            None => item.clone(),
        };
        let checked = |v: &Value| -> Value {
            let Some(m) = v.as_object() else {
                return v.clone();
            };
            Value::Object(
                m.iter()
                    .filter(|(k, _)| {
                        k.as_str() != "extensions"
                            && crate::model::SCENARIO_FIELDS.contains(&k.as_str())
                    })
                    .map(|(k, v)| match v.as_array() {
                        Some(items) if LISTS.contains(&k.as_str()) => {
                            (k.clone(), Value::Array(items.iter().map(strip).collect()))
                        }
                        _ => (k.clone(), v.clone()),
                    })
                    .collect(),
            )
        };
        let cases = [
            json!({"id": "s"}),
            json!({"id": "s", "name": "S", "events": [{"id": "e", "extensions": {"x": 1}}], "rules": [], "cast": [{"character": "a"}, "odd", 3]}),
            json!({"id": "s", "difficulty": null, "model": {"changes": {}}, "emotion": "x", "turn_order": 3}),
            json!({"id": "s", "events": null}),
            json!({"id": "s", "events": {"id": "e"}}),
            json!({"id": "s", "cast": "a", "extensions": {"big": [1, 2]}}),
            json!({"id": 5}),
            json!({"name": "no id", "extensions": {}}),
            json!({"id": "s", "scene": {"present": ["a"]}, "narrator": {"name": "N"}, "unknown": [1]}),
            json!({"id": "s", "scene": {"present": [1]}}),
            json!({"id": "s", "description": 7}),
            json!({"id": "s", "description": null, "voice": "single", "safety": {"extensions": {"k": 1}}}),
            json!({"id": "s", "worlds": ["w", {"extensions": 1, "id": "v"}], "variables": [{"id": "v", "type": "int", "extensions": null, "zz": 2}]}),
            json!(["s", "S"]),
            json!("s"),
        ];
        for v in cases {
            let direct = Scenario::read_checked(&v).map(|s| format!("{s:?}"));
            let copied = Scenario::from_value(checked(&v)).map(|s| format!("{s:?}"));
            assert_eq!(direct, copied, "{v}");
        }
    }

    /// `Condition::read` reads every shape as the derived reading does.
    #[test]
    fn condition_read_is_the_derived_reading() {
        let cases = [
            json!("state.x > 1"),
            json!(""),
            json!({"type": "variable_above", "variable": "x", "threshold": 3}),
            json!({"type": "variable_above", "variable": "x", "threshold": 3.50, "other": [1]}),
            json!({"type": "variable_above", "variable": "x", "threshold": null}),
            json!({"type": "variable_above", "variable": "x", "threshold": {"a": [1, "b"]}}),
            json!({"type": "variable_above", "variable": "x"}),
            json!({"type": "variable_above", "threshold": 1}),
            json!({"variable": "x", "threshold": 1}),
            json!({"type": 1, "variable": "x", "threshold": 1}),
            json!({"type": "t", "variable": null, "threshold": 1}),
            json!({}),
            json!(["variable_above", "x", 3]),
            json!(["variable_above", "x"]),
            json!(["variable_above", "x", 3, 4]),
            json!([1, "x", 3]),
            json!(["a", 2, 3]),
            json!([]),
            json!(1),
            json!(1.5),
            json!(true),
            json!(null),
        ];
        for v in cases {
            let by_hand = Condition::read(&v).map(|c| format!("{c:?}"));
            let derived = Condition::deserialize(&v).ok().map(|c| format!("{c:?}"));
            assert_eq!(by_hand, derived, "{v}");
        }
        let big: Value = serde_json::from_str(
            r#"{"type": "a", "variable": "b", "threshold": 1.0000000000000000000001}"#,
        )
        .unwrap();
        let Some(Condition::Threshold { threshold, .. }) = Condition::read(&big) else {
            panic!("a threshold");
        };
        assert_eq!(threshold.to_string(), "1.0000000000000000000001");
    }

    #[test]
    fn from_value_reads_as_deserialize_does() {
        let cases = [
            json!({"id": "s"}),
            json!({"id": "s", "name": "S", "events": [{"id": "e"}], "rules": [], "cast": [{"character": "a"}]}),
            json!({"id": "s", "difficulty": null, "model": {"changes": {}}, "emotion": "x", "turn_order": 3}),
            json!({"id": "s", "events": null}),
            json!({"id": "s", "events": {"id": "e"}}),
            json!({"id": "s", "cast": "a"}),
            json!({"id": 5}),
            json!({"name": "no id"}),
            json!({"id": "s", "scene": {"present": ["a"]}, "narrator": {"name": "N"}}),
            json!({"id": "s", "scene": {"present": [1]}}),
            json!({"id": "s", "description": 7}),
        ];
        for v in cases {
            let typed = Scenario::from_value(v.clone()).map(|s| format!("{s:?}"));
            let serde = Scenario::deserialize(&v).ok().map(|s| format!("{s:?}"));
            assert_eq!(typed, serde, "{v}");
        }
        // serde reads an array as a struct's fields by position; a scenario
        // is an object (Format 6), so an array is no scenario.
        let array = json!(["s", "S"]);
        assert!(Scenario::deserialize(&array).is_ok());
        assert!(Scenario::from_value(array).is_none());
    }
}

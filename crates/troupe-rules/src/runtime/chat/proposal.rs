//! Who may change what, the structured answer and its validation
//! (Format 24.2, 24.4).

use std::str::FromStr;

use rust_decimal::Decimal;
use serde_json::{json, Map, Value};

use crate::changes::{check_changes, resolve_target, scalar_of, Target};
use crate::compile::StoryIr;
use crate::model::ScalarType;

pub use crate::compile::model::ModelDecl;

/// An answer that passed validation (Format 24.4).
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    /// The reply text (`None`: empty or only white space).
    pub reply: Option<String>,
    /// The changes as Troupe changes (`[{"set": {…}}]`, or `[]`).
    pub changes: Vec<Value>,
    /// The emotion the answer names.
    pub emotion: Option<String>,
    /// The state names whose value was clamped to the step limit.
    pub clamped: Vec<String>,
}

fn decimal(v: &Value) -> Option<Decimal> {
    let n = v.as_number()?;
    let t = n.to_string();
    Decimal::from_str(&t)
        .or_else(|_| Decimal::from_scientific(&t))
        .ok()
}

fn number_value(d: Decimal, int: bool) -> Value {
    if int {
        use rust_decimal::prelude::ToPrimitive;
        return d.trunc().to_i64().map_or(Value::Null, Value::from);
    }
    serde_json::from_str(&d.normalize().to_string()).unwrap_or(Value::Null)
}

/// An answer's text without surrounding white space and one Markdown code
/// fence around it (Format 24.4): some servers wrap JSON in one even when
/// asked not to.
pub fn unfence(text: &str) -> &str {
    let trimmed = text.trim();
    trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|t| t.strip_suffix("```"))
        .map_or(trimmed, str::trim)
}

/// The value an absent key of a `"*"` variable starts from (Format 8.4):
/// its default, normalized (8.3); `None` when `name` is no such key.
fn absent_key_default(ir: &StoryIr, name: &str) -> Option<Value> {
    let Target::Key(var, _) = resolve_target(ir, name).ok()? else {
        return None;
    };
    let v = ir.vars.get(*ir.var_index.get(var)? as usize)?;
    Some(v.default.to_json())
}

/// The most problems a refused answer lists (Format 24.4); the rest are
/// counted.
pub const MAX_PROBLEMS: usize = 16;
/// The most characters of an answer's name or text quoted in a problem
/// (Format 24.4).
pub const MAX_QUOTED_CHARS: usize = 64;
/// The most characters of one problem (Format 24.4).
pub const MAX_PROBLEM_CHARS: usize = 300;

/// `s` cut to its first `max` characters followed by `…` when longer.
fn cut(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]).into(),
        None => s.into(),
    }
}

/// A name or text of the answer as a problem quotes it (Format 24.4).
fn quoted(s: &str) -> std::borrow::Cow<'_, str> {
    cut(s, MAX_QUOTED_CHARS)
}

/// The problems of an answer, bounded (Format 24.4): the first
/// [`MAX_PROBLEMS`] kept, the rest counted, so a hostile answer costs a
/// refusal of a fixed size whatever its length.
#[derive(Default)]
struct Problems {
    list: Vec<String>,
    more: usize,
}

impl Problems {
    /// Records one problem; its text is built only when it is kept.
    fn push(&mut self, problem: impl FnOnce() -> String) {
        if self.list.len() < MAX_PROBLEMS {
            self.list
                .push(cut(&problem(), MAX_PROBLEM_CHARS).into_owned());
        } else {
            self.more += 1;
        }
    }

    fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The list as refused answers show it: the kept problems, then
    /// `and <n> more problems` when some were left out.
    fn finish(mut self) -> Vec<String> {
        if self.more > 0 {
            self.list.push(format!("and {} more problems", self.more));
        }
        self.list
    }
}

/// An answer's members as parsed: every member as its value, but for
/// `changes`, whose names the model may not change are kept (their value
/// as `null`) only while they can still be listed among the first
/// [`MAX_PROBLEMS`] problems; the rest are counted in `unlisted`, and
/// their values never built. A hostile answer of a million such names
/// costs a pass over its text, not a value tree many times its size.
struct Parsed {
    members: Map<String, Value>,
    unlisted: usize,
}

/// The members of `changes` read as [`Parsed`] says.
struct ChangesSeed<'a> {
    decl: &'a ModelDecl,
    unlisted: &'a std::cell::Cell<usize>,
}

/// serde_json's name for a number read as a map (its
/// `arbitrary_precision` form): `changes` written as a number is not an
/// object.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

impl<'de> serde::de::DeserializeSeed<'de> for ChangesSeed<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ChangesSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        use serde::de::IgnoredAny;
        let mut out = Map::new();
        let mut refused = 0usize;
        while let Some(name) = map.next_key::<String>()? {
            if name == NUMBER_TOKEN {
                map.next_value::<IgnoredAny>()?;
                return Ok(Value::Bool(false));
            }
            if self.decl.changes.contains_key(&name) {
                out.insert(name, map.next_value::<Value>()?);
            } else if refused < MAX_PROBLEMS {
                map.next_value::<IgnoredAny>()?;
                refused += 1;
                out.insert(name, Value::Null);
            } else {
                map.next_value::<IgnoredAny>()?;
                self.unlisted.set(self.unlisted.get() + 1);
            }
        }
        Ok(Value::Object(out))
    }

    // Any other value is not an object: which one does not matter.
    fn visit_bool<E>(self, _: bool) -> Result<Value, E> {
        Ok(Value::Bool(false))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Value, E> {
        Ok(Value::Bool(false))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Value, E> {
        Ok(Value::Bool(false))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Value, E> {
        Ok(Value::Bool(false))
    }
    fn visit_str<E>(self, _: &str) -> Result<Value, E> {
        Ok(Value::Bool(false))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Value::Bool(false))
    }
}

/// The answer's top level read as [`Parsed`] says.
struct AnswerSeed<'a> {
    decl: &'a ModelDecl,
    unlisted: &'a std::cell::Cell<usize>,
}

impl<'de> serde::de::DeserializeSeed<'de> for AnswerSeed<'_> {
    type Value = Map<String, Value>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for AnswerSeed<'_> {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Map::new();
        let mut unknown = 0usize;
        while let Some(name) = map.next_key::<String>()? {
            let value = match name.as_str() {
                "changes" => map.next_value_seed(ChangesSeed {
                    decl: self.decl,
                    unlisted: self.unlisted,
                })?,
                "reply" | "emotion" => map.next_value::<Value>()?,
                // A member that is not one of an answer's is a problem
                // whatever its value: the value is not built, and past
                // the listed problems neither is the member.
                _ if unknown < MAX_PROBLEMS => {
                    unknown += 1;
                    map.next_value::<serde::de::IgnoredAny>()?;
                    Value::Null
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    self.unlisted.set(self.unlisted.get() + 1);
                    continue;
                }
            };
            out.insert(name, value);
        }
        Ok(out)
    }
}

/// Parses an answer's text (Format 24.4, 2.2) under Format 16's bounds on
/// documents (size, nesting, the value budget and duplicate member names,
/// checked before anything is built), as [`Parsed`] says; `Err` is the one
/// problem that refuses it.
fn parse_answer(text: &str, decl: &ModelDecl) -> Result<Parsed, String> {
    let text = unfence(text);
    // The syntax first, building nothing: serde_json's own words say what
    // is wrong with text that is not JSON.
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
        return Err(format!("the answer is not JSON ({e})"));
    }
    if !text.starts_with('{') {
        return Err("the answer is not a JSON object".into());
    }
    match crate::load::json::check_json_at("answer", text.as_bytes(), 1) {
        Ok(()) => {}
        Err(d) if d.code == crate::diag::Code::Limit => {
            return Err(format!(
                "the answer is over Format 16's bounds: {}",
                d.message
            ))
        }
        // A member name twice (Format 2.2).
        Err(d) => return Err(format!("the answer is not valid JSON: {}", d.message)),
    }
    let unlisted = std::cell::Cell::new(0);
    let mut de = serde_json::Deserializer::from_str(text);
    // Nesting is bounded by the check above (Format 16: 128 levels).
    de.disable_recursion_limit();
    let members = serde::de::DeserializeSeed::deserialize(
        AnswerSeed {
            decl,
            unlisted: &unlisted,
        },
        &mut de,
    )
    .map_err(|e| format!("the answer is not JSON ({e})"))?;
    Ok(Parsed {
        members,
        unlisted: unlisted.get(),
    })
}

/// Validates an answer's text (Format 24.4) against the story, the
/// `model` block and the flattened state at the input message. `Err` holds
/// the problems found, one sentence each, in the answer's order: at most
/// `MAX_PROBLEMS` of them, then `and <n> more problems`.
pub fn validate(
    text: &str,
    story: &StoryIr,
    decl: &ModelDecl,
    state: &Map<String, Value>,
) -> Result<Validated, Vec<String>> {
    let parsed =
        parse_answer(text, decl).map_err(|e| vec![cut(&e, MAX_PROBLEM_CHARS).into_owned()])?;
    let obj = &parsed.members;
    let mut errors = Problems::default();
    for k in obj.keys() {
        if !matches!(k.as_str(), "reply" | "changes" | "emotion") {
            errors.push(|| {
                format!(
                    "`{}` is not a member of an answer (only `reply`, `changes`, `emotion`)",
                    quoted(k)
                )
            });
        }
    }
    let reply = match obj.get("reply") {
        Some(Value::String(s)) => (!s.trim().is_empty()).then(|| s.clone()),
        Some(_) => {
            errors.push(|| "`reply` must be a string".into());
            None
        }
        None => {
            errors.push(|| "`reply` is missing".into());
            None
        }
    };
    let emotion = match obj.get("emotion") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            if !decl.emotions.is_empty() && !decl.emotions.contains(s) {
                errors.push(|| {
                    format!(
                        "`emotion` `{}` is not one of {}",
                        quoted(s),
                        decl.emotions.join(", ")
                    )
                });
            }
            Some(s.clone())
        }
        Some(_) => {
            errors.push(|| "`emotion` must be a string".into());
            None
        }
    };
    let mut set = Map::new();
    let mut clamped = Vec::new();
    match obj.get("changes") {
        None | Some(Value::Null) => {}
        Some(Value::Object(c)) => {
            for (name, v) in c {
                let Some(step) = decl.changes.get(name) else {
                    errors.push(|| {
                        let name = quoted(name);
                        if decl.changes.is_empty() {
                            format!("`{name}` may not be changed: this scenario lets the model change nothing")
                        } else {
                            format!(
                                "`{name}` may not be changed (the model may change {})",
                                decl.changes.keys().cloned().collect::<Vec<_>>().join(", ")
                            )
                        }
                    });
                    continue;
                };
                let mut diags = Vec::new();
                check_changes(
                    story,
                    &[json!({"set": {name.clone(): v.clone()}})],
                    "",
                    &mut diags,
                );
                if let Some(d) = diags.iter().find(|d| d.is_error()) {
                    errors.push(|| format!("`{}`: {}", quoted(name), d.message));
                    continue;
                }
                let mut value = v.clone();
                // The value at the input message; an absent `"*"` key is
                // measured from its default (Format 24.2, 8.4).
                let base = state
                    .get(name)
                    .cloned()
                    .or_else(|| absent_key_default(story, name));
                if let (Some(step), Some(new), Some(old)) =
                    (step, decimal(v), base.as_ref().and_then(decimal))
                {
                    let int = scalar_of(story, name) == Some(ScalarType::Int);
                    if new > old + *step {
                        value = number_value(old + *step, int);
                        clamped.push(name.clone());
                    } else if new < old - *step {
                        value = number_value(old - *step, int);
                        clamped.push(name.clone());
                    }
                }
                set.insert(name.clone(), value);
            }
        }
        Some(_) => errors.push(|| "`changes` must be an object of state names and values".into()),
    }
    // The members read but not kept, each a problem past the listed ones.
    errors.more += parsed.unlisted;
    if !errors.is_empty() {
        return Err(errors.finish());
    }
    Ok(Validated {
        reply,
        changes: if set.is_empty() {
            Vec::new()
        } else {
            vec![json!({ "set": set })]
        },
        emotion,
        clamped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn story() -> crate::engine::Engine {
        let bundle = json!({
            "troupe": "0.1", "kind": "bundle",
            "characters": [{"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult",
                "variables": [{"id": "mood", "type": "int", "default": 5, "min": 0, "max": 10}]}],
            "scenarios": [{"id": "s", "name": "S", "cast": [{"character": "kai"}, {"seat": "p", "player": true}],
                "variables": [
                    {"id": "price", "type": "number", "default": 10, "places": 2},
                    {"id": "open", "type": "bool", "default": false}
                ],
                "model": {"changes": {"price": {"step": 1.5}, "open": {}, "kai.mood": {"step": 2}}}}]
        });
        crate::pipeline::load(&bundle, None, None).unwrap()
    }

    fn state() -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("price".into(), json!(10));
        m.insert("open".into(), json!(false));
        m.insert("kai.mood".into(), json!(5));
        m
    }

    #[test]
    fn numbers_are_clamped_to_the_step_and_other_types_pass() {
        let e = story();
        let decl = e.ir.model.decl.clone();
        let v = validate(
            r#"{"reply": "Hi", "changes": {"price": 7.25, "open": true, "kai.mood": 9}}"#,
            &e.ir,
            &decl,
            &state(),
        )
        .unwrap();
        assert_eq!(
            v.changes,
            vec![json!({"set": {"price": 8.5, "open": true, "kai.mood": 7}})]
        );
        assert_eq!(v.clamped, ["price", "kai.mood"]);
    }

    #[test]
    fn a_fenced_answer_and_null_members_are_read() {
        let e = story();
        let decl = e.ir.model.decl.clone();
        let v = validate(
            "```json\n{\"reply\": \"Hi\", \"changes\": null, \"emotion\": null}\n```",
            &e.ir,
            &decl,
            &state(),
        )
        .unwrap();
        assert_eq!(v.reply.as_deref(), Some("Hi"));
        assert!(v.changes.is_empty());
    }

    #[test]
    fn every_problem_is_listed() {
        let e = story();
        let decl = e.ir.model.decl.clone();
        let errors = validate(
            r#"{"reply": 3, "changes": {"open": "yes", "nope": 1}, "extra": 1}"#,
            &e.ir,
            &decl,
            &state(),
        )
        .unwrap_err();
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(errors[0].contains("`extra`"));
        assert!(errors[1].contains("`reply` must be a string"));
        assert!(errors[2].starts_with("`open`:"));
        assert!(errors[3].contains("`nope` may not be changed"));
    }

    /// Format 24.4's bound, by hand: 40 names none of which may change are
    /// 40 problems; the first 16 are listed, then `and 24 more problems`.
    /// A name of 100 `x` is quoted as its first 64 characters and `…`.
    #[test]
    fn problems_are_bounded() {
        let e = story();
        let decl = e.ir.model.decl.clone();
        let long = "x".repeat(100);
        let mut changes = Map::new();
        changes.insert(long.clone(), json!(1));
        for i in 1..40 {
            changes.insert(format!("n{i}"), json!(1));
        }
        let answer = json!({"reply": "Hi", "changes": changes}).to_string();
        let errors = validate(&answer, &e.ir, &decl, &state()).unwrap_err();
        assert_eq!(errors.len(), 17, "{errors:?}");
        assert!(errors[0].starts_with(&format!("`{}…` may not be changed", &long[..64])));
        assert!(errors[1].starts_with("`n1` may not be changed"));
        assert_eq!(errors[16], "and 24 more problems");
        assert!(errors
            .iter()
            .all(|p| p.chars().count() <= MAX_PROBLEM_CHARS + 1));
    }

    /// What the streaming read keeps or counts gives the same problems:
    /// `changes` as a number, a string or a list is not an object; 20
    /// members that are not an answer's are 16 listed and 4 counted; a
    /// member name twice is refused (Format 2.2).
    #[test]
    fn the_streaming_read_gives_the_same_problems() {
        let e = story();
        let decl = e.ir.model.decl.clone();
        for changes in ["5", "2.5", "\"x\"", "[1, {}]", "true"] {
            let answer = format!("{{\"reply\": \"Hi\", \"changes\": {changes}}}");
            let errors = validate(&answer, &e.ir, &decl, &state()).unwrap_err();
            assert_eq!(
                errors,
                ["`changes` must be an object of state names and values"],
                "{changes}"
            );
        }
        let mut m = Map::new();
        m.insert("reply".into(), json!("Hi"));
        for i in 0..20 {
            m.insert(format!("x{i}"), json!({"a": [1, 2]}));
        }
        let errors = validate(&Value::Object(m).to_string(), &e.ir, &decl, &state()).unwrap_err();
        assert_eq!(errors.len(), 17);
        assert!(errors[15].starts_with("`x15` is not a member"));
        assert_eq!(errors[16], "and 4 more problems");
        let errors = validate(
            r#"{"reply": "a", "changes": {"open": true, "open": false}}"#,
            &e.ir,
            &decl,
            &state(),
        )
        .unwrap_err();
        assert!(
            errors[0].starts_with("the answer is not valid JSON: duplicate key"),
            "{errors:?}"
        );
        // Allowed names keep their values and are checked as before.
        let v = validate(
            r#"{"nope": 1, "reply": "a", "changes": {"n1": 1, "open": true}}"#,
            &e.ir,
            &decl,
            &state(),
        )
        .unwrap_err();
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].starts_with("`nope` is not a member"));
        assert!(v[1].starts_with("`n1` may not be changed"));
    }

    /// An answer over Format 16's value budget is refused before it is
    /// built (the same check as every document), as not valid JSON.
    #[test]
    fn an_answer_over_the_value_budget_is_refused() {
        let e = story();
        let decl = e.ir.model.decl.clone();
        let zeros = vec!["0"; 200_000].join(",");
        let answer = format!("{{\"reply\": \"Hi\", \"x\": [{zeros}]}}");
        let errors = validate(&answer, &e.ir, &decl, &state()).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].starts_with("the answer is over Format 16's bounds: more than"),
            "{errors:?}"
        );
    }

    #[test]
    fn the_schema_lists_only_what_may_change() {
        let e = story();
        let s = e.ir.model.schema.clone();
        let props = &s["properties"]["changes"]["properties"];
        assert_eq!(props["price"], json!({"type": "number"}));
        assert_eq!(props["open"], json!({"type": "boolean"}));
        assert_eq!(
            props["kai.mood"],
            json!({"type": "integer", "minimum": 0, "maximum": 10})
        );
        assert_eq!(s["required"], json!(["reply"]));
    }
}

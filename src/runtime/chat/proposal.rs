//! Who may change what, the structured answer and its validation
//! (Format 24.2, 24.4).

use std::str::FromStr;

use indexmap::IndexMap;
use rust_decimal::Decimal;
use serde_json::{json, Map, Value};

use crate::check::changes::{check_changes, resolve_target, Target};
use crate::check::story::Story;
use crate::model::ScalarType;

/// What the model may change (Format 24.2): the scenario's `model` block.
#[derive(Debug, Clone, Default)]
pub struct ModelDecl {
    /// The state names the model may change, in written order, each with
    /// its per-turn step limit (`None`: no limit).
    pub changes: IndexMap<String, Option<Decimal>>,
    /// The emotions an answer may name (`[]`: any string).
    pub emotions: Vec<String>,
    /// The instructions template replacing the default (24.3).
    pub prompt: Option<String>,
    /// The lore budget in characters (24.3; default 4000).
    pub lore_budget: usize,
    /// How many messages of the path the transcript holds at most (24.3;
    /// default 40).
    pub history: usize,
}

/// The default lore budget, in characters (Format 24.3).
pub const DEFAULT_LORE_BUDGET: usize = 4000;
/// The default transcript length, in messages (Format 24.3).
pub const DEFAULT_HISTORY: usize = 40;

impl ModelDecl {
    /// Reads the `model` block of a scenario as written in the bundle; an
    /// absent block declares nothing (the model may change nothing).
    pub fn of(scenario: &Value) -> ModelDecl {
        let m = scenario.get("model");
        let mut changes = IndexMap::new();
        if let Some(obj) = m.and_then(|m| m.get("changes")).and_then(Value::as_object) {
            for (name, d) in obj {
                let step = d
                    .get("step")
                    .and_then(|s| Decimal::from_str(&s.to_string()).ok());
                changes.insert(name.clone(), step);
            }
        }
        let as_usize = |k: &str, d: usize| {
            m.and_then(|m| m.get(k))
                .and_then(crate::model::integer_u64)
                .map_or(d, |n| usize::try_from(n).unwrap_or(usize::MAX))
        };
        ModelDecl {
            changes,
            emotions: m
                .and_then(|m| m.get("emotions"))
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            prompt: m
                .and_then(|m| m.get("prompt"))
                .and_then(Value::as_str)
                .map(str::to_string),
            lore_budget: as_usize("lore_budget", DEFAULT_LORE_BUDGET),
            history: as_usize("history", DEFAULT_HISTORY),
        }
    }
}

use crate::check::runtime::scalar_of;

/// The declared bounds of the variable behind a state name.
fn bounds_of(story: &Story, name: &str) -> (Option<Value>, Option<Value>) {
    let var = match resolve_target(story, name) {
        Ok(Target::Variable(v) | Target::Key(v, _)) => v,
        _ => return (None, None),
    };
    story
        .variables
        .get(var)
        .map_or((None, None), |d| (d.decl.min.clone(), d.decl.max.clone()))
}

/// The JSON Schema of an answer (Format 24.4), generated from the story
/// and its `model` block.
pub fn answer_schema(story: &Story, decl: &ModelDecl) -> Value {
    let mut props = Map::new();
    for name in decl.changes.keys() {
        let mut s = Map::new();
        match scalar_of(story, name) {
            Some(ScalarType::Int) => {
                s.insert("type".into(), "integer".into());
            }
            Some(ScalarType::Number) => {
                s.insert("type".into(), "number".into());
            }
            Some(ScalarType::Bool) => {
                s.insert("type".into(), "boolean".into());
            }
            _ => {
                s.insert("type".into(), "string".into());
            }
        }
        let (min, max) = bounds_of(story, name);
        if let Some(m) = min {
            s.insert("minimum".into(), m);
        }
        if let Some(m) = max {
            s.insert("maximum".into(), m);
        }
        props.insert(name.clone(), Value::Object(s));
    }
    let mut top = Map::new();
    top.insert("reply".into(), json!({"type": "string"}));
    top.insert(
        "changes".into(),
        json!({"type": "object", "properties": props, "additionalProperties": false}),
    );
    if decl.emotions.is_empty() {
        top.insert("emotion".into(), json!({"type": "string"}));
    } else {
        top.insert("emotion".into(), json!({"enum": decl.emotions}));
    }
    json!({
        "type": "object",
        "properties": top,
        "required": ["reply"],
        "additionalProperties": false,
    })
}

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
fn absent_key_default(story: &Story, name: &str) -> Option<Value> {
    let crate::check::changes::Target::Key(var, _) =
        crate::check::changes::resolve_target(story, name).ok()?
    else {
        return None;
    };
    let decl = story.variables.get(var)?;
    let norm = crate::compile::value::Norm::of(&decl.decl);
    crate::compile::story::declared_default(decl.ty?, &decl.decl, &norm).map(|v| v.to_json())
}

/// Validates an answer's text (Format 24.4) against the story, the
/// `model` block and the flattened state at the input message. `Err` holds
/// every problem found, one sentence each, in the answer's order.
pub fn validate(
    text: &str,
    story: &Story,
    decl: &ModelDecl,
    state: &Map<String, Value>,
) -> Result<Validated, Vec<String>> {
    let value: Value = match serde_json::from_str(unfence(text)) {
        Ok(v) => v,
        Err(e) => return Err(vec![format!("the answer is not JSON ({e})")]),
    };
    let Some(obj) = value.as_object() else {
        return Err(vec!["the answer is not a JSON object".into()]);
    };
    // Member names are unique in an answer as in every input (Format 2.2,
    // 24.4); serde_json alone would keep the last of two.
    if let Some(d) = crate::load::json::parse_json("answer", unfence(text).as_bytes())
        .diagnostics
        .first()
    {
        return Err(vec![format!("the answer is not valid JSON: {}", d.message)]);
    }
    let mut errors = Vec::new();
    for k in obj.keys() {
        if !matches!(k.as_str(), "reply" | "changes" | "emotion") {
            errors.push(format!(
                "`{k}` is not a member of an answer (only `reply`, `changes`, `emotion`)"
            ));
        }
    }
    let reply = match obj.get("reply") {
        Some(Value::String(s)) => (!s.trim().is_empty()).then(|| s.clone()),
        Some(_) => {
            errors.push("`reply` must be a string".into());
            None
        }
        None => {
            errors.push("`reply` is missing".into());
            None
        }
    };
    let emotion = match obj.get("emotion") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            if !decl.emotions.is_empty() && !decl.emotions.contains(s) {
                errors.push(format!(
                    "`emotion` `{s}` is not one of {}",
                    decl.emotions.join(", ")
                ));
            }
            Some(s.clone())
        }
        Some(_) => {
            errors.push("`emotion` must be a string".into());
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
                    errors.push(if decl.changes.is_empty() {
                        format!("`{name}` may not be changed: this scenario lets the model change nothing")
                    } else {
                        format!(
                            "`{name}` may not be changed (the model may change {})",
                            decl.changes.keys().cloned().collect::<Vec<_>>().join(", ")
                        )
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
                    errors.push(format!("`{name}`: {}", d.message));
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
        Some(_) => errors.push("`changes` must be an object of state names and values".into()),
    }
    if !errors.is_empty() {
        return Err(errors);
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
        crate::engine::Engine::load(&bundle, None, None).unwrap()
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
        let decl = ModelDecl::of(&e.story.raw);
        let v = validate(
            r#"{"reply": "Hi", "changes": {"price": 7.25, "open": true, "kai.mood": 9}}"#,
            &e.story,
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
        let decl = ModelDecl::of(&e.story.raw);
        let v = validate(
            "```json\n{\"reply\": \"Hi\", \"changes\": null, \"emotion\": null}\n```",
            &e.story,
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
        let decl = ModelDecl::of(&e.story.raw);
        let errors = validate(
            r#"{"reply": 3, "changes": {"open": "yes", "nope": 1}, "extra": 1}"#,
            &e.story,
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

    #[test]
    fn the_schema_lists_only_what_may_change() {
        let e = story();
        let decl = ModelDecl::of(&e.story.raw);
        let s = answer_schema(&e.story, &decl);
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

//! The scenario's `model` block lowered for the model runtime (Format
//! 24.2–24.4): what the model may change, with each change's step limit,
//! the emotions an answer may name, the prompt settings, and the answer's
//! JSON Schema, generated once from the story's declarations.

use std::str::FromStr;

use indexmap::IndexMap;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::changes::{resolve_target, scalar_of, Target};
use crate::model::ScalarType;
use crate::resolve::story::Story;

/// What the model may change (Format 24.2): the scenario's `model` block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelDecl {
    /// The state names the model may change, in written order, each with
    /// its per-turn step limit (`None`: no limit).
    #[serde(with = "steps")]
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

/// The model runtime's part of a compiled story (Format 24.2–24.4): with
/// the story's own IR, all a prompt is built from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelIr {
    /// The `model` block (an absent block declares nothing: the model may
    /// change nothing).
    pub decl: ModelDecl,
    /// The JSON Schema of an answer (24.4), kept as its text until a model
    /// runtime reads it ([`crate::wire::JsonText`]).
    pub schema: crate::wire::JsonText,
    /// The scenario's `name`.
    pub name: String,
    /// The scenario's `description` (a template).
    #[serde(default, skip_serializing_if = "crate::wire::skip_none")]
    pub description: Option<String>,
    /// Each cast member's card texts (Format 4: `description`,
    /// `personality`, then each of `text` in written order, as templates),
    /// in cast order.
    pub cards: Vec<CardIr>,
}

/// A character's texts for its prompt (Format 4, 24.3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CardIr {
    /// The character's ID.
    pub id: String,
    /// Field name and template, in prompt order.
    pub fields: Vec<(String, String)>,
}

impl ModelDecl {
    /// Reads the `model` block `m` of a scenario; an absent block declares
    /// nothing (the model may change nothing).
    pub fn read(m: Option<&Value>) -> ModelDecl {
        let block = crate::model::items::ModelBlock::read(m);
        let changes = block
            .change_steps()
            .map(|(name, step)| {
                let step = step.and_then(|s| Decimal::from_str(&s.to_string()).ok());
                (name.to_string(), step)
            })
            .collect();
        let as_usize = |v: Option<&Value>, d: usize| {
            v.and_then(crate::model::integer_u64)
                .map_or(d, |n| usize::try_from(n).unwrap_or(usize::MAX))
        };
        ModelDecl {
            changes,
            emotions: crate::model::strings(block.emotions)
                .map(str::to_string)
                .collect(),
            prompt: block.prompt.map(str::to_string),
            lore_budget: as_usize(block.lore_budget, DEFAULT_LORE_BUDGET),
            history: as_usize(block.history, DEFAULT_HISTORY),
        }
    }
}

impl ModelIr {
    /// Lowers the `model` block of a checked story (Format 24.2) and
    /// generates its answer schema (24.4).
    pub fn compile(story: &Story) -> ModelIr {
        let decl = ModelDecl::read(story.scenario.model.as_ref());
        let schema = answer_schema(story, &decl);
        let cards = story
            .cast
            .iter()
            .filter_map(|m| {
                let c = story.characters.get(&m.character)?;
                let fields = [
                    ("description", &c.description),
                    ("personality", &c.personality),
                ]
                .into_iter()
                .filter_map(|(k, t)| Some((k.to_string(), t.clone()?)))
                .chain(c.text.iter().map(|(k, t)| (k.clone(), t.clone())))
                .collect();
                Some(CardIr {
                    id: m.character.clone(),
                    fields,
                })
            })
            .collect();
        ModelIr {
            decl,
            schema: crate::wire::JsonText::new(schema),
            name: story.scenario.name.clone(),
            description: story.scenario.description.clone(),
            cards,
        }
    }
}

/// The declared bounds of the variable behind a state name, as written.
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

/// `changes` in `ir.json`: a map of state names to their step limit as
/// decimal text, or `null` (exact, as [`crate::compile::Norm`]'s bounds).
mod steps {
    use indexmap::IndexMap;
    use rust_decimal::Decimal;
    use serde::ser::SerializeMap;
    use serde::{Deserializer, Serializer};

    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(transparent)]
    struct Step(#[serde(with = "crate::compile::value::opt_decimal_text")] Option<Decimal>);

    pub fn serialize<S: Serializer>(
        m: &IndexMap<String, Option<Decimal>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(m.len()))?;
        for (k, v) in m {
            map.serialize_entry(k, &Step(*v))?;
        }
        map.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<IndexMap<String, Option<Decimal>>, D::Error> {
        // Read into the map it is kept in (a repeated name keeps its first
        // place and its last limit, as `IndexMap`'s own reading does).
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = IndexMap<String, Option<Decimal>>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of state names to step limits")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Self::Value, A::Error> {
                let mut m = IndexMap::with_capacity(a.size_hint().unwrap_or(0).min(4096));
                while let Some((k, Step(v))) = a.next_entry::<String, Step>()? {
                    m.insert(k, v);
                }
                Ok(m)
            }
        }
        d.deserialize_map(V)
    }
}

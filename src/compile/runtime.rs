//! What the runtime adds to a compiled story (Format 18, 19): the rules
//! with their keys, patterns, programs and lowered changes; the emotion
//! expression; the rubric's programs; the safety rules. Compiled once per
//! session start from a checked story.

use std::sync::Arc;

use serde_json::Value;

use super::safety::Safety;
use crate::cel::{self, Program};
use crate::check::conditions::owner_env;
use crate::check::story::{Owner, Story};
use crate::compile::changes::{lower_changes, ChangeScope};
use crate::compile::{ChangeIr, CompileError, StoryIr};
use crate::keys::{KeyIndex, KeyOptions, KeySet, LazyPattern};

/// A rule (Format 18.1), compiled.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct RuleIr {
    /// Its ID.
    #[serde(deserialize_with = "crate::wire::shared_str")]
    pub id: Arc<str>,
    /// `priority` (default 0).
    pub priority: i64,
    /// `keywords`; `None` when not given (not written then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keywords: Option<KeySet>,
    /// `pattern` (stored as its source in the IR, compiled on first use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<LazyPattern>,
    /// `when`, compiled with `hit()` declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<Box<Program>>,
    /// The changes as written (for the session file), kept as their JSON
    /// text: only the chosen rule's are read back ([`RuleIr::written_changes`]),
    /// so reading `ir.json` builds no JSON value per rule.
    pub changes_json: Arc<serde_json::value::RawValue>,
    /// `changes_json` read back, the first time the rule is chosen.
    #[serde(skip)]
    written: std::sync::OnceLock<Arc<[Value]>>,
    /// The changes, lowered.
    pub changes: Arc<[ChangeIr]>,
    /// The reply templates, as written.
    #[serde(deserialize_with = "crate::wire::shared_strs")]
    pub replies: Vec<Arc<str>>,
}

impl RuleIr {
    /// Steps 1–2 of Format 18.2: whether the rule's `keywords` hit `input`
    /// (`lowered` is [`crate::keys::lower`] of it) and its `pattern`
    /// matches it; a rule without either matches every input here.
    pub fn matches_input(&self, input: &str, lowered: &str) -> bool {
        self.keywords.as_ref().is_none_or(|k| k.hits(lowered)) && self.matches_pattern(input)
    }

    /// The changes as written (a JSON array; the loader checks it is one,
    /// Format 14.4), read from `changes_json` once.
    pub fn written_changes(&self) -> Arc<[Value]> {
        self.written
            .get_or_init(|| {
                serde_json::from_str::<Vec<Value>>(self.changes_json.get())
                    .unwrap_or_default()
                    .into()
            })
            .clone()
    }

    /// Step 2 of Format 18.2: whether the rule's `pattern`, if any,
    /// matches `input`.
    pub fn matches_pattern(&self, input: &str) -> bool {
        self.pattern.as_ref().is_none_or(|p| p.is_match(input))
    }
}

/// A rubric criterion (Format 6.6).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct CriterionIr {
    /// Its ID.
    pub id: Arc<str>,
    /// Its weight as the double nearest its decimal.
    pub weight: f64,
    /// Its score program; `None` for an ungraded criterion.
    pub score: Option<Program>,
}

/// The runtime's part of a compiled story.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct RuntimeIr {
    /// Rules in trial order: priority highest first, then declaration
    /// order (Format 18.2).
    pub rules: Vec<RuleIr>,
    /// The `emotion` expression (Format 18.6).
    pub emotion: Option<Program>,
    /// The rubric's criteria in rubric order; `None` without a rubric.
    pub rubric: Option<Vec<CriterionIr>>,
    /// The safety rules (Format 19).
    pub safety: Arc<Safety>,
    /// The key lists of `hit()` calls in rule conditions, compiled the
    /// first time a turn uses them so that later turns do no regex
    /// compilation.
    #[serde(skip)]
    pub hit_keys: std::sync::Mutex<std::collections::HashMap<Vec<String>, Arc<KeySet>>>,
    /// The templates the story's sessions render, parsed once for all of
    /// them (their engines share this cache).
    #[serde(skip)]
    pub templates: Arc<crate::template::TemplateCache>,
    /// Every rule's plain keywords in one index, built the first time a
    /// turn tries the rules ([`RuntimeIr::keywords`]).
    #[serde(skip)]
    keyword_index: std::sync::OnceLock<KeyIndex>,
}

fn array<'v>(v: &'v Value, field: &str) -> &'v [Value] {
    v.get(field)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

impl RuntimeIr {
    /// Compiles the runtime parts of `story` against its compiled `ir`.
    /// Input that passed its checks compiles; anything else is an error.
    /// `safety` is the scenario's compiled policy (see
    /// [`crate::runtime::Opened::safety`]); `None` compiles it here.
    pub fn compile(
        story: &Story,
        ir: &StoryIr,
        safety: Option<Arc<Safety>>,
    ) -> Result<RuntimeIr, CompileError> {
        let err = |m: String| CompileError(m);
        let owner = Owner::Scenario(story.scenario.id.clone());
        let with_hit = owner_env(story, &owner, true);
        let plain = owner_env(story, &owner, false);
        let scope = ChangeScope::of(story, ir);
        let raw = &story.raw;
        let mut rules = Vec::new();
        for r in array(raw, "rules") {
            let id = r.get("id").and_then(Value::as_str).unwrap_or("");
            let keywords = r
                .get("keywords")
                .and_then(Value::as_array)
                .map(|k| KeySet::new(k.iter().filter_map(Value::as_str), KeyOptions::RUNTIME));
            // Compiled on first use (the checks compiled it with the same
            // function, `keys::compile_pattern`); only its syntax is
            // checked here, which costs a fraction of building it.
            let pattern = match r.get("pattern").and_then(Value::as_str) {
                Some(p) => {
                    let p = LazyPattern::new(p);
                    p.validate_syntax()
                        .map_err(|e| err(format!("rule `{id}`: {e}")))?;
                    Some(p)
                }
                None => None,
            };
            let when = match r.get("when").and_then(Value::as_str) {
                Some(src) => Some(cel::compile(src, &with_hit).map_err(|e| {
                    err(format!(
                        "rule `{id}`: {}",
                        e.first().map_or(String::new(), ToString::to_string)
                    ))
                })?),
                None => None,
            };
            let written = array(r, "changes");
            let changes = lower_changes(&scope, written)
                .map_err(|e| err(format!("rule `{id}`: {e}")))?;
            let changes_json = serde_json::value::to_raw_value(written)
                .map_err(|e| err(format!("rule `{id}`: {e}")))?
                .into();
            rules.push(RuleIr {
                id: Arc::from(id),
                priority: r
                    .get("priority")
                    .and_then(crate::model::integer)
                    .unwrap_or(0),
                keywords,
                pattern,
                when: when.map(Box::new),
                changes_json,
                written: Default::default(),
                changes: changes.into(),
                replies: array(r, "replies")
                    .iter()
                    .filter_map(Value::as_str)
                    .map(Arc::from)
                    .collect(),
            });
        }
        // Stable: equal priorities keep declaration order.
        rules.sort_by_key(|r| std::cmp::Reverse(r.priority));
        // No expression is dropped: one that does not compile is an error
        // (the checks report it first).
        let compile = |what: &str, src: &str| {
            cel::compile(src, &plain).map_err(|e| {
                err(format!(
                    "{what}: {}",
                    e.first().map_or(String::new(), ToString::to_string)
                ))
            })
        };
        let emotion = match raw.get("emotion").and_then(Value::as_str) {
            Some(src) => Some(compile("`emotion`", src)?),
            None => None,
        };
        let rubric = match raw.get("rubric") {
            Some(r) => Some(
                array(r, "criteria")
                    .iter()
                    .map(|c| {
                        Ok(CriterionIr {
                            id: Arc::from(c.get("id").and_then(Value::as_str).unwrap_or("")),
                            weight: c.get("weight").and_then(Value::as_f64).unwrap_or(0.0),
                            score: match c.get("score").and_then(Value::as_str) {
                                Some(s) => Some(compile("rubric `score`", s)?),
                                None => None,
                            },
                        })
                    })
                    .collect::<Result<Vec<_>, CompileError>>()?,
            ),
            None => None,
        };
        Ok(RuntimeIr {
            rules,
            emotion,
            rubric,
            safety: match safety {
                Some(s) => s,
                None => Arc::new(Safety::compile(raw.get("safety")).map_err(err)?),
            },
            hit_keys: Default::default(),
            templates: Default::default(),
            keyword_index: Default::default(),
        })
    }

    /// Every rule's `keywords` in one [`KeyIndex`] (set `i` is rule `i`'s),
    /// built on first use and shared by the sessions of the story: a turn
    /// finds every rule whose plain keywords hit its input in one pass.
    pub fn keywords(&self) -> &KeyIndex {
        self.keyword_index.get_or_init(|| {
            KeyIndex::new(
                self.rules.iter().map(|r| r.keywords.as_ref()),
                KeyOptions::RUNTIME,
            )
        })
    }
}

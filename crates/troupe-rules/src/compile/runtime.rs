//! What the runtime adds to a compiled story (Format 18, 19): the rules
//! with their keys, patterns, programs and lowered changes; the emotion
//! expression; the rubric's programs; the safety rules. Compiled once per
//! session start from a checked story.

use std::sync::Arc;

use serde_json::Value;

use super::safety::Safety;
use crate::cel::{self, Program};
use crate::compile::changes::{lower_changes, ChangeScope};
use crate::compile::{ChangeIr, CompileError, StoryIr};
use crate::keys::{FirstHits, KeyIndex, KeyOptions, KeySet, LazyPattern};
use crate::model::Scenario;
use crate::resolve::story::Story;

/// A rule (Format 18.1), compiled.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct RuleIr {
    /// Its ID.
    #[serde(deserialize_with = "crate::wire::shared_str")]
    pub id: Arc<str>,
    /// `priority` (default 0).
    pub priority: i64,
    /// `keywords`; `None` when not given (not written then).
    #[serde(default, skip_serializing_if = "crate::wire::skip_none")]
    pub keywords: Option<KeySet>,
    /// `pattern` (stored as its source in the IR, compiled on first use).
    #[serde(default, skip_serializing_if = "crate::wire::skip_none")]
    pub pattern: Option<LazyPattern>,
    /// `when`, compiled with `hit()` declared.
    #[serde(default, skip_serializing_if = "crate::wire::skip_none")]
    pub when: Option<Box<Program>>,
    /// The changes as written (for the session file), kept as their JSON
    /// text (in `ir.compact`, as tokens of the value): only the chosen
    /// rule's are read back ([`RuleIr::written_changes`]), so reading the
    /// IR builds no JSON value per rule.
    pub changes_json: super::written::WrittenChanges,
    /// `changes_json` read back, the first time the rule is chosen.
    #[serde(skip)]
    written: std::sync::OnceLock<Arc<[Value]>>,
    /// The changes, lowered. Written in `ir.json` only: `ir.compact`
    /// leaves them out and its reader lowers them from `changes_json`
    /// (Format 14.4; `crate::compile::read_ir_bin`).
    #[serde(with = "crate::wire::json_only")]
    pub changes: Arc<[ChangeIr]>,
    /// The reply templates, as written.
    #[serde(deserialize_with = "crate::wire::shared_strs")]
    pub replies: Vec<Arc<str>>,
    /// `by`: the rule's owner (Format 18.1), tried only for its replies.
    #[serde(
        default,
        skip_serializing_if = "crate::wire::skip_none",
        deserialize_with = "crate::wire::shared_str_opt"
    )]
    pub by: Option<Arc<str>>,
    /// `reply_as`: who says the rule's reply (Format 18.1).
    #[serde(
        default,
        skip_serializing_if = "crate::wire::skip_none",
        deserialize_with = "crate::wire::shared_str_opt"
    )]
    pub reply_as: Option<Arc<str>>,
    /// `on: "reply"`: a reaction rule (Format 18.1, 18.9).
    #[serde(default, skip_serializing_if = "crate::wire::skip_false")]
    pub on_reply: bool,
}

/// A turn-order strategy (Format 18.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// The first speaker in cast order (the default).
    #[default]
    FirstPresent,
    /// A character named in the input, else the fallback.
    Addressed,
    /// The next speaker after the last one, in cast order.
    RoundRobin,
    /// Addressed first, else drawn by `talkativeness`.
    Natural,
    /// The host names the responder, else the fallback.
    Manual,
    /// Every speaker replies once.
    All,
}

impl Strategy {
    fn parse(s: &str) -> Option<Strategy> {
        Some(match s {
            "first_present" => Strategy::FirstPresent,
            "addressed" => Strategy::Addressed,
            "round_robin" => Strategy::RoundRobin,
            "natural" => Strategy::Natural,
            "manual" => Strategy::Manual,
            "all" => Strategy::All,
            _ => return None,
        })
    }
}

/// A character entry of the cast as the turn order reads it (Format 6.1,
/// 18.9): its draw weight, whether it is muted, and its names.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct MemberIr {
    /// The character's ID.
    #[serde(deserialize_with = "crate::wire::shared_str")]
    pub id: Arc<str>,
    /// `talkativeness` (default 50).
    pub talkativeness: u32,
    /// `muted`.
    pub muted: bool,
    /// Its names as declared (Format 18.9): name, nickname, aliases, ID,
    /// without case-insensitive repeats.
    #[serde(deserialize_with = "crate::wire::shared_strs")]
    pub names: Vec<Arc<str>>,
    /// The names as plain keys (a name of the `/…/` form escaped).
    pub keys: KeySet,
    /// `@` + each name, as plain keys.
    pub at_keys: KeySet,
}

/// The scenario's `turn_order` (Format 18.9), with its defaults applied.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct TurnOrderIr {
    /// `strategy`.
    pub strategy: Strategy,
    /// `fallback` (for `addressed` and `manual`).
    pub fallback: Strategy,
    /// `allow_self_responses`.
    pub allow_self_responses: bool,
    /// `max_replies_per_turn` as given (0: the default).
    pub max_replies: u8,
    /// The cast's character entries, in cast order.
    pub members: Vec<MemberIr>,
    /// Whether some entry is `muted` (the default turn order then skips
    /// no lookup).
    pub any_muted: bool,
    /// Every member's names in one automaton, built on first use (never
    /// written in `ir.json`, never read from it).
    #[serde(skip)]
    names: std::sync::OnceLock<Names>,
}

/// The names of a turn order's members (Format 18.9 "addressed"), matched
/// in one pass over a text for all of them: member `j`'s `at_keys` are set
/// `2j` of the index, its `keys` set `2j + 1`.
#[derive(Debug)]
pub(crate) struct Names {
    /// The first hits of every member's `at_keys` and `keys`.
    pub hits: FirstHits,
    /// Per member, `@` + each name, as an `@`-naming records it.
    pub at_names: Vec<Vec<Arc<str>>>,
}

/// The hard limit of replies in one turn (Format 18.9).
pub const MAX_REPLIES: usize = 8;

impl TurnOrderIr {
    /// The replies a turn may have: `max_replies_per_turn`, default 1 (8
    /// under `all`), at most [`MAX_REPLIES`].
    pub fn max_replies(&self) -> usize {
        match self.max_replies {
            0 if self.strategy == Strategy::All => MAX_REPLIES,
            0 => 1,
            n => usize::from(n).min(MAX_REPLIES),
        }
    }

    /// The entry of character `id`, if it is a character entry.
    pub fn member(&self, id: &str) -> Option<&MemberIr> {
        self.members.iter().find(|m| &*m.id == id)
    }

    /// The position in `members` of character `id`'s entry.
    pub(crate) fn member_index(&self, id: &str) -> Option<usize> {
        self.members.iter().position(|m| &*m.id == id)
    }

    /// The members' names in one automaton (Format 18.9), built once per
    /// turn order on first use.
    pub(crate) fn names(&self) -> &Names {
        self.names.get_or_init(|| Names {
            hits: FirstHits::new(
                self.members.iter().flat_map(|m| [&m.at_keys, &m.keys]),
                KeyOptions::RUNTIME,
            ),
            at_names: self
                .members
                .iter()
                .map(|m| {
                    m.names
                        .iter()
                        .map(|n| Arc::from(format!("@{n}").as_str()))
                        .collect()
                })
                .collect(),
        })
    }

    pub(crate) fn compile(story: &Story) -> TurnOrderIr {
        let t = story.scenario.turn_order();
        let strategy = |s: Option<&str>| s.and_then(Strategy::parse).unwrap_or_default();
        let plain = |name: &str| -> Arc<str> {
            match crate::keys::key_form(name) {
                crate::keys::KeyForm::Plain(_) => Arc::from(name),
                _ => Arc::from(format!("/{}/", regex::escape(name)).as_str()),
            }
        };
        let mut members = Vec::new();
        for e in story.scenario.cast_entries() {
            let Some(id) = e.character else {
                continue;
            };
            // Format 18.9: name, nickname, aliases, ID, in this order.
            let mut names: Vec<Arc<str>> = Vec::new();
            if let Some(c) = story.characters.get(id) {
                names.push(Arc::from(c.name.as_str()));
                names.extend(c.nickname.as_deref().map(Arc::from));
                names.extend(c.aliases.iter().map(|a| Arc::from(a.as_str())));
            }
            names.push(Arc::from(id));
            names.retain(|n| !n.is_empty());
            let mut seen = std::collections::HashSet::new();
            names.retain(|n| seen.insert(crate::keys::lower(n)));
            let keys = KeySet::new(names.iter().map(|n| plain(n)), KeyOptions::RUNTIME);
            let at_keys = KeySet::new(
                names.iter().map(|n| plain(&format!("@{n}"))),
                KeyOptions::RUNTIME,
            );
            members.push(MemberIr {
                id: Arc::from(id),
                talkativeness: e.talkativeness.map_or(50, |w| w.min(100) as u32),
                muted: e.muted,
                names,
                keys,
                at_keys,
            });
        }
        TurnOrderIr {
            strategy: strategy(t.strategy),
            fallback: strategy(t.fallback),
            allow_self_responses: t.allow_self_responses,
            max_replies: t
                .max_replies_per_turn
                .map_or(0, |n| n.min(MAX_REPLIES as u64) as u8),
            any_muted: members.iter().any(|m| m.muted),
            members,
            names: std::sync::OnceLock::new(),
        }
    }
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
            .get_or_init(|| self.changes_json.values().into())
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
    #[serde(deserialize_with = "crate::wire::shared_str")]
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
        Self::compile_scenario(&story.scenario, story, ir, safety)
    }

    /// [`RuntimeIr::compile`] from a scenario of a checked bundle and the
    /// story compiled from it: state names and cast
    /// references resolve against `decls` (the checked story's, or the
    /// compiled story's own), conditions in the scenario's environment.
    pub fn compile_scenario(
        sc: &Scenario,
        decls: &dyn crate::changes::Decls,
        ir: &StoryIr,
        safety: Option<Arc<Safety>>,
    ) -> Result<RuntimeIr, CompileError> {
        let err = |m: String| CompileError(m);
        let Some(scenario_env) = ir.envs.first().map(|e| &e.env) else {
            return Err(err("the story has no scenario environment".into()));
        };
        let with_hit = scenario_env.clone().with_hit(true);
        let plain = scenario_env.clone().with_hit(false);
        let scope = ChangeScope {
            decls,
            vars: &ir.vars,
            by_name: &ir.var_index,
            cast: &ir.cast,
        };
        let mut rules = Vec::new();
        for r in sc.rule_items() {
            let id = r.id.unwrap_or("");
            let keywords = r
                .keywords
                .map(|k| KeySet::new(k.iter().filter_map(Value::as_str), KeyOptions::RUNTIME));
            // Compiled on first use (the checks compiled it with the same
            // function, `keys::compile_pattern`); only its syntax is
            // checked here, which costs a fraction of building it.
            let pattern = match r.pattern {
                Some(p) => {
                    let p = LazyPattern::new(p);
                    p.validate_syntax()
                        .map_err(|e| err(format!("rule `{id}`: {e}")))?;
                    Some(p)
                }
                None => None,
            };
            let when = match r.when {
                Some(src) => Some(cel::compile(src, &with_hit).map_err(|e| {
                    err(format!(
                        "rule `{id}`: {}",
                        e.first().map_or(String::new(), ToString::to_string)
                    ))
                })?),
                None => None,
            };
            let written = r.changes;
            let changes =
                lower_changes(&scope, written).map_err(|e| err(format!("rule `{id}`: {e}")))?;
            let changes_json = serde_json::value::to_raw_value(written)
                .map_err(|e| err(format!("rule `{id}`: {e}")))?
                .into();
            rules.push(RuleIr {
                id: Arc::from(id),
                priority: r.priority(),
                keywords,
                pattern,
                when: when.map(Box::new),
                changes_json,
                written: Default::default(),
                changes: changes.into(),
                replies: r
                    .replies
                    .iter()
                    .filter_map(Value::as_str)
                    .map(Arc::from)
                    .collect(),
                by: r.by.map(Arc::from),
                reply_as: r.reply_as.map(Arc::from),
                on_reply: r.on_reply,
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
        let rubric = match sc.criteria() {
            Some(criteria) => Some(
                criteria
                    .map(|c| {
                        Ok(CriterionIr {
                            id: Arc::from(c.id.unwrap_or("")),
                            weight: c.weight.and_then(Value::as_f64).unwrap_or(0.0),
                            score: match c.score {
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
            rubric,
            safety: match safety {
                Some(s) => s,
                None => Arc::new(Safety::compile(sc.safety.as_ref()).map_err(err)?),
            },
            hit_keys: Default::default(),
            templates: Arc::new(crate::template::TemplateCache::within_parse_scope()),
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

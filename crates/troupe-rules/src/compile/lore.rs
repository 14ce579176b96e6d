//! Lore entries compiled ahead of time (Format 5): keys to key sets
//! (5.4, [`crate::keys`]), `when` to checked programs with `hit()` (11.4), in
//! declaration order (5.5: the scenario's own entries, then each world's in
//! the order `worlds` lists them).

use std::sync::Arc;

use serde_json::Value;

use super::ir::OwnerRef;
use super::CompileError;
use crate::cel::{self, Program};
use crate::keys::{KeyOptions, KeySet};
use crate::model::Entry;
use crate::resolve::env::owner_env;
use crate::resolve::story::{Owner, Story};

/// How secondary keys combine with the primary keys (Format 5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Logic {
    /// At least one secondary key hits.
    AndAny,
    /// Every secondary key hits.
    AndAll,
    /// No secondary key hits.
    NotAny,
    /// At least one secondary key does not hit.
    NotAll,
}

impl Logic {
    /// The logic named `s` (Format 5.2), `and_any` for anything else.
    pub fn parse(s: Option<&str>) -> Logic {
        match s {
            Some("and_all") => Logic::AndAll,
            Some("not_any") => Logic::NotAny,
            Some("not_all") => Logic::NotAll,
            _ => Logic::AndAny,
        }
    }

    /// Whether the logic holds given how many of `total` secondary keys hit.
    pub fn holds(self, hits: usize, total: usize) -> bool {
        match self {
            Logic::AndAny => hits > 0,
            Logic::AndAll => hits == total,
            Logic::NotAny => hits == 0,
            Logic::NotAll => hits < total,
        }
    }

    /// The name as written in the format.
    pub fn name(self) -> &'static str {
        match self {
            Logic::AndAny => "and_any",
            Logic::AndAll => "and_all",
            Logic::NotAny => "not_any",
            Logic::NotAll => "not_all",
        }
    }
}

/// Where an entry places its content (Format 5.2); no effect on activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Position {
    /// Before the conversation.
    Before,
    /// After it.
    After,
}

/// A lore entry, compiled (Format 5.2).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct EntryIr {
    /// Its ID.
    #[serde(deserialize_with = "crate::wire::shared_str")]
    pub id: Arc<str>,
    /// Its owner: the scenario or a world.
    pub owner: OwnerRef,
    /// JSON Pointer of the entry in the bundle.
    pub pointer: String,
    /// `keys`, with the entry's settings.
    pub keys: KeySet,
    /// `secondary_keys`, when present.
    pub secondary: Option<KeySet>,
    /// `logic`.
    pub logic: Logic,
    /// `constant`.
    pub constant: bool,
    /// `case_sensitive`.
    pub case_sensitive: bool,
    /// `whole_words`.
    pub whole_words: bool,
    /// `scan_depth` (≥ 1).
    pub scan_depth: u32,
    /// `order`.
    pub order: i64,
    /// `position`.
    pub position: Position,
    /// `enabled`.
    pub enabled: bool,
    /// `when`, checked with `hit()` declared.
    pub when: Option<Program>,
    /// The environment `when` is filled from (its owner's; the slots are
    /// the same with `hit()` declared).
    pub env: u16,
    /// `content` as written (the recursion buffer, 5.7).
    #[serde(deserialize_with = "crate::wire::shared_str")]
    pub content: Arc<str>,
    /// `sticky`, 0 when absent (Format 5.6).
    pub sticky: u64,
    /// `cooldown`, 0 when absent (5.6).
    pub cooldown: u64,
    /// `delay`, 0 when absent (5.6).
    pub delay: u64,
    /// `exclude_recursion` (5.7).
    pub exclude_recursion: bool,
    /// `prevent_recursion` (5.7).
    pub prevent_recursion: bool,
    /// The `delay_until_recursion` level: `true` 1, `false` 0 (5.7).
    pub recursion_level: u64,
    /// `group` (5.8).
    #[serde(deserialize_with = "crate::wire::shared_strs")]
    pub group: Vec<Arc<str>>,
    /// `group_weight` (5.8).
    pub group_weight: u64,
    /// `group_override` (5.8).
    pub group_override: bool,
    /// `group_scoring` (5.8).
    pub group_scoring: bool,
}

/// The step limit of a story's recursive activation (Format 5.7) from its
/// worlds' `recursion` (5.1): 0 when off, [`u64::MAX`] when unlimited
/// (one world says `true`), else the largest int.
pub fn recursion_limit(story: &Story) -> u64 {
    let mut limit = 0u64;
    for (w, _) in &story.worlds {
        match &w.recursion {
            Some(Value::Bool(true)) => return u64::MAX,
            Some(v) => {
                if let Some(n) = crate::model::integer_u64(v) {
                    limit = limit.max(n);
                }
            }
            None => {}
        }
    }
    limit
}

/// Compiles every entry of the story in declaration order. `env_of` gives
/// an owner's environment index. Errors: an entry that does not read as an
/// entry, a key that does not compile, a `when` that does not check — all
/// reported by the checks first, so they mean non-conforming input.
pub fn compile_entries(
    story: &Story,
    env_of: impl Fn(OwnerRef) -> u16,
) -> Result<Vec<EntryIr>, CompileError> {
    let mut out = Vec::new();
    let scenario = Owner::Scenario(story.scenario.id.clone());
    let groups = std::iter::once((
        scenario,
        OwnerRef::Scenario,
        story.pointer.clone(),
        &story.scenario.entries,
    ))
    .chain(story.worlds.iter().enumerate().map(|(i, (w, wi))| {
        (
            Owner::World(w.id.clone()),
            OwnerRef::World(i as u16),
            format!("/worlds/{wi}"),
            &w.entries,
        )
    }));
    for (owner, owner_ref, base, entries) in groups {
        let env = owner_env(story, &owner, true);
        for (i, raw) in entries.iter().enumerate() {
            let pointer = format!("{base}/entries/{i}");
            out.push(entry_ir(raw, &pointer, owner_ref, &env, env_of(owner_ref))?);
        }
    }
    Ok(out)
}

fn entry_ir(
    raw: &Value,
    pointer: &str,
    owner: OwnerRef,
    env: &cel::Env,
    env_ix: u16,
) -> Result<EntryIr, CompileError> {
    let err = |m: String| CompileError(format!("entry at {pointer}: {m}"));
    let e: Entry = serde_json::from_value(raw.clone()).map_err(|e| err(e.to_string()))?;
    let options = KeyOptions {
        case_sensitive: e.case_sensitive,
        whole_words: e.whole_words,
    };
    let keys = |list: &[String]| {
        let set = KeySet::new(list.iter().map(String::as_str), options);
        set.build().map_err(err)?;
        Ok::<KeySet, CompileError>(set)
    };
    let when = match &e.when {
        Some(src) => Some(cel::compile(src, env).map_err(|errs| {
            err(errs
                .first()
                .map(|x| x.to_string())
                .unwrap_or_else(|| "`when` does not check".into()))
        })?),
        None => None,
    };
    Ok(EntryIr {
        id: Arc::from(e.id.as_str()),
        owner,
        pointer: pointer.to_string(),
        keys: keys(&e.keys)?,
        secondary: match &e.secondary_keys {
            Some(list) => Some(keys(list)?),
            None => None,
        },
        logic: Logic::parse(e.logic.as_deref()),
        constant: e.constant,
        case_sensitive: e.case_sensitive,
        whole_words: e.whole_words,
        scan_depth: e.scan_depth.max(1),
        order: e.order,
        position: match e.position.as_deref() {
            Some("after") => Position::After,
            _ => Position::Before,
        },
        enabled: e.enabled,
        when,
        env: env_ix,
        content: Arc::from(e.content.as_str()),
        sticky: e.sticky.unwrap_or(0),
        cooldown: e.cooldown.unwrap_or(0),
        delay: e.delay.unwrap_or(0),
        exclude_recursion: e.exclude_recursion,
        prevent_recursion: e.prevent_recursion,
        recursion_level: match &e.delay_until_recursion {
            Some(Value::Bool(true)) => 1,
            Some(v) => crate::model::integer_u64(v).unwrap_or(0),
            None => 0,
        },
        group: e.group.iter().map(|g| Arc::from(g.as_str())).collect(),
        group_weight: e.group_weight,
        group_override: e.group_override,
        group_scoring: e.group_scoring,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logic_table() {
        assert!(Logic::AndAny.holds(1, 2) && !Logic::AndAny.holds(0, 2));
        assert!(Logic::AndAll.holds(2, 2) && !Logic::AndAll.holds(1, 2));
        assert!(Logic::NotAny.holds(0, 2) && !Logic::NotAny.holds(1, 2));
        assert!(Logic::NotAll.holds(1, 2) && !Logic::NotAll.holds(2, 2));
    }
}

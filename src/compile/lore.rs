//! Lore entries compiled ahead of time (Format 5): keys to regular
//! expressions (5.4), `when` to checked programs with `hit()` (11.4), in
//! declaration order (5.5: the scenario's own entries, then each world's in
//! the order `worlds` lists them).

use std::sync::Arc;

use regex::Regex;
use serde_json::Value;

use super::ir::OwnerRef;
use super::CompileError;
use crate::cel::{self, Program};
use crate::check::conditions::owner_env;
use crate::check::keys::{compile_key, split_regex_key};
use crate::check::story::{Owner, Story};
use crate::model::Entry;

/// How secondary keys combine with the primary keys (Format 5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
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

/// One key compiled for one entry's settings (Format 5.4).
#[derive(Debug, Clone)]
pub struct KeyIr {
    /// The key as written.
    pub text: Arc<str>,
    /// What finds it: in the lower-cased scanned text unless the entry is
    /// `case_sensitive`, in the text as written otherwise.
    pub regex: Regex,
}

impl KeyIr {
    /// Compiles `key` for an entry that is (or is not) `case_sensitive`:
    /// a plain key is lower-cased (character by character, Unicode
    /// `to_lowercase`) and matched literally; a `/re/flags` key gets the `i`
    /// flag unless `case_sensitive` (Format 5.4). Errors: an invalid pattern
    /// or flag, as a plain message.
    pub fn new(key: &str, case_sensitive: bool) -> Result<KeyIr, String> {
        let regex = match split_regex_key(key) {
            Some((pattern, flags)) if !case_sensitive && !flags.contains('i') => {
                compile_key(&format!("/{pattern}/{flags}i"), true)?
            }
            Some(_) => compile_key(key, true)?,
            None if case_sensitive => compile_key(key, true)?,
            None => compile_key(&lower(key), true)?,
        };
        Ok(KeyIr {
            text: Arc::from(key),
            regex,
        })
    }

    /// The byte range of the first counted occurrence of the key in `text`
    /// (already lower-cased when the entry is not case-sensitive): with
    /// `whole_words`, an occurrence counts only when the characters around
    /// it are neither alphanumeric nor `_`; every occurrence is tried,
    /// overlapping ones included (Format 5.4).
    pub fn find(&self, text: &str, whole_words: bool) -> Option<(usize, usize)> {
        let mut start = 0;
        while start <= text.len() {
            let m = self.regex.find_at(text, start)?;
            if !whole_words || bounded(text, m.start(), m.end()) {
                return Some((m.start(), m.end()));
            }
            let step = text
                .get(m.start()..)
                .and_then(|r| r.chars().next())
                .map_or(1, char::len_utf8);
            start = m.start() + step;
        }
        None
    }
}

/// Lower-cases `s` character by character (Unicode `to_lowercase`), as
/// Format 5.4 compares keys and text.
pub fn lower(s: &str) -> String {
    s.chars().flat_map(char::to_lowercase).collect()
}

fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// True when the characters before `start` and at `end` (if any) are not
/// word characters.
fn bounded(text: &str, start: usize, end: usize) -> bool {
    let before = text.get(..start).and_then(|s| s.chars().next_back());
    let after = text.get(end..).and_then(|s| s.chars().next());
    !before.is_some_and(word_char) && !after.is_some_and(word_char)
}

/// Where an entry places its content (Format 5.2); no effect on activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Position {
    /// Before the conversation.
    Before,
    /// After it.
    After,
}

/// A lore entry, compiled (Format 5.2).
#[derive(Debug)]
pub struct EntryIr {
    /// Its ID.
    pub id: Arc<str>,
    /// Its owner: the scenario or a world.
    pub owner: OwnerRef,
    /// JSON Pointer of the entry in the bundle.
    pub pointer: String,
    /// `keys`.
    pub keys: Vec<KeyIr>,
    /// `secondary_keys`, when present.
    pub secondary: Option<Vec<KeyIr>>,
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
    let keys = |list: &[String]| {
        list.iter()
            .map(|k| KeyIr::new(k, e.case_sensitive))
            .collect::<Result<Vec<_>, String>>()
            .map_err(err)
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
        secondary: match raw.get("secondary_keys") {
            Some(_) => Some(keys(&e.secondary_keys)?),
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(key: &str, cs: bool, ww: bool, text: &str) -> Option<(usize, usize)> {
        let k = KeyIr::new(key, cs).unwrap();
        let t = if cs { text.to_string() } else { lower(text) };
        k.find(&t, ww)
    }

    #[test]
    fn the_dragon_example_of_format_5_4() {
        // "Dragons" is followed by `s`; "DRAGON" counts after lower-casing,
        // at bytes 15..21.
        assert_eq!(
            find("dragon", false, true, "Dragons? No, a DRAGON."),
            Some((15, 21))
        );
        let gold = KeyIr::new("gold", false).unwrap();
        assert_eq!(gold.find(&lower("Dragons? No, a DRAGON."), true), None);
    }

    #[test]
    fn whole_words_tries_every_occurrence_and_overlaps() {
        assert_eq!(find("cat", false, true, "cats cat"), Some((5, 8)));
        assert_eq!(find("cat", false, false, "cats cat"), Some((0, 3)));
        // "aa" in "aaa aa": the overlapping ones inside "aaa" never count.
        assert_eq!(find("aa", false, true, "aaa aa"), Some((4, 6)));
        // `_` is a word character, punctuation is not.
        assert_eq!(find("sword", false, true, "my_sword"), None);
        assert_eq!(find("sword", false, true, "(sword)"), Some((1, 6)));
        // Unicode letters are word characters.
        assert_eq!(find("ka", false, true, "kaé"), None);
    }

    #[test]
    fn case_rules() {
        assert_eq!(find("Sword", true, true, "a sword"), None);
        assert_eq!(find("Sword", true, true, "a Sword"), Some((2, 7)));
        assert_eq!(find("SWORD", false, true, "a sWoRd"), Some((2, 7)));
        // A regex key gets `i` unless the entry is case-sensitive.
        assert_eq!(find("/dr[a-z]+n/", false, false, "DRAGON"), Some((0, 6)));
        assert_eq!(find("/dr[a-z]+n/", true, false, "DRAGON"), None);
        assert_eq!(find("/dr[a-z]+n/i", true, false, "DRAGON"), Some((0, 6)));
    }

    #[test]
    fn logic_table() {
        assert!(Logic::AndAny.holds(1, 2) && !Logic::AndAny.holds(0, 2));
        assert!(Logic::AndAll.holds(2, 2) && !Logic::AndAll.holds(1, 2));
        assert!(Logic::NotAny.holds(0, 2) && !Logic::NotAny.holds(1, 2));
        assert!(Logic::NotAll.holds(1, 2) && !Logic::NotAll.holds(2, 2));
    }
}

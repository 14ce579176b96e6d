//! Lore activation at a message (Format 5.3–5.5, 11.4), with the reasons:
//! which key matched where, which secondary logic held, what `when` gave.

use std::collections::HashMap;

use serde::Serialize;

use super::eval::{char_of, Point};
use super::replay::step;
use super::{Engine, Scratch, State};
use crate::cel::{Activation, EvalError, Host, Value};
use crate::compile::{EntryIr, Logic, Position, SessionIr};
use crate::keys::{KeyOptions, KeySet};

/// Where a key hit (Format 5.4): the key, the message its counted
/// occurrence starts in, and the character range (Unicode scalar values,
/// end exclusive) inside that message's text (7.2). A regular expression
/// whose occurrence runs into the next scanned message has `end` past the
/// message's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyHit {
    /// The key as written.
    pub key: String,
    /// The ID of the message the occurrence starts in.
    pub message: String,
    /// First character of the occurrence.
    pub start: usize,
    /// One past its last character.
    pub end: usize,
    /// The occurrence as written in the scanned text.
    pub text: String,
}

/// How the secondary keys went (Format 5.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Secondary {
    /// The entry's `logic`.
    pub logic: Logic,
    /// The secondary keys that hit.
    pub hits: Vec<KeyHit>,
    /// The secondary keys that did not hit.
    pub missed: Vec<String>,
    /// Whether `logic` held.
    pub held: bool,
}

/// What the entry's `when` gave (Format 5.3 step 3, 11.6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "result", content = "error")]
pub enum When {
    /// The entry has no `when`.
    Absent,
    /// Not evaluated: an earlier condition already failed.
    NotEvaluated,
    /// It was true.
    Held,
    /// It was false.
    False,
    /// Its evaluation failed (counts as false); the error's message.
    Error(String),
}

/// Why an entry is active or not, the deciding condition (Format 5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// Active: `constant`, and `when` held or is absent.
    Constant,
    /// Active: its keys matched, and `when` held or is absent.
    Keys,
    /// Not active: `enabled` is false.
    Disabled,
    /// Not active: neither `constant` nor `keys`.
    NoKeys,
    /// Not active: no primary key hit.
    NoKeyHit,
    /// Not active: a primary key hit but the secondary logic did not hold.
    Secondary,
    /// Not active: `when` was false.
    WhenFalse,
    /// Not active: `when` failed to evaluate.
    WhenError,
}

/// One entry at a message: whether it is active and why (Format 5.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryActivation {
    /// Index of the entry in declaration order ([`crate::compile::StoryIr::entries`]).
    pub index: usize,
    /// The entry's ID.
    pub id: String,
    /// Its owner: the scenario's ID or a world's.
    pub owner: String,
    /// JSON Pointer of the entry in the bundle.
    pub pointer: String,
    /// `order`.
    pub order: i64,
    /// `position` (no effect on activation).
    pub position: Position,
    /// `constant`.
    pub constant: bool,
    /// Whether it is active.
    pub active: bool,
    /// The deciding reason.
    pub why: Why,
    /// The messages scanned (oldest first; `scan_depth` non-hidden ones).
    pub scanned: Vec<String>,
    /// The primary keys that hit (each at its first counted occurrence).
    pub hits: Vec<KeyHit>,
    /// The primary keys that did not hit.
    pub missed: Vec<String>,
    /// The secondary keys' result, when the entry has `secondary_keys` and a
    /// primary key hit.
    pub secondary: Option<Secondary>,
    /// What `when` gave.
    pub when: When,
}

/// The scanned text of one depth: the joined texts, their lower-cased form
/// with a map back to character indices, and where each message starts.
struct Scan {
    text: String,
    lower: String,
    /// For each byte offset of `lower` (and one past the end), the
    /// character index in `text`.
    lower_chars: Vec<usize>,
    /// (message index, first character index in `text`), oldest first.
    starts: Vec<(u32, usize)>,
}

impl Scan {
    fn new(session: &SessionIr, msgs: &[u32]) -> Scan {
        let mut text = String::new();
        let mut starts = Vec::with_capacity(msgs.len());
        let mut chars = 0usize;
        for (i, &m) in msgs.iter().enumerate() {
            if i > 0 {
                text.push('\n');
                chars += 1;
            }
            starts.push((m, chars));
            let t = session.text(m);
            chars += t.chars().count();
            text.push_str(&t);
        }
        let mut lower_s = String::with_capacity(text.len());
        let mut lower_chars = Vec::with_capacity(text.len() + 1);
        for (ci, c) in text.chars().enumerate() {
            for l in c.to_lowercase() {
                lower_s.push(l);
                lower_chars.extend(std::iter::repeat_n(ci, l.len_utf8()));
            }
        }
        lower_chars.push(chars);
        Scan {
            text,
            lower: lower_s,
            lower_chars,
            starts,
        }
    }

    fn haystack(&self, case_sensitive: bool) -> &str {
        if case_sensitive {
            &self.text
        } else {
            &self.lower
        }
    }

    /// Character index in `text` of byte `b` of the haystack.
    fn char_at(&self, case_sensitive: bool, b: usize) -> usize {
        if case_sensitive {
            self.text.get(..b).map_or(0, |s| s.chars().count())
        } else {
            self.lower_chars.get(b).copied().unwrap_or(0)
        }
    }

    /// Each key of `set` with where it hit, if it did (Format 5.4).
    fn hits<'k>(
        &self,
        session: &SessionIr,
        set: &'k KeySet,
    ) -> impl Iterator<Item = (&'k str, Option<KeyHit>)> + 'k {
        let cs = set.options().case_sensitive;
        let found = set.first_hits(self.haystack(cs));
        let hits: Vec<Option<KeyHit>> = set
            .keys()
            .iter()
            .zip(found)
            .map(|(k, f)| f.map(|(s, e)| self.key_hit(session, k, cs, s, e)))
            .collect();
        set.keys().iter().map(|k| &**k).zip(hits)
    }

    fn key_hit(&self, session: &SessionIr, key: &str, cs: bool, s: usize, end: usize) -> KeyHit {
        let (cs_, ce) = (self.char_at(cs, s), self.char_at(cs, end));
        let (m, first) = self
            .starts
            .iter()
            .rev()
            .find(|(_, f)| *f <= cs_)
            .copied()
            .unwrap_or((0, 0));
        KeyHit {
            key: key.to_string(),
            message: session
                .messages
                .get(m as usize)
                .map_or(String::new(), |x| x.id.to_string()),
            start: cs_ - first,
            end: ce.max(cs_) - first,
            text: self
                .text
                .chars()
                .skip(cs_)
                .take(ce.saturating_sub(cs_))
                .collect(),
        }
    }
}

/// The host of an entry's `when`: `hit()` against the entry's scanned text
/// with its settings (Format 11.4), `roll()` numbered across the message.
struct LoreHost<'a> {
    scan: &'a Scan,
    case_sensitive: bool,
    whole_words: bool,
    seed: u64,
    message: &'a str,
    calls: &'a mut u64,
    cache: &'a mut HashMap<(KeyOptions, Vec<String>), KeySet>,
}

impl Host for LoreHost<'_> {
    fn hit(&mut self, keys: &[&str]) -> bool {
        let options = KeyOptions {
            case_sensitive: self.case_sensitive,
            whole_words: self.whole_words,
        };
        let list: Vec<String> = keys.iter().map(|k| (*k).to_string()).collect();
        // A key that does not compile hits nothing (the checks refuse
        // constant ones).
        let set = self
            .cache
            .entry((options, list))
            .or_insert_with_key(|(o, l)| KeySet::new(l.iter().map(String::as_str), *o));
        set.hits(self.scan.haystack(options.case_sensitive))
    }
    fn roll(&mut self, notation: &str) -> Result<i64, EvalError> {
        let k = *self.calls;
        *self.calls += 1;
        crate::cel::dice::roll(notation, self.seed, self.message, k)
    }
}

impl Engine {
    /// Every lore entry at the message `message_id` with whether it is
    /// active and why (Format 5.3): active entries first, by `order` then
    /// declaration order (5.5), then the others in declaration order. An
    /// unknown message ID gives an empty list.
    pub fn active_entries(&self, message_id: &str) -> Vec<EntryActivation> {
        match self.session.find(message_id) {
            Some(m) => self.entries_at(m),
            None => Vec::new(),
        }
    }

    /// [`Engine::active_entries`] by message index. `when` is evaluated, in
    /// declaration order, only for entries that are enabled and constant or
    /// whose keys match; its `roll()` calls are numbered after those the
    /// derived variables made at the message (Format 11.5; events and
    /// outcomes are not re-evaluated here, 9.3).
    pub fn entries_at(&self, m: u32) -> Vec<EntryActivation> {
        self.entries_at_observed(m, None)
    }

    /// [`Engine::entries_at`], reporting to `obs` the branches of each
    /// `when` evaluated and each active entry (Format 21.6).
    pub fn entries_at_observed(
        &self,
        m: u32,
        mut obs: Option<&mut (dyn super::observe::Observer + '_)>,
    ) -> Vec<EntryActivation> {
        let Some(msg) = self.session.messages.get(m as usize) else {
            return Vec::new();
        };
        let (state, mut calls) = self.state_with_calls(m);
        // The non-hidden messages on the path, newest first, as many as the
        // deepest entry scans.
        let deepest = self
            .ir
            .entries
            .iter()
            .map(|e| e.scan_depth)
            .max()
            .unwrap_or(0);
        let mut recent: Vec<u32> = Vec::new();
        let mut cur = Some(m);
        while let Some(c) = cur {
            if recent.len() >= deepest as usize {
                break;
            }
            let Some(x) = self.session.messages.get(c as usize) else {
                break;
            };
            if !x.hidden {
                recent.push(c);
            }
            cur = x.parent;
        }
        let mut scans: Vec<Option<Scan>> = Vec::new();
        scans.resize_with(recent.len() + 1, || None);
        let mut cache = HashMap::new();
        let point = Point {
            ir: &self.ir,
            session: Some(&self.session),
            char: char_of(msg.author),
        };
        let mut out = Vec::with_capacity(self.ir.entries.len());
        for (i, e) in self.ir.entries.iter().enumerate() {
            let depth = (e.scan_depth as usize).min(recent.len());
            let scan = scans[depth].get_or_insert_with(|| {
                let mut msgs: Vec<u32> = recent[..depth].to_vec();
                msgs.reverse();
                Scan::new(&self.session, &msgs)
            });
            let mut a = EntryActivation {
                index: i,
                id: e.id.to_string(),
                owner: self.ir.owner_id(e.owner).to_string(),
                pointer: e.pointer.clone(),
                order: e.order,
                position: e.position,
                constant: e.constant,
                active: false,
                why: Why::Disabled,
                scanned: scan
                    .starts
                    .iter()
                    .map(|(x, _)| self.session.messages[*x as usize].id.to_string())
                    .collect(),
                hits: Vec::new(),
                missed: Vec::new(),
                secondary: None,
                when: if e.when.is_some() {
                    When::NotEvaluated
                } else {
                    When::Absent
                },
            };
            self.decide(e, scan, &mut a);
            let passed = matches!(a.why, Why::Constant | Why::Keys);
            if passed {
                if let Some(program) = &e.when {
                    let mut host = LoreHost {
                        scan,
                        case_sensitive: e.case_sensitive,
                        whole_words: e.whole_words,
                        seed: self.session.seed,
                        message: &msg.id,
                        calls: &mut calls,
                        cache: &mut cache,
                    };
                    let site = super::observe::Site::Entry(&a.owner, &a.id);
                    a.when = self.eval_when(
                        &point,
                        &state,
                        e,
                        program,
                        &mut host,
                        site,
                        obs.as_deref_mut(),
                    );
                    match &a.when {
                        When::False => a.why = Why::WhenFalse,
                        When::Error(_) => a.why = Why::WhenError,
                        _ => {}
                    }
                }
            }
            a.active = matches!(a.why, Why::Constant | Why::Keys);
            if a.active {
                if let Some(o) = obs.as_deref_mut() {
                    o.entry(&a.owner, &a.id);
                }
            }
            out.push(a);
        }
        let mut active: Vec<EntryActivation> = Vec::new();
        let mut inactive = Vec::new();
        for a in out {
            if a.active {
                active.push(a);
            } else {
                inactive.push(a);
            }
        }
        // A stable sort keeps declaration order among equal `order`s.
        active.sort_by_key(|a| a.order);
        active.extend(inactive);
        active
    }

    /// Steps 1 and 2 of Format 5.3, with the key matches.
    fn decide(&self, e: &EntryIr, scan: &Scan, a: &mut EntryActivation) {
        if !e.enabled {
            a.why = Why::Disabled;
            return;
        }
        for (k, h) in scan.hits(&self.session, &e.keys) {
            match h {
                Some(h) => a.hits.push(h),
                None => a.missed.push(k.to_string()),
            }
        }
        let mut matched = !a.hits.is_empty();
        if matched {
            if let Some(sec) = &e.secondary {
                let mut s = Secondary {
                    logic: e.logic,
                    hits: Vec::new(),
                    missed: Vec::new(),
                    held: false,
                };
                for (k, h) in scan.hits(&self.session, sec) {
                    match h {
                        Some(h) => s.hits.push(h),
                        None => s.missed.push(k.to_string()),
                    }
                }
                s.held = e.logic.holds(s.hits.len(), sec.keys().len());
                matched = s.held;
                a.secondary = Some(s);
            }
        }
        a.why = if e.constant {
            Why::Constant
        } else if matched {
            Why::Keys
        } else if e.keys.is_empty() {
            Why::NoKeys
        } else if a.hits.is_empty() {
            Why::NoKeyHit
        } else {
            Why::Secondary
        };
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_when(
        &self,
        point: &Point<'_>,
        state: &State,
        e: &EntryIr,
        program: &crate::cel::Program,
        host: &mut LoreHost<'_>,
        site: super::observe::Site<'_>,
        obs: Option<&mut (dyn super::observe::Observer + '_)>,
    ) -> When {
        let Some(env) = self.ir.envs.get(e.env as usize) else {
            return When::Error("no environment".into());
        };
        let mut act = Activation::new(&env.env);
        point.fill(state, e.env, None, &mut act);
        match super::observe::eval(program, &act, host, site, obs) {
            Ok(Value::Bool(true)) => When::Held,
            Ok(Value::Bool(false)) => When::False,
            Ok(_) => When::Error("`when` did not give a bool".into()),
            Err(err) => When::Error(err.to_string()),
        }
    }

    /// The state at `m` and the number of `roll()` calls the derived
    /// variables made at `m` itself.
    fn state_with_calls(&self, m: u32) -> (State, u64) {
        let parent = self.session.messages.get(m as usize).and_then(|x| x.parent);
        let mut st = match parent {
            Some(p) => self.state_at(p),
            None => self.initial.clone(),
        };
        let mut scratch = Scratch::new(&self.ir);
        let calls = step(&self.ir, &self.session, &mut st, m, &mut scratch);
        (st, calls)
    }
}

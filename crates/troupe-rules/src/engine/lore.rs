//! Lore activation at a message (Format 5.3–5.8, 11.4), with the reasons:
//! which key matched where, which secondary logic held, what `when` gave,
//! timed effects along the path (5.6), recursion steps (5.7) and inclusion
//! groups (5.8).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

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
    /// When the occurrence starts in the recursion buffer (Format 5.7): the
    /// ID of the entry whose content it is in (`message` is then `""` and
    /// the range is inside that content).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
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
#[non_exhaustive]
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
#[non_exhaustive]
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
    /// Active: held by `sticky` (Format 5.6).
    Sticky,
    /// Not active: delayed by `delay` (5.6).
    Delayed,
    /// Not active: cooling after a start (5.6).
    Cooldown,
    /// Not active: removed by an inclusion group (5.8).
    Group,
    /// Not active: its `delay_until_recursion` level was never reached (5.7).
    DelayedUntilRecursion,
}

/// One entry at a message: whether it is active and why (Format 5.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryActivation {
    /// Index of the entry among the story's lore entries, in declaration order
    /// (Format 5.1).
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
    /// The step it became active at (Format 5.3, 5.7); `None` when not active.
    pub step: Option<u64>,
    /// The inclusion group that removed it (Format 5.8), when `why` is `group`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

impl EntryActivation {
    /// Forgets what a step decided, before an entry is decided again at a
    /// later recursion step (Format 5.7): no hits, no missed keys, no
    /// secondary result or group, and `when` not evaluated (or absent).
    fn undecided(&mut self, has_when: bool) {
        self.hits.clear();
        self.missed.clear();
        self.secondary = None;
        self.group = None;
        self.when = if has_when {
            When::NotEvaluated
        } else {
            When::Absent
        };
    }
}

/// Each entry's last start position on a path (Format 5.6), by entry index.
pub type Timed = Arc<Vec<Option<u64>>>;

/// Where a piece of scanned text comes from: a message, or an entry's
/// content in the recursion buffer (Format 5.7).
#[derive(Debug, Clone, Copy)]
enum Src {
    Message(u32),
    Entry(usize),
}

/// How far an entry is decided at a message (Format 5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    /// May still become active at a step.
    Open,
    /// Active.
    Active,
    /// Never active at this message (disabled, delayed, cooling).
    Out,
}

/// The scanned text of one depth: the joined texts, their lower-cased form
/// with a map back to character indices, and where each message starts.
struct Scan {
    text: String,
    lower: String,
    /// For each byte offset of `lower` (and one past the end), the
    /// character index in `text`.
    lower_chars: Vec<usize>,
    /// (source, first character index in `text`), oldest first.
    starts: Vec<(Src, usize)>,
}

impl Scan {
    /// The rendered texts of messages (oldest first), then the rendered
    /// contents of the buffer's entries, joined with `"\n"` (Format 5.3,
    /// 5.7).
    fn new<'t>(pieces: impl Iterator<Item = (Src, &'t str)>) -> Scan {
        let mut text = String::new();
        let mut starts = Vec::new();
        let mut chars = 0usize;
        for (i, (src, t)) in pieces.enumerate() {
            if i > 0 {
                text.push('\n');
                chars += 1;
            }
            starts.push((src, chars));
            chars += t.chars().count();
            text.push_str(t);
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
        entries: &[EntryIr],
        set: &'k KeySet,
    ) -> impl Iterator<Item = (&'k str, Option<KeyHit>)> + 'k + use<'k> {
        let cs = set.options().case_sensitive;
        let found = set.first_hits(self.haystack(cs));
        let hits: Vec<Option<KeyHit>> = set
            .keys()
            .iter()
            .zip(found)
            .map(|(k, f)| f.map(|(s, e)| self.key_hit(session, entries, k, cs, s, e)))
            .collect();
        set.keys().iter().map(|k| &**k).zip(hits)
    }

    fn key_hit(
        &self,
        session: &SessionIr,
        entries: &[EntryIr],
        key: &str,
        cs: bool,
        s: usize,
        end: usize,
    ) -> KeyHit {
        let (cs_, ce) = (self.char_at(cs, s), self.char_at(cs, end));
        let (src, first) = self
            .starts
            .iter()
            .rev()
            .find(|(_, f)| *f <= cs_)
            .copied()
            .unwrap_or((Src::Message(0), 0));
        let (message, entry) = match src {
            Src::Message(m) => (
                session
                    .messages
                    .get(m as usize)
                    .map_or(String::new(), |x| x.id.to_string()),
                None,
            ),
            Src::Entry(i) => (String::new(), Some(entries[i].id.to_string())),
        };
        KeyHit {
            key: key.to_string(),
            message,
            entry,
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

/// The recursion buffer matched piece by piece (Format 5.7): for each
/// entry whose `keys` and `secondary_keys` are all plain text without a
/// line feed ([`KeySet::is_piecewise`]), each key's first counted
/// occurrence is kept and only the texts added to the buffer since are
/// searched — every such entry's keys together, in one pass of a shared
/// automaton per added text. A plain key's occurrences in texts joined
/// with `"\n"` are the occurrences in each text, so the hits are those of
/// the whole scanned text; the work is linear in the buffer instead of a
/// rescan of the growing buffer by every entry at every step. Entries with
/// a regular-expression key are matched against the whole scanned text.
struct Pieces {
    /// Per entry: matched piece by piece.
    piecewise: Vec<bool>,
    /// Per entry: to be decided at the next step (first look, new hits,
    /// or a decision that went past the keys).
    dirty: Vec<bool>,
    /// One index per key setting in use, over the sets `2i` (entry `i`'s
    /// `keys`) and `2i + 1` (its `secondary_keys`) of piecewise entries.
    indexes: Vec<crate::keys::KeyIndex>,
    /// The buffer's pieces scanned so far, each as a scan of its own once
    /// a set hits it.
    scans: Vec<Option<Scan>>,
    /// Per set: the pieces it hits, in buffer order.
    hits_in: Vec<Vec<u32>>,
    /// Per entry: its first hits so far (primary, secondary) and how many
    /// of its sets' `hits_in` are merged; `None` until first looked at.
    found: Vec<Option<Found>>,
}

/// One entry's first hits so far (see [`Pieces`]).
struct Found {
    primary: Vec<Option<KeyHit>>,
    secondary: Vec<Option<KeyHit>>,
    merged: [usize; 2],
}

impl Pieces {
    fn new(entries: &[EntryIr]) -> Pieces {
        let piecewise: Vec<bool> = entries
            .iter()
            .map(|e| e.keys.is_piecewise() && e.secondary.as_ref().is_none_or(KeySet::is_piecewise))
            .collect();
        let n = entries.len();
        Pieces {
            piecewise,
            dirty: vec![true; n],
            indexes: Vec::new(),
            scans: Vec::new(),
            hits_in: vec![Vec::new(); 2 * n],
            found: (0..n).map(|_| None).collect(),
        }
    }

    /// The set `s` (`2i` or `2i + 1`) of piecewise entries.
    fn set<'e>(&self, entries: &'e [EntryIr], s: usize) -> Option<&'e KeySet> {
        let e = entries.get(s / 2).filter(|_| self.piecewise[s / 2])?;
        if s.is_multiple_of(2) {
            Some(&e.keys)
        } else {
            e.secondary.as_ref()
        }
    }

    /// Scans the pieces of `buffer` not scanned yet: one pass per key
    /// setting in use, recording which sets each piece hits and marking
    /// their entries to be decided again.
    fn add(&mut self, entries: &[EntryIr], buffer: &[(usize, String)]) {
        let from = self.scans.len();
        if from >= buffer.len() {
            return;
        }
        if self.indexes.is_empty() {
            // Built at the first text added (most messages add none).
            let sets = self.hits_in.len();
            let mut settings: Vec<crate::keys::KeyOptions> = Vec::new();
            for s in 0..sets {
                if let Some(set) = self.set(entries, s)
                    && !settings.contains(&set.options())
                {
                    settings.push(set.options());
                }
            }
            let indexes = settings
                .into_iter()
                .map(|o| crate::keys::KeyIndex::new((0..sets).map(|s| self.set(entries, s)), o))
                .collect();
            self.indexes = indexes;
        }
        for (p, (_, text)) in buffer.iter().enumerate().skip(from) {
            for index in &self.indexes {
                for s in index.scan(text).plain_hits() {
                    self.hits_in[s].push(p as u32);
                    self.dirty[s / 2] = true;
                }
            }
            self.scans.push(None);
        }
    }

    /// The first hits of entry `i` (`e`) in its messages (`msg_scan`, once)
    /// and in every piece that hits its sets, merged now.
    #[allow(clippy::too_many_arguments)]
    fn found(
        &mut self,
        i: usize,
        e: &EntryIr,
        msg_scan: &Scan,
        buffer: &[(usize, String)],
        session: &SessionIr,
        entries: &[EntryIr],
    ) -> (&[Option<KeyHit>], Option<&[Option<KeyHit>]>) {
        let f = self.found[i].get_or_insert_with(|| Found {
            primary: msg_scan
                .hits(session, entries, &e.keys)
                .map(|(_, h)| h)
                .collect(),
            secondary: e
                .secondary
                .as_ref()
                .map(|sec| {
                    msg_scan
                        .hits(session, entries, sec)
                        .map(|(_, h)| h)
                        .collect()
                })
                .unwrap_or_default(),
            merged: [0, 0],
        });
        for (side, set) in [(0, Some(&e.keys)), (1, e.secondary.as_ref())] {
            let Some(set) = set else { continue };
            let list = &self.hits_in[2 * i + side];
            let slot = if side == 0 {
                &mut f.primary
            } else {
                &mut f.secondary
            };
            for &p in &list[f.merged[side]..] {
                if slot.iter().all(Option::is_some) {
                    break;
                }
                let (j, text) = &buffer[p as usize];
                let piece = self.scans[p as usize].get_or_insert_with(|| {
                    Scan::new(std::iter::once((Src::Entry(*j), text.as_str())))
                });
                for (k, (_, h)) in piece.hits(session, entries, set).enumerate() {
                    if slot[k].is_none() {
                        slot[k] = h;
                    }
                }
            }
            f.merged[side] = list.len();
        }
        let secondary = e.secondary.as_ref().map(|_| f.secondary.as_slice());
        (f.primary.as_slice(), secondary)
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
    #[cfg(any(test, feature = "internals"))]
    pub fn active_entries(&self, message_id: &str) -> Vec<EntryActivation> {
        match self.session.find(message_id) {
            Some(m) => self.entries_at(m),
            None => Vec::new(),
        }
    }

    /// [`Engine::active_entries`] by message index. `when` is evaluated, in
    /// declaration order within each step, only for entries that are
    /// enabled and constant or whose keys match; its `roll()` calls are
    /// numbered after those the derived variables made at the message
    /// (Format 11.5; events and outcomes are not re-evaluated here, 9.3).
    /// Timed effects (5.6) are computed along the message's path, each
    /// earlier message once.
    pub fn entries_at(&self, m: u32) -> Vec<EntryActivation> {
        self.entries_at_observed(m, None)
    }

    /// [`Engine::entries_at`], reporting to `obs` the branches of each
    /// `when` evaluated and each active entry (Format 21.6).
    pub fn entries_at_observed(
        &self,
        m: u32,
        obs: Option<&mut (dyn super::observe::Observer + '_)>,
    ) -> Vec<EntryActivation> {
        if self.session.messages.get(m as usize).is_none() {
            return Vec::new();
        }
        let timed = self.timed_before(m);
        let (out, _) = self.decide_at(m, &timed, obs);
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

    /// Forgets the timed-effect memo (Format 5.6) of messages `m` and after
    /// (by index): a runtime calls it when it records firings on message
    /// `m` or removes it, since activation there may change.
    pub fn forget_lore_from(&self, m: u32) {
        if let Ok(mut cache) = self.lore_timed.lock() {
            let _ = cache.split_off(&m);
        }
    }

    /// Whether any entry has `sticky` or `cooldown` (Format 5.6): only then
    /// does activation at a message depend on earlier messages' activation.
    fn has_timed(&self) -> bool {
        self.ir
            .entries
            .iter()
            .any(|e| e.sticky > 0 || e.cooldown > 0)
    }

    /// Each entry's last start position on the path before `m` (Format
    /// 5.6): as of after `m`'s parent.
    fn timed_before(&self, m: u32) -> Timed {
        let n = self.ir.entries.len();
        if !self.has_timed() {
            return Arc::new(vec![None; n]);
        }
        match self.session.messages.get(m as usize).and_then(|x| x.parent) {
            Some(p) => self.timed_after(p),
            None => Arc::new(vec![None; n]),
        }
    }

    /// The last start positions as of after message `p` (its own starts
    /// included), computing each message of the path not yet computed once,
    /// root first, without recursion (paths may be long).
    fn timed_after(&self, p: u32) -> Timed {
        let n = self.ir.entries.len();
        let cached = |c: u32| self.lore_timed.lock().ok().and_then(|t| t.get(&c).cloned());
        let mut chain = Vec::new();
        let mut base: Option<Timed> = None;
        let mut cur = Some(p);
        while let Some(c) = cur {
            if let Some(t) = cached(c) {
                base = Some(t);
                break;
            }
            chain.push(c);
            cur = self.session.messages.get(c as usize).and_then(|x| x.parent);
        }
        let mut t = base.unwrap_or_else(|| Arc::new(vec![None; n]));
        for &c in chain.iter().rev() {
            let (_, started) = self.decide_at(c, &t, None);
            let pos = u64::from(self.session.messages[c as usize].depth) + 1;
            if started.iter().any(|s| *s) {
                let mut next = (*t).clone();
                for (i, s) in started.iter().enumerate() {
                    if *s {
                        next[i] = Some(pos);
                    }
                }
                t = Arc::new(next);
            }
            if let Ok(mut cache) = self.lore_timed.lock() {
                cache.insert(c, t.clone());
            }
        }
        t
    }

    /// Every entry at `m` in declaration order, given the last start
    /// positions before it (Format 5.3, 5.6–5.8), and which entries start
    /// at `m`.
    fn decide_at(
        &self,
        m: u32,
        timed: &[Option<u64>],
        mut obs: Option<&mut (dyn super::observe::Observer + '_)>,
    ) -> (Vec<EntryActivation>, Vec<bool>) {
        let entries = &self.ir.entries;
        let n = entries.len();
        let Some(msg) = self.session.messages.get(m as usize) else {
            return (Vec::new(), Vec::new());
        };
        let pos = u64::from(msg.depth) + 1;
        let (state, mut calls) = self.state_with_calls(m);
        // The non-hidden messages on the path, newest first, as many as the
        // deepest entry scans.
        let deepest = entries.iter().map(|e| e.scan_depth).max().unwrap_or(0);
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
        // Each scanned message's text as rendered (5.3), newest first.
        let texts: Vec<String> = recent.iter().map(|&c| self.scan_text(c)).collect();
        let mut cache = HashMap::new();
        let point = Point {
            ir: &self.ir,
            session: Some(&self.session),
            char: char_of(msg.author),
        };
        let mut acts: Vec<EntryActivation> = Vec::with_capacity(n);
        let mut status = vec![St::Open; n];
        let mut held = vec![false; n];
        for (i, e) in entries.iter().enumerate() {
            let depth = (e.scan_depth as usize).min(recent.len());
            let mut a = EntryActivation {
                index: i,
                id: e.id.to_string(),
                owner: self.ir.owner_id(e.owner).to_string(),
                pointer: e.pointer.clone(),
                order: e.order,
                position: e.position,
                constant: e.constant,
                active: false,
                why: Why::NoKeys,
                scanned: recent[..depth]
                    .iter()
                    .rev()
                    .map(|x| self.session.messages[*x as usize].id.to_string())
                    .collect(),
                hits: Vec::new(),
                missed: Vec::new(),
                secondary: None,
                when: if e.when.is_some() {
                    When::NotEvaluated
                } else {
                    When::Absent
                },
                step: None,
                group: None,
            };
            let last = timed.get(i).copied().flatten();
            if !e.enabled {
                a.why = Why::Disabled;
                status[i] = St::Out;
            } else if e.delay > 0 && pos < e.delay {
                a.why = Why::Delayed;
                status[i] = St::Out;
            } else if last.is_some_and(|s| e.sticky > 0 && pos <= s.saturating_add(e.sticky)) {
                a.why = Why::Sticky;
                held[i] = true;
            } else if last.is_some_and(|s| {
                e.cooldown > 0 && pos <= s.saturating_add(e.sticky).saturating_add(e.cooldown)
            }) {
                a.why = Why::Cooldown;
                status[i] = St::Out;
            } else if e.recursion_level > 0 {
                a.why = Why::DelayedUntilRecursion;
            }
            acts.push(a);
        }
        let mut step: u64 = 0;
        // The entries whose content is in the recursion buffer, with the
        // content rendered at m (5.7).
        let mut buffer: Vec<(usize, String)> = Vec::new();
        let author = self.ir.who_id(msg.author).to_string();
        let narrator = author == "narrator";
        // Keys found piece by piece (Format 5.7 stays linear in the
        // buffer): an entry whose keys are all plain text keeps its first
        // hits, and each text added to the buffer is scanned once for
        // every such entry's keys together.
        let mut pieces = Pieces::new(entries);
        let mut msg_scans: Vec<Option<Scan>> = Vec::new();
        msg_scans.resize_with(recent.len() + 1, || None);
        loop {
            let mut scans: Vec<Option<Scan>> = Vec::new();
            scans.resize_with(recent.len() + 1, || None);
            pieces.add(entries, &buffer);
            let mut newly: Vec<usize> = Vec::new();
            for (i, e) in entries.iter().enumerate() {
                if status[i] != St::Open {
                    continue;
                }
                if step == 0 {
                    if held[i] {
                        newly.push(i);
                        continue;
                    }
                    if e.recursion_level > 0 {
                        continue;
                    }
                } else if e.exclude_recursion || e.recursion_level > step {
                    continue;
                }
                let depth = (e.scan_depth as usize).min(recent.len());
                let full = |scans: &mut Vec<Option<Scan>>| {
                    if scans[depth].is_none() {
                        let msgs = (0..depth)
                            .rev()
                            .map(|k| (Src::Message(recent[k]), texts[k].as_str()));
                        let buf = buffer.iter().map(|(j, t)| (Src::Entry(*j), t.as_str()));
                        scans[depth] = Some(Scan::new(msgs.chain(buf)));
                    }
                };
                let a = &mut acts[i];
                if pieces.piecewise[i] {
                    // Unchanged keys and no `when` evaluated last time: the
                    // same decision again (5.3 steps 1–2 depend only on
                    // the hits).
                    if !pieces.dirty[i] {
                        continue;
                    }
                    let msg_scan = msg_scans[depth].get_or_insert_with(|| {
                        Scan::new(
                            (0..depth)
                                .rev()
                                .map(|k| (Src::Message(recent[k]), texts[k].as_str())),
                        )
                    });
                    let (primary, secondary) =
                        pieces.found(i, e, msg_scan, &buffer, &self.session, entries);
                    a.undecided(e.when.is_some());
                    self.decide_with(e, primary, secondary, a);
                } else {
                    full(&mut scans);
                    let Some(scan) = scans[depth].as_ref() else {
                        continue;
                    };
                    a.undecided(e.when.is_some());
                    self.decide(e, scan, a);
                }
                // A decision by the keys alone stands until new hits.
                pieces.dirty[i] = !matches!(a.why, Why::NoKeyHit | Why::Secondary | Why::NoKeys);
                if matches!(a.why, Why::Constant | Why::Keys)
                    && let Some(program) = &e.when
                {
                    full(&mut scans);
                    let Some(scan) = scans[depth].as_ref() else {
                        continue;
                    };
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
                if matches!(a.why, Why::Constant | Why::Keys) {
                    newly.push(i);
                }
            }
            let removed = self.group_filter(&msg.id, step, &newly, &held, &acts, &status);
            let mut activated = 0usize;
            for &i in &newly {
                if let Some(g) = removed.get(&i) {
                    acts[i].why = Why::Group;
                    acts[i].group = Some(g.to_string());
                    continue;
                }
                activated += 1;
                status[i] = St::Active;
                acts[i].active = true;
                acts[i].step = Some(step);
                if !entries[i].prevent_recursion && self.ir.recursion > 0 {
                    let owner = self.ir.owner_id(entries[i].owner).to_string();
                    let who = super::macros::RenderFor {
                        char: (!narrator).then_some(author.as_str()),
                        owner: Some(owner.as_str()),
                        narrator,
                    };
                    let text = self.render_stable_for_scan(&entries[i].content, &state, who);
                    buffer.push((i, text));
                }
                if let Some(o) = obs.as_deref_mut() {
                    o.entry(&acts[i].owner, &acts[i].id);
                }
            }
            if self.ir.recursion == 0 {
                break;
            }
            let next = if activated > 0 {
                step + 1
            } else {
                match entries
                    .iter()
                    .enumerate()
                    .filter(|(i, e)| {
                        status[*i] == St::Open && !e.exclude_recursion && e.recursion_level > step
                    })
                    .map(|(_, e)| e.recursion_level)
                    .min()
                {
                    Some(l) => l,
                    None => break,
                }
            };
            if next > self.ir.recursion {
                break;
            }
            step = next;
        }
        let started = (0..n)
            .map(|i| status[i] == St::Active && !held[i])
            .collect();
        (acts, started)
    }

    /// Inclusion groups at step `step` (Format 5.8): of the entries `newly`
    /// made active, those a group removes, with the group.
    fn group_filter(
        &self,
        message: &str,
        step: u64,
        newly: &[usize],
        held: &[bool],
        acts: &[EntryActivation],
        status: &[St],
    ) -> HashMap<usize, Arc<str>> {
        let entries = &self.ir.entries;
        let mut removed: HashMap<usize, Arc<str>> = HashMap::new();
        let mut seen: HashSet<&str> = HashSet::new();
        let mut names: Vec<&Arc<str>> = Vec::new();
        for &i in newly {
            for g in &entries[i].group {
                if seen.insert(g) {
                    names.push(g);
                }
            }
        }
        for g in names {
            let members: Vec<usize> = newly
                .iter()
                .copied()
                .filter(|i| !removed.contains_key(i) && entries[*i].group.contains(g))
                .collect();
            if members.is_empty() {
                continue;
            }
            let remove = |keep: &[usize], removed: &mut HashMap<usize, Arc<str>>| {
                for &i in &members {
                    if !keep.contains(&i) {
                        removed.insert(i, g.clone());
                    }
                }
            };
            // 1. A group with an entry active from an earlier step.
            let earlier = entries
                .iter()
                .enumerate()
                .any(|(j, e)| status[j] == St::Active && e.group.contains(g));
            if earlier {
                remove(&[], &mut removed);
                continue;
            }
            // 2. Held members win.
            let held_m: Vec<usize> = members.iter().copied().filter(|i| held[*i]).collect();
            if !held_m.is_empty() {
                remove(&held_m, &mut removed);
                continue;
            }
            let mut rest = members.clone();
            // 3.1 Scoring.
            if rest.len() > 1 && rest.iter().any(|i| entries[*i].group_scoring) {
                let score = |i: usize| {
                    acts[i].hits.len() + acts[i].secondary.as_ref().map_or(0, |s| s.hits.len())
                };
                let max = rest.iter().map(|i| score(*i)).max().unwrap_or(0);
                rest.retain(|i| !(entries[*i].group_scoring && score(*i) < max));
            }
            if rest.len() > 1 {
                let winner = if rest.iter().any(|i| entries[*i].group_override) {
                    // 3.2 Prioritize: the largest `order`, the first on ties.
                    let mut best: Option<usize> = None;
                    for &i in rest.iter().filter(|i| entries[**i].group_override) {
                        if best.is_none_or(|b| entries[i].order > entries[b].order) {
                            best = Some(i);
                        }
                    }
                    best
                } else {
                    // 3.3 Weighted choice with choose(W, label) (18.3).
                    let total: u64 = rest
                        .iter()
                        .map(|i| entries[*i].group_weight)
                        .fold(0u64, u64::saturating_add);
                    let label = format!("group:{}:{message}:{step}:{g}", self.session.seed);
                    let mut rng =
                        crate::cel::dice::SplitMix64(crate::cel::dice::fnv1a64(label.as_bytes()));
                    let r = ((u128::from(rng.next_u64()) * u128::from(total)) >> 64) as u64;
                    let mut acc = 0u64;
                    let mut pick = None;
                    for &i in &rest {
                        acc = acc.saturating_add(entries[i].group_weight);
                        if r < acc {
                            pick = Some(i);
                            break;
                        }
                    }
                    pick
                };
                rest = winner.into_iter().collect();
            }
            remove(&rest, &mut removed);
        }
        removed
    }

    /// Steps 1 and 2 of Format 5.3, with the key matches found in `scan`.
    fn decide(&self, e: &EntryIr, scan: &Scan, a: &mut EntryActivation) {
        let primary: Vec<Option<KeyHit>> = scan
            .hits(&self.session, &self.ir.entries, &e.keys)
            .map(|(_, h)| h)
            .collect();
        let secondary: Option<Vec<Option<KeyHit>>> = e.secondary.as_ref().map(|sec| {
            scan.hits(&self.session, &self.ir.entries, sec)
                .map(|(_, h)| h)
                .collect()
        });
        self.decide_with(e, &primary, secondary.as_deref(), a);
    }

    /// Steps 1 and 2 of Format 5.3 given each key's first counted
    /// occurrence in the scanned text (`primary` for `keys`, `secondary`
    /// for `secondary_keys`, in list order). Secondary keys are reported
    /// only when a primary key hit.
    fn decide_with(
        &self,
        e: &EntryIr,
        primary: &[Option<KeyHit>],
        secondary: Option<&[Option<KeyHit>]>,
        a: &mut EntryActivation,
    ) {
        if !e.enabled {
            a.why = Why::Disabled;
            return;
        }
        for (k, h) in e.keys.keys().iter().zip(primary) {
            match h {
                Some(h) => a.hits.push(h.clone()),
                None => a.missed.push(k.to_string()),
            }
        }
        let mut matched = !a.hits.is_empty();
        if matched && let (Some(sec), Some(found)) = (&e.secondary, secondary) {
            let mut s = Secondary {
                logic: e.logic,
                hits: Vec::new(),
                missed: Vec::new(),
                held: false,
            };
            for (k, h) in sec.keys().iter().zip(found) {
                match h {
                    Some(h) => s.hits.push(h.clone()),
                    None => s.missed.push(k.to_string()),
                }
            }
            s.held = e.logic.holds(s.hits.len(), sec.keys().len());
            matched = s.held;
            a.secondary = Some(s);
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
            None => (*self.initial).clone(),
        };
        let mut scratch = Scratch::new(&self.ir);
        let calls = step(&self.ir, &self.session, &mut st, m, &mut scratch);
        (st, calls)
    }
}

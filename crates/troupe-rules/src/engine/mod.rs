//! Stage 4: the engine (Format 8–12). Answers, for a compiled story and
//! session: the state at a message (replayed along its path, from the
//! nearest checkpoint), whether the story has ended there and how, who knows
//! a part or a summary, and what a template renders to. It reads the IR
//! only: [`crate::pipeline`] checks and compiles what it is given.

pub mod cel;
pub mod eval;
pub mod knows;
pub mod lore;
pub mod macros;
#[cfg(any(test, feature = "internals"))]
pub mod memory;
pub mod observe;
pub mod replay;
pub mod state;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::compile::session::Fired;
use crate::compile::{Layout, SessionIr, StoryIr, Val};
use replay::{initial, replay_all, step, Tree};

pub use eval::{Point, RollHost, Scratch, Since};
pub use lore::{EntryActivation, KeyHit, Secondary, When, Why};
#[cfg(any(test, feature = "internals"))]
pub use observe::Report;
pub use observe::{Observer, Recorder, Site};
pub use state::State;

/// The default checkpoint stride: a full state is kept at every message
/// whose depth is a multiple of it.
pub const DEFAULT_STRIDE: u32 = 64;

/// A compiled story with its (possibly empty) session, ready for queries.
#[derive(Debug)]
pub struct Engine {
    /// The compiled story (shared by the sessions started from one
    /// package's IR).
    pub ir: Arc<StoryIr>,
    /// The session (no messages when there is none).
    pub session: SessionIr,
    /// Whether a session was given (affects `user` and seeds only).
    pub has_session: bool,
    /// Built once with the engine, never changed: its forks share it.
    tree: Arc<Tree>,
    /// Shared by the engine's forks, like the tree.
    initial: Arc<State>,
    /// Kept once with the engine, never changed: its forks share them.
    checkpoints: Arc<Vec<Option<Box<State>>>>,
    stride: u32,
    /// Templates parsed by [`Engine::render`], by text (shared with the
    /// other sessions of the story, [`Engine::share_templates`]).
    templates: Arc<crate::template::TemplateCache>,
    /// Each entry's last start position as of after a message (Format 5.6),
    /// by message index, computed once per message (only for stories with
    /// a `sticky` or `cooldown` entry).
    lore_timed: std::sync::Mutex<std::collections::BTreeMap<u32, lore::Timed>>,
}

/// How a story ended (Format 9.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    /// The ID of the ending firing's event or outcome.
    pub id: String,
    /// True when it is an outcome (the story's outcome is then `id`).
    pub outcome: bool,
    /// The message that recorded it.
    pub message: String,
}

impl Engine {
    /// Builds the engine from compiled parts: computes the initial state
    /// and replays every path once to keep checkpoints every `stride` levels.
    pub fn new(ir: StoryIr, session: SessionIr, has_session: bool, stride: u32) -> Engine {
        Engine::from_ir(Arc::new(ir), session, has_session, stride)
    }

    /// [`Engine::new`] from a compiled story that may be shared (a
    /// package's IR, Format 14.4): the IR is all an engine needs.
    pub fn from_ir(ir: Arc<StoryIr>, session: SessionIr, has_session: bool, stride: u32) -> Engine {
        let stride = stride.max(1);
        let mut scratch = Scratch::new(&ir);
        let init = initial(&ir, has_session.then_some(&session), &mut scratch);
        let tree = Tree::new(&session);
        let mut checkpoints: Vec<Option<Box<State>>> = vec![None; session.messages.len()];
        replay_all(&ir, &session, &tree, &init, |m, st| {
            if session.messages[m as usize].depth.is_multiple_of(stride) {
                checkpoints[m as usize] = Some(Box::new(st.clone()));
            }
        });
        Engine {
            ir,
            session,
            has_session,
            tree: Arc::new(tree),
            initial: Arc::new(init),
            checkpoints: Arc::new(checkpoints),
            stride,
            templates: Default::default(),
            lore_timed: Default::default(),
        }
    }

    /// A copy of this engine for a branch that goes on on its own (the
    /// search of Format 20.5): the compiled story, the tree and the
    /// checkpoints are shared; the session's messages are shared up to the
    /// last `SessionIr::freeze` (O(1) after it) and copied after.
    pub fn fork(&self) -> Engine {
        Engine {
            ir: self.ir.clone(),
            session: self.session.clone(),
            has_session: self.has_session,
            tree: self.tree.clone(),
            initial: self.initial.clone(),
            checkpoints: self.checkpoints.clone(),
            stride: self.stride,
            templates: self.templates.clone(),
            lore_timed: std::sync::Mutex::new(
                self.lore_timed
                    .lock()
                    .map(|t| t.clone())
                    .unwrap_or_default(),
            ),
        }
    }

    /// Parses templates through `cache` from now on (a cache shared by the
    /// sessions of one story, so that a reply parses once, not once per
    /// session).
    pub fn share_templates(&mut self, cache: Arc<crate::template::TemplateCache>) {
        self.templates = cache;
    }

    /// The checkpoint stride.
    #[cfg(any(test, feature = "internals"))]
    pub fn stride(&self) -> u32 {
        self.stride
    }

    /// The children links of the session's messages.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The last message of the session in file order (the line written
    /// last), the message a question about "now" is asked at; `None` for a
    /// session without messages.
    pub fn last_message(&self) -> Option<u32> {
        self.session.messages.len().checked_sub(1).map(|m| m as u32)
    }

    /// The initial state (Format 8.6).
    pub fn initial(&self) -> &State {
        &self.initial
    }

    /// The state at message `m` (Format 8.6), replayed from the nearest
    /// checkpoint on its path.
    pub fn state_at(&self, m: u32) -> State {
        let mut path = Vec::new();
        let mut cur = Some(m);
        let mut base = None;
        while let Some(c) = cur {
            if let Some(Some(cp)) = self.checkpoints.get(c as usize) {
                base = Some((**cp).clone());
                break;
            }
            path.push(c);
            cur = self.session.messages.get(c as usize).and_then(|x| x.parent);
        }
        let mut st = base.unwrap_or_else(|| (*self.initial).clone());
        let mut scratch = Scratch::new(&self.ir);
        for &c in path.iter().rev() {
            step(&self.ir, &self.session, &mut st, c, &mut scratch);
        }
        st
    }

    /// The state at `m` replayed from the root, ignoring checkpoints (for
    /// tests and benchmarks).
    #[cfg(any(test, feature = "internals"))]
    pub fn state_at_from_root(&self, m: u32) -> State {
        let path = self.path(m);
        let mut st = (*self.initial).clone();
        let mut scratch = Scratch::new(&self.ir);
        for &c in &path {
            step(&self.ir, &self.session, &mut st, c, &mut scratch);
        }
        st
    }

    /// Visits each message of the path of `m`, root first, with the state
    /// at it (8.6), stepping once along the path: linear in the path's
    /// length, however many messages the visitor looks at (a prompt's
    /// transcript, Format 24.3).
    pub fn walk_path(&self, m: u32, mut visit: impl FnMut(u32, &State)) {
        let mut st = (*self.initial).clone();
        let mut scratch = Scratch::new(&self.ir);
        for c in self.path(m) {
            step(&self.ir, &self.session, &mut st, c, &mut scratch);
            visit(c, &st);
        }
    }

    /// The path of `m`: its ancestors from the root down to `m` itself.
    pub fn path(&self, m: u32) -> Vec<u32> {
        let mut path = Vec::new();
        let mut cur = Some(m);
        while let Some(c) = cur {
            path.push(c);
            cur = self.session.messages.get(c as usize).and_then(|x| x.parent);
        }
        path.reverse();
        path
    }

    /// Replays the whole session once, calling `visit` at every message.
    #[cfg(any(test, feature = "internals"))]
    pub fn replay_all(&self, visit: impl FnMut(u32, &State)) {
        replay_all(&self.ir, &self.session, &self.tree, &self.initial, visit);
    }

    /// The state at a message ID, or the initial state for `None`; `None`
    /// when the ID is unknown.
    #[cfg(any(test, feature = "internals"))]
    pub fn state_at_id(&self, id: Option<&str>) -> Option<State> {
        match id {
            None => Some((*self.initial).clone()),
            Some(id) => self.session.find(id).map(|m| self.state_at(m)),
        }
    }

    /// What a recorded firing names (Format 7.3): `("event", id)` or
    /// `("outcome", id)`; `None` for an index the IR does not have.
    pub fn fired(&self, f: &Fired) -> Option<(&'static str, &str)> {
        match *f {
            Fired::Event(e) => Some(("event", &*self.ir.events.get(e as usize)?.id)),
            Fired::Outcome(o) => Some(("outcome", &*self.ir.outcomes.get(o as usize)?.id)),
        }
    }

    /// How the story has ended at `state` (Format 9.3), if it has.
    pub fn ending(&self, state: &State) -> Option<Ending> {
        let f = state.ending?;
        let (kind, id) = self.fired(&f)?;
        let (id, outcome) = (id.to_string(), kind == "outcome");
        // The message that recorded it: the first on the path with it.
        let message = state
            .at
            .map(|m| self.path(m))
            .unwrap_or_default()
            .into_iter()
            .find(|m| self.session.messages[*m as usize].firings.contains(&f))
            .map(|m| self.session.messages[m as usize].id.to_string())
            .unwrap_or_default();
        Some(Ending {
            id,
            outcome,
            message,
        })
    }

    /// The flattened state (Format 8.6): `scene.location`, `scene.present`,
    /// every variable by state name, keyed ones one entry per present key,
    /// absent derived variables left out.
    pub fn flatten(&self, state: &State) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert(
            "scene.location".into(),
            Value::String(state.location.to_string()),
        );
        out.insert(
            "scene.present".into(),
            Value::Array(
                state
                    .present_members()
                    .map(|c| Value::String(self.ir.cast[c as usize].id.to_string()))
                    .collect(),
            ),
        );
        for v in &self.ir.vars {
            flatten_var(v, state, &mut out);
        }
        out
    }

    /// `state_delta` (Format 18.6) from `before` to `after`: the entries of
    /// the flattened `after` that differ from or are not in the flattened
    /// `before`, then those of `before` absent from `after` as null,
    /// computed from the scene fields and variables whose slots changed
    /// (the others flatten to equal entries, which the delta leaves out).
    pub fn state_delta(&self, before: &State, after: &State) -> Map<String, Value> {
        // Only what differs is written, so each entry goes straight in.
        let mut a = Map::new();
        if before.location != after.location {
            a.insert(
                "scene.location".into(),
                Value::String(after.location.to_string()),
            );
        }
        if before.present != after.present {
            let ids = after
                .present_members()
                .map(|c| Value::String(self.ir.cast[c as usize].id.to_string()))
                .collect();
            a.insert("scene.present".into(), Value::Array(ids));
        }
        // Entries present before but not after come last, as `null`
        // (the order `delta` gives).
        let mut gone: Vec<String> = Vec::new();
        for v in &self.ir.vars {
            match &v.layout {
                Layout::Single(i) => {
                    let i = *i as usize;
                    let (Some(x), Some(y)) = (before.slots.get(i), after.slots.get(i)) else {
                        continue;
                    };
                    if same_value(x, y) {
                        continue;
                    }
                    // An absent value has no entry (Format 8.6).
                    match (x.is_absent(), y.is_absent()) {
                        (_, false) => {
                            let yj = y.to_json();
                            if x.is_absent() || x.to_json() != yj {
                                a.insert(v.name.to_string(), yj);
                            }
                        }
                        (false, true) => gone.push(v.name.to_string()),
                        (true, true) => {}
                    }
                }
                Layout::Fixed { first, keys } => {
                    for (k, key) in keys.iter().enumerate() {
                        let i = *first as usize + k;
                        let (Some(x), Some(y)) = (before.slots.get(i), after.slots.get(i)) else {
                            continue;
                        };
                        if same_value(x, y) {
                            continue;
                        }
                        let yj = y.to_json();
                        if x.to_json() != yj {
                            a.insert(format!("{}.{key}", v.name), yj);
                        }
                    }
                }
                Layout::Open(i) => {
                    let i = *i as usize;
                    let map = |st: &'_ State| match st.slots.get(i) {
                        Some(Val::Map(m)) => Some(m.clone()),
                        _ => None,
                    };
                    // A slot without a map flattens to no entries.
                    let (x, y) = (
                        map(before).unwrap_or_default(),
                        map(after).unwrap_or_default(),
                    );
                    if x.ptr_eq(&y) {
                        // The same shared tree: nothing changed.
                        continue;
                    }
                    for (k, val) in y.iter() {
                        let changed = match x.get(k) {
                            Some(old) if same_value(old, val) => false,
                            Some(old) => old.to_json() != val.to_json(),
                            None => true,
                        };
                        if changed {
                            a.insert(format!("{}.{k}", v.name), val.to_json());
                        }
                    }
                    for (k, _) in x.iter() {
                        if y.get(k).is_none() {
                            gone.push(format!("{}.{k}", v.name));
                        }
                    }
                }
            }
        }
        for k in gone {
            a.insert(k, Value::Null);
        }
        a
    }

    /// `turn` and `round` at a state (Format 8.8).
    pub fn turn_round(&self, state: &State) -> (i64, i64) {
        (state.turn, state.round)
    }
}

/// Whether two slot values flatten to the same JSON (equal, and for
/// decimals, lists and maps also written the same: `1.0` and `1.00` are
/// equal decimals but different text).
pub(crate) fn same_value(x: &Val, y: &Val) -> bool {
    match (x, y) {
        (Val::Num(p), Val::Num(q)) => p == q && p.scale() == q.scale(),
        (Val::List(_), Val::List(_)) | (Val::Map(_), Val::Map(_)) => {
            x == y && x.to_json() == y.to_json()
        }
        _ => x == y,
    }
}

/// The flattened entries of variable `v` at `state` (Format 8.6).
fn flatten_var(v: &crate::compile::VarIr, state: &State, out: &mut Map<String, Value>) {
    match &v.layout {
        Layout::Single(s) => {
            if let Some(val) = state.slots.get(*s as usize)
                && !val.is_absent()
            {
                out.insert(v.name.to_string(), val.to_json());
            }
        }
        Layout::Fixed { first, keys } => {
            for (i, k) in keys.iter().enumerate() {
                if let Some(val) = state.slots.get(*first as usize + i) {
                    out.insert(format!("{}.{k}", v.name), val.to_json());
                }
            }
        }
        Layout::Open(s) => {
            if let Some(Val::Map(m)) = state.slots.get(*s as usize) {
                for (k, val) in m.iter() {
                    out.insert(format!("{}.{k}", v.name), val.to_json());
                }
            }
        }
    }
}

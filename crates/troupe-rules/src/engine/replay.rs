//! Replay (Format 8.6, 9.3): the state at a message is the initial state
//! with every message of its path applied. The engine keeps a full state at
//! every message whose depth is a multiple of the checkpoint stride, so a
//! query replays at most `stride - 1` messages from the nearest checkpoint.

use super::eval::{char_of, Point, RollHost, Scratch, Since};
use super::observe::Observer;
use super::state::{firing_of, State};
use crate::compile::session::Fired;
use crate::compile::{SessionIr, StoryIr, Who};
use crate::model::firing::record;

/// The children of every message, as first-child / next-sibling links
/// (`u32::MAX` = none), children in file order.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// First child of each message.
    pub first_child: Vec<u32>,
    /// Next sibling of each message.
    pub next_sibling: Vec<u32>,
    /// The roots, in file order.
    pub roots: Vec<u32>,
    /// The child of each message with the most descendants (the first of
    /// equals), `u32::MAX` for a leaf: [`replay_all`] visits it last, so it
    /// holds at most about log2(n) states at once.
    pub heavy: Vec<u32>,
}

/// No message.
pub const NONE: u32 = u32::MAX;

impl Tree {
    /// Builds the links of `session`.
    pub fn new(session: &SessionIr) -> Tree {
        let n = session.messages.len();
        let mut t = Tree {
            first_child: vec![NONE; n],
            next_sibling: vec![NONE; n],
            roots: Vec::new(),
            heavy: vec![NONE; n],
        };
        // A parent is an earlier line (Format 12.1), so walking the lines
        // backwards sees every message's descendants before the message.
        let mut size = vec![1u32; n];
        for (i, m) in session.messages.iter().enumerate().rev() {
            match m.parent {
                Some(p) => {
                    let p = p as usize;
                    t.next_sibling[i] = t.first_child[p];
                    t.first_child[p] = i as u32;
                    size[p] = size[p].saturating_add(size[i]);
                    let h = t.heavy[p];
                    // Siblings are met last first: `>=` keeps the first of equals.
                    if h == NONE || size[i] >= size[h as usize] {
                        t.heavy[p] = i as u32;
                    }
                }
                None => t.roots.push(i as u32),
            }
        }
        t.roots.reverse();
        t
    }

    /// The children of `m`, in file order.
    #[cfg(any(test, feature = "internals"))]
    pub fn children(&self, m: u32) -> impl Iterator<Item = u32> + '_ {
        let mut c = self.first_child.get(m as usize).copied().unwrap_or(NONE);
        std::iter::from_fn(move || {
            if c == NONE {
                return None;
            }
            let out = c;
            c = self.next_sibling.get(c as usize).copied().unwrap_or(NONE);
            Some(out)
        })
    }
}

/// Applies message `m` to `st` (the state at its parent, or the initial
/// state for a root): Format 8.6 steps 1–3 with turns and rounds (8.8).
/// Returns the number of `roll()` calls made at `m` (Format 11.5: events
/// evaluated next at `m` continue the count).
pub fn step(
    ir: &StoryIr,
    session: &SessionIr,
    st: &mut State,
    m: u32,
    scratch: &mut Scratch,
) -> u64 {
    step_observed(ir, session, st, m, scratch, None)
}

#[cfg(feature = "test-hooks")]
thread_local! {
    static STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many messages this thread has stepped (Format 8.6) so far: a measure
/// of work for tests that bound it by comparing two input sizes, with no
/// timing (only with the `test-hooks` feature).
#[cfg(feature = "test-hooks")]
pub fn steps_taken() -> u64 {
    STEPS.with(std::cell::Cell::get)
}

/// [`step`], reporting to `obs` the opening a root names and the branches
/// of the derived variables recomputed after each change step.
pub fn step_observed(
    ir: &StoryIr,
    session: &SessionIr,
    st: &mut State,
    m: u32,
    scratch: &mut Scratch,
    mut obs: Option<&mut (dyn Observer + '_)>,
) -> u64 {
    #[cfg(feature = "test-hooks")]
    STEPS.with(|s| s.set(s.get() + 1));
    let Some(msg) = session.messages.get(m as usize) else {
        return 0;
    };
    if let (Some(o), Who::Cast(c)) = (obs.as_deref_mut(), msg.author)
        && let Some(x) = ir.cast.get(c as usize).filter(|x| !x.player)
    {
        o.speaker(&x.id);
    }
    st.at = Some(m);
    if msg.parent.is_none() {
        st.root = Some(m);
        st.opening = msg.opening;
    }
    if !msg.hidden {
        st.last = Some(m);
        if let Who::Cast(c) = msg.author
            && ir.cast.get(c as usize).is_some_and(|x| x.player)
        {
            st.turn += 1;
            let ci = c as usize;
            if st.round == 0 || st.in_round.get(ci).copied().unwrap_or(false) {
                st.round += 1;
                st.in_round.iter_mut().for_each(|x| *x = false);
            }
            if let Some(x) = st.in_round.get_mut(ci) {
                *x = true;
            }
            st.user = Some(c);
        }
    }
    let point = Point {
        ir,
        session: Some(session),
        char: char_of(msg.author),
    };
    let mut host = RollHost {
        seed: session.seed,
        message: &msg.id,
        calls: 0,
    };
    if let Some(change) = &msg.settings {
        st.change_settings(ir, session.preset, change);
    }
    let mut opened = false;
    if let (None, Some(o)) = (msg.parent, msg.opening)
        && let Some(op) = ir.openings.get(o as usize)
    {
        if let Some(ob) = obs.as_deref_mut() {
            ob.opening(&op.id);
        }
        if let Some(l) = &op.scene_location {
            st.location = l.clone();
        }
        if let Some(p) = &op.scene_present {
            st.present.iter_mut().for_each(|x| *x = false);
            for c in p {
                if let Some(x) = st.present.get_mut(*c as usize) {
                    *x = true;
                }
            }
        }
        for c in &op.changes {
            st.apply(ir, c);
        }
        point.recompute_observed(st, scratch, &mut host, obs.as_deref_mut(), Since::Anything);
        opened = true;
    }
    for c in &msg.changes {
        st.apply(ir, c);
    }
    // The state was the parent's (or the initial one), its derived
    // variables computed there; the point has moved to `m` since, unless
    // the opening's recompute above was at `m` already.
    let since = if opened {
        Since::Changes(&msg.changes)
    } else {
        Since::Moved(&msg.changes)
    };
    point.recompute_observed(st, scratch, &mut host, obs.as_deref_mut(), since);
    for f in &msg.firings {
        let def = match f {
            Fired::Event(e) => ir.events.get(*e as usize),
            Fired::Outcome(o) => ir.outcomes.get(*o as usize),
        };
        let Some(def) = def else { continue };
        for c in &def.changes {
            st.apply(ir, c);
        }
        let recorded = record(st, firing_of(*f, def));
        let since = Since::Changes(&def.changes);
        point.recompute_observed(st, scratch, &mut host, obs.as_deref_mut(), since);
        if recorded.ending {
            st.ending = Some(*f);
        }
    }
    host.calls
}

/// The initial state (Format 8.6): defaults, the scene, derived variables
/// computed with no evaluation point.
pub fn initial(ir: &StoryIr, session: Option<&SessionIr>, scratch: &mut Scratch) -> State {
    let mut st = State::blank(ir, session.and_then(|s| s.preset));
    let point = Point {
        ir,
        session,
        char: None,
    };
    let mut host = RollHost {
        seed: session.map_or(0, |s| s.seed),
        message: "",
        calls: 0,
    };
    point.recompute(&mut st, scratch, &mut host);
    st
}

/// Replays every path of the session depth-first, calling `visit` with the
/// state at each message (each message once). States are cloned only where
/// a message has more than one child.
pub fn replay_all(
    ir: &StoryIr,
    session: &SessionIr,
    tree: &Tree,
    initial: &State,
    mut visit: impl FnMut(u32, &State),
) {
    // Depth first. A message's state moves on to its heavy child (the one
    // with the most descendants); each other child starts from a copy of it,
    // made when that child is reached. A copy is kept only while a light
    // child's subtree — at most half of its parent's — is replayed, so at
    // most about log2(n) states are held, whatever the tree's shape (a
    // copy per child made up front would hold one per sibling: n for a
    // root with n replies).
    struct Pending {
        state: State,
        /// The next child to consider, in file order.
        next: u32,
        heavy: u32,
    }
    let mut scratch = Scratch::new(ir);
    let mut pending: Vec<Pending> = Vec::new();
    for &r in &tree.roots {
        let mut cur = Some((r, initial.clone()));
        loop {
            if let Some((m, mut st)) = cur.take() {
                step(ir, session, &mut st, m, &mut scratch);
                visit(m, &st);
                let heavy = tree.heavy.get(m as usize).copied().unwrap_or(NONE);
                let first = tree.first_child.get(m as usize).copied().unwrap_or(NONE);
                if heavy == NONE {
                    // A leaf: go on with the pending work below.
                } else if first == heavy
                    && tree
                        .next_sibling
                        .get(heavy as usize)
                        .copied()
                        .unwrap_or(NONE)
                        == NONE
                {
                    cur = Some((heavy, st));
                    continue;
                } else {
                    pending.push(Pending {
                        state: st,
                        next: first,
                        heavy,
                    });
                }
            }
            let Some(top) = pending.last_mut() else {
                break;
            };
            let mut c = top.next;
            if c == top.heavy {
                c = tree.next_sibling.get(c as usize).copied().unwrap_or(NONE);
            }
            if c == NONE {
                if let Some(p) = pending.pop() {
                    cur = Some((p.heavy, p.state));
                }
            } else {
                top.next = tree.next_sibling.get(c as usize).copied().unwrap_or(NONE);
                cur = Some((c, top.state.clone()));
            }
        }
    }
}

//! Evaluating events and outcomes at a message (Format 9.2): each event
//! then each outcome in declaration order; a firing's changes apply at
//! once; a non-repeating event fires once per path; evaluation stops at the
//! first firing that ends the story, and nothing is evaluated on a path
//! that has ended.

use crate::cel::Value;
use crate::compile::session::Fired;
use crate::compile::{FiringIr, SessionIr, StoryIr};
use crate::engine::eval::char_of;
use crate::engine::{Point, RollHost, Scratch, State};

/// Evaluates 9.2 at message `m` whose changes are already applied to `st`.
/// `fired_before[i]` says whether event `i` fired earlier on the path;
/// `rolls` is the number of `roll()` calls already made at `m` (by its
/// derived variables, Format 11.5). Applies the firings' changes to `st`
/// and returns the firings in order.
pub fn evaluate(
    ir: &StoryIr,
    session: &SessionIr,
    st: &mut State,
    m: u32,
    fired_before: &[bool],
    rolls: u64,
    scratch: &mut Scratch,
) -> Vec<Fired> {
    let mut out = Vec::new();
    if st.ending.is_some() {
        return out;
    }
    let Some(msg) = session.messages.get(m as usize) else {
        return out;
    };
    let point = Point {
        ir,
        session: Some(session),
        char: char_of(msg.author),
    };
    let mut host = RollHost {
        seed: session.seed,
        message: &msg.id,
        calls: rolls,
    };
    let all = ir
        .events
        .iter()
        .enumerate()
        .map(|(i, f)| (Fired::Event(i as u16), f))
        .chain(
            ir.outcomes
                .iter()
                .enumerate()
                .map(|(i, f)| (Fired::Outcome(i as u16), f)),
        );
    for (fired, def) in all {
        if let Fired::Event(i) = fired {
            if !def.repeat && fired_before.get(i as usize).copied().unwrap_or(false) {
                continue;
            }
        }
        if !holds(&point, def, st, &mut host) {
            continue;
        }
        out.push(fired);
        for c in &def.changes {
            st.apply(ir, c);
        }
        point.recompute(st, scratch, &mut host);
        if def.end {
            st.ending = Some(fired);
            break;
        }
    }
    out
}

fn holds(point: &Point<'_>, def: &FiringIr, st: &State, host: &mut RollHost<'_>) -> bool {
    match &def.when {
        Some(p) => matches!(point.eval(p, 0, st, host), Ok(Value::Bool(true))),
        None => false,
    }
}

/// The events fired on a path after `firings` were added to `before`.
pub fn fired_after(before: &[bool], firings: &[Fired]) -> Vec<bool> {
    let mut v = before.to_vec();
    for f in firings {
        if let Fired::Event(i) = f {
            if let Some(x) = v.get_mut(*i as usize) {
                *x = true;
            }
        }
    }
    v
}

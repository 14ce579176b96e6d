//! Evaluating events and outcomes at a message (Format 9.2): each event
//! then each outcome in declaration order; a firing's changes apply at
//! once; a non-repeating event fires once per path; evaluation stops at the
//! first firing that ends the story, and nothing is evaluated on a path
//! that has ended.

use crate::cel::Value;
use crate::compile::session::Fired;
use crate::compile::{FiringIr, SessionIr, StoryIr};
use crate::engine::eval::char_of;
use crate::engine::state::firing_of;
use crate::engine::{Observer, Point, RollHost, Scratch, Since, Site, State};
use crate::model::firing::{may_fire, record};

/// Evaluates 9.2 at message `m` whose changes are already applied to `st`
/// (`st.fired` says which events fired earlier on the path); `rolls` is the
/// number of `roll()` calls already made at `m` (by its derived variables,
/// Format 11.5). Applies the firings' changes to `st`, marks them fired and
/// returns them in order, reporting to `obs` the branches of every `when`
/// evaluated and of the derived variables recomputed after each firing.
pub fn evaluate_observed(
    ir: &StoryIr,
    session: &SessionIr,
    st: &mut State,
    m: u32,
    rolls: u64,
    scratch: &mut Scratch,
    mut obs: Option<&mut (dyn Observer + '_)>,
) -> Vec<Fired> {
    // The `when`s evaluated here share one budget (Format 11.6); the
    // derived variables recomputed after a firing do not take from it.
    let _shared = crate::cel::eval::shared_budget(Some(crate::cel::SHARED_BUDGET));
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
        if !may_fire(st, firing_of(fired, def)) {
            continue;
        }
        let site = match fired {
            Fired::Event(_) => Site::Event(&def.id),
            Fired::Outcome(_) => Site::Outcome(&def.id),
        };
        if !holds(&point, def, st, &mut host, site, obs.as_deref_mut()) {
            continue;
        }
        out.push(fired);
        for c in &def.changes {
            st.apply(ir, c);
        }
        let recorded = record(st, firing_of(fired, def));
        let since = Since::Changes(&def.changes);
        {
            let _unshared = crate::cel::eval::shared_budget(None);
            point.recompute_observed(st, scratch, &mut host, obs.as_deref_mut(), since);
        }
        if recorded.ending {
            st.ending = Some(fired);
            break;
        }
    }
    out
}

fn holds(
    point: &Point<'_>,
    def: &FiringIr,
    st: &State,
    host: &mut RollHost<'_>,
    site: Site<'_>,
    obs: Option<&mut (dyn Observer + '_)>,
) -> bool {
    match &def.when {
        Some(p) => matches!(
            point.eval_observed(p, 0, st, host, site, obs),
            Ok(Value::Bool(true))
        ),
        None => false,
    }
}

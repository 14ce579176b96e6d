//! What each derived variable's value depends on (Format 8.1), worked out
//! from the IR when it is first needed: the parts of the state its program
//! reads. A recompute after a change evaluates again only the derived
//! variables whose inputs the change may have touched; the others would
//! compute the value they already hold.
//!
//! Nothing here is written in `ir.json` or trusted from it: the inputs are
//! found by walking each program's tree ([`crate::cel::Program::tree_inputs`])
//! and following its environment's sources, so an untrusted IR (Format
//! 14.4) cannot make a recompute skip work it must do. An IR whose derived
//! programs read a slot their `reads` do not fill, or a derived variable
//! not computed before them, gets no skipping at all.

use super::{ChangeIr, Layout, Source, StoryIr};

/// What one derived variable's value depends on (Format 8.1, 11.3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DerivedInputs {
    /// Evaluated at every recompute: its program calls `roll()` (whose
    /// value and call count depend on the message and the calls before it,
    /// Format 11.5), or what it reads could not be worked out.
    pub always: bool,
    /// Evaluated again when the evaluation point moves to another message:
    /// it reads what the point or the message decides (`char`, `user`,
    /// `turn`, `round`, `elapsed`, `hour`, `weekday`, `opening`, `last`,
    /// `difficulty`), never what a change writes.
    pub point: bool,
    /// It reads `scene.location` or `scene.present`.
    pub scene: bool,
    /// The state slots it reads, as half-open ranges, its own slot
    /// included (a change that wrote it is undone by the recompute).
    pub slots: Vec<(u32, u32)>,
}

impl DerivedInputs {
    /// Whether the value may differ after state slot `s` was written.
    pub fn reads_slot(&self, s: u32) -> bool {
        self.slots.iter().any(|&(a, b)| a <= s && s < b)
    }

    /// Whether the value may differ after change `c` (Format 8.5).
    pub fn reads_change(&self, c: &ChangeIr) -> bool {
        match c {
            ChangeIr::Set { slot, .. }
            | ChangeIr::Add { slot, .. }
            | ChangeIr::SetOpen { slot, .. }
            | ChangeIr::AddOpen { slot, .. } => self.reads_slot(*slot),
            ChangeIr::Location(_)
            | ChangeIr::Present(_)
            | ChangeIr::Enter(_)
            | ChangeIr::Leave(_) => self.scene,
        }
    }
}

/// The slots of a variable's layout, as a half-open range.
fn layout_range(l: &Layout) -> (u32, u32) {
    match l {
        Layout::Single(s) | Layout::Open(s) => (*s, s.saturating_add(1)),
        Layout::Fixed { first, keys } => (
            *first,
            first.saturating_add(u32::try_from(keys.len()).unwrap_or(u32::MAX)),
        ),
    }
}

/// The inputs of every derived variable of `ir`, in [`StoryIr::derived`]
/// order (see the module's documentation); each is `always` when the
/// programs do not read what their variables' places in that order and
/// their `reads` say.
pub fn derived_inputs(ir: &StoryIr) -> Vec<DerivedInputs> {
    let mut out = Vec::with_capacity(ir.derived.len());
    for i in 0..ir.derived.len() {
        match inputs_of(ir, i) {
            Some(x) => out.push(x),
            None => {
                // Not sound to skip anything: every derived variable is
                // computed at every recompute, as without this table.
                let always = DerivedInputs {
                    always: true,
                    ..DerivedInputs::default()
                };
                return vec![always; ir.derived.len()];
            }
        }
    }
    out
}

/// The inputs of derived variable `i`; `None` when its program reads a
/// slot its `reads` do not fill, a slot out of range, or a derived
/// variable not computed before it.
fn inputs_of(ir: &StoryIr, i: usize) -> Option<DerivedInputs> {
    let d = ir.derived.get(i)?;
    let env = ir.envs.get(d.env as usize)?;
    let (slots, rolls) = d.program.tree_inputs();
    let mut x = DerivedInputs {
        always: rolls,
        ..DerivedInputs::default()
    };
    x.slots
        .push(layout_range(&ir.vars.get(d.var as usize)?.layout));
    for s in slots {
        // Only the slots in `reads` are filled before it runs: another
        // would hold what an earlier evaluation left there.
        if !d.reads.contains(&s) {
            return None;
        }
        match env.sources.get(s as usize)? {
            Source::Var(v) => {
                let var = ir.vars.get(*v as usize)?;
                if var.derived.is_some_and(|j| j as usize >= i) {
                    return None;
                }
                x.slots.push(layout_range(&var.layout));
            }
            Source::Location | Source::Present => x.scene = true,
            Source::Const(_) | Source::None => {}
            Source::Char
            | Source::User
            | Source::Turn
            | Source::Round
            | Source::Elapsed
            | Source::Hour
            | Source::Weekday
            | Source::Opening
            | Source::LastId
            | Source::LastAuthor
            | Source::LastText
            | Source::Preset
            | Source::Knob(_) => x.point = true,
        }
    }
    Some(x)
}

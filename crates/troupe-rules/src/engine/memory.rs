//! An estimate of the engine's heap use (docs/performance.md): what the
//! compiled session, its links and the checkpoints hold, in bytes.

use std::mem::size_of;

use super::{Engine, State};
use crate::compile::session::{Fired, MessageIr, SummaryIr};
use crate::compile::{ChangeIr, PartIr, Val};

/// Bytes held by the engine's parts (estimates: allocator overhead and
/// shared strings counted once per holder are not exact).
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryEstimate {
    /// Messages, their changes, parts, texts and the ID index.
    pub session: usize,
    /// Parent/child links.
    pub tree: usize,
    /// Checkpoint states and their table.
    pub checkpoints: usize,
    /// Number of checkpoints.
    pub checkpoint_count: usize,
}

fn arc_str(s: &str) -> usize {
    s.len() + 16
}

fn message_bytes(m: &MessageIr) -> usize {
    let mut b = size_of::<MessageIr>() + arc_str(&m.id);
    b += m.changes.capacity() * size_of::<ChangeIr>();
    b += m.firings.capacity() * size_of::<Fired>();
    b += m.parts.capacity() * size_of::<PartIr>();
    b += m.parts.iter().map(|p| arc_str(&p.text)).sum::<usize>();
    if let Some(s) = &m.summary {
        b += size_of::<SummaryIr>() + arc_str(&s.text);
    }
    b
}

fn state_bytes(s: &State) -> usize {
    size_of::<State>()
        + s.slots.capacity() * size_of::<Val>()
        + s.present.capacity()
        + s.in_round.capacity()
}

impl Engine {
    /// Estimates the heap bytes of the session, links and checkpoints.
    pub fn memory_estimate(&self) -> MemoryEstimate {
        let s = &self.session;
        let session = s.messages.capacity() * size_of::<MessageIr>()
            + s.messages
                .iter()
                .map(|m| message_bytes(m) - size_of::<MessageIr>())
                .sum::<usize>()
            + s.index.capacity() * (size_of::<(std::sync::Arc<str>, u32)>() + 1);
        let tree = (self.tree.first_child.capacity()
            + self.tree.next_sibling.capacity()
            + self.tree.heavy.capacity())
            * 4;
        let cps: Vec<&State> = self.checkpoints.iter().flatten().map(|b| &**b).collect();
        MemoryEstimate {
            session,
            tree,
            checkpoints: self.checkpoints.capacity() * size_of::<Option<Box<State>>>()
                + cps.iter().map(|s| state_bytes(s)).sum::<usize>(),
            checkpoint_count: cps.len(),
        }
    }
}

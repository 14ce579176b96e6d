//! Knowledge (Format 7.4, 12.4, 12.5): who knows a part of a message, and
//! who knows a summary.

use std::collections::BTreeSet;

use super::{Engine, State};
use crate::compile::Who;

impl Engine {
    fn part_knowers(&self, m: u32, part: usize, state: &State, out: &mut BTreeSet<String>) {
        let Some(msg) = self.session.messages.get(m as usize) else {
            return;
        };
        if msg.hidden {
            return;
        }
        let Some(p) = msg.parts.get(part) else { return };
        out.insert(self.ir.who_id(msg.author).to_string());
        out.insert("narrator".to_string());
        match &p.audience {
            Some(a) => {
                for w in a {
                    out.insert(self.ir.who_id(*w).to_string());
                }
            }
            None => {
                for c in state.present_members() {
                    out.insert(self.ir.who_id(Who::Cast(c)).to_string());
                }
            }
        }
    }

    /// Who knows part `part` of message `m` (Format 7.4), in code point
    /// order; `None` when there is no such message or part.
    pub fn knows_part(&self, m: u32, part: usize) -> Option<Vec<String>> {
        let msg = self.session.messages.get(m as usize)?;
        msg.parts.get(part)?;
        let mut out = BTreeSet::new();
        if !msg.hidden {
            let state = self.state_at(m);
            self.part_knowers(m, part, &state, &mut out);
        }
        Some(out.into_iter().collect())
    }

    /// Whether `who` knows part `part` of message `m` (Format 7.4), given
    /// the state at `m` (as [`Engine::walk_path`] yields it): what
    /// [`Engine::knows_part`] says, without computing the state again.
    pub fn knows_part_at(&self, m: u32, part: usize, state: &State, who: &str) -> bool {
        let mut out = BTreeSet::new();
        self.part_knowers(m, part, state, &mut out);
        out.contains(who)
    }

    /// The messages a summary on `m` covers (Format 12.5): those on its
    /// path after the nearest earlier message with a summary, up to `m`.
    pub fn covered(&self, m: u32) -> Vec<u32> {
        let mut out = vec![m];
        let mut cur = self.session.messages.get(m as usize).and_then(|x| x.parent);
        while let Some(c) = cur {
            let msg = &self.session.messages[c as usize];
            if msg.summary.is_some() {
                break;
            }
            out.push(c);
            cur = msg.parent;
        }
        out.reverse();
        out
    }

    /// Who knows the summary of message `m` (Format 12.5), in code point
    /// order; `None` when `m` has no summary. Without an audience it is
    /// those who know every covered part (the parts of the covered
    /// messages that are not hidden), so a whisper never reaches someone
    /// through a summary.
    pub fn knows_summary(&self, m: u32) -> Option<Vec<String>> {
        let msg = self.session.messages.get(m as usize)?;
        let summary = msg.summary.as_ref()?;
        if msg.hidden {
            return Some(Vec::new());
        }
        let mut out = BTreeSet::new();
        match &summary.audience {
            Some(a) => {
                out.insert("narrator".to_string());
                for w in a {
                    out.insert(self.ir.who_id(*w).to_string());
                }
            }
            None => {
                // The intersection of the covered parts' lists; `None` until
                // the first covered part (no covered part: nobody).
                let mut every: Option<BTreeSet<String>> = None;
                for c in self.covered(m) {
                    let cm = &self.session.messages[c as usize];
                    // A hidden message's parts are not covered parts.
                    if cm.hidden || cm.parts.is_empty() {
                        continue;
                    }
                    let state = self.state_at(c);
                    for i in 0..cm.parts.len() {
                        let mut knowers = BTreeSet::new();
                        self.part_knowers(c, i, &state, &mut knowers);
                        every = Some(match every {
                            None => knowers,
                            Some(e) => e.intersection(&knowers).cloned().collect(),
                        });
                    }
                    if every.as_ref().is_some_and(BTreeSet::is_empty) {
                        break;
                    }
                }
                out = every.unwrap_or_default();
            }
        }
        Some(out.into_iter().collect())
    }
}

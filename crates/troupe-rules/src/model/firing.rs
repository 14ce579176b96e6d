//! What has fired on a path (Format 9.2–9.4): the one rule for recording a
//! firing, kept by the engine's state (a runtime stepping a story, and the
//! state at a message replaying recorded firings) and by the session checker
//! reading a session file alike. Each keeps the record in its own store
//! ([`PathFirings`]): the engine a flag per event in its state, the checker a
//! persistent set shared between a message and its parent.

/// A firing as a path records it (Format 9.1, 9.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Firing {
    /// An event, by its index in the scenario's events, with its `repeat`
    /// and `end`.
    Event {
        /// The event's index in declaration order.
        index: u32,
        /// Whether it may fire again on the path (Format 9.2 item 3).
        repeat: bool,
        /// Whether a firing of it ends the story (Format 9.3).
        end: bool,
    },
    /// An outcome: its firing always ends the story (Format 9.3).
    Outcome,
}

/// What a path keeps of the firings recorded on it.
pub trait PathFirings {
    /// Whether a firing of event `index` is recorded earlier on the path.
    fn has_fired(&self, index: u32) -> bool;
    /// Records that event `index` fired on the path.
    fn mark_fired(&mut self, index: u32);
    /// Whether the story has ended on the path (Format 9.3).
    fn ended(&self) -> bool;
}

/// What recording one firing on a path found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct Recorded {
    /// A non-repeating event already recorded earlier on the path: the
    /// checker's REPEATED_FIRING (Format 9.4); a runtime never fires it
    /// (9.2 item 3).
    pub repeated: bool,
    /// The path had already ended before this firing: the checker's
    /// AFTER_END (9.4); a runtime evaluates nothing there (9.2 item 5).
    pub after_end: bool,
    /// This firing is the story's ending (Format 9.3: the first firing on
    /// the path of an outcome or of an event with `end: true`). The caller's
    /// store records that the path has ended (the engine keeps which firing).
    pub ending: bool,
}

/// Whether `firing` may fire at a message on `path` (Format 9.2 items 3 and
/// 5): not after the end, and a non-repeating event not a second time.
pub fn may_fire(path: &(impl PathFirings + ?Sized), firing: Firing) -> bool {
    !path.ended()
        && match firing {
            Firing::Event {
                index,
                repeat: false,
                ..
            } => !path.has_fired(index),
            _ => true,
        }
}

/// Records `firing` on `path` (Format 9.3, 9.4): marks an event as fired and
/// says whether the firing repeats a non-repeating event, comes after the
/// end, or is the ending.
pub fn record(path: &mut (impl PathFirings + ?Sized), firing: Firing) -> Recorded {
    let after_end = path.ended();
    let (repeated, ends) = match firing {
        Firing::Event { index, repeat, end } => {
            let repeated = !repeat && path.has_fired(index);
            path.mark_fired(index);
            (repeated, end)
        }
        Firing::Outcome => (false, true),
    };
    Recorded {
        repeated,
        after_end,
        ending: ends && !after_end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Path {
        fired: Vec<u32>,
        ended: bool,
    }
    impl PathFirings for Path {
        fn has_fired(&self, index: u32) -> bool {
            self.fired.contains(&index)
        }
        fn mark_fired(&mut self, index: u32) {
            self.fired.push(index);
        }
        fn ended(&self) -> bool {
            self.ended
        }
    }
    fn event(index: u32, repeat: bool, end: bool) -> Firing {
        Firing::Event { index, repeat, end }
    }

    /// Format 9.2 item 3 and 9.4: a non-repeating event fires once per path;
    /// a repeating one at every message.
    #[test]
    fn a_non_repeating_event_fires_once_per_path() {
        let mut p = Path::default();
        assert!(may_fire(&p, event(0, false, false)));
        assert!(!record(&mut p, event(0, false, false)).repeated);
        assert!(!may_fire(&p, event(0, false, false)));
        assert!(record(&mut p, event(0, false, false)).repeated);
        assert!(!record(&mut p, event(1, true, false)).repeated);
        assert!(may_fire(&p, event(1, true, false)));
        assert!(!record(&mut p, event(1, true, false)).repeated);
    }

    /// Format 9.3: the first outcome or `end: true` event on the path is the
    /// ending; a firing after it is AFTER_END (9.4) and no ending; nothing
    /// may fire on an ended path (9.2 item 5).
    #[test]
    fn the_first_ending_firing_ends_the_path() {
        let mut p = Path::default();
        let r = record(&mut p, event(0, false, true));
        assert_eq!((r.ending, r.after_end), (true, false));
        p.ended = true;
        assert!(!may_fire(&p, Firing::Outcome));
        assert!(!may_fire(&p, event(1, true, false)));
        let r = record(&mut p, Firing::Outcome);
        assert_eq!((r.ending, r.after_end), (false, true));
        let mut q = Path::default();
        assert!(record(&mut q, Firing::Outcome).ending);
    }
}

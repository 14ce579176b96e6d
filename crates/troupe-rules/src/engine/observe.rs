//! What the engine and the runtime evaluated, as they evaluate it: the one
//! observer interface coverage reads (Format 21.6). The engine reports the
//! branches of derived variables and entry conditions, the entries active
//! at a message and the openings of roots; the runtime reports the branches
//! of events' and outcomes' `when`, of rules tried, of `emotion` and of
//! rubric scores, the turn's rule and every firing. Without an observer
//! nothing is reported and evaluation is unchanged.

use indexmap::IndexSet;

use crate::cel::Program;

/// Where a condition is evaluated (Format 21.6 "Conditions and operands").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site<'a> {
    /// An event's `when`, by event ID.
    Event(&'a str),
    /// An outcome's `when`, by outcome ID.
    Outcome(&'a str),
    /// A rule's `when`, by rule ID.
    Rule(&'a str),
    /// An entry's `when`: owner ID and entry ID.
    Entry(&'a str, &'a str),
    /// A derived variable's `derived`, by state name (`mood`, `kai.mood`).
    Derived(&'a str),
    /// The scenario's `emotion`.
    Emotion,
    /// A rubric criterion's `score`, by criterion ID.
    Score(&'a str),
}

impl Site<'_> {
    /// The site as one string (`event cross`, `entry harbor/fog`,
    /// `derived kai.mood`, `emotion`, `score empathy`): coverage keys its
    /// conditions by it.
    pub fn key(&self) -> String {
        match self {
            Site::Event(id) => format!("event {id}"),
            Site::Outcome(id) => format!("outcome {id}"),
            Site::Rule(id) => format!("rule {id}"),
            Site::Entry(owner, id) => format!("entry {owner}/{id}"),
            Site::Derived(name) => format!("derived {name}"),
            Site::Emotion => "emotion".to_string(),
            Site::Score(id) => format!("score {id}"),
        }
    }
}

/// Receives what an evaluation did. Every method has an empty default.
pub trait Observer {
    /// Branch `branch` of `program` (evaluated at `site`) was evaluated with
    /// `value` (see [`crate::cel::Observer`]).
    fn branch(&mut self, site: Site<'_>, program: &Program, branch: u32, value: Option<bool>) {
        let _ = (site, program, branch, value);
    }
    /// The rule `id` is the turn's rule (Format 18.2).
    fn rule(&mut self, id: &str) {
        let _ = id;
    }
    /// The entry `owner/id` is active at a message (Format 5.3).
    fn entry(&mut self, owner: &str, id: &str) {
        let _ = (owner, id);
    }
    /// An event (`outcome` false) or outcome fired at a message (recorded on
    /// it, for a replayed session).
    fn fired(&mut self, id: &str, outcome: bool) {
        let _ = (id, outcome);
    }
    /// A root names the opening `id`.
    fn opening(&mut self, id: &str) {
        let _ = id;
    }
    /// Cast member `id`, not a player, authors a message (Format 21.6
    /// `speakers`).
    fn speaker(&mut self, id: &str) {
        let _ = id;
    }
}

/// One thing a `Recorder` kept.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Report {
    /// An operand (by number, source order from 0) of the condition at
    /// `site` (its `Site::key`) was seen with `value` (Format 21.6).
    Seen {
        /// The site's key.
        site: String,
        /// The operand's number.
        operand: usize,
        /// The value it was seen with.
        value: bool,
    },
    /// The turn's rule of some turn.
    Rule(String),
    /// An entry active at some message: `owner/id`.
    Entry(String),
    /// An event that fired.
    Event(String),
    /// An outcome that fired.
    Outcome(String),
    /// An opening a root named.
    Opening(String),
    /// A cast member who is not a player authored a message.
    Speaker(String),
}

/// An observer that keeps each distinct report once, in the order first
/// reported (memory bounded by the story's items, not the run's length).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recorder {
    /// The reports.
    pub reports: IndexSet<Report>,
}

impl Observer for Recorder {
    fn branch(&mut self, site: Site<'_>, program: &Program, branch: u32, value: Option<bool>) {
        if let Some((operand, value)) = program.operand_seen(branch, value) {
            self.reports.insert(Report::Seen {
                site: site.key(),
                operand,
                value,
            });
        }
    }
    fn rule(&mut self, id: &str) {
        self.reports.insert(Report::Rule(id.to_string()));
    }
    fn entry(&mut self, owner: &str, id: &str) {
        self.reports.insert(Report::Entry(format!("{owner}/{id}")));
    }
    fn fired(&mut self, id: &str, outcome: bool) {
        self.reports.insert(if outcome {
            Report::Outcome(id.to_string())
        } else {
            Report::Event(id.to_string())
        });
    }
    fn opening(&mut self, id: &str) {
        self.reports.insert(Report::Opening(id.to_string()));
    }
    fn speaker(&mut self, id: &str) {
        self.reports.insert(Report::Speaker(id.to_string()));
    }
}

/// Evaluates `program` with `act`, reporting its branches at `site` to
/// `obs` when there is one (plain evaluation otherwise).
pub fn eval(
    program: &Program,
    act: &crate::cel::Activation,
    host: &mut dyn crate::cel::Host,
    site: Site<'_>,
    obs: Option<&mut (dyn Observer + '_)>,
) -> Result<crate::cel::Value, crate::cel::EvalError> {
    match obs {
        None => program.eval(act, host),
        Some(o) => program.eval_observed(act, host, &mut |id: u32, v: Option<bool>| {
            o.branch(site, program, id, v)
        }),
    }
}

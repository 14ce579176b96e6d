//! Lowering a checked session (Format 7, 12) against its compiled story:
//! message IDs and parents resolved to indices, authors and audiences to
//! cast indices, changes lowered, firings resolved, times parsed.

use std::sync::Arc;

use serde_json::Value;

use super::changes::{lower_changes, ChangeScope};
use super::ir::{ChangeIr, PartIr, StoryIr, Who};
use super::path::{PathIndex, PathVec};
use super::story::lower_parts;
use super::time::{parse_time, Time};
use super::CompileError;
use crate::model::{FiringRecord, Header, Message};
use crate::resolve::story::Story;

/// A recorded firing, resolved (Format 7.3, 9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fired {
    /// An event, by index.
    Event(u16),
    /// An outcome, by index.
    Outcome(u16),
}

/// A summary (Format 12.5).
#[derive(Debug, Clone)]
pub struct SummaryIr {
    /// Its text as written.
    pub text: Arc<str>,
    /// Its audience, when given.
    pub audience: Option<Vec<Who>>,
}

/// A message's settings change (Format 8.9), resolved against the story's
/// difficulty.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingsIr {
    /// The preset it switches to (by index in `DifficultyIr::presets`).
    pub preset: Option<u16>,
    /// The knob values it sets (knob index, value as a double), in written
    /// order, after the preset's.
    pub knobs: Vec<(u16, f64)>,
}

/// Lowers a checked `settings` value (Format 8.9): an error for a preset or
/// knob the story's difficulty does not declare, or a value that is not a
/// number.
pub fn lower_settings(ir: &StoryIr, settings: &Value) -> Result<SettingsIr, String> {
    let d = ir
        .difficulty
        .as_ref()
        .ok_or("the scenario has no difficulty, so it declares no settings")?;
    // A settings value that is no object sets nothing (its checks say so).
    let written = settings
        .as_object()
        .map(crate::model::items::Settings::read);
    let preset = match written.and_then(|w| w.difficulty) {
        Some(p) => {
            let p = p.as_str().ok_or("`difficulty` is not a preset ID")?;
            Some(
                d.presets
                    .iter()
                    .position(|(x, _)| &**x == p)
                    .ok_or_else(|| format!("no difficulty preset `{p}`"))? as u16,
            )
        }
        None => None,
    };
    let mut knobs = Vec::new();
    if let Some(k) = written.and_then(|w| w.knobs).and_then(Value::as_object) {
        for (name, v) in k {
            let i = d
                .knobs
                .iter()
                .position(|x| **x == **name)
                .ok_or_else(|| format!("no difficulty knob `{name}`"))?;
            let x = super::value::json_decimal(v)
                .and_then(|x| rust_decimal::prelude::ToPrimitive::to_f64(&x))
                .ok_or_else(|| format!("knob `{name}` is not set to a number"))?;
            knobs.push((i as u16, x));
        }
    }
    Ok(SettingsIr { preset, knobs })
}

/// One message, resolved.
#[derive(Debug, Clone)]
pub struct MessageIr {
    /// Its ID.
    pub id: Arc<str>,
    /// The parent's index; `None` for a root.
    pub parent: Option<u32>,
    /// Depth on its path (a root is 0).
    pub depth: u32,
    /// The author.
    pub author: Who,
    /// Hidden (Format 7).
    pub hidden: bool,
    /// The opening a root names.
    pub opening: Option<u16>,
    /// Its changes.
    pub changes: Vec<ChangeIr>,
    /// Its recorded firings, in order.
    pub firings: Vec<Fired>,
    /// Its parts (a root naming an opening without parts: the opening's).
    pub parts: Vec<PartIr>,
    /// Its summary.
    pub summary: Option<SummaryIr>,
    /// Its time.
    pub time: Option<Time>,
    /// The settings it changes from itself on (Format 8.9).
    pub settings: Option<SettingsIr>,
    /// Why its author was chosen, as recorded (Format 18.9 `chosen`);
    /// `None` when not recorded (and on the messages a running session
    /// holds: its turn results carry the choice).
    pub chosen: Option<ChosenIr>,
}

/// A recorded Chosen (Format 18.9): `why`, `name`, `draw` as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChosenIr {
    /// The reason.
    pub why: Arc<str>,
    /// The name that addressed the author.
    pub name: Option<Arc<str>>,
    /// The `natural` draw.
    pub draw: Option<u64>,
}

/// A compiled session: messages in file order.
///
/// Its messages and their index are a [`PathVec`] and a [`PathIndex`]: after
/// [`SessionIr::freeze`] a clone shares them (O(1)), so the forks of a
/// session in the search of Format 20.5 do not copy their path.
#[derive(Debug, Clone, Default)]
pub struct SessionIr {
    /// Messages in file order; a parent always comes before its children.
    pub messages: PathVec<MessageIr>,
    /// Message ID → index.
    pub index: PathIndex,
    /// The generator seed (Format 12).
    pub seed: u64,
    /// The chosen difficulty preset's index.
    pub preset: Option<u16>,
}

impl SessionIr {
    /// The index of a message ID.
    pub fn find(&self, id: &str) -> Option<u32> {
        self.index.get(id).copied()
    }

    /// Makes the messages written so far shared by the clones made from
    /// now on (a fork then copies none of them, Format 20.5).
    pub fn freeze(&mut self) {
        self.messages.freeze();
        self.index.freeze();
    }

    /// The text of a message (Format 7.2): its parts joined with `"\n"`.
    pub fn text(&self, m: u32) -> String {
        self.messages.get(m as usize).map_or(String::new(), |msg| {
            msg.parts
                .iter()
                .map(|p| &*p.text)
                .collect::<Vec<_>>()
                .join("\n")
        })
    }
}

/// The index of the difficulty preset a header names (Format 6.5, 19.5):
/// `difficulty` when given, else the scenario's default; `None` without
/// presets. An error for a preset the scenario does not have.
pub fn preset_index(ir: &StoryIr, difficulty: Option<&str>) -> Result<Option<u16>, CompileError> {
    Ok(match (difficulty, &ir.difficulty) {
        (Some(p), Some(d)) => Some(
            d.presets
                .iter()
                .position(|(x, _)| &**x == p)
                .ok_or_else(|| CompileError(format!("no difficulty preset `{p}`")))?
                as u16,
        ),
        (None, Some(d)) => Some(d.default),
        _ => None,
    })
}

/// Lowers a session's header and messages (file order). The session must
/// have passed its checks; anything that does not resolve is an error.
pub fn compile_session(
    story: &Story,
    ir: &StoryIr,
    header: &Value,
    messages: &[Value],
) -> Result<SessionIr, CompileError> {
    let mut c = SessionCompiler::new(story, ir, header)?;
    c.reserve(messages.len());
    for m in messages {
        c.push(m)?;
    }
    Ok(c.finish())
}

/// Lowers a session one message at a time (so a caller can parse, lower
/// and drop each line without holding every parsed line).
pub struct SessionCompiler<'a> {
    story: &'a Story,
    ir: &'a StoryIr,
    out: SessionIr,
}

impl<'a> SessionCompiler<'a> {
    /// Starts a session from its header (seed, difficulty preset).
    pub fn new(story: &'a Story, ir: &'a StoryIr, header: &Value) -> Result<Self, CompileError> {
        let header = Header::read(header);
        let preset = preset_index(ir, header.difficulty)?;
        Ok(SessionCompiler {
            story,
            ir,
            out: SessionIr {
                messages: PathVec::new(),
                index: PathIndex::default(),
                seed: header.seed.unwrap_or(0),
                preset,
            },
        })
    }

    /// Reserves room for `n` more messages.
    pub fn reserve(&mut self, n: usize) {
        self.out.messages.reserve(n);
        self.out.index.reserve(n);
    }

    /// Lowers the next message (file order).
    pub fn push(&mut self, m: &Value) -> Result<(), CompileError> {
        let scope = ChangeScope::of(self.story, self.ir);
        let msg = lower_message(self.ir, &scope, &self.out, m)?;
        let ix = self.out.messages.len() as u32;
        if self.out.index.insert(msg.id.clone(), ix).is_some() {
            return Err(CompileError(format!(
                "message ID `{}` is used twice",
                msg.id
            )));
        }
        self.out.messages.push(msg);
        Ok(())
    }

    /// The compiled session.
    pub fn finish(self) -> SessionIr {
        self.out
    }
}

/// Lowers message `m`, appended to the compiled session `so_far` (its
/// parent is one of `so_far`'s messages): as [`SessionCompiler::push`]
/// lowers it, without adding it.
pub fn lower_appended(
    story: &Story,
    ir: &StoryIr,
    so_far: &SessionIr,
    m: &Value,
) -> Result<MessageIr, CompileError> {
    lower_message(ir, &ChangeScope::of(story, ir), so_far, m)
}

fn lower_message(
    ir: &StoryIr,
    scope: &ChangeScope<'_>,
    so_far: &SessionIr,
    line: &Value,
) -> Result<MessageIr, CompileError> {
    let m = Message::read(line);
    let id =
        m.id.ok_or_else(|| CompileError("a message has no ID".into()))?;
    let e = |what: String| CompileError(format!("message `{id}`: {what}"));
    let (parent, depth) = match m.parent {
        Some(p) => {
            let pi = so_far
                .find(p)
                .ok_or_else(|| e(format!("parent `{p}` is not an earlier message")))?;
            (Some(pi), so_far.messages[pi as usize].depth + 1)
        }
        None => (None, 0),
    };
    let author_id = m.author.unwrap_or("");
    let author = ir
        .who(author_id)
        .ok_or_else(|| e(format!("author `{author_id}` is not in the cast")))?;
    let opening = match m.opening {
        Some(o) if parent.is_none() => Some(
            ir.openings
                .iter()
                .position(|x| &*x.id == o)
                .ok_or_else(|| e(format!("no opening `{o}`")))? as u16,
        ),
        Some(_) => return Err(e("only a root may name an opening".into())),
        None => None,
    };
    let parts = match (opening, m.parts) {
        (Some(o), None) => ir.openings[o as usize].parts.clone(),
        (_, parts) => lower_parts(scope.decls, parts.unwrap_or_default(), scope.cast).map_err(e)?,
    };
    let mut firings = Vec::new();
    for f in m.firings().flatten() {
        firings.push(match f {
            FiringRecord::Event(ev) => Fired::Event(
                ir.events
                    .iter()
                    .position(|x| &*x.id == ev)
                    .ok_or_else(|| e(format!("no event `{ev}`")))? as u16,
            ),
            FiringRecord::Outcome(oc) => Fired::Outcome(
                ir.outcomes
                    .iter()
                    .position(|x| &*x.id == oc)
                    .ok_or_else(|| e(format!("no outcome `{oc}`")))? as u16,
            ),
        });
    }
    let summary = match m.summary {
        Some(s) => {
            let audience = match s.audience {
                Some(_) => lower_parts(scope.decls, std::slice::from_ref(s.raw), scope.cast)
                    .map_err(e)?
                    .pop()
                    .and_then(|p| p.audience),
                None => None,
            };
            Some(SummaryIr {
                text: Arc::from(s.text.unwrap_or("")),
                audience,
            })
        }
        None => None,
    };
    Ok(MessageIr {
        id: Arc::from(id),
        parent,
        depth,
        author,
        hidden: m.hidden,
        opening,
        changes: lower_changes(scope, m.changes.unwrap_or_default()).map_err(e)?,
        firings,
        parts,
        summary,
        time: m.time.and_then(parse_time),
        settings: match m.settings {
            Some(x) => Some(lower_settings(ir, x).map_err(e)?),
            None => None,
        },
        chosen: m.chosen.map(|c| ChosenIr {
            why: Arc::from(c.why.unwrap_or("")),
            name: c.name.map(Arc::from),
            draw: c.draw,
        }),
    })
}

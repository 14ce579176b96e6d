//! The turn (Format 18.5) and its result (18.6).

use std::sync::Arc;

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::{Map, Value};

use super::safety::{Status, Verdict};
use super::session::{RuntimeKind, Session, TurnError};
use super::{Changes, Proposal, Reply, TurnContext};
use crate::cel::NoHost;
use crate::compile::changes::{lower_changes, ChangeScope};
use crate::compile::session::Fired;
use crate::compile::{ChangeIr, MessageIr, PartIr, Who};
use crate::diag::Diagnostic;
use crate::engine::macros::RenderFor;
use crate::engine::{Point, State};

/// `continue_session` or `end_session` (Format 18.5 step 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionControl {
    /// The session goes on.
    ContinueSession,
    /// The session has ended.
    EndSession,
}

impl SessionControl {
    /// The name as written in results and fixtures (`continue_session`).
    pub fn as_str(self) -> &'static str {
        match self {
            SessionControl::ContinueSession => "continue_session",
            SessionControl::EndSession => "end_session",
        }
    }
}

/// A firing in a turn result: `{"event": id}` or `{"outcome": id}`, with
/// the message that records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FiringRecord {
    /// The event's ID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The outcome's ID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The message that records it.
    pub message: String,
    /// The event's signal (Format 9.1), if it has one; not part of the
    /// JSON result.
    #[serde(skip)]
    pub signal: Option<String>,
}

impl FiringRecord {
    /// The event's or outcome's ID.
    pub fn id(&self) -> &str {
        self.event
            .as_deref()
            .or(self.outcome.as_deref())
            .unwrap_or("")
    }
}

/// A rubric score (Format 19.6): criteria in rubric order (`null` for
/// ungraded ones) and the weighted total.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Score {
    /// Each criterion's score, rounded to 4 places.
    pub criteria: IndexMap<String, Option<f64>>,
    /// The weighted mean over graded criteria.
    pub total: Option<f64>,
}

/// The result of one turn (Format 18.6). As JSON every field is present,
/// `null` when it does not apply: the turn document of `troupe run --json`.
///
/// ```
/// let pack = troupe::Pack::open("examples/packs/everyday-negotiation")?;
/// let mut session = pack.start(troupe::SessionOptions::default())?;
/// let turn = session.turn("Hello Marco")?;
/// let json = serde_json::to_value(&turn).unwrap();
/// assert_eq!(json["turn"], 1);
/// assert_eq!(json["session_control"], "continue_session");
/// assert_eq!(json["safety_status"], "ok");
/// # Ok::<(), troupe::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnResult {
    /// `turn` (8.8) at the input message.
    pub turn: i64,
    /// The IDs written by the turn.
    pub messages: Vec<String>,
    /// The turn's rule.
    pub rule: Option<String>,
    /// The rendered reply.
    pub reply: Option<String>,
    /// Changed state entries (absent derived ones as `null`), state order.
    pub state_delta: Map<String, Value>,
    /// The turn's firings.
    pub firings: Vec<FiringRecord>,
    /// `continue_session` / `end_session`.
    pub session_control: SessionControl,
    /// `ok` / `redirect` / `stop`.
    pub safety_status: Status,
    /// The scenario's `emotion` at the last message.
    pub npc_emotion: Option<String>,
    /// Whether the story has ended at the last message.
    pub ended: bool,
    /// The story's outcome there.
    pub outcome: Option<String>,
    /// The rubric score when the session ends.
    pub score: Option<Score>,
    /// The signals of the events fired (Format 9.1), in firing order.
    #[serde(skip)]
    pub signals: Vec<String>,
    /// The turn's diagnostics (Format 18.6): an adapter's dropped changes
    /// (18.7), a model answer dropped whole (24.4); `[]` when none.
    pub diagnostics: Vec<Diagnostic>,
}

/// Makes `input` literal template text (Format 18.5 step 1): each `\`
/// becomes `\\`, then each `{{` (left to right) becomes `\{{`.
pub fn escape(input: &str) -> String {
    input.replace('\\', "\\\\").replace("{{", "\\{{")
}

/// `state_delta` (Format 18.6): entries of `after` that differ from or are
/// not in `before`, then entries of `before` absent from `after` as null,
/// all in state order (the order of `order`).
pub fn delta(before: &Map<String, Value>, after: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in after {
        if before.get(k) != Some(v) {
            out.insert(k.clone(), v.clone());
        }
    }
    for k in before.keys() {
        if !after.contains_key(k) {
            out.insert(k.clone(), Value::Null);
        }
    }
    out
}

struct Built {
    changes_json: Vec<Value>,
    changes: Arc<[ChangeIr]>,
    diagnostics: Vec<Diagnostic>,
}

impl Session {
    /// One turn (Format 18.5): `input` said by the first player. Refused
    /// with [`TurnError::Ended`] once the session has ended.
    pub fn turn(&mut self, input: &str) -> Result<TurnResult, TurnError> {
        let player = self.engine.ir.players.first().copied().unwrap_or(0);
        self.turn_by(player, input)
    }

    /// One turn (Format 18.5) with `input` said by the player whose
    /// character ID is `character` (playtests, Format 22.5); the first
    /// player when `character` is not a player of the session.
    pub fn turn_as(&mut self, character: &str, input: &str) -> Result<TurnResult, TurnError> {
        let ir = &self.engine.ir;
        let player = ir
            .cast_index(character)
            .filter(|c| ir.players.contains(c))
            .or_else(|| ir.players.first().copied())
            .unwrap_or(0);
        self.turn_by(player, input)
    }

    fn turn_by(&mut self, player: u16, input: &str) -> Result<TurnResult, TurnError> {
        if self.kind == RuntimeKind::Fake {
            self.fake_turns += 1;
            return Ok(super::fake::result(self, self.fake_turns));
        }
        if self.is_over() {
            return Err(TurnError::Ended);
        }
        // The state before the turn stays in place: the turn only adds
        // messages after `parent`.
        let parent = self.current;
        let depth = parent.map_or(0, |p| self.engine.session.messages[p as usize].depth + 1);
        // 1. The input message.
        let m_in = self.push(MessageIr {
            id: Arc::from(self.next_id().as_str()),
            parent,
            depth,
            author: Who::Cast(player),
            hidden: false,
            opening: None,
            changes: Vec::new(),
            firings: Vec::new(),
            parts: vec![PartIr {
                text: Arc::from(escape(input).as_str()),
                audience: None,
            }],
            summary: None,
            time: None,
            settings: None,
        });
        // 2. The input verdict.
        let v_in = self.rt.safety.verdict(input, false);
        let responder = self.responder(&self.states[m_in as usize]);
        // 3. The proposal.
        let proposal = match v_in.status {
            Status::Stop => None,
            Status::Redirect => Some(Proposal {
                rule: None,
                reply: Some(Reply::Template(Arc::from(
                    v_in.redirect_text.clone().unwrap_or_default().as_str(),
                ))),
                changes: Changes::Json(Vec::new()),
            }),
            Status::Ok => self.propose(input, m_in, responder),
        };
        if let Some(failure) = self.runtime.take_failure() {
            // Nothing of a failed turn remains (Format 24.6).
            self.pop();
            return Err(TurnError::Runtime(failure));
        }
        let runtime_diagnostics = self.runtime.take_diagnostics();
        let rule = proposal
            .as_ref()
            .and_then(|p| p.rule.as_ref().map(|r| r.to_string()));
        if let (Some(r), Some(rec)) = (&rule, self.recorder.as_mut()) {
            crate::engine::Observer::rule(rec.get_mut(), r);
        }
        let mut status = v_in.status;
        let mut diagnostics = runtime_diagnostics;
        let mut m_r = None;
        // The reply's rendering (Err past the budget of Format 16.2), once
        // rendered: a reply is rendered once per turn.
        let mut rendered: Option<Result<Option<String>, crate::template::render::TooLong>> = None;
        match proposal {
            None => {
                self.fire(m_in);
            }
            Some(p) => {
                let reply_id = self.next_id();
                let built = self.build_changes(&p.changes, &reply_id);
                diagnostics.extend(built.diagnostics.iter().cloned());
                let text = p.reply.map(|r| match r {
                    Reply::Template(t) => t,
                    Reply::Literal(s) => Arc::from(escape(&s).as_str()),
                });
                let r = self.push_reply(&reply_id, m_in, responder, text.clone(), &built);
                let mut verdict = Verdict {
                    status: Status::Ok,
                    redirect_text: None,
                    matched: Vec::new(),
                };
                if v_in.status == Status::Ok {
                    // A reply without parts has text "" (Format 7.2), which
                    // is scanned too (18.5 step 6).
                    if text.is_some() {
                        let r = self.render_checked(r);
                        let scanned = match &r {
                            Ok(t) => t.as_deref().unwrap_or_default(),
                            Err(e) => &e.partial,
                        };
                        verdict = self.rt.safety.verdict(scanned, true);
                        rendered = Some(r);
                    } else {
                        verdict = self.rt.safety.verdict("", true);
                    }
                }
                match verdict.status {
                    Status::Ok => m_r = Some((r, built.changes_json)),
                    Status::Redirect => {
                        rendered = None;
                        self.pop();
                        let redirect =
                            Arc::from(verdict.redirect_text.unwrap_or_default().as_str());
                        let r = self.push_reply(&reply_id, m_in, responder, Some(redirect), &built);
                        m_r = Some((r, built.changes_json));
                    }
                    Status::Stop => {
                        self.pop();
                        self.fire(m_in);
                    }
                }
                status = status.max(verdict.status);
            }
        }
        let last = m_r.as_ref().map_or(m_in, |(r, _)| *r);
        // A reply whose rendered text is over the budget is refused whole
        // (Format 16.2): nothing of the turn is kept or written.
        // The reply rendered for the safety verdict is not rendered again.
        let reply = match &m_r {
            Some((r, _)) => match rendered.unwrap_or_else(|| self.render_checked(*r)) {
                Ok(text) => Some(text),
                Err(e) => {
                    self.pop();
                    self.pop();
                    return Err(TurnError::Limit(format!(
                        "the reply renders to more than {} bytes (Format 16.2); the turn is not taken",
                        e.limit
                    )));
                }
            },
            None => None,
        };
        // 9. Written before the result is returned (a search branch keeps
        // no text, so its lines are not built).
        if self.writer.keeps() {
            let line = self.line_of(m_in, &[]);
            self.writer.line(&line)?;
            if let Some((r, json)) = &m_r {
                let line = self.line_of(*r, json);
                self.writer.line(&line)?;
            }
        }
        self.turns.push(m_in);
        self.current = Some(last);
        if status == Status::Stop {
            self.stopped = true;
        }
        let before = match parent {
            Some(p) => &self.states[p as usize],
            None => self.engine.initial(),
        };
        Ok(self.result(m_in, last, reply, rule, status, before, diagnostics))
    }

    fn propose(&mut self, input: &str, m_in: u32, responder: Who) -> Option<Proposal> {
        let engine = &self.engine;
        let input_id = engine.session.messages[m_in as usize].id.clone();
        let reply_id = self.next_id();
        let ctx = TurnContext {
            input,
            input_id: &input_id,
            reply_id: &reply_id,
            seed: engine.session.seed,
            responder: engine.ir.who_id(responder),
            engine,
            state: &self.states[m_in as usize],
            point: Point {
                ir: &engine.ir,
                session: Some(&engine.session),
                char: match responder {
                    Who::Cast(c) => Some(c),
                    Who::Narrator => None,
                },
            },
            observer: self.recorder.as_ref(),
            bundle: &self.bundle,
        };
        self.runtime.propose(&ctx)
    }

    fn build_changes(&self, changes: &Changes, reply_id: &str) -> Built {
        match changes {
            Changes::Compiled { json, ir } => Built {
                changes_json: json.to_vec(),
                changes: ir.clone(),
                diagnostics: Vec::new(),
            },
            Changes::Json(list) => {
                let story = &self.engine.story;
                let mut diags = Vec::new();
                crate::check::changes::check_changes(
                    story,
                    list,
                    &format!("message:{reply_id}/changes"),
                    &mut diags,
                );
                let scope = ChangeScope::of(story, &self.engine.ir);
                let lowered = if diags.iter().any(Diagnostic::is_error) {
                    None
                } else {
                    lower_changes(&scope, list).ok()
                };
                match lowered {
                    Some(l) => Built {
                        changes_json: list.clone(),
                        changes: l.into(),
                        diagnostics: diags,
                    },
                    None => Built {
                        changes_json: Vec::new(),
                        changes: Arc::from(Vec::new()),
                        diagnostics: diags,
                    },
                }
            }
        }
    }

    /// Steps 4 and 5: the reply message, its state, its firings.
    fn push_reply(
        &mut self,
        id: &str,
        m_in: u32,
        author: Who,
        text: Option<Arc<str>>,
        built: &Built,
    ) -> u32 {
        let depth = self.engine.session.messages[m_in as usize].depth + 1;
        let r = self.push(MessageIr {
            id: Arc::from(id),
            parent: Some(m_in),
            depth,
            author,
            hidden: false,
            opening: None,
            changes: built.changes.to_vec(),
            firings: Vec::new(),
            parts: text
                .into_iter()
                .map(|t| PartIr {
                    text: t,
                    audience: None,
                })
                .collect(),
            summary: None,
            time: None,
            settings: None,
        });
        self.fire(r);
        r
    }

    /// The rendered text of message `m` at its state (Format 10.5).
    pub(crate) fn render(&self, m: u32) -> Option<String> {
        match self.render_checked(m) {
            Ok(t) => t,
            Err(e) => Some(e.partial),
        }
    }

    /// [`Session::render`], `Err` when a part renders past the budget of
    /// Format 16.2 or the parts together exceed it.
    pub(crate) fn render_checked(
        &self,
        m: u32,
    ) -> Result<Option<String>, crate::template::render::TooLong> {
        let limit = crate::template::render::RENDER_LIMIT;
        let Some(msg) = self.engine.session.messages.get(m as usize) else {
            return Ok(None);
        };
        if msg.parts.is_empty() {
            return Ok(None);
        }
        let author = self.engine.ir.who_id(msg.author).to_string();
        let who = RenderFor::message_part(&author, &self.engine.ir.scenario);
        let st = &self.states[m as usize];
        // One budget for the message: each part renders within what the
        // parts before it (and their `\n` separators) left.
        let mut text = String::new();
        for (i, p) in msg.parts.iter().enumerate() {
            if i > 0 {
                text.push('\n');
            }
            let left =
                limit
                    .checked_sub(text.len())
                    .ok_or_else(|| crate::template::render::TooLong {
                        limit,
                        partial: String::new(),
                    })?;
            match self.engine.render_limited(&p.text, st, who, left) {
                Ok(t) => text.push_str(&t),
                Err(e) => {
                    text.push_str(&e.partial);
                    return Err(crate::template::render::TooLong {
                        limit,
                        partial: text,
                    });
                }
            }
        }
        Ok(Some(text))
    }

    /// The emotion (Format 18.6) at message `m`.
    fn emotion(&self, m: u32, responder: Who) -> Option<String> {
        let p = self.rt.emotion.as_ref()?;
        let point = Point {
            ir: &self.engine.ir,
            session: Some(&self.engine.session),
            char: match responder {
                Who::Cast(c) => Some(c),
                Who::Narrator => None,
            },
        };
        let mut rec = self.recorder.as_ref().map(|r| r.borrow_mut());
        let obs = rec
            .as_deref_mut()
            .map(|r| r as &mut dyn crate::engine::Observer);
        let site = crate::engine::Site::Emotion;
        match point.eval_observed(p, 0, &self.states[m as usize], &mut NoHost, site, obs) {
            Ok(crate::cel::Value::String(s)) => Some(s.to_string()),
            _ => None,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn result(
        &self,
        m_in: u32,
        last: u32,
        reply: Option<Option<String>>,
        rule: Option<String>,
        status: Status,
        before: &State,
        diagnostics: Vec<Diagnostic>,
    ) -> TurnResult {
        let has_reply = reply.is_some();
        let ms = &self.engine.session.messages;
        let st = &self.states[last as usize];
        let mut messages = vec![ms[m_in as usize].id.to_string()];
        if has_reply {
            messages.push(ms[last as usize].id.to_string());
        }
        // Events are evaluated once per turn, at its last message (18.5).
        let firings = self.firing_records(last);
        let signals: Vec<String> = firings.iter().filter_map(|f| f.signal.clone()).collect();
        let ended = st.ending.is_some();
        let outcome = self.outcome_at(last);
        let control = if status == Status::Stop || ended {
            SessionControl::EndSession
        } else {
            SessionControl::ContinueSession
        };
        let responder = self.responder(&self.states[m_in as usize]);
        TurnResult {
            turn: self.states[m_in as usize].turn,
            messages,
            rule,
            reply: reply.flatten(),
            state_delta: self.engine.state_delta(before, st),
            firings,
            session_control: control,
            safety_status: status,
            npc_emotion: self.emotion(last, responder),
            ended,
            outcome,
            score: if control == SessionControl::EndSession {
                self.score()
            } else {
                None
            },
            signals,
            diagnostics,
        }
    }
}

/// What the root a runtime writes did (Format 18.4, 18.6): the events and
/// outcomes that fired at the opening, and whether the story ended there.
/// As JSON every field is present, `null` when it does not apply.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpeningResult {
    /// The root's ID (`m1`).
    pub message: String,
    /// The opening the root names.
    pub opening: String,
    /// The rendered text of the root (its opening's parts, 6.3).
    pub text: Option<String>,
    /// The firings at the root, in order.
    pub firings: Vec<FiringRecord>,
    /// Whether the story is ended at the root (an opening that fires an
    /// ending leaves no turn to play).
    pub ended: bool,
    /// The story's outcome there.
    pub outcome: Option<String>,
}

impl Session {
    /// The firings recorded on message `m`, as the turn result shows them.
    pub(crate) fn firing_records(&self, m: u32) -> Vec<FiringRecord> {
        let ir = &self.engine.ir;
        let Some(msg) = self.engine.session.messages.get(m as usize) else {
            return Vec::new();
        };
        msg.firings
            .iter()
            .filter_map(|f| match f {
                Fired::Event(i) => ir.events.get(*i as usize).map(|e| FiringRecord {
                    event: Some(e.id.to_string()),
                    outcome: None,
                    message: msg.id.to_string(),
                    signal: e.signal.as_ref().map(|s| s.to_string()),
                }),
                Fired::Outcome(i) => ir.outcomes.get(*i as usize).map(|o| FiringRecord {
                    event: None,
                    outcome: Some(o.id.to_string()),
                    message: msg.id.to_string(),
                    signal: None,
                }),
            })
            .collect()
    }

    /// The story's outcome at message `m` (Format 9.3), if it ended by one.
    pub(crate) fn outcome_at(&self, m: u32) -> Option<String> {
        match self.states.get(m as usize)?.ending {
            Some(Fired::Outcome(o)) => self
                .engine
                .ir
                .outcomes
                .get(o as usize)
                .map(|x| x.id.to_string()),
            _ => None,
        }
    }

    /// What the opening root did (its firings, whether the story ended
    /// there); `None` when the session has no opening root.
    pub fn opening_result(&self) -> Option<OpeningResult> {
        let msg = self.engine.session.messages.first()?;
        let o = msg.opening.filter(|_| msg.parent.is_none())?;
        Some(OpeningResult {
            message: msg.id.to_string(),
            opening: self.engine.ir.openings.get(o as usize)?.id.to_string(),
            text: self.render(0),
            firings: self.firing_records(0),
            ended: self.states.first().is_some_and(|s| s.ending.is_some()),
            outcome: self.outcome_at(0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_makes_input_literal() {
        assert_eq!(escape(r"a\b {{user}}"), r"a\\b \{{user}}");
        assert_eq!(escape("{{{{"), r"\{{\{{");
    }
}

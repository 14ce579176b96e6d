//! The turn (Format 18.5) and its result (18.6).

use std::sync::Arc;

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::{Map, Value};

use super::compiled::Strategy;
use super::safety::Status;
use super::session::{RuntimeKind, Session, TurnError};
use super::turn_order::{Choice, Chosen, Why};
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
#[non_exhaustive]
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
#[non_exhaustive]
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
#[non_exhaustive]
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
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
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
#[non_exhaustive]
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
    /// Every reply message of the turn, in order (Format 18.6, 18.9).
    pub replies: Vec<ReplyRecord>,
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

/// One reply of a turn (Format 18.6 `replies`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplyRecord {
    /// The reply message's ID.
    pub message: Arc<str>,
    /// Its author (`narrator` for the narrator).
    pub author: Arc<str>,
    /// Its rule, if a rule proposed it.
    pub rule: Option<Arc<str>>,
    /// Its rendered text; `None` when it has no parts.
    pub reply: Option<String>,
    /// Why its author was chosen (Format 18.9).
    pub chosen: Chosen,
}

/// A reply built by a turn, before it is written.
struct Made {
    message: u32,
    changes_json: Arc<[Value]>,
    rule: Option<Arc<str>>,
    rendered: Option<Result<Option<String>, crate::template::render::TooLong>>,
    chosen: Chosen,
}

/// The replies of a turn whose input verdict is `ok`.
struct MadeReplies {
    replies: Vec<Made>,
    /// The first reply's rule, kept when a `stop` drops the reply (18.6).
    first_rule: Option<Arc<str>>,
    status: Status,
    diagnostics: Vec<Diagnostic>,
}

/// What a turn wrote and decided (Format 18.5), before its result is
/// built: by [`Session::turn`] as a [`TurnResult`], by the search's
/// [`Session::step`] as a [`Stepped`].
struct Taken {
    parent: Option<u32>,
    m_in: u32,
    last: u32,
    replies: Vec<Made>,
    first_rule: Option<Arc<str>>,
    status: Status,
    diagnostics: Vec<Diagnostic>,
    emotion_of: Option<Who>,
}

/// The rules a turn reached (Format 21.6 `rules`, 20.5): the rule of
/// each of its replies (18.6 `replies`), in order, or — when a `stop`
/// dropped the first reply, so the turn has none — that reply's rule.
/// Coverage and exploration both count these.
fn reached_rules<'a>(
    replies: &'a [Made],
    first_rule: Option<&'a Arc<str>>,
) -> impl Iterator<Item = &'a Arc<str>> {
    let dropped = first_rule.filter(|_| replies.is_empty());
    dropped
        .into_iter()
        .chain(replies.iter().filter_map(|m| m.rule.as_ref()))
}

/// What one turn of the search reached (Format 20.5): what its
/// [`TurnResult`] would list as `firings`, the rules of `replies` (and
/// `rule` when a `stop` dropped the reply) and their authors, and whether
/// the session goes on (`continue_session`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stepped {
    /// The turn's firings, in the result's order.
    pub firings: Vec<Fired>,
    /// The rules the turn reached, as [`reached_rules`] lists them.
    pub rules: Vec<Arc<str>>,
    /// The author of each reply, in order.
    pub speakers: Vec<Who>,
    /// Whether the session goes on after the turn.
    pub going_on: bool,
}

struct Built {
    changes_json: Arc<[Value]>,
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
    /// character ID is `character` (playtests, Format 22.5; a host's `as`,
    /// 18.9). Refused with [`TurnError::NotAPlayer`] (nothing written) when
    /// `character` is not a player of the session.
    pub fn turn_as(&mut self, character: &str, input: &str) -> Result<TurnResult, TurnError> {
        let ir = &self.engine.ir;
        let Some(player) = ir.cast_index(character).filter(|c| ir.players.contains(c)) else {
            let ids: Vec<String> = ir
                .players
                .iter()
                .map(|&p| format!("`{}`", ir.who_id(crate::compile::Who::Cast(p))))
                .collect();
            return Err(TurnError::NotAPlayer(
                character.to_string(),
                format!("; its players are {}", ids.join(", ")),
            ));
        };
        self.turn_by(player, input)
    }

    /// One turn (Format 18.5) whose responder the host names (Format 18.9:
    /// `manual`, `troupe run --to`, `/to` in `troupe play`): `character`
    /// answers `input`, said by the first player. Refused with
    /// [`TurnError::NotASpeaker`] (nothing written) when `character` is not
    /// a speaker at the input message.
    pub fn turn_to(&mut self, character: &str, input: &str) -> Result<TurnResult, TurnError> {
        let player = self.engine.ir.players.first().copied().unwrap_or(0);
        let Some(c) = self.engine.ir.cast_index(character) else {
            return Err(super::turn_order::not_an_id(&self.engine.ir, character));
        };
        self.turn_full(player, input, Some(c))
    }

    fn turn_by(&mut self, player: u16, input: &str) -> Result<TurnResult, TurnError> {
        self.turn_full(player, input, None)
    }

    fn turn_full(
        &mut self,
        player: u16,
        input: &str,
        host: Option<u16>,
    ) -> Result<TurnResult, TurnError> {
        if self.kind == RuntimeKind::Fake {
            self.fake_turns += 1;
            return Ok(super::fake::result(self, self.fake_turns));
        }
        let Taken {
            parent,
            m_in,
            last,
            mut replies,
            first_rule,
            status,
            diagnostics,
            emotion_of,
        } = self.take(player, input, None, host)?;
        let before = match parent {
            Some(p) => &self.states[p as usize],
            None => self.engine.initial(),
        };
        let ms = &self.engine.session.messages;
        let records: Vec<ReplyRecord> = replies
            .iter_mut()
            .map(|m| ReplyRecord {
                message: ms[m.message as usize].id.clone(),
                author: match ms[m.message as usize].author {
                    Who::Cast(c) => self.engine.ir.cast[c as usize].id.clone(),
                    Who::Narrator => Arc::from("narrator"),
                },
                rule: m.rule.clone(),
                reply: m.rendered.take().and_then(Result::ok).flatten(),
                chosen: m.chosen.clone(),
            })
            .collect();
        Ok(self.result(
            m_in,
            last,
            first_rule.map(|r| r.to_string()),
            records,
            status,
            before,
            diagnostics,
            emotion_of,
        ))
    }

    /// One turn of the search of Format 20.5 (`input` said by the first
    /// player, `escaped` being [`escape`]`(input)`): the turn of
    /// [`Session::turn`] — the same messages, states, firings, safety
    /// verdicts and refusals, every reply rendered for its verdict and its
    /// budget — without the result the search never reads (the state
    /// delta, the emotion, the rubric score, the IDs and texts as strings).
    /// Only a rules-runtime session steps (the search's sessions are
    /// [`Session::fork`]s, which are).
    pub(crate) fn step(&mut self, input: &str, escaped: &Arc<str>) -> Result<Stepped, TurnError> {
        if self.kind == RuntimeKind::Fake {
            // A fake session is never forked, so never searched.
            return Err(TurnError::Ended);
        }
        let player = self.engine.ir.players.first().copied().unwrap_or(0);
        let t = self.take(player, input, Some(escaped), None)?;
        let ms = &self.engine.session.messages;
        let firings = self
            .reported_firings_at(t.m_in, t.last, t.replies.len())
            .into_iter()
            .flat_map(|m| ms[m as usize].firings.iter().copied())
            .collect();
        let ended = self.states[t.last as usize].ending.is_some();
        Ok(Stepped {
            firings,
            rules: reached_rules(&t.replies, t.first_rule.as_ref())
                .cloned()
                .collect(),
            speakers: t
                .replies
                .iter()
                .map(|m| ms[m.message as usize].author)
                .collect(),
            going_on: !(t.status == Status::Stop || ended),
        })
    }

    /// Steps 1 to 9 of Format 18.5 (the input `escaped` when given, else
    /// escaped here): everything a turn writes and decides, before its
    /// result is built.
    fn take(
        &mut self,
        player: u16,
        input: &str,
        escaped: Option<&Arc<str>>,
        host: Option<u16>,
    ) -> Result<Taken, TurnError> {
        if self.is_over() {
            return Err(TurnError::Ended);
        }
        // The input is a message part, which renders to itself: over the
        // rendering budget it is not taken (Format 16.2), before anything
        // is written — a session line it would make stays readable.
        if input.len() > crate::template::render::RENDER_LIMIT {
            return Err(TurnError::Limit(format!(
                "the input is {} bytes; a message part renders to at most {} bytes (Format 16.2), so the turn is not taken",
                input.len(),
                crate::template::render::RENDER_LIMIT
            )));
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
                text: match escaped {
                    Some(e) => e.clone(),
                    None => Arc::from(escape(input).as_str()),
                },
                audience: None,
            }],
            summary: None,
            time: None,
            settings: None,
            chosen: None,
        });
        // 2. The input verdict.
        let v_in = self.rt.safety.verdict(input, false);
        // The responder is chosen before any rule is tried (Format 18.9).
        let (responder, first_chosen) = match self.first_speaker(m_in, input, host) {
            Ok(c) => c,
            Err(e) => {
                self.pop();
                return Err(e);
            }
        };
        let mut status = v_in.status;
        let mut diagnostics = Vec::new();
        // The turn's replies: message, changes as written, rule, rendered
        // text, why the author was chosen.
        let mut replies: Vec<Made> = Vec::new();
        let mut first_rule = None;
        match v_in.status {
            Status::Stop => {
                self.fire(m_in);
            }
            Status::Redirect => {
                // A safety text is the narrator's (Format 19.4).
                let reply_id = self.next_id();
                let built = self.build_changes(&Changes::Json(Vec::new()), &reply_id);
                let text = Arc::from(v_in.redirect_text.clone().unwrap_or_default().as_str());
                let r = self.push_reply(&reply_id, m_in, Who::Narrator, Some(text), &built);
                replies.push(Made {
                    message: r,
                    changes_json: built.changes_json,
                    rule: None,
                    rendered: None,
                    chosen: Chosen::because(Why::Safety),
                });
            }
            Status::Ok => {
                let made = self.replies(input, m_in, (responder, first_chosen.clone()), host);
                let made = match made {
                    Ok(m) => m,
                    Err(failed) => {
                        let (pushed, e) = *failed;
                        for _ in 0..=pushed {
                            self.pop();
                        }
                        return Err(e);
                    }
                };
                diagnostics = made.diagnostics;
                status = status.max(made.status);
                replies = made.replies;
                first_rule = made.first_rule;
                if replies.is_empty() {
                    self.fire(m_in);
                }
            }
        }
        // Coverage (Format 21.6) counts the rules the turn reached.
        if let Some(rec) = self.recorder.as_mut() {
            for rule in reached_rules(&replies, first_rule.as_ref()) {
                crate::engine::Observer::rule(rec.get_mut(), rule);
            }
        }
        let last = replies.last().map_or(m_in, |m| m.message);
        // A reply whose rendered text is over the budget is refused whole
        // (Format 16.2): nothing of the turn is kept or written. A reply
        // rendered for its safety verdict is not rendered again.
        let n = replies.len();
        for m in &mut replies {
            let rendered = m
                .rendered
                .take()
                .unwrap_or_else(|| self.render_checked(m.message));
            match rendered {
                Ok(text) => m.rendered = Some(Ok(text)),
                Err(e) => {
                    for _ in 0..=n {
                        self.pop();
                    }
                    return Err(TurnError::Limit(format!(
                        "the reply renders to more than {} bytes (Format 16.2); the turn is not taken",
                        e.limit
                    )));
                }
            }
        }
        // 9. Written before the result is returned (a search branch keeps
        // no text, so its lines are not built).
        if self.writer.keeps() {
            let mut lines = Vec::with_capacity(1 + n);
            lines.push(self.line_of(m_in, &[]));
            for m in &replies {
                let chosen = m.chosen.why.is_written().then_some(&m.chosen);
                lines.push(self.line_chosen(m.message, &m.changes_json, chosen));
            }
            // A line over Format 16.1's bound could not be read back: the
            // turn is not taken, as a reply over the budget is not.
            if let Some(long) = lines
                .iter()
                .find(|l| l.len() > crate::load::limits::MAX_JSONL_LINE_BYTES)
            {
                let len = long.len();
                for _ in 0..=n {
                    self.pop();
                }
                return Err(TurnError::Limit(format!(
                    "the turn's session line would be {len} bytes, over the {} of Format 16.1; the turn is not taken",
                    crate::load::limits::MAX_JSONL_LINE_BYTES
                )));
            }
            for line in &lines {
                self.writer.line(line)?;
            }
        }
        self.turns.push(m_in);
        self.current = Some(last);
        if status == Status::Stop {
            self.stopped = true;
        }
        // The emotion is the last reply's author's; none for a safety text.
        let emotion_of = match replies.last() {
            Some(m) if m.chosen.why == Why::Safety => None,
            Some(m) => Some(self.engine.session.messages[m.message as usize].author),
            None => Some(responder),
        };
        Ok(Taken {
            parent,
            m_in,
            last,
            replies,
            first_rule,
            status,
            diagnostics,
            emotion_of,
        })
    }

    /// Steps 3 to 6 of Format 18.5 for every reply of a turn whose input
    /// verdict is `ok` (Format 18.9: the first reply, then `all`'s further
    /// speakers or reactions, at most `max_replies_per_turn`). `Err` holds
    /// how many replies were pushed when a runtime failed (the caller
    /// takes the turn back).
    fn replies(
        &mut self,
        input: &str,
        m_in: u32,
        first: Choice,
        host: Option<u16>,
    ) -> Result<MadeReplies, Box<(usize, TurnError)>> {
        let ir = self.engine.ir.clone();
        let order = &ir.turn_order;
        let all = order.strategy == Strategy::All && host.is_none();
        let max = order.max_replies();
        let mut out = MadeReplies {
            replies: Vec::new(),
            first_rule: None,
            status: Status::Ok,
            diagnostics: Vec::new(),
        };
        let mut tried: Vec<u16> = Vec::new();
        let mut answered = m_in;
        let mut prev_text = String::new();
        let mut prev_author = Who::Narrator;
        while out.replies.len() < max {
            let k = out.replies.len();
            // The first reply of an ordinary turn has one candidate, the
            // responder: no list is built for it.
            let single;
            let many;
            let candidates: &[Choice] = if all {
                many = self.further_candidates(answered, input, "", Who::Narrator, &tried);
                if many.is_empty() && k == 0 {
                    single = [first.clone()];
                    &single
                } else {
                    &many
                }
            } else if k == 0 {
                single = [first.clone()];
                &single
            } else {
                many = self.further_candidates(answered, input, &prev_text, prev_author, &tried);
                &many
            };
            let reaction = k > 0 && !all;
            let mut found = None;
            for (who, chosen) in candidates {
                let (who, chosen) = (*who, chosen.clone());
                if let (true, Who::Cast(c)) = (all, who) {
                    tried.push(c);
                }
                let text = if reaction { prev_text.as_str() } else { input };
                let p = self.propose(text, answered, who, reaction);
                if let Some(failure) = self.runtime.take_failure() {
                    return Err(Box::new((k, TurnError::Runtime(failure))));
                }
                out.diagnostics.extend(self.runtime.take_diagnostics());
                if let Some(p) = p {
                    found = Some((who, chosen, p));
                    break;
                }
            }
            let Some((who, mut chosen, p)) = found else {
                break;
            };
            if k == 0 {
                out.first_rule.clone_from(&p.rule);
            }
            let reply_id = self.next_id();
            let built = self.build_changes(&p.changes, &reply_id);
            out.diagnostics.extend(built.diagnostics.iter().cloned());
            let author = match p.author.as_deref().and_then(|a| self.engine.ir.who(a)) {
                Some(a) if a != who => {
                    chosen = Chosen::because(Why::ReplyAs);
                    a
                }
                _ => who,
            };
            let text = p.reply.map(|r| match r {
                Reply::Template(t) => t,
                Reply::Literal(s) => Arc::from(escape(&s).as_str()),
            });
            let r = self.push_reply(&reply_id, answered, author, text.clone(), &built);
            // A reply without parts has text "" (Format 7.2), which is
            // scanned too (18.5 step 6).
            let rendered = if text.is_some() {
                Some(self.render_checked(r))
            } else {
                None
            };
            let scanned = match &rendered {
                Some(Ok(t)) => t.as_deref().unwrap_or_default(),
                Some(Err(e)) => &e.partial,
                None => "",
            };
            let verdict = self.rt.safety.verdict(scanned, true);
            // A reaction reads the text of the reply it answers.
            let scanned = if !all && out.replies.len() + 1 < max {
                scanned.to_string()
            } else {
                String::new()
            };
            out.status = out.status.max(verdict.status);
            match verdict.status {
                Status::Ok => {
                    out.replies.push(Made {
                        message: r,
                        changes_json: built.changes_json,
                        rule: p.rule,
                        rendered,
                        chosen,
                    });
                }
                Status::Redirect => {
                    // The safety text replaces the reply, said by the
                    // narrator; its changes stay (Format 19.4).
                    self.pop();
                    let redirect = Arc::from(verdict.redirect_text.unwrap_or_default().as_str());
                    let r =
                        self.push_reply(&reply_id, answered, Who::Narrator, Some(redirect), &built);
                    out.replies.push(Made {
                        message: r,
                        changes_json: built.changes_json,
                        rule: p.rule,
                        rendered: None,
                        chosen: Chosen::because(Why::Safety),
                    });
                    break;
                }
                Status::Stop => {
                    self.pop();
                    break;
                }
            }
            if self.states[r as usize].ending.is_some() {
                break;
            }
            answered = r;
            prev_text = scanned;
            prev_author = author;
        }
        Ok(out)
    }

    fn propose(
        &mut self,
        input: &str,
        m_in: u32,
        responder: Who,
        reaction: bool,
    ) -> Option<Proposal> {
        let engine = &self.engine;
        let input_id = engine.session.messages[m_in as usize].id.clone();
        let reply_id = self.next_id();
        let st = &self.states[m_in as usize];
        let order = &engine.ir.turn_order;
        let is_speaker = |id: &str| {
            engine
                .ir
                .cast_index(id)
                .is_some_and(|c| super::turn_order::speaker_at(&engine.ir, order, st, c))
        };
        let ctx = TurnContext {
            input,
            input_id: &input_id,
            reply_id: &reply_id,
            seed: engine.session.seed,
            responder: engine.ir.who_id(responder),
            reaction,
            is_speaker: &is_speaker,
            engine,
            state: st,
            point: Point {
                ir: &engine.ir,
                session: Some(&engine.session),
                char: match responder {
                    Who::Cast(c) => Some(c),
                    Who::Narrator => None,
                },
            },
            observer: self.recorder.as_ref(),
        };
        self.runtime.propose(&ctx)
    }

    fn build_changes(&self, changes: &Changes, reply_id: &str) -> Built {
        match changes {
            Changes::Compiled(c) => Built {
                changes_json: c.json.clone(),
                changes: c.ir.clone(),
                diagnostics: Vec::new(),
            },
            Changes::Json(list) => {
                let ir = &*self.engine.ir;
                let mut diags = Vec::new();
                crate::changes::check_changes(
                    ir,
                    list,
                    &format!("message:{reply_id}/changes"),
                    &mut diags,
                );
                let scope = ChangeScope::of_ir(ir);
                let lowered = if diags.iter().any(Diagnostic::is_error) {
                    None
                } else {
                    lower_changes(&scope, list).ok()
                };
                match lowered {
                    Some(l) => Built {
                        changes_json: list.clone().into(),
                        changes: l.into(),
                        diagnostics: diags,
                    },
                    None => Built {
                        changes_json: Arc::from(Vec::new()),
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
            chosen: None,
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
        let p = self.engine.ir.emotion.as_ref()?;
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

    /// The messages whose firings a turn reports, in order (Format 18.5:
    /// events are evaluated at each reply, or at the input message `m_in`
    /// of a turn without one; `last` is the turn's last message).
    fn reported_firings_at(&self, m_in: u32, last: u32, replies: usize) -> Vec<u32> {
        if replies <= 1 {
            return vec![last];
        }
        let ms = &self.engine.session.messages;
        let mut chain = Vec::with_capacity(replies);
        let mut at = last;
        while at != m_in {
            chain.push(at);
            at = ms[at as usize].parent.unwrap_or(m_in);
        }
        chain.reverse();
        chain
    }

    #[allow(clippy::too_many_arguments)]
    fn result(
        &self,
        m_in: u32,
        last: u32,
        rule: Option<String>,
        replies: Vec<ReplyRecord>,
        status: Status,
        before: &State,
        diagnostics: Vec<Diagnostic>,
        emotion_of: Option<Who>,
    ) -> TurnResult {
        let ms = &self.engine.session.messages;
        let st = &self.states[last as usize];
        let mut messages = vec![ms[m_in as usize].id.to_string()];
        messages.extend(replies.iter().map(|r| r.message.to_string()));
        // Events are evaluated at each reply, or at the input message of a
        // turn without one (18.5).
        let firings: Vec<FiringRecord> = self
            .reported_firings_at(m_in, last, replies.len())
            .into_iter()
            .flat_map(|m| self.firing_records(m))
            .collect();
        let signals: Vec<String> = firings.iter().filter_map(|f| f.signal.clone()).collect();
        let ended = st.ending.is_some();
        let outcome = self.outcome_at(last);
        let control = if status == Status::Stop || ended {
            SessionControl::EndSession
        } else {
            SessionControl::ContinueSession
        };
        let reply = replies.first().and_then(|r| r.reply.clone());
        TurnResult {
            turn: self.states[m_in as usize].turn,
            messages,
            rule,
            reply,
            state_delta: self.engine.state_delta(before, st),
            firings,
            session_control: control,
            safety_status: status,
            npc_emotion: emotion_of.and_then(|w| self.emotion(last, w)),
            ended,
            outcome,
            score: if control == SessionControl::EndSession {
                self.score()
            } else {
                None
            },
            replies,
            signals,
            diagnostics,
        }
    }
}

/// What the root a runtime writes did (Format 18.4, 18.6): the events and
/// outcomes that fired at the opening, and whether the story ended there.
/// As JSON every field is present, `null` when it does not apply.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
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

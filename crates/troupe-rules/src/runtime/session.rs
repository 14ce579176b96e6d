//! Starting a session (Format 18.4): the settings, the header, seats filled
//! with header characters, the difficulty preset (19.5), the opening root.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::compiled::RuntimeIr;
use super::firing::evaluate_observed;
use super::opened::Opened;
use super::rules::RulesRuntime;
use super::session_writer::{troupe_json, MessageLine, SessionWriter};
use super::Runtime;
use crate::compile::path::PathVec;
use crate::compile::session::preset_index;
use crate::compile::session::Fired;
use crate::compile::{MessageIr, SessionIr, Who};
use crate::diag::{Code, Diagnostic};
use crate::engine::replay::step_observed;
use crate::engine::{Engine, Observer, Recorder, Scratch, State};

/// Which runtime proposes (Format 18.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RuntimeKind {
    /// The rules runtime (the default).
    #[default]
    Rules,
    /// The seed's structural test double: writes and evaluates nothing.
    Fake,
}

/// The settings of a session (Format 18.4).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The scenario; `None`: the bundle's first scenario.
    pub scenario: Option<String>,
    /// The difficulty preset; `None`: the scenario's default (19.5).
    pub difficulty: Option<String>,
    /// The generator seed (default 0).
    pub seed: u64,
    /// The opening; `None`: the first one offered.
    pub opening: Option<String>,
    /// The runtime.
    pub runtime: RuntimeKind,
    /// A header's `players` and `characters`: the caller fills these seats
    /// and 18.4 fills the others (conformance `run` tests, the API), unless
    /// `leave_unfilled`.
    pub header_players: Option<(Value, Option<Value>)>,
    /// With `header_players`: the seats they do not fill stay unfilled
    /// (playtests, 22.5; a recorded session re-played with its own header).
    pub leave_unfilled: bool,
    /// The name of the default players' header characters (`--player-name`;
    /// `None`: `Player`, Format 18.4).
    pub player_name: Option<String>,
}

/// Why a session did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The settings or the bundle do not conform (the diagnostics say why).
    #[error("the session cannot start: {}", .0.iter().map(|d| d.message.to_string()).collect::<Vec<_>>().join("; "))]
    Refused(Vec<Diagnostic>),
    /// The session file could not be written.
    #[error("cannot write the session file: {0}")]
    Io(#[from] std::io::Error),
}

/// Why a turn was refused or failed (Format 18.5).
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    /// The session has ended (the story ended, or a safety stop).
    #[error("the session has ended; no more turns")]
    Ended,
    /// The session file could not be written.
    #[error("cannot write the session file: {0}")]
    Io(#[from] std::io::Error),
    /// The turn would exceed a bound of Format 16 (LIMIT): it is not taken.
    #[error("LIMIT: {0}")]
    Limit(String),
    /// The host named a responder that is not a speaker at the input
    /// message (Format 18.9): nothing was written. The second field says
    /// what to name instead when the first is no character ID: empty, or
    /// text that follows the message.
    #[error("`{0}` cannot reply now: not a present, unmuted character who is not a player (Format 18.9){1}")]
    NotASpeaker(String, String),
    /// The host named a player that is not one of the session's players
    /// (Format 18.9: a turn is said by a player): nothing was written. The
    /// second field names the players.
    #[error("`{0}` is not a player of this session (Format 18.9){1}")]
    NotAPlayer(String, String),
    /// The runtime could not propose (a model that failed, Format 24.6):
    /// nothing of the turn was written.
    #[error("{}: {}", .0.code, .0.message)]
    Runtime(Diagnostic),
    /// A settings change that does not pass the checks of Format 8.9
    /// (SETTINGS_INVALID, SETTINGS_NOT_DECLARED, UNKNOWN_FIELD): nothing
    /// was written.
    #[error("{}", .0.iter().map(|d| format!("{}: {}", d.code, d.message)).collect::<Vec<_>>().join("; "))]
    Settings(Vec<Diagnostic>),
}

/// A running session: the compiled story, the messages written so far with
/// the state at each, and the session file.
pub struct Session {
    pub(crate) engine: Engine,
    pub(crate) rt: Arc<RuntimeIr>,
    pub(crate) runtime: Box<dyn Runtime>,
    /// Whether `runtime` is the rules runtime this session made itself.
    pub(crate) rules: bool,
    pub(crate) kind: RuntimeKind,
    /// State at each message (index = message index), shared with the
    /// session's forks up to the last [`Session::share_path`].
    pub(crate) states: PathVec<State>,
    /// `roll()` calls made at each message before its events (11.5).
    pub(crate) rolls: PathVec<u64>,
    pub(crate) current: Option<u32>,
    /// The input message of each turn on the current path.
    pub(crate) turns: PathVec<u32>,
    pub(crate) stopped: bool,
    pub(crate) fake_turns: i64,
    pub(crate) scratch: Scratch,
    pub(crate) writer: SessionWriter,
    /// Shared by the session's forks (Format 20.5), never changed.
    pub(crate) header: Arc<Header>,
    /// What the session evaluated (Format 21.6), when it records.
    pub(crate) recorder: Option<std::cell::RefCell<Recorder>>,
}

/// A session's header (Format 18.4, 18.8): as built, or, for a session of
/// a compiled scenario with default seating, its parts, from which the
/// line written and the value are made when needed (a start writes the
/// line from the text its scenario shares; the value is built only when
/// asked for).
#[derive(Debug)]
pub(crate) enum Header {
    /// Built whole (a session compiled for its header, or resumed).
    Built(Value),
    /// A default-seating session of a compiled scenario.
    Default {
        /// Built from the rest when first asked for.
        value: std::sync::OnceLock<Value>,
        /// The scenario, and the header's shared part.
        scenario: Arc<super::opened::DefaultScenario>,
        /// `difficulty`, when a preset is chosen.
        preset: Option<String>,
        /// `seed`.
        seed: u64,
    },
}

impl Header {
    /// The header (Format 18.4): `troupe`, `kind`, `scenario`, `players`
    /// and `characters` when not empty, `difficulty` when a preset is
    /// chosen, `seed`.
    pub(crate) fn value(&self) -> &Value {
        match self {
            Header::Built(v) => v,
            Header::Default {
                value,
                scenario,
                preset,
                seed,
            } => value.get_or_init(|| {
                let mut h = scenario.header_start();
                if let Some(p) = preset {
                    h.insert("difficulty".into(), p.clone().into());
                }
                h.insert("seed".into(), (*seed).into());
                Value::Object(h)
            }),
        }
    }

    /// Line 1 of the session file: [`Header::value`] as Troupe JSON.
    fn text(&self) -> String {
        match self {
            Header::Built(v) => troupe_json(v),
            Header::Default {
                scenario,
                preset,
                seed,
                ..
            } => {
                let head = scenario.header_head();
                let mut out = Vec::with_capacity(head.len() + 64);
                out.extend_from_slice(head.as_bytes());
                if let Some(p) = preset {
                    out.extend_from_slice(br#","difficulty":"#);
                    crate::model::json::write_string(p, &mut out);
                }
                out.extend_from_slice(br#","seed":"#);
                let _ = std::io::Write::write_fmt(&mut out, format_args!("{seed}"));
                out.push(b'}');
                crate::model::json::into_string(out)
            }
        }
    }
}

/// ORDER for the first of `ids` that a session of `n` messages would write
/// later (`m<k>` with k > n, Format 18.4, 18.10).
fn taken_id<'a>(mut ids: impl Iterator<Item = &'a str>, n: usize) -> Option<StartError> {
    let taken = ids.find(|id| {
        id.strip_prefix('m')
            .filter(|d| !d.starts_with('0'))
            .and_then(|d| d.parse::<usize>().ok())
            .is_some_and(|k| k > n)
    })?;
    Some(refuse(
        Code::Order,
        &format!("message:{taken}"),
        format!(
            "the session has {n} messages, so the next one it writes is `m{}`, yet `{taken}` is already taken; a session can be resumed only when no ID is `m<k>` with k greater than its number of messages (Format 18.4, 18.10)",
            n + 1,
        ),
    ))
}

/// The resume point (Format 18.10): message `at`, else the last in file
/// order; UNKNOWN_REF at `at` when there is no such message.
fn resume_point(engine: &Engine, at: Option<&str>) -> Result<Option<u32>, StartError> {
    Ok(match at {
        Some(id) => Some(engine.session.find(id).ok_or_else(|| {
            refuse(
                Code::UnknownRef,
                "at",
                format!(
                    "the session has no message `{id}`{}",
                    crate::diag::suggest::one_of(
                        id,
                        engine.session.messages.iter().map(|m| &*m.id)
                    )
                ),
            )
        })?),
        None => engine.last_message(),
    })
}

/// The state at recorded message `m` from its parent's, `base`, as a
/// session that wrote it keeps it (Format 8.6, 11.5): its recorded firings
/// applied, and the roll counter of its own step (the step without them).
fn step_recorded(engine: &mut Engine, scratch: &mut Scratch, base: State, m: u32) -> (u64, State) {
    let mi = m as usize;
    let firings = std::mem::take(&mut engine.session.messages[mi].firings);
    let mut bare = base.clone();
    let r = step_observed(&engine.ir, &engine.session, &mut bare, m, scratch, None);
    engine.session.messages[mi].firings = firings;
    let mut st = base;
    step_observed(&engine.ir, &engine.session, &mut st, m, scratch, None);
    (r, st)
}

fn refuse(code: Code, at: &str, message: String) -> StartError {
    StartError::Refused(vec![Diagnostic::error(code, message).at(at)])
}

/// The header a run writes (Format 18.4, 18.8).
fn build_header(bundle: &Value, options: &Options) -> Result<(Value, Option<usize>), StartError> {
    let scenarios = crate::model::scenarios(bundle);
    let index = match &options.scenario {
        Some(id) => scenarios
            .iter()
            .position(|s| crate::model::id_of(s) == Some(id))
            .ok_or_else(|| {
                refuse(
                    Code::UnknownRef,
                    "header/scenario",
                    format!(
                        "the bundle has no scenario `{id}`{}",
                        crate::diag::suggest::one_of(
                            id,
                            scenarios.iter().filter_map(|s| crate::model::id_of(s))
                        )
                    ),
                )
            })?,
        None if scenarios.is_empty() => {
            return Err(refuse(
                Code::UnknownRef,
                "header/scenario",
                "the bundle has no scenario to run".into(),
            ))
        }
        None => 0,
    };
    let sc = &scenarios[index];
    let name = options
        .player_name
        .as_deref()
        .unwrap_or(crate::model::session::DEFAULT_PLAYER_NAME);
    let (players, characters) = match &options.header_players {
        None => crate::model::session::default_players(sc, name),
        Some((p, c)) => {
            let given = p.as_array().cloned().unwrap_or_default();
            let mut characters = c
                .as_ref()
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if options.leave_unfilled {
                (given, characters)
            } else {
                // The caller's characters as given, then 18.4's (18.8).
                let (players, added) = crate::model::session::fill_players(sc, given, name);
                characters.extend(added);
                (players, characters)
            }
        }
    };
    // Written members in 18.8's order: seat, character, name.
    let players = players
        .into_iter()
        .map(crate::model::session::player_in_order)
        .collect();
    let mut h = crate::model::session::header_start(sc, players, characters);
    let preset = options.difficulty.clone().or_else(|| {
        sc.pointer("/difficulty/default")
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    if let Some(p) = preset {
        h.insert("difficulty".into(), p.into());
    }
    h.insert("seed".into(), options.seed.into());
    Ok((Value::Object(h), Some(index)))
}

impl Session {
    /// Starts a session of `pack` under the runtime `options.runtime`
    /// (Format 18.4). Refused with diagnostics when the settings do not
    /// conform (unknown scenario, preset or opening; a scenario without
    /// players).
    pub fn start(pack: &Opened, options: &Options) -> Result<Session, StartError> {
        Session::start_inner(pack, options, None, None, false)
    }

    /// [`Session::start`], recording from the root on what the session
    /// evaluates (the observer of `crate::engine::observe`): condition
    /// branches, the turns' rules, firings, the opening. Read it with
    /// [`Session::recorder`].
    pub fn start_recorded(pack: &Opened, options: &Options) -> Result<Session, StartError> {
        Session::start_inner(pack, options, None, None, true)
    }

    /// [`Session::start_recorded`] with proposals from `runtime` (an
    /// adapter: fixtures run with `runtime: model`, Format 21.3).
    pub fn start_recorded_with(
        pack: &Opened,
        options: &Options,
        runtime: Box<dyn Runtime>,
    ) -> Result<Session, StartError> {
        Session::start_inner(pack, options, Some(runtime), None, true)
    }

    /// What a recorded session evaluated so far (`None` unless started with
    /// [`Session::start_recorded`]).
    pub fn recorder(&self) -> Option<Recorder> {
        self.recorder.as_ref().map(|r| r.borrow().clone())
    }

    /// [`Session::start`], writing the session file to `out` (Format 18.8;
    /// the header is written before this returns).
    pub fn start_to_file(
        pack: &Opened,
        options: &Options,
        out: &Path,
    ) -> Result<Session, StartError> {
        let writer = SessionWriter::create(out)?;
        Session::start_inner(pack, options, None, Some(writer), false)
    }

    /// Starts a session whose proposals come from `runtime` (an adapter).
    pub fn start_with(
        pack: &Opened,
        options: &Options,
        runtime: Box<dyn Runtime>,
        out: Option<&Path>,
    ) -> Result<Session, StartError> {
        let writer = match out {
            Some(p) => Some(SessionWriter::create(p)?),
            None => None,
        };
        Session::start_inner(pack, options, Some(runtime), writer, false)
    }

    /// How many messages a started session has room for before its
    /// vectors first grow (the opening and seven turns).
    const START_MESSAGES: usize = 16;

    fn start_inner(
        pack: &Opened,
        options: &Options,
        runtime: Option<Box<dyn Runtime>>,
        writer: Option<SessionWriter>,
        record: bool,
    ) -> Result<Session, StartError> {
        let (mut engine, rt, header) = match from_ir(pack, options) {
            Some(started) => started,
            None => pack
                .parsed
                .scope(|| from_bundle(pack, options))
                .map(|(e, rt, h)| (e, rt, Header::Built(h)))?,
        };
        engine.share_templates(rt.templates.clone());
        let opening = choose_opening(&engine, options)?;
        let rules = runtime.is_none();
        let runtime = runtime.unwrap_or_else(|| Box::new(RulesRuntime::new(rt.clone())));
        let scratch = Scratch::new(&engine.ir);
        // Room for the first turns: a session's vectors then do not
        // reallocate (and copy every state) while it is short.
        engine.session.messages.reserve(Self::START_MESSAGES);
        engine.session.index.reserve(Self::START_MESSAGES);
        let mut s = Session {
            engine,
            rt,
            runtime,
            rules,
            kind: options.runtime,
            states: PathVec::with_capacity(Self::START_MESSAGES),
            rolls: PathVec::with_capacity(Self::START_MESSAGES),
            current: None,
            turns: PathVec::new(),
            stopped: false,
            fake_turns: 0,
            scratch,
            writer: writer.unwrap_or_default(),
            header: Arc::new(header),
            recorder: record.then(Default::default),
        };
        if s.kind == RuntimeKind::Fake {
            return Ok(s);
        }
        s.writer.line(&s.header.text())?;
        if let Some(o) = opening {
            s.write_root(o)?;
        }
        Ok(s)
    }

    /// Resumes a recorded session (Format 18.10). `engine` is the session
    /// compiled from its file, already checked against `pack` (17.1);
    /// `header` is the file's header and `text` the file's text, kept byte
    /// for byte (and written to `out` first when given). The recorded
    /// messages are trusted, not proposed again: the state at each is 8.6's
    /// (its recorded firings applied). The resume point is `at`, else the
    /// last message in file order; the next input is its child.
    ///
    /// Refused, with nothing written: a message whose ID is `m<k>` with k
    /// greater than the number of messages, an ID the session would write
    /// later (ORDER at `message:<id>`); an `at` that is not a message
    /// (UNKNOWN_REF at `at`).
    pub fn resume(
        pack: &Opened,
        mut engine: Engine,
        header: Value,
        text: String,
        at: Option<&str>,
        runtime: Option<Box<dyn Runtime>>,
        out: Option<&Path>,
    ) -> Result<Session, StartError> {
        // The IDs this session will write, m<N+1>, m<N+2>, …, must be new.
        let n = engine.session.messages.len();
        if let Some(e) = taken_id(engine.session.messages.iter().map(|m| &*m.id), n) {
            return Err(e);
        }
        let point = resume_point(&engine, at)?;
        let rt = runtime_ir(pack, &engine, &header)?;
        engine.share_templates(rt.templates.clone());
        // The state at every message, as a session that wrote them keeps
        // it: the roll counter of its own step (11.5) and the state with its
        // recorded firings applied.
        let mut scratch = Scratch::new(&engine.ir);
        let mut states: Vec<State> = Vec::with_capacity(n.max(Self::START_MESSAGES));
        let mut rolls = Vec::with_capacity(n.max(Self::START_MESSAGES));
        for m in 0..n {
            let base = match engine.session.messages[m].parent {
                Some(p) => states[p as usize].clone(),
                None => engine.initial().clone(),
            };
            let (r, st) = step_recorded(&mut engine, &mut scratch, base, m as u32);
            rolls.push(r);
            states.push(st);
        }
        let writer = SessionWriter::resumed(text, out)?;
        let rules = runtime.is_none();
        let runtime = runtime.unwrap_or_else(|| Box::new(RulesRuntime::new(rt.clone())));
        let mut s = Session {
            scratch: Scratch::new(&engine.ir),
            engine,
            rt,
            runtime,
            rules,
            kind: RuntimeKind::Rules,
            states: states.into(),
            rolls: rolls.into(),
            current: None,
            turns: PathVec::new(),
            stopped: false,
            fake_turns: 0,
            writer,
            header: Arc::new(Header::Built(header)),
            recorder: None,
        };
        if let Some(m) = point {
            s.settle(m);
        }
        Ok(s)
    }

    /// Makes recorded message `m` the current one, as a resumed session's
    /// resume point (Format 18.10).
    fn settle(&mut self, m: u32) {
        let id = self.engine.session.messages[m as usize].id.clone();
        self.go_to(&id);
        // A safety stop at the input leaves it without a reply (19.4);
        // so does a turn no rule answers, which is not a stop: the
        // input's own verdict tells them apart.
        let ms = &self.engine.session.messages;
        let player =
            matches!(ms[m as usize].author, Who::Cast(c) if self.engine.ir.players.contains(&c));
        let answered = ms.iter().any(|x| x.parent == Some(m));
        if player && !answered {
            let text = self.render(m).unwrap_or_default();
            self.stopped =
                self.rt.safety.verdict(&text, false).status == super::safety::Status::Stop;
        }
    }

    /// Appends recorded messages to this session, as if its file had been
    /// resumed with `lines` after its own (Format 18.10): `lines` are the
    /// message lines, each with its text (without its `\n`) and value,
    /// already checked against the pack as resume checks a file; `lower`
    /// lowers one against the session so far. Each message's state is
    /// computed from its parent's as resume computes it (its recorded
    /// firings applied), stepping only these messages; the lines are written
    /// to the session file; the resume point is then `at`, else the last
    /// message in file order. Returns how many messages were appended.
    ///
    /// Refused, with the session unchanged: an ID the session would write
    /// later (ORDER at `message:<id>`), an `at` that is not a message
    /// (UNKNOWN_REF at `at`), a line that does not lower (INTERNAL). Not
    /// for the fake runtime's session (it keeps no messages).
    pub fn append_recorded(
        &mut self,
        lines: &[(&str, Value)],
        lower: &mut dyn FnMut(
            &crate::compile::StoryIr,
            &SessionIr,
            &Value,
        ) -> Result<MessageIr, String>,
        at: Option<&str>,
    ) -> Result<usize, StartError> {
        let before = self.engine.session.messages.len();
        let n = before + lines.len();
        let ids = lines.iter().filter_map(|(_, v)| crate::model::id_of(v));
        if let Some(e) = taken_id(ids, n) {
            return Err(e);
        }
        for (_, v) in lines {
            let msg = match lower(&self.engine.ir, &self.engine.session, v) {
                Ok(msg) => msg,
                Err(e) => {
                    self.truncate_messages(before);
                    return Err(refuse(Code::Internal, "", format!("cannot compile: {e}")));
                }
            };
            let base = match msg.parent {
                Some(p) => self.states[p as usize].clone(),
                None => self.engine.initial().clone(),
            };
            let ix = self.engine.session.messages.len() as u32;
            self.engine.session.index.insert(msg.id.clone(), ix);
            self.engine.session.messages.push(msg);
            let (r, st) = step_recorded(&mut self.engine, &mut self.scratch, base, ix);
            self.rolls.push(r);
            self.states.push(st);
        }
        let point = match resume_point(&self.engine, at) {
            Ok(p) => p,
            Err(e) => {
                self.truncate_messages(before);
                return Err(e);
            }
        };
        for (text, _) in lines {
            self.writer.line(text)?;
        }
        if let Some(m) = point {
            self.settle(m);
        }
        Ok(lines.len())
    }

    /// Drops the messages from index `len` on, with their states.
    fn truncate_messages(&mut self, len: usize) {
        while self.engine.session.messages.len() > len {
            if let Some(m) = self.engine.session.messages.pop() {
                self.engine.session.index.remove(&m.id);
            }
        }
        while self.states.len() > len {
            self.states.pop();
        }
        while self.rolls.len() > len {
            self.rolls.pop();
        }
    }

    /// Starts a session that keeps no session text (the root of a search,
    /// Format 20.5); otherwise [`Session::start`].
    pub fn start_discarding(pack: &Opened, options: &Options) -> Result<Session, StartError> {
        Session::start_inner(pack, options, None, Some(SessionWriter::discard()), false)
    }

    /// A copy of this session that goes on on its own: the next turn of
    /// the copy is the next turn of a session that played the same inputs
    /// (the same message IDs, states and firings), and nothing it does
    /// touches this one. The compiled parts are shared; the messages and
    /// their states are shared up to the last [`Session::share_path`] and
    /// copied after it (so a fork of a session that shared its path costs
    /// O(1), whatever its length); the copy keeps no session text and
    /// records nothing. `None` under an adapter or the fake runtime (only
    /// the rules runtime is copied). The search of Format 20.5 branches
    /// with it.
    pub fn fork(&self) -> Option<Session> {
        if !self.rules || self.kind != RuntimeKind::Rules {
            return None;
        }
        Some(Session {
            engine: self.engine.fork(),
            rt: self.rt.clone(),
            runtime: Box::new(RulesRuntime::new(self.rt.clone())),
            rules: true,
            kind: self.kind,
            states: self.states.clone(),
            rolls: self.rolls.clone(),
            current: self.current,
            turns: self.turns.clone(),
            stopped: self.stopped,
            fake_turns: self.fake_turns,
            scratch: Scratch::new(&self.engine.ir),
            writer: SessionWriter::discard(),
            header: self.header.clone(),
            recorder: None,
        })
    }

    /// Makes the messages written so far, the state at each and the turns
    /// shared with the forks made from now on (Format 20.5): they are moved
    /// into immutable parts that a fork shares instead of copying. What the
    /// session reads and does is unchanged.
    pub fn share_path(&mut self) {
        self.engine.session.freeze();
        self.states.freeze();
        self.rolls.freeze();
        self.turns.freeze();
    }

    /// Frees what the session keeps only to take its next turn faster (the
    /// activations of its derived variables, made again on the next turn):
    /// a session waiting in the search of Format 20.5 then holds its
    /// messages and states and nothing that grows with the story's rules.
    pub fn release_scratch(&mut self) {
        self.scratch.release();
    }

    /// About how many bytes this session holds of its own beyond what its
    /// forks share (the compiled story, and the path up to the last
    /// [`Session::share_path`]): the messages written since, the state at
    /// each, and the session itself. The search of Format 20.5 counts it
    /// for every session it keeps, to stop with LIMIT before its memory
    /// bound is exceeded (and keeps counting a kept session's own part
    /// while its forks share it).
    pub fn held_bytes(&self) -> usize {
        use std::mem::size_of;
        let states: usize = self
            .states
            .own()
            .iter()
            .map(|s| {
                size_of::<State>()
                    + s.slots.len() * size_of::<crate::compile::Val>()
                    + s.present.len()
                    + s.in_round.len()
                    + s.fired.len()
            })
            .sum();
        let messages: usize = self
            .engine
            .session
            .messages
            .own()
            .iter()
            .map(|m| {
                // The message, its ID, its index entry and tree link.
                size_of::<MessageIr>()
                    + 2 * m.id.len()
                    + 64
                    + m.changes.len() * size_of::<crate::compile::ir::ChangeIr>()
                    + m.firings.len() * size_of::<Fired>()
                    + m.parts.len() * size_of::<crate::compile::ir::PartIr>()
            })
            .sum();
        size_of::<Session>()
            + states
            + messages
            + (self.rolls.own().len() + self.turns.own().len()) * size_of::<u64>()
    }

    /// Whether the session has stopped on a safety `stop` (Format 19.4).
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// The number of messages written so far (their IDs are `m1` … `mN`).
    pub fn message_count(&self) -> usize {
        self.engine.session.messages.len()
    }

    /// The compiled story and its messages so far.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The session file's text so far (Format 18.8).
    pub fn session_text(&self) -> &str {
        self.writer.text()
    }

    /// The header written on line 1.
    pub fn header(&self) -> &Value {
        self.header.value()
    }

    /// The current message's ID (the last message of the last turn, or the
    /// root); `None` before the first message.
    pub fn current_id(&self) -> Option<&str> {
        self.current
            .and_then(|m| self.engine.session.messages.get(m as usize))
            .map(|m| &*m.id)
    }

    /// The current message's index in the session (`None` before the
    /// first message).
    pub fn current_index(&self) -> Option<u32> {
        self.current
    }

    /// The state at the current message (the initial state before any).
    pub fn state(&self) -> &State {
        match self.current {
            Some(m) => &self.states[m as usize],
            None => self.engine.initial(),
        }
    }

    /// The flattened state at the current message, in state order (18.6).
    pub fn flattened(&self) -> Map<String, Value> {
        self.engine.flatten(self.state())
    }

    /// The flattened state with only the visible variables (Format 8.1
    /// `visibility`; scene entries included).
    pub fn visible_state(&self) -> Map<String, Value> {
        let hidden: Vec<&str> = self
            .engine
            .ir
            .vars
            .iter()
            .filter(|v| v.hidden)
            .map(|v| &*v.name)
            .collect();
        self.flattened()
            .into_iter()
            .filter(|(k, _)| {
                !hidden
                    .iter()
                    .any(|h| k == h || k.strip_prefix(*h).is_some_and(|r| r.starts_with('.')))
            })
            .collect()
    }

    /// The root a run wrote (its ID, the author's display name and its
    /// rendered text), if any.
    pub fn root_text(&self) -> Option<(String, String, String)> {
        let msg = self.engine.session.messages.first()?;
        if msg.parent.is_some() {
            return None;
        }
        let text = self.render(0).unwrap_or_default();
        Some((msg.id.to_string(), self.display(msg.author), text))
    }

    /// The display name of the first player (who says every input).
    pub fn player_name(&self) -> String {
        let p = self.engine.ir.players.first().copied().unwrap_or(0);
        self.display(Who::Cast(p))
    }

    /// The display name of the author of message `id`.
    pub fn author_name(&self, id: &str) -> String {
        self.engine
            .session
            .find(id)
            .and_then(|m| self.engine.session.messages.get(m as usize))
            .map_or_else(String::new, |m| self.display(m.author))
    }

    /// The rendered text of message `id` at its own state (Format 10.5).
    pub fn message_text(&self, id: &str) -> Option<String> {
        self.render(self.engine.session.find(id)?)
    }

    fn display(&self, w: Who) -> String {
        match w {
            Who::Narrator => self.engine.ir.narrator.to_string(),
            Who::Cast(c) => self
                .engine
                .ir
                .cast
                .get(c as usize)
                .map_or_else(String::new, |m| m.display.to_string()),
        }
    }

    /// True when no more turns are taken: the story ended (9.3) at the
    /// current message, or a safety stop.
    pub fn is_over(&self) -> bool {
        self.stopped || self.state().ending.is_some()
    }

    /// The rubric score at the current message (Format 19.6); `None`
    /// without a rubric.
    pub fn score(&self) -> Option<super::Score> {
        let criteria = self.rt.rubric.as_ref()?;
        let point = crate::engine::Point {
            ir: &self.engine.ir,
            session: Some(&self.engine.session),
            char: None,
        };
        let mut rec = self.recorder.as_ref().map(|r| r.borrow_mut());
        let obs = rec.as_deref_mut().map(|r| r as &mut dyn Observer);
        Some(super::rubric::score(&point, criteria, self.state(), obs))
    }

    /// Undo (Format 18.4, 20): the next input becomes a sibling of the last
    /// input on the current path; nothing written is lost. Returns false
    /// when there is no turn to undo.
    pub fn undo(&mut self) -> bool {
        let Some(m_in) = self.turns.pop() else {
            return false;
        };
        self.current = self.engine.session.messages[m_in as usize].parent;
        self.stopped = false;
        true
    }

    /// Makes message `id` the current message, so the next input is its
    /// child (a recorded branch re-played, Format 21.5); the turns on its
    /// path become the ones `undo` takes back. False when there is no such
    /// message.
    pub fn go_to(&mut self, id: &str) -> bool {
        let Some(m) = self.engine.session.find(id) else {
            return false;
        };
        let players = &self.engine.ir.players;
        let mut turns = Vec::new();
        let mut at = Some(m);
        while let Some(x) = at {
            let msg = &self.engine.session.messages[x as usize];
            if msg.parent.is_some() && matches!(msg.author, Who::Cast(c) if players.contains(&c)) {
                turns.push(x);
            }
            at = msg.parent;
        }
        turns.reverse();
        self.turns = turns.into();
        self.current = Some(m);
        self.stopped = false;
        true
    }

    /// The ID the next message written will get (Format 18.4: `m<n>`).
    pub fn next_message_id(&self) -> String {
        self.next_id()
    }

    /// The state at message `id` of this session, if it exists.
    pub fn state_of(&self, id: &str) -> Option<&State> {
        let m = self.engine.session.find(id)?;
        self.states.get(m as usize)
    }

    pub(crate) fn next_id(&self) -> String {
        format!("m{}", self.engine.session.messages.len() + 1)
    }

    /// Adds a message at the end of the session, computes its state from
    /// its parent's (changes, derived variables, no firings yet) and
    /// returns its index.
    pub(crate) fn push(&mut self, msg: MessageIr) -> u32 {
        let parent = msg.parent;
        let ix = self.engine.session.messages.len() as u32;
        self.engine.session.index.insert(msg.id.clone(), ix);
        self.engine.session.messages.push(msg);
        let mut st = match parent {
            Some(p) => self.states[p as usize].clone(),
            None => self.engine.initial().clone(),
        };
        let rolls = step_observed(
            &self.engine.ir,
            &self.engine.session,
            &mut st,
            ix,
            &mut self.scratch,
            self.recorder
                .as_mut()
                .map(|r| r.get_mut() as &mut dyn Observer),
        );
        self.rolls.push(rolls);
        self.states.push(st);
        ix
    }

    /// Evaluates 9.2 at message `m` and records its firings.
    pub(crate) fn fire(&mut self, m: u32) -> Vec<Fired> {
        let mi = m as usize;
        let st = &mut self.states[mi];
        let mut obs = self
            .recorder
            .as_mut()
            .map(|r| r.get_mut() as &mut dyn Observer);
        let firings = evaluate_observed(
            &self.engine.ir,
            &self.engine.session,
            st,
            m,
            self.rolls.get(mi).copied().unwrap_or(0),
            &mut self.scratch,
            obs.as_deref_mut(),
        );
        if let Some(o) = obs {
            for f in &firings {
                match f {
                    Fired::Event(i) => o.fired(&self.engine.ir.events[*i as usize].id, false),
                    Fired::Outcome(i) => o.fired(&self.engine.ir.outcomes[*i as usize].id, true),
                }
            }
        }
        self.engine.session.messages[mi].firings = firings.clone();
        // Lore activation at m may read the state its firings changed.
        self.engine.forget_lore_from(m);
        firings
    }

    /// Removes the last message (a reply dropped by a safety verdict).
    pub(crate) fn pop(&mut self) {
        if let Some(m) = self.engine.session.messages.pop() {
            self.engine.session.index.remove(&m.id);
        }
        // Its index may be reused by the next message.
        self.engine
            .forget_lore_from(self.engine.session.messages.len() as u32);
        self.states.pop();
        self.rolls.pop();
    }

    /// The session line of message `m`, with the changes as written.
    pub(crate) fn line_of(&self, m: u32, changes: &[Value]) -> String {
        self.line_with(m, changes, None)
    }

    /// [`Session::line_of`] with the settings a host gave (Format 8.9).
    pub(crate) fn line_with(&self, m: u32, changes: &[Value], settings: Option<&Value>) -> String {
        self.line_full(m, changes, settings, None)
    }

    /// [`Session::line_of`] with why the author was chosen (Format 18.9).
    pub(crate) fn line_chosen(
        &self,
        m: u32,
        changes: &[Value],
        chosen: Option<&super::turn_order::Chosen>,
    ) -> String {
        self.line_full(m, changes, None, chosen)
    }

    fn line_full(
        &self,
        m: u32,
        changes: &[Value],
        settings: Option<&Value>,
        chosen: Option<&super::turn_order::Chosen>,
    ) -> String {
        let ms = &self.engine.session.messages;
        let msg = &ms[m as usize];
        let ir = &self.engine.ir;
        let firings = msg
            .firings
            .iter()
            .map(|f| match f {
                Fired::Event(i) => ("event", ir.events.get(*i as usize).map_or("", |e| &*e.id)),
                Fired::Outcome(i) => (
                    "outcome",
                    ir.outcomes.get(*i as usize).map_or("", |e| &*e.id),
                ),
            })
            .collect();
        let opening_id = match (msg.parent, msg.opening) {
            (None, Some(o)) => ir.openings.get(o as usize).map(|o| &*o.id),
            _ => None,
        };
        MessageLine {
            id: &msg.id,
            parent: msg.parent.map(|p| &*ms[p as usize].id),
            opening: opening_id,
            author: ir.who_id(msg.author),
            chosen: chosen.map(|c| (c.why.as_str(), c.name.as_deref(), c.draw)),
            parts: if opening_id.is_some() {
                Vec::new()
            } else {
                msg.parts.iter().map(|p| &*p.text).collect()
            },
            changes,
            settings,
            firings,
        }
        .to_json()
    }

    fn write_root(&mut self, o: u16) -> Result<(), StartError> {
        let op = &self.engine.ir.openings[o as usize];
        let msg = MessageIr {
            id: Arc::from(self.next_id().as_str()),
            parent: None,
            depth: 0,
            author: op.author,
            hidden: false,
            opening: Some(o),
            changes: Vec::new(),
            firings: Vec::new(),
            parts: op.parts.clone(),
            summary: None,
            time: None,
            settings: None,
            chosen: None,
        };
        let m = self.push(msg);
        self.fire(m);
        self.current = Some(m);
        let line = self.line_of(m, &[]);
        self.writer.line(&line)?;
        Ok(())
    }
}

/// Starts from the pack's compiled scenario (Format 14.4, 18.4: a
/// package's IR, or the pack's own compilation, made once per opened pack):
/// default seating only, so nothing is parsed, checked or lowered. `None`
/// when no compiled scenario covers these settings (header players, another
/// player name, a scenario or preset it does not have): the caller compiles
/// the bundle, which also reports what is wrong with the settings.
fn from_ir(pack: &Opened, options: &Options) -> Option<(Engine, Arc<RuntimeIr>, Header)> {
    if options.header_players.is_some()
        || options
            .player_name
            .as_deref()
            .is_some_and(|n| n != crate::model::session::DEFAULT_PLAYER_NAME)
    {
        return None;
    }
    // Compiled once per opened pack, whatever its form (issue 41).
    let ds = pack.default_scenario(options.scenario.as_deref())?;
    let sc = &ds.ir;
    let ir = &sc.story;
    let preset = options
        .difficulty
        .clone()
        .or_else(|| sc.default_preset.clone());
    if let Some(p) = &preset {
        let known = ir
            .difficulty
            .as_ref()
            .is_some_and(|d| d.presets.iter().any(|(x, _)| **x == **p));
        if !known {
            return None;
        }
    }
    let session = SessionIr {
        seed: options.seed,
        preset: preset_index(ir, preset.as_deref()).ok()?,
        ..SessionIr::default()
    };
    let header = Header::Default {
        value: std::sync::OnceLock::new(),
        scenario: ds.clone(),
        preset,
        seed: options.seed,
    };
    let engine = Engine::from_ir(
        sc.story.clone(),
        session,
        true,
        crate::engine::DEFAULT_STRIDE,
    );
    Some((engine, sc.runtime.clone(), header))
}

/// Starts by checking the header against the bundle and compiling the
/// story (sources, header players, or settings the IR does not cover).
fn from_bundle(
    pack: &Opened,
    options: &Options,
) -> Result<(Engine, Arc<RuntimeIr>, Value), StartError> {
    let bundle = &*pack.bundle;
    if bundle.is_null() {
        // A package's bundle.json is read again only when needed: the file
        // has gone or changed since it was opened (Format 14.4).
        return Err(refuse(
            Code::Io,
            "",
            format!(
                "`{}`: this session needs the package's bundle.json (its seating is not the \
                 compiled default), and the package file no longer holds the bundle.json that \
                 was opened",
                pack.name
            ),
        ));
    }
    let (header, _) = build_header(bundle, options)?;
    // Default players are plain characters: only the header needs
    // checking (a caller's header is checked whole).
    let Some(seating) = pack.seating else {
        return Err(refuse(
            Code::Internal,
            "",
            format!(
                "`{}` was opened without a compiler, and no compiled scenario covers this session",
                pack.name
            ),
        ));
    };
    let c = (seating.start)(bundle, &header, options.header_players.is_none())
        .map_err(StartError::Refused)?;
    let engine = Engine::new(
        c.story,
        c.session,
        c.has_session,
        crate::engine::DEFAULT_STRIDE,
    );
    if engine.ir.players.is_empty() {
        return Err(refuse(
            Code::Seat,
            "header/players",
            format!(
                "scenario `{}` has no players, so it cannot be run",
                engine.ir.scenario
            ),
        ));
    }
    let rt = runtime_ir(pack, &engine, &header)?;
    Ok((engine, rt, header))
}

/// The runtime part of `engine` (its rules, safety and emotion compiled,
/// Format 18), shared by the sessions of `pack` with the same scenario and
/// seating.
fn runtime_ir(
    pack: &Opened,
    engine: &Engine,
    header: &Value,
) -> Result<Arc<RuntimeIr>, StartError> {
    // The runtime part depends on the scenario and its seating only.
    let key = crate::model::seating_key(&engine.ir.scenario, header);
    let cached = pack
        .runtime_cache
        .lock()
        .ok()
        .and_then(|c| c.get(&key).cloned());
    let rt = match cached {
        Some(rt) => rt,
        None => {
            let Some(sc) = pack.scenario(&engine.ir.scenario) else {
                return Err(refuse(
                    Code::Internal,
                    "",
                    format!("the bundle has no scenario `{}`", engine.ir.scenario),
                ));
            };
            let safety = pack
                .safety(&engine.ir.scenario, sc.safety.as_ref())
                .map_err(|e| refuse(Code::Internal, "", e))?;
            let rt = Arc::new(
                RuntimeIr::compile_scenario(&sc, &*engine.ir, &engine.ir, Some(safety))
                    .map_err(|e| refuse(Code::Internal, "", e.0))?,
            );
            if let Ok(mut c) = pack.runtime_cache.lock() {
                c.insert(key, rt.clone());
            }
            rt
        }
    };
    Ok(rt)
}

fn choose_opening(engine: &Engine, options: &Options) -> Result<Option<u16>, StartError> {
    let ir = &engine.ir;
    if let Some(id) = &options.opening {
        return ir
            .openings
            .iter()
            .position(|o| &*o.id == id)
            .map(|i| Some(i as u16))
            .ok_or_else(|| {
                refuse(
                    Code::UnknownRef,
                    "opening",
                    format!(
                        "scenario `{}` has no opening `{id}`{}",
                        ir.scenario,
                        crate::diag::suggest::one_of(id, ir.openings.iter().map(|o| &*o.id))
                    ),
                )
            });
    }
    let group = ir.players.len() >= 2;
    Ok(ir
        .openings
        .iter()
        .enumerate()
        .find(|(_, o)| group || !o.group_only)
        .map(|(i, _)| i as u16))
}

#[cfg(test)]
mod header_tests {
    use super::*;

    /// A default-seating start writes its header from the text its
    /// scenario shares: the same bytes as the header value it builds when
    /// asked for, written whole (Format 18.4, 18.8).
    #[test]
    fn a_default_header_is_written_as_its_value_is() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let pack = crate::open::open(&root.join("examples/packs/everyday-negotiation")).unwrap();
        let ds = pack.default_scenario(None).unwrap();
        for (preset, seed) in [
            (None, 0),
            (Some("hard"), 42),
            (Some("a \"b\" \u{e9}\n"), u64::MAX),
        ] {
            let h = Header::Default {
                value: std::sync::OnceLock::new(),
                scenario: ds.clone(),
                preset: preset.map(str::to_string),
                seed,
            };
            let text = h.text();
            assert_eq!(text, troupe_json(h.value()));
            let v = h.value();
            assert_eq!(v["seed"], seed);
            assert_eq!(v.get("difficulty").and_then(Value::as_str), preset);
            let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
            assert_eq!(&keys[..3], ["troupe", "kind", "scenario"]);
            assert_eq!(keys.last(), Some(&"seed"));
        }
    }
}

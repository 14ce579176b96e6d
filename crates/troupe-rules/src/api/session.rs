//! [`Session`]: a story played turn by turn, and [`SessionOptions`].

use std::fmt;
use std::path::PathBuf;

use serde_json::{Map, Value};

use super::error::Result;
use super::history::History;
use super::pack::Pack;
use crate::runtime::{
    self, OpeningResult, Runtime, RuntimeKind, Score, SettingsResult, TurnResult,
};

/// Who would say the next turn's first reply (Format 18.9), as
/// [`Session::next_speaker`] answers: no turn taken.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct NextSpeaker {
    /// The speaker's character ID, or `narrator`.
    pub speaker: String,
    /// The ID the input message would get (`m<n>`, Format 18.4).
    pub input: String,
    /// Why it would be chosen, a Chosen `{why, name?, draw?}` (Format 18.9
    /// "Recording"), as the turn result's `replies[0].chosen` would be.
    pub chosen: Value,
}

/// Which runtime proposes replies and changes (Format 18.7).
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// use troupe::{Pack, RuntimeChoice, SessionOptions};
/// let pack = Pack::open("examples/packs/everyday-negotiation")?;
/// let mut fake = pack.start(SessionOptions::default().runtime(RuntimeChoice::Fake))?;
/// assert!(fake.turn("Hello").is_ok());
/// # Ok::<(), troupe::Error>(())
/// ```
#[derive(Default)]
#[non_exhaustive]
pub enum RuntimeChoice {
    /// The rules runtime (the default): the pack's declarative rules.
    #[default]
    Rules,
    /// The seed's structural test double: writes and evaluates nothing.
    Fake,
    /// An adapter: any [`Runtime`] (a model, a script, a test double).
    Adapter(Box<dyn Runtime>),
}

impl fmt::Debug for RuntimeChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeChoice::Rules => f.write_str("Rules"),
            RuntimeChoice::Fake => f.write_str("Fake"),
            RuntimeChoice::Adapter(r) => write!(f, "Adapter({:?})", r.name()),
        }
    }
}

/// The settings of a session (Format 18.4). Every field has a default, so
/// `SessionOptions::default()` starts the first scenario with seed 0, its
/// default difficulty and its first opening, under the rules runtime.
///
/// Fields are public (a binding maps keyword arguments onto them one to
/// one); the builder methods of the same names set one each.
///
/// ```
/// use troupe::SessionOptions;
/// let options = SessionOptions::default()
///     .scenario("used_car_negotiation")
///     .seed(42)
///     .difficulty("hard");
/// assert_eq!(options.seed, 42);
/// ```
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct SessionOptions {
    /// The scenario; `None`: the bundle's first scenario.
    pub scenario: Option<String>,
    /// The generator seed (Format 11.5).
    pub seed: u64,
    /// The difficulty preset (Format 19.5); `None`: the scenario's default.
    pub difficulty: Option<String>,
    /// The opening (Format 6.3); `None`: the first one offered.
    pub opening: Option<String>,
    /// The header's `players` (Format 12.3, a JSON array of `{seat?,
    /// character, name?}`): the seats they fill; every other seat is filled
    /// with a default player (Format 18.4). `None`: every seat default.
    pub players: Option<Value>,
    /// The header's `characters` to go with `players` (a JSON array).
    pub characters: Option<Value>,
    /// The default players' display name (`{{user}}`; `None`: `Player`).
    pub player_name: Option<String>,
    /// Which runtime proposes.
    pub runtime: RuntimeChoice,
    /// Also write the session file here as it grows (Format 18.8); the
    /// header is written before [`Pack::start`] returns.
    pub out: Option<PathBuf>,
}

impl SessionOptions {
    /// Sets [`SessionOptions::scenario`].
    pub fn scenario(mut self, id: impl Into<String>) -> Self {
        self.scenario = Some(id.into());
        self
    }
    /// Sets [`SessionOptions::seed`].
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
    /// Sets [`SessionOptions::difficulty`].
    pub fn difficulty(mut self, preset: impl Into<String>) -> Self {
        self.difficulty = Some(preset.into());
        self
    }
    /// Sets [`SessionOptions::opening`].
    pub fn opening(mut self, id: impl Into<String>) -> Self {
        self.opening = Some(id.into());
        self
    }
    /// Sets [`SessionOptions::players`] and [`SessionOptions::characters`].
    pub fn players(mut self, players: Value, characters: Option<Value>) -> Self {
        self.players = Some(players);
        self.characters = characters;
        self
    }
    /// Sets [`SessionOptions::player_name`].
    pub fn player_name(mut self, name: impl Into<String>) -> Self {
        self.player_name = Some(name.into());
        self
    }
    /// Sets [`SessionOptions::runtime`].
    pub fn runtime(mut self, runtime: RuntimeChoice) -> Self {
        self.runtime = runtime;
        self
    }
    /// Sets [`SessionOptions::runtime`] to an adapter.
    pub fn adapter(self, runtime: impl Runtime + 'static) -> Self {
        self.runtime(RuntimeChoice::Adapter(Box::new(runtime)))
    }
    /// Sets [`SessionOptions::out`].
    pub fn out(mut self, path: impl Into<PathBuf>) -> Self {
        self.out = Some(path.into());
        self
    }
}

/// How a saved session is resumed (Format 18.10): where, under which
/// runtime, and where its file goes on. `ResumeOptions::default()` resumes
/// at the last message in file order under the rules runtime, in memory.
///
/// ```
/// use troupe::ResumeOptions;
/// let options = ResumeOptions::default().at("m3");
/// assert_eq!(options.at.as_deref(), Some("m3"));
/// ```
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct ResumeOptions {
    /// The resume point: the next input is its child (an earlier message
    /// starts a branch); `None`: the last message in file order.
    pub at: Option<String>,
    /// Which runtime proposes from now on ([`RuntimeChoice::Fake`] is
    /// refused: it writes nothing).
    pub runtime: RuntimeChoice,
    /// Also write the session file here (created or truncated): the
    /// resumed file's lines first, then each new line as it is written.
    pub out: Option<PathBuf>,
}

impl ResumeOptions {
    /// Sets [`ResumeOptions::at`].
    pub fn at(mut self, id: impl Into<String>) -> Self {
        self.at = Some(id.into());
        self
    }
    /// Sets [`ResumeOptions::runtime`].
    pub fn runtime(mut self, runtime: RuntimeChoice) -> Self {
        self.runtime = runtime;
        self
    }
    /// Sets [`ResumeOptions::out`].
    pub fn out(mut self, path: impl Into<PathBuf>) -> Self {
        self.out = Some(path.into());
        self
    }
}

/// A session being played (Format 18): each [`Session::turn`] steps the
/// story once, and the session file grows line by line ([`Session::jsonl`]).
///
/// `Send`: a session can move to another thread (a server, a Python
/// object); it is not `Sync` (one turn at a time).
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// use troupe::{Pack, SessionOptions};
/// let pack = Pack::open("examples/packs/everyday-negotiation")?;
/// let mut session = pack.start(SessionOptions::default())?;
/// let first = session.current_id().map(str::to_string);
/// let turn = session.turn("I can offer 7,000 cash today.")?;
/// assert_eq!(turn.turn, 1);
/// assert!(turn.reply.is_some());
/// assert!(session.undo());
/// assert_eq!(session.current_id().map(str::to_string), first);
/// assert!(session.jsonl().starts_with("{\"troupe\":\"0.1\""));
/// # Ok::<(), troupe::Error>(())
/// ```
pub struct Session {
    pub(super) inner: runtime::Session,
    /// The checks of the lines read so far, for [`Session::append_lines`]
    /// (made by its first call).
    follow: Option<Box<Follow>>,
}

/// What [`Session::append_lines`] keeps between calls: the checker of the
/// session's lines (Format 12) and how much of the session file it has read.
struct Follow {
    checker: crate::check::session::SessionChecker,
    /// Bytes of the session text read.
    bytes: usize,
    /// Lines read, the header included.
    lines: u32,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("current", &self.inner.current_id())
            .field("over", &self.inner.is_over())
            .finish_non_exhaustive()
    }
}

impl Session {
    pub(crate) fn start(pack: &Pack, options: SessionOptions) -> Result<Session> {
        let (kind, adapter) = match options.runtime {
            RuntimeChoice::Rules => (RuntimeKind::Rules, None),
            RuntimeChoice::Fake => (RuntimeKind::Fake, None),
            RuntimeChoice::Adapter(r) => (RuntimeKind::Rules, Some(r)),
        };
        let opts = runtime::Options {
            scenario: options.scenario,
            difficulty: options.difficulty,
            seed: options.seed,
            opening: options.opening,
            runtime: kind,
            header_players: options.players.map(|p| (p, options.characters)),
            leave_unfilled: false,
            player_name: options.player_name,
        };
        let opened = pack.opened();
        let inner = match (adapter, &options.out) {
            (None, None) => runtime::Session::start(opened, &opts)?,
            (None, Some(out)) => runtime::Session::start_to_file(opened, &opts, out)?,
            (Some(r), out) => runtime::Session::start_with(opened, &opts, r, out.as_deref())?,
        };
        Ok(Session {
            inner,
            follow: None,
        })
    }

    pub(crate) fn resume(pack: &Pack, jsonl: &str, options: ResumeOptions) -> Result<Session> {
        let runtime = match options.runtime {
            RuntimeChoice::Rules => None,
            RuntimeChoice::Fake => {
                return Err(super::Error::new(
                    super::ErrorKind::Refused,
                    "the fake runtime writes nothing, so it cannot go on with a session file (Format 18.7, 18.10)",
                ))
            }
            RuntimeChoice::Adapter(r) => Some(r),
        };
        let engine = pack.history(jsonl)?.into_engine();
        // The header is line 1 (Format 12.2); the check above read it.
        let header = jsonl
            .lines()
            .find(|l| !l.trim().is_empty())
            .and_then(|l| serde_json::from_str::<Value>(l).ok())
            .unwrap_or_default();
        let inner = runtime::Session::resume(
            pack.opened(),
            engine,
            header,
            jsonl.to_string(),
            options.at.as_deref(),
            runtime,
            options.out.as_deref(),
        )?;
        Ok(Session {
            inner,
            follow: None,
        })
    }

    /// Goes on with lines another writer appended to this session's file
    /// (Format 18.10): the session becomes the one [`Pack::resume_with`]
    /// gives for this session's file followed by `lines`, resumed at `at`
    /// (`None`: the last message in file order), byte for byte — its
    /// [`Session::jsonl`] is the two texts together — while only the new
    /// messages are checked and stepped. `lines` are whole message lines
    /// (the last may lack its `\n`; empty: no line, the resume point only
    /// moves); `pack` is the pack the session was started or resumed with.
    /// Returns how many messages were appended.
    ///
    /// The lines get the checks resume gives them (Format 2.1, 12, 16,
    /// 17.1: each line one JSON object, the file within 64 MiB, each
    /// message checked against the story and its path): the first call
    /// reads the session's own lines once (a check, no step), later calls
    /// only the lines written since. The session runtime goes on unchanged.
    ///
    /// ```
    /// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    /// use troupe::{Pack, SessionOptions};
    /// let pack = Pack::open("examples/packs/everyday-negotiation")?;
    /// let mut here = pack.start(SessionOptions::default().seed(7))?;
    /// let mut there = pack.resume(here.jsonl())?;
    /// there.turn("Hello Marco!")?;
    /// let new_lines = &there.jsonl()[here.jsonl().len()..];
    /// assert_eq!(here.append_lines(&pack, new_lines, None)?, 2);
    /// assert_eq!(here.jsonl(), there.jsonl());
    /// assert_eq!(here.state(), there.state());
    /// # Ok::<(), troupe::Error>(())
    /// ```
    ///
    /// Errors, with the session unchanged: [`ErrorKind::Invalid`] with the
    /// diagnostics resume would give for these lines (`troupe check`'s);
    /// [`ErrorKind::Refused`] with ORDER when a line's ID is one the
    /// session would write later, UNKNOWN_REF at `at` when `at` is not a
    /// message, or under the fake runtime; [`ErrorKind::Io`] when the
    /// session's `out` file cannot be written (the session then holds the
    /// messages, its text only the lines written before the failure).
    ///
    /// [`ErrorKind::Invalid`]: super::ErrorKind::Invalid
    /// [`ErrorKind::Refused`]: super::ErrorKind::Refused
    /// [`ErrorKind::Io`]: super::ErrorKind::Io
    pub fn append_lines(&mut self, pack: &Pack, lines: &str, at: Option<&str>) -> Result<usize> {
        if self.inner.kind == RuntimeKind::Fake {
            return Err(super::Error::new(
                super::ErrorKind::Refused,
                "the fake runtime keeps no messages, so it cannot go on with recorded ones (Format 18.7, 18.10)",
            ));
        }
        let result = self.append_checked(pack, lines, at);
        if result.is_err() {
            // The checker has read lines the session did not take: it is
            // made again by the next call.
            self.follow = None;
        }
        result
    }

    fn append_checked(&mut self, pack: &Pack, lines: &str, at: Option<&str>) -> Result<usize> {
        use crate::diag::render::Sources;
        const FILE: &str = "session";
        let text = self.inner.session_text();
        let follow = match &mut self.follow {
            Some(f) => f,
            None => {
                let checker = pack.lines_checker(self.inner.header()).ok_or_else(|| {
                    super::Error::new(
                        super::ErrorKind::Refused,
                        "the session's scenario is not one of this pack's: append lines with the pack the session was started or resumed with",
                    )
                })?;
                self.follow.insert(Box::new(Follow {
                    checker,
                    bytes: 0,
                    lines: 0,
                }))
            }
        };
        // The session's own lines since the checker last read: written by
        // the session (or checked when appended), they are read for the
        // facts of their paths.
        let mut sink = Vec::new();
        for raw in text
            .get(follow.bytes..)
            .unwrap_or_default()
            .split_inclusive('\n')
        {
            follow.bytes += raw.len();
            follow.lines += 1;
            if follow.lines == 1 {
                continue;
            }
            if let Ok(v) = serde_json::from_str::<Value>(raw.trim_end_matches(['\n', '\r'])) {
                follow.checker.message(&v, follow.lines, &mut sink);
            }
        }
        let (docs, mut diags) =
            crate::load::session::parse_appended(FILE, follow.lines, text.len(), lines.as_bytes());
        // As a whole file is checked: the lines that parsed are checked
        // even when another did not.
        let appended = crate::load::SessionDoc::from_documents(FILE, None, docs.clone());
        diags.extend(crate::check::run::check_appended(
            &mut follow.checker,
            &appended,
        ));
        if diags.iter().any(crate::diag::Diagnostic::is_error) {
            let mut sources = Sources::new();
            sources.add(FILE, format!("{text}{lines}").into());
            return Err(super::Error::invalid(diags, sources));
        }
        let body = lines.strip_suffix('\n').unwrap_or(lines);
        let raws = if lines.is_empty() {
            None
        } else {
            Some(body.split('\n'))
        };
        let recorded: Vec<(&str, Value)> = raws
            .into_iter()
            .flatten()
            .zip(docs)
            .map(|(raw, doc)| (raw, doc.value))
            .collect();
        let checker = &follow.checker;
        let n = self.inner.append_recorded(
            &recorded,
            &mut |ir, so_far, v| {
                crate::compile::session::lower_appended(checker.story(), ir, so_far, v)
                    .map_err(|e| e.0)
            },
            at,
        )?;
        // The lines now in the session's text were read above.
        follow.bytes = self.inner.session_text().len();
        follow.lines += n as u32;
        Ok(n)
    }

    /// One turn (Format 18.5): `text` said by the first player. The result
    /// serializes to the turn document of `troupe run --json` (Format
    /// 18.6, `schemas/output/run.schema.json`).
    ///
    /// Errors: [`ErrorKind::Ended`](crate::ErrorKind::Ended) once the session has ended;
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) when the session file cannot be written.
    pub fn turn(&mut self, text: &str) -> Result<TurnResult> {
        Ok(self.inner.turn(text)?)
    }

    /// One turn whose responder the host names (Format 18.9, the `manual`
    /// turn order; any strategy takes it): `character` answers `text`, said
    /// by the first player.
    ///
    /// Errors: [`ErrorKind::Refused`](crate::ErrorKind::Refused) when `character` is not a speaker at
    /// the input message (not present, muted, a player or not in the cast;
    /// nothing is written); otherwise as [`Session::turn`].
    pub fn turn_to(&mut self, character: &str, text: &str) -> Result<TurnResult> {
        Ok(self.inner.turn_to(character, text)?)
    }

    /// One turn with `text` said by the player whose character ID is
    /// `player` (Format 18.9).
    ///
    /// Errors: [`ErrorKind::Refused`](crate::ErrorKind::Refused) when
    /// `player` is not the character ID of one of the session's players
    /// (nothing is written); otherwise as [`Session::turn`].
    pub fn turn_as(&mut self, player: &str, text: &str) -> Result<TurnResult> {
        Ok(self.inner.turn_as(player, text)?)
    }

    /// The session's host changes the difficulty settings from now on
    /// (Format 8.9). `settings` is `{"difficulty"?: preset id, "knobs"?:
    /// {knob id: number}}`: the preset with all its knob values, then the
    /// knob values given. A settings message by the narrator is written
    /// after the current message and events and outcomes are evaluated at
    /// it; conditions evaluated from then on (events, outcomes, rules,
    /// derived variables, `emotion`, scores) read `difficulty.preset` and
    /// `difficulty.<knob>` anew, while variables (one that started at a
    /// knob included) and firings already recorded keep their values.
    /// The change follows branches: [`Session::undo`] past it, or
    /// [`Session::go_to`] a message before it, leaves it off the path.
    ///
    /// ```
    /// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    /// use troupe::{Pack, SessionOptions};
    /// let pack = Pack::open("examples/packs/everyday-negotiation")?;
    /// let mut s = pack.start(SessionOptions::default())?;
    /// let change = s.change_settings(&serde_json::json!({"difficulty": "hard"}))?;
    /// assert_eq!(change.message.as_deref(), Some("m2"));
    /// assert_eq!(s.state()["patience"], 60); // the variable keeps its value
    /// # Ok::<(), troupe::Error>(())
    /// ```
    ///
    /// Errors, with nothing written: [`ErrorKind::Refused`] with
    /// SETTINGS_INVALID, SETTINGS_NOT_DECLARED or UNKNOWN_FIELD
    /// diagnostics at `settings/…`; [`ErrorKind::Ended`] once the session
    /// has ended; [`ErrorKind::Io`] when the session file cannot be
    /// written. Under the fake runtime nothing is written.
    ///
    /// [`ErrorKind::Refused`]: super::ErrorKind::Refused
    /// [`ErrorKind::Ended`]: super::ErrorKind::Ended
    /// [`ErrorKind::Io`]: super::ErrorKind::Io
    pub fn change_settings(&mut self, settings: &Value) -> Result<SettingsResult> {
        Ok(self.inner.change_settings(settings)?)
    }

    /// Takes the last turn back (Format 18.4): the next input becomes a
    /// sibling of the last input; nothing written is lost. False when there
    /// is no turn to undo.
    pub fn undo(&mut self) -> bool {
        self.inner.undo()
    }

    /// Makes message `id` the current one, so the next input is its child
    /// (a recorded branch re-played). False when there is no such message.
    pub fn go_to(&mut self, id: &str) -> bool {
        self.inner.go_to(id)
    }

    /// The flattened state at the current message (Format 8.6), in state
    /// order (18.6): every variable, hidden ones included.
    pub fn state(&self) -> Map<String, Value> {
        self.inner.flattened()
    }

    /// [`Session::state`] with only the visible variables (Format 8.1
    /// `visibility`): what a player may be shown.
    pub fn visible_state(&self) -> Map<String, Value> {
        self.inner.visible_state()
    }

    /// True when no more turns are taken: the story ended (Format 9.3) or
    /// the safety policy stopped the session.
    pub fn ended(&self) -> bool {
        self.inner.is_over()
    }

    /// The story's outcome at the current message (Format 9.3), if it
    /// ended by one.
    pub fn outcome(&self) -> Option<String> {
        let engine = self.inner.engine();
        engine
            .ending(self.inner.state())
            .filter(|e| e.outcome)
            .map(|e| e.id)
    }

    /// The rubric score at the current message (Format 19.6); `None`
    /// without a rubric.
    pub fn score(&self) -> Option<Score> {
        self.inner.score()
    }

    /// What the opening root did (its text, firings, whether the story
    /// ended there); `None` without an opening root.
    pub fn opening(&self) -> Option<OpeningResult> {
        self.inner.opening_result()
    }

    /// The session file's text so far (Format 18.8): the header line, then
    /// one line per message.
    pub fn jsonl(&self) -> &str {
        self.inner.session_text()
    }

    /// The header written on line 1 (Format 12.2).
    pub fn header(&self) -> &Value {
        self.inner.header()
    }

    /// The current message's ID (the last message of the last turn, or the
    /// root); `None` before the first message.
    pub fn current_id(&self) -> Option<&str> {
        self.inner.current_id()
    }

    /// The rendered text of message `id` at its own state (Format 10.5).
    pub fn message_text(&self, id: &str) -> Option<String> {
        self.inner.message_text(id)
    }

    /// The display name of the author of message `id`.
    pub fn author_name(&self, id: &str) -> String {
        self.inner.author_name(id)
    }

    /// Who would say the first reply if the first player said `text` now,
    /// under the scene's turn order (Format 18.9 "The first reply"), with
    /// `to` a host's choice as in [`Session::turn_to`]. The turn is not
    /// taken: nothing is written, the session does not change, and the same
    /// session and text always give the same answer (a `natural` draw
    /// reads the ID the input would get). Under the `all` strategy it is
    /// the first candidate (the turn passes over one no rule applies to);
    /// reactions, which depend on the replies' texts, are not foretold.
    ///
    /// ```
    /// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    /// use troupe::{Pack, SessionOptions};
    /// let pack = Pack::open("examples/packs/tenants-meeting")?;
    /// let session = pack.start(SessionOptions::default())?;
    /// let next = session.next_speaker("Ruth, what does the log say?", None)?;
    /// assert_eq!((next.speaker.as_str(), next.chosen["why"].as_str()), ("ruth", Some("addressed")));
    /// assert_eq!(session.jsonl(), pack.start(SessionOptions::default())?.jsonl());
    /// # Ok::<(), troupe::Error>(())
    /// ```
    ///
    /// Errors: [`ErrorKind::Refused`](crate::ErrorKind::Refused) when `to` is not a speaker at the
    /// current message (as the turn would be).
    pub fn next_speaker(&self, text: &str, to: Option<&str>) -> Result<NextSpeaker> {
        let (speaker, chosen) = self.inner.next_speaker(text, to)?;
        Ok(NextSpeaker {
            speaker,
            input: self.inner.next_message_id(),
            chosen: serde_json::to_value(&chosen).unwrap_or(Value::Null),
        })
    }

    /// The session so far as a [`History`], to ask about any of its
    /// messages (checked as a recorded session would be).
    pub fn history(&self, pack: &Pack) -> Result<History> {
        pack.history(self.jsonl())
    }

    /// The runtime session (`internals::runtime::Inner`).
    #[cfg(feature = "internals")]
    pub(crate) fn runtime_session(&self) -> &runtime::Session {
        &self.inner
    }
}

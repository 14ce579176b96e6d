//! [`History`]: a recorded session, asked about message by message — the
//! answers `troupe state`, `knows`, `ended`, `explain` and `render` give.

use serde::Serialize;
use serde_json::{Map, Value};

use super::conditions::CelValue;
use super::error::{Error, ErrorKind, Result};
use super::pack::Pack;
use crate::compile::Who;
use crate::diag::render::Sources;
use crate::diag::{Code, Diagnostic};
use crate::engine::macros::RenderFor;
use crate::engine::{Engine, EntryActivation};

/// A recorded session (Format 12) compiled with its pack: the state, the
/// ending, who knows what and which lore is active, at any message.
///
/// Made by [`Pack::history`] (JSONL text), [`Pack::recorded_history`] (a
/// session the pack carries), [`Pack::initial`] (no messages) or
/// [`crate::Session::history`]. `Send + Sync`; states are recomputed from
/// checkpoints on demand.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// let pack = troupe::Pack::open("examples/packs/harbor-lights")?;
/// let history = pack.recorded_history("inn.jsonl")?;
/// let view = history.state(Some("m3"))?;
/// assert_eq!(view.turn, 1);
/// assert_eq!(view.state["trust.ines"], 50);
/// assert!(!history.ended_at("m3")?.ended);
/// # Ok::<(), troupe::Error>(())
/// ```
#[derive(Debug)]
pub struct History {
    engine: Engine,
}

/// The state at a message, as `troupe state --json` prints it (Format
/// 20.1, `schemas/output/state.schema.json`).
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// let pack = troupe::Pack::open("examples/packs/harbor-lights")?;
/// let view = pack.recorded_history("inn.jsonl")?.state(None)?;
/// assert_eq!((view.at, view.turn, view.ended), (None, 0, false));
/// # Ok::<(), troupe::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct StateView {
    /// The message asked about; `None`: the initial state.
    pub at: Option<String>,
    /// `turn` (Format 8.8) there.
    pub turn: i64,
    /// `round` there.
    pub round: i64,
    /// Whether the story has ended there (Format 9.3).
    pub ended: bool,
    /// The story's outcome there.
    pub outcome: Option<String>,
    /// The flattened state (Format 8.6), in state order.
    pub state: Map<String, Value>,
    /// The settings there (`{"difficulty": preset, "knobs": {knob:
    /// value}}`) when a message on the path changed them (Format 8.9);
    /// `None` (left out of the JSON) otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settings: Option<Value>,
}

/// What ended the story (Format 9.3).
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// let pack = troupe::Pack::open("examples/packs/harbor-lights")?;
/// let history = pack.recorded_history("walkthrough.jsonl")?;
/// let last = history.last_id().unwrap().to_string();
/// if let Some(ending) = history.ended_at(&last)?.ending {
///     assert!(ending.kind == "event" || ending.kind == "outcome");
/// }
/// # Ok::<(), troupe::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Ending {
    /// The ending event's or outcome's ID.
    pub id: String,
    /// `event` or `outcome`.
    pub kind: &'static str,
    /// The message that recorded it.
    pub message: String,
}

/// Whether the story has ended at a message, as `troupe ended --json`
/// prints it (`schemas/output/ended.schema.json`).
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// let pack = troupe::Pack::open("examples/packs/harbor-lights")?;
/// let view = pack.recorded_history("inn.jsonl")?.ended_at("m2")?;
/// assert_eq!(serde_json::to_value(&view).unwrap()["ended"], false);
/// # Ok::<(), troupe::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct EndedView {
    /// The message asked about.
    pub at: String,
    /// Whether the story has ended there.
    pub ended: bool,
    /// What ended it.
    pub ending: Option<Ending>,
    /// The story's outcome (an ending by an outcome).
    pub outcome: Option<String>,
}

/// Which lore entries are active at a message and why, as `troupe explain
/// --json` prints it (Format 5.3, `schemas/output/explain.schema.json`).
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// let pack = troupe::Pack::open("examples/packs/harbor-lights")?;
/// let x = pack.recorded_history("inn.jsonl")?.explain("m3")?;
/// assert_eq!(x.active, x.entries.iter().filter(|e| e.active).count());
/// # Ok::<(), troupe::Error>(())
/// ```
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Explanation {
    /// The message asked about.
    pub at: String,
    /// The scenario.
    pub scenario: String,
    /// How many entries are active.
    pub active: usize,
    /// Every entry: active ones by `order`, then the others.
    pub entries: Vec<EntryActivation>,
    /// When the message is a reply to a player's input (not by a player,
    /// its parent by one): the lore active at that input, which is the lore
    /// of the prompt the reply was written from (Format 5.3, 24.3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written_from: Option<WrittenFrom>,
}

/// The lore a reply was written from: what was active at its parent, the
/// player's input (see [`Explanation::written_from`]).
#[derive(Debug, Clone, Serialize)]
pub struct WrittenFrom {
    /// The input's message ID.
    pub at: String,
    /// How many entries are active there.
    pub active: usize,
}

/// What [`History::knows`] asks about (Format 7.4, 12.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Knowable {
    /// The part at this index of the message's `parts`.
    Part(usize),
    /// The message's summary.
    Summary,
}

/// Whose view a template is rendered for (Format 10).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RenderOptions {
    /// The character `{{char}}` means.
    pub char: Option<String>,
    /// The owner `own` means (a character, a world or the scenario).
    pub owner: Option<String>,
    /// The text is for a narrator message.
    pub narrator: bool,
    /// The text is a template outside message parts (a description, an
    /// entry's content, a character's `text`): `pick` is stable per
    /// session, as a prompt renders it (Format 10.6). False: the text
    /// renders as a message part at `at`.
    pub per_chat: bool,
}

impl History {
    pub(crate) fn from_engine(engine: Engine) -> History {
        History { engine }
    }

    /// The compiled story and session, taken (a session resumed from it).
    pub(crate) fn into_engine(self) -> Engine {
        self.engine
    }

    /// Parses and checks session `bytes` against `pack`; `file` names it in
    /// diagnostics.
    pub(crate) fn parse(pack: &Pack, file: &str, bytes: &[u8]) -> Result<History> {
        let mut sources = Sources::new();
        sources.add(file, String::from_utf8_lossy(bytes).into());
        History::check(pack, crate::load::parse_session(file, bytes), sources)
    }

    /// Checks a read session against `pack` and compiles both.
    pub(crate) fn check(
        pack: &Pack,
        loaded: crate::load::Loaded<crate::load::SessionDoc>,
        sources: Sources,
    ) -> Result<History> {
        let bundle = &pack.opened().bundle;
        let mut diags = loaded.diagnostics;
        let Some(doc) = loaded.value else {
            return Err(Error::invalid(diags, sources));
        };
        diags.extend(crate::check::run::check_session_document(bundle, &doc));
        if doc.header.is_none() || diags.iter().any(Diagnostic::is_error) {
            return Err(Error::invalid(diags, sources));
        }
        crate::pipeline::compile_checked_session(bundle, &doc)
            .map(History::from_engine)
            .map_err(|d| Error::invalid(d, sources))
    }

    /// The message IDs, in file order.
    pub fn message_ids(&self) -> Vec<&str> {
        self.engine
            .session
            .messages
            .iter()
            .map(|m| &*m.id)
            .collect()
    }

    /// The last message in file order (what `troupe ended`/`explain` ask
    /// about without `--at`); `None` when there are no messages.
    pub fn last_id(&self) -> Option<&str> {
        let m = self.engine.last_message()?;
        self.engine.session.messages.get(m as usize).map(|x| &*x.id)
    }

    /// The flattened state (Format 8.6) at every message of the path of
    /// `id`, root first, stepping once along the path.
    ///
    /// Errors: [`ErrorKind::NotFound`] when there is no such message.
    pub fn states_along(&self, id: &str) -> Result<Vec<(String, Map<String, Value>)>> {
        let m = self.index(id)?;
        let mut out = Vec::new();
        self.engine.walk_path(m, |c, st| {
            out.push((
                self.engine.session.messages[c as usize].id.to_string(),
                self.engine.flatten(st),
            ));
        });
        Ok(out)
    }

    /// The leaves of the message tree (Format 12: messages no message
    /// names as its parent), in file order: one branch each.
    pub fn leaves(&self) -> Vec<&str> {
        let tree = self.engine.tree();
        self.engine
            .session
            .messages
            .iter()
            .zip(&tree.first_child)
            .filter(|(_, child)| **child == crate::engine::replay::NONE)
            .map(|(m, _)| &*m.id)
            .collect()
    }

    /// The firings message `id` records (Format 7.3), in order: `(kind,
    /// id)` with kind `event` or `outcome`.
    ///
    /// Errors: [`ErrorKind::NotFound`] when there is no such message.
    pub fn firings(&self, id: &str) -> Result<Vec<(&'static str, String)>> {
        let m = self.index(id)?;
        Ok(self.engine.session.messages[m as usize]
            .firings
            .iter()
            .filter_map(|f| self.engine.fired(f))
            .map(|(kind, id)| (kind, id.to_string()))
            .collect())
    }

    /// The scenario's ID.
    pub fn scenario(&self) -> &str {
        &self.engine.ir.scenario
    }

    fn index(&self, id: &str) -> Result<u32> {
        self.engine.session.find(id).ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "the session has no message `{id}`{}",
                    crate::diag::suggest::one_of(id, self.message_ids())
                ),
            )
        })
    }

    fn state_of(&self, at: Option<&str>) -> Result<crate::engine::State> {
        Ok(match at {
            Some(id) => self.engine.state_at(self.index(id)?),
            None => self.engine.initial().clone(),
        })
    }

    /// The flattened state (Format 8.6) at message `id`, in state order.
    ///
    /// Errors: [`ErrorKind::NotFound`] when there is no such message.
    pub fn state_at(&self, id: &str) -> Result<Map<String, Value>> {
        Ok(self.engine.flatten(&self.state_of(Some(id))?))
    }

    /// The state at message `at` (`None`: the initial state) with its turn,
    /// round and ending: the `troupe state --json` document.
    pub fn state(&self, at: Option<&str>) -> Result<StateView> {
        let state = self.state_of(at)?;
        let ending = self.engine.ending(&state);
        Ok(StateView {
            at: at.map(str::to_string),
            turn: state.turn,
            round: state.round,
            ended: ending.is_some(),
            outcome: ending.filter(|e| e.outcome).map(|e| e.id),
            state: self.engine.flatten(&state),
            settings: state
                .settings
                .as_ref()
                .and_then(|s| s.to_json(&self.engine.ir)),
        })
    }

    /// Whether the story has ended at message `id`, and how (Format 9.3):
    /// the `troupe ended --json` document.
    pub fn ended_at(&self, id: &str) -> Result<EndedView> {
        let state = self.engine.state_at(self.index(id)?);
        let ending = self.engine.ending(&state);
        Ok(EndedView {
            at: id.to_string(),
            ended: ending.is_some(),
            outcome: ending.as_ref().filter(|e| e.outcome).map(|e| e.id.clone()),
            ending: ending.map(|e| Ending {
                kind: if e.outcome { "outcome" } else { "event" },
                id: e.id,
                message: e.message,
            }),
        })
    }

    /// Who knows part or summary `what` of message `id` (Format 7.4,
    /// 12.5): character IDs in code point order.
    ///
    /// Errors: [`ErrorKind::NotFound`] when there is no such message, part
    /// or summary.
    ///
    /// ```
    /// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    /// use troupe::Knowable;
    /// let pack = troupe::Pack::open("examples/packs/harbor-lights")?;
    /// let history = pack.recorded_history("inn.jsonl")?;
    /// let who = history.knows("m2", Knowable::Part(0))?;
    /// assert!(who.contains(&"investigator".to_string()));
    /// # Ok::<(), troupe::Error>(())
    /// ```
    pub fn knows(&self, id: &str, what: Knowable) -> Result<Vec<String>> {
        let m = self.index(id)?;
        let who = match what {
            Knowable::Part(p) => self.engine.knows_part(m, p),
            Knowable::Summary => self.engine.knows_summary(m),
        };
        who.ok_or_else(|| {
            let count = self.engine.session.messages[m as usize].parts.len();
            let message = match what {
                Knowable::Part(p) if count == 0 => {
                    format!("message `{id}` has no parts, so no part {p}")
                }
                Knowable::Part(p) if count == 1 => {
                    format!("message `{id}` has no part {p}: its one part is 0 (Format 7.4)")
                }
                Knowable::Part(p) => format!(
                    "message `{id}` has no part {p}: its parts are 0 to {} (Format 7.4)",
                    count - 1
                ),
                Knowable::Summary => format!(
                    "message `{id}` has no summary (Format 12.5: a message's `summary` retells \
                     the messages before it; ask for one of its parts with `--part`)"
                ),
            };
            Error::new(ErrorKind::NotFound, message)
        })
    }

    /// Which lore entries are active at message `id` and why (Format 5.3):
    /// the `troupe explain --json` document.
    pub fn explain(&self, id: &str) -> Result<Explanation> {
        let m = self.index(id)?;
        let entries = self.engine.entries_at(m);
        let messages = &self.engine.session.messages;
        let by_player = |i: u32| match messages[i as usize].author {
            Who::Cast(c) => self.engine.ir.players.contains(&c),
            Who::Narrator => false,
        };
        let written_from = messages[m as usize]
            .parent
            .filter(|&p| !by_player(m) && by_player(p))
            .map(|p| WrittenFrom {
                at: messages[p as usize].id.to_string(),
                active: self
                    .engine
                    .entries_at(p)
                    .iter()
                    .filter(|e| e.active)
                    .count(),
            });
        Ok(Explanation {
            at: id.to_string(),
            scenario: self.engine.ir.scenario.to_string(),
            active: entries.iter().filter(|e| e.active).count(),
            entries,
            written_from,
        })
    }

    /// Renders template `text` (Format 10) at message `at` (`None`: the
    /// initial state) for the view `who` describes.
    ///
    /// Errors: [`ErrorKind::Invalid`] (TEMPLATE_SYNTAX) when `text` is not
    /// a template; [`ErrorKind::NotFound`] when there is no such message.
    ///
    /// ```
    /// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    /// use troupe::RenderOptions;
    /// let pack = troupe::Pack::open("examples/packs/harbor-lights")?;
    /// let history = pack.recorded_history("inn.jsonl")?;
    /// let mut who = RenderOptions::default();
    /// who.char = Some("mara".into());
    /// assert_eq!(history.render("Hello {{user}}", Some("m3"), &who)?, "Hello Player");
    /// # Ok::<(), troupe::Error>(())
    /// ```
    pub fn render(&self, text: &str, at: Option<&str>, who: &RenderOptions) -> Result<String> {
        check_template(text)?;
        let state = self.state_of(at)?;
        let per_chat = who.per_chat;
        let who = RenderFor {
            char: who.char.as_deref(),
            owner: who.owner.as_deref(),
            narrator: who.narrator,
        };
        // Format 16.2: a rendering is bounded; past the budget nothing is
        // returned.
        let rendered = if per_chat {
            self.engine.render_stable_checked(text, &state, who)
        } else {
            self.engine.render_checked(text, &state, who)
        };
        rendered.map_err(|e| {
            let d = Diagnostic::error(
                Code::Limit,
                format!(
                    "the text renders to more than {} bytes (Format 16.2); nothing is printed",
                    e.limit
                ),
            );
            Error::with_diagnostics(
                ErrorKind::Limit,
                "a bound of Format 16 was reached",
                vec![d],
                Sources::new(),
            )
        })
    }

    /// Parses and type-checks CEL condition `expr` (Format 11) against the
    /// scenario's declarations (`state.…`, `difficulty.…`, … as a
    /// scenario-level condition, Format 11.2, 11.3); returns its result
    /// type in CEL type syntax.
    ///
    /// Errors: [`ErrorKind::Invalid`] with CEL_SYNTAX / CEL_TYPE
    /// diagnostics at their line and column in `expr`
    /// ([`crate::conditions`]).
    ///
    /// ```
    /// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    /// let pack = troupe::Pack::open("examples/packs/harbor-lights")?;
    /// let history = pack.recorded_history("inn.jsonl")?;
    /// assert_eq!(history.check_condition("state.trust['ines'] > 40")?, "bool");
    /// assert_eq!(history.eval_condition("state.trust['ines']", Some("m3"))?.to_string(), "50");
    /// # Ok::<(), troupe::Error>(())
    /// ```
    pub fn check_condition(&self, expr: &str) -> Result<String> {
        self.engine
            .compile_condition(expr, None, false)
            .map(|c| c.program.result_type().to_string())
            .map_err(|errs| super::conditions::compile_error(&errs))
    }

    /// Evaluates CEL condition `expr` (checked as
    /// [`History::check_condition`] does) on the state at message `at`
    /// (`None`: the initial state).
    ///
    /// Errors: as [`History::check_condition`]; [`ErrorKind::NotFound`]
    /// when there is no such message; [`ErrorKind::Evaluation`] when
    /// evaluation fails (Format 11.6).
    pub fn eval_condition(&self, expr: &str, at: Option<&str>) -> Result<CelValue> {
        let cond = self
            .engine
            .compile_condition(expr, None, false)
            .map_err(|errs| super::conditions::compile_error(&errs))?;
        let state = self.state_of(at)?;
        self.engine
            .eval_condition(&cond, &state, "")
            .map(CelValue)
            .map_err(super::conditions::eval_error)
    }

    /// The compiled story and session, for the API's other areas (the
    /// model runtime's prompt).
    pub(crate) fn engine_ref(&self) -> &Engine {
        &self.engine
    }

    /// The index of message `id`; [`ErrorKind::NotFound`] (with the
    /// closest IDs) when there is none.
    pub(crate) fn index_of(&self, id: &str) -> Result<u32> {
        self.index(id)
    }
}

/// Checks that `text` is a template (Format 10.1) without rendering it.
///
/// Errors: [`ErrorKind::Invalid`] with one TEMPLATE_SYNTAX diagnostic whose
/// location has the 1-based `line` and `column` in `text` (no file).
///
/// ```
/// assert!(troupe::check_template("Hello {{user}}").is_ok());
/// let e = troupe::check_template("Hello {{user").unwrap_err();
/// assert_eq!(e.diagnostics()[0].code, troupe::Code::TemplateSyntax);
/// assert_eq!(e.diagnostics()[0].location.line, Some(1));
/// ```
pub fn check_template(text: &str) -> Result<()> {
    crate::template::parse(text).map(drop).map_err(|e| {
        let mut d = Diagnostic::error(Code::TemplateSyntax, e.message.to_string());
        d.location.line = Some(e.line);
        d.location.column = Some(e.column);
        Error::invalid(vec![d], Sources::new())
    })
}

//! Stage 5: the runtime (Format 18, 19). Steps a story one turn at a time:
//! a player says something, a [`Runtime`] proposes a reply and changes, and
//! the engine does everything else the same way for every runtime — safety
//! verdicts, applying changes, firing events and outcomes, the emotion, the
//! rubric score, and writing the session file line by line.
//!
//! ```no_run
//! use troupe::internals::open::open;
//! use troupe::internals::runtime::{Options, Session};
//! let pack = open(std::path::Path::new("examples/packs/everyday-negotiation")).unwrap();
//! let mut session = Session::start(&pack, &Options::default()).unwrap();
//! let result = session.turn("Hello Marco!").unwrap();
//! println!("{}", serde_json::to_string(&result).unwrap());
//! ```
//!
//! Runtimes: [`rules::RulesRuntime`] (the default), the fake runtime
//! ([`Options::runtime`] = [`RuntimeKind::Fake`], [`fake`]), and
//! [`replay::replay`], which re-steps a recorded session and reports
//! FIRING_MISMATCH. A model-backed adapter implements [`Runtime`] and
//! returns [`Proposal::adapter`]: a reply and changes, nothing more.

pub mod chat;
/// The runtime's compiled parts (they are part of the IR, Format 14.4).
pub use crate::compile::runtime as compiled;
pub mod fake;
pub mod firing;
pub mod generator;
pub mod opened;
pub mod replay;
pub mod rubric;
pub mod rules;
/// Safety matchers and verdicts (compiled into the IR, Format 19).
pub use crate::compile::safety;
pub mod session;
pub mod session_writer;
pub mod settings;
pub mod transcript;
pub mod turn;
pub mod turn_order;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::compile::ChangeIr;
use crate::engine::{Engine, Point, State};

pub use chat::{ChatMessage, Structured};
pub use opened::{OpenError, OpenOptions, Opened, Seating};
pub use session::{Options, RuntimeKind, Session, StartError, TurnError};
pub use settings::SettingsResult;
pub use turn::{FiringRecord, OpeningResult, Score, SessionControl, TurnResult};

/// What a runtime is asked for at a turn (Format 18.5 step 3): the input,
/// the state at the input message, and the ID the reply message will get.
#[non_exhaustive]
pub struct TurnContext<'a> {
    /// The player's input, as given (not escaped); for a reaction (Format
    /// 18.9), the rendered text of the reply it answers.
    pub input: &'a str,
    /// The ID of the input message.
    pub input_id: &'a str,
    /// The ID the reply message will have if there is one.
    pub reply_id: &'a str,
    /// The session seed.
    pub seed: u64,
    /// The responder's ID (`"narrator"` for the narrator): the speaker of
    /// this reply (Format 18.9).
    pub responder: &'a str,
    /// Whether the reply is a reaction (`on: "reply"` rules, Format 18.9).
    pub reaction: bool,
    /// Whether a character ID is a speaker at the message answered
    /// (Format 18.9; a rule's `reply_as`).
    pub(crate) is_speaker: &'a dyn Fn(&str) -> bool,
    pub(crate) engine: &'a Engine,
    pub(crate) state: &'a State,
    pub(crate) point: Point<'a>,
    /// The session's recorder, when it records (Format 21.6).
    pub(crate) observer: Option<&'a std::cell::RefCell<crate::engine::Recorder>>,
}

impl TurnContext<'_> {
    /// The flattened state at the input message (Format 8.6), in state
    /// order (18.6).
    pub fn state(&self) -> Map<String, Value> {
        self.engine.flatten(self.state)
    }

    /// The prompt the model runtime sends for this turn (Format 24.3): one
    /// `system` message, then the transcript as the responder knows it
    /// (7.4), shaped by the scenario's `model` block (24.2). With
    /// [`Structured::JsonSchema`] the answer's schema is left out of the
    /// system message (it goes in the request's `response_format`, see
    /// [`TurnContext::response_format`]); otherwise it is written into it.
    ///
    /// The same messages `troupe run --runtime model` sends at this turn's
    /// first request, so an adapter calling its own model client gets the
    /// prompt Troupe specifies. Empty only if the input message is unknown
    /// (never for a context the engine built).
    pub fn prompt(&self, structured: Structured) -> Vec<ChatMessage> {
        let Some(m) = self.engine.session.find(self.input_id) else {
            return Vec::new();
        };
        let decl = &self.engine.ir.model.decl;
        chat::prompt::messages(self.engine, m, self.responder, decl, structured)
    }

    /// The request's `response_format` member for `structured` (Format
    /// 24.4): `{"type": "json_schema", "json_schema": {"name": "proposal",
    /// "strict": true, "schema": S}}` with S generated from the scenario,
    /// `{"type": "json_object"}`, or `None` for [`Structured::None`].
    pub fn response_format(&self, structured: Structured) -> Option<Value> {
        chat::response_format(structured, &self.engine.ir.model.schema)
    }
}

/// A reply a runtime proposes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Reply {
    /// A template as written in the pack (rules, redirect texts): written
    /// unrendered, rendered as every message part is (Format 18.5).
    Template(Arc<str>),
    /// Literal text (adapters): escaped like an input (Format 18.7).
    Literal(String),
}

/// The changes a runtime proposes.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Changes {
    /// Changes as JSON (adapters): checked as a message's changes are and
    /// dropped whole when any fails (Format 18.7).
    Json(Vec<Value>),
    /// A rule's changes, checked with the pack and lowered once (the rules
    /// runtime's; opaque).
    Compiled(CompiledChanges),
}

/// Changes the rules runtime checked and lowered once (Format 18.3): what
/// was written is readable, the lowered form is the engine's own.
#[derive(Debug, Clone)]
pub struct CompiledChanges {
    json: Arc<[Value]>,
    ir: Arc<[ChangeIr]>,
}

impl CompiledChanges {
    pub(crate) fn new(json: Arc<[Value]>, ir: Arc<[ChangeIr]>) -> Self {
        CompiledChanges { json, ir }
    }

    /// The changes as written in the pack.
    pub fn json(&self) -> &[Value] {
        &self.json
    }
}

/// A proposal (Format 18.5 step 3, 18.7).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Proposal {
    /// The rule that matched (rules runtime only).
    pub rule: Option<Arc<str>>,
    /// The reply, if any.
    pub reply: Option<Reply>,
    /// The changes.
    pub changes: Changes,
    /// Who says the reply when not the speaker it was asked for: a rule's
    /// `reply_as` (Format 18.1).
    pub author: Option<Arc<str>>,
}

impl Proposal {
    /// An adapter's proposal: literal reply text and changes as JSON.
    pub fn adapter(reply: Option<String>, changes: Vec<Value>) -> Proposal {
        Proposal {
            rule: None,
            reply: reply.map(Reply::Literal),
            changes: Changes::Json(changes),
            author: None,
        }
    }
}

/// What proposes a turn's reply and changes (Format 18.7). The engine
/// validates, clamps and applies the proposal, fires events, checks safety
/// and writes the session, the same way for every runtime. `Send`, so that a
/// [`Session`] holding one can move to another thread (a server, a Python
/// object).
///
/// An adapter (docs/embedding.md):
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// use troupe::{Pack, Proposal, Runtime, SessionOptions, TurnContext};
///
/// struct Echo;
///
/// impl Runtime for Echo {
///     fn name(&self) -> &str {
///         "echo"
///     }
///     fn propose(&mut self, ctx: &TurnContext<'_>) -> Option<Proposal> {
///         let patience = ctx.state()["patience"].clone();
///         Some(Proposal::adapter(Some(format!("patience {patience}")), vec![]))
///     }
/// }
///
/// let pack = Pack::open("examples/packs/everyday-negotiation")?;
/// let mut session = pack.start(SessionOptions::default().adapter(Echo))?;
/// let turn = session.turn("Hello")?;
/// assert!(turn.reply.unwrap().starts_with("patience "));
/// # Ok::<(), troupe::Error>(())
/// ```
pub trait Runtime: Send {
    /// The runtime's name (`rules`, an adapter's name).
    fn name(&self) -> &str;
    /// Proposes for the turn; `None` is no proposal (no reply message).
    fn propose(&mut self, ctx: &TurnContext<'_>) -> Option<Proposal>;
    /// Why the last [`Runtime::propose`] failed, if it did (a model that
    /// could not be reached, Format 24.6): the turn is then taken back —
    /// nothing of it is written — and refused with
    /// [`TurnError::Runtime`]. The default: never.
    fn take_failure(&mut self) -> Option<crate::diag::Diagnostic> {
        None
    }
    /// Diagnostics of the last proposal that belong in the turn result
    /// (a model's answer dropped whole, Format 24.4). The default: none.
    fn take_diagnostics(&mut self) -> Vec<crate::diag::Diagnostic> {
        Vec::new()
    }
}

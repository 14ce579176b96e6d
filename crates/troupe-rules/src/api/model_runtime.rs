//! The model runtime (Format 24): a language model behind an
//! OpenAI-compatible Chat Completions endpoint proposes each reply and its
//! changes, checked as any runtime's proposal is. `troupe run|play
//! --runtime model` and `troupe prompt` are built on this module.
//!
//! A [`Backend`] says where answers come from: a live endpoint
//! ([`Backend::http`], [`Backend::record`]; feature `model`, the HTTP
//! client) or a recorded cassette ([`Backend::replay`], always available).
//! A [`ModelRuntime`] for a [`Pack`](crate::Pack) is handed to
//! [`crate::SessionOptions::runtime`] as [`ModelRuntime::adapter`]; its
//! [`Log`] holds one [`TurnRecord`] per turn (requests, tokens, clamped
//! values; Format 24.7). [`History::prompt`] shows what would be sent.
//!
//! ```
//! # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
//! use troupe::model_runtime::Settings;
//! let pack = troupe::Pack::open("examples/packs/harbor-lights")?;
//! let history = pack.recorded_history("inn.jsonl")?;
//! let prompt = history.prompt(Some("m3"), None, &Settings::default())?;
//! assert_eq!(prompt.responder, "mara");
//! assert_eq!(prompt.messages[0].role, "system");
//! assert_eq!(prompt.body["model"], "local");
//! # Ok::<(), troupe::Error>(())
//! ```

use std::path::Path;
#[cfg(feature = "model")]
use std::path::PathBuf;
#[cfg(feature = "model")]
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::error::{Error, ErrorKind, Result};
use super::history::History;
use super::session::RuntimeChoice;
use crate::runtime::chat;

pub use crate::runtime::chat::{
    check_max_tokens, check_temperature, exit_code, turn_record, ChatMessage, Log, Settings,
    Structured, TurnRecord, Usage, DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_SECS,
};

/// Where the model runtime's answers come from.
pub struct Backend(chat::Backend);

/// What `--runtime model`'s flags say about reaching a model (Format 24.1),
/// for [`Backend::connect`]: the one place `troupe run`, `play`,
/// `playtest` and `test` turn their flags into a backend.
#[derive(Clone)]
pub struct Connection {
    /// `--endpoint URL`.
    pub endpoint: Option<String>,
    /// The API key (read from `--api-key-env`'s variable by the caller);
    /// sent as a bearer token, never written anywhere.
    pub api_key: Option<String>,
    /// `--timeout`, in seconds (at least 1 is used).
    pub timeout_secs: u64,
    /// `--cassette FILE`.
    pub cassette: Option<std::path::PathBuf>,
    /// `--record`.
    pub record: bool,
}

impl Backend {
    /// The backend `connection` describes (Format 24.1, 24.5): a cassette
    /// without `record` is replayed (no endpoint needed); otherwise the
    /// endpoint is called, and recorded to the cassette with `record`.
    ///
    /// Errors: [`ErrorKind::Io`] when a cassette to replay cannot be read
    /// (MODEL_CASSETTE); [`ErrorKind::Invalid`] when an endpoint is needed
    /// and not given, or `record` has no cassette; [`ErrorKind::Unsupported`]
    /// when an endpoint is needed and this build has no HTTP client
    /// (feature `model`).
    pub fn connect(connection: &Connection) -> Result<Backend> {
        match (&connection.cassette, connection.record) {
            (Some(c), false) => return Backend::replay(c),
            (None, true) => {
                return Err(Error::new(
                    ErrorKind::Invalid,
                    "--record needs --cassette FILE to record to",
                ))
            }
            _ => {}
        }
        let Some(endpoint) = &connection.endpoint else {
            return Err(Error::new(
                ErrorKind::Invalid,
                "--runtime model needs --endpoint URL (or --cassette FILE to replay a recording)",
            ));
        };
        Backend::live(endpoint, connection)
    }

    #[cfg(feature = "model")]
    fn live(endpoint: &str, c: &Connection) -> Result<Backend> {
        let timeout = Duration::from_secs(c.timeout_secs.max(1));
        Ok(match &c.cassette {
            Some(path) => Backend::record(endpoint, c.api_key.clone(), timeout, path.clone()),
            None => Backend::http(endpoint, c.api_key.clone(), timeout),
        })
    }

    #[cfg(not(feature = "model"))]
    fn live(_endpoint: &str, _c: &Connection) -> Result<Backend> {
        Err(Error::new(
            ErrorKind::Unsupported,
            "this build has no HTTP client (cargo feature `model`); only --cassette replay works",
        ))
    }

    /// The runtime's backend.
    #[cfg(feature = "testing")]
    pub(crate) fn into_inner(self) -> chat::Backend {
        self.0
    }

    /// Replays the cassette file at `path` (recorded with
    /// [`Backend::record`]): no model is needed; a request the cassette
    /// does not hold fails the turn with UNMOCKED_MODEL_CALL.
    ///
    /// Errors: [`ErrorKind::Io`] when the cassette cannot be read or is
    /// not one (the message says why; the code to show is
    /// MODEL_CASSETTE).
    pub fn replay(path: impl AsRef<Path>) -> Result<Backend> {
        chat::Cassette::read(path.as_ref())
            .map(|c| Backend(chat::Backend::Replay(c)))
            .map_err(|e| Error::new(ErrorKind::Io, e))
    }

    /// A live endpoint: `endpoint` is the base URL
    /// (`http://127.0.0.1:8080/v1`), `api_key` is sent as a bearer token
    /// and never written anywhere, `timeout` bounds each request.
    #[cfg(feature = "model")]
    pub fn http(endpoint: &str, api_key: Option<String>, timeout: Duration) -> Backend {
        Backend(chat::Backend::http(endpoint, api_key, timeout))
    }

    /// [`Backend::http`], every interaction recorded to the new cassette
    /// file `cassette` (written after each one).
    #[cfg(feature = "model")]
    pub fn record(
        endpoint: &str,
        api_key: Option<String>,
        timeout: Duration,
        cassette: PathBuf,
    ) -> Backend {
        Backend(chat::Backend::record(endpoint, api_key, timeout, cassette))
    }
}

/// The model runtime for sessions of one pack (Format 24).
pub struct ModelRuntime {
    inner: chat::ModelRuntime,
}

impl ModelRuntime {
    /// A runtime sending requests with `settings` to `backend`. A session
    /// needs nothing else: its compiled story holds the prompt's texts and
    /// the answer schema (Format 24.3, 24.4).
    pub fn new(settings: Settings, backend: Backend) -> ModelRuntime {
        ModelRuntime {
            inner: chat::ModelRuntime::new(settings, backend.0),
        }
    }

    /// The turn records, shared: read them after each turn.
    pub fn log(&self) -> Log {
        self.inner.log()
    }

    /// The runtime as a session's [`RuntimeChoice`].
    pub fn adapter(self) -> RuntimeChoice {
        RuntimeChoice::Adapter(Box::new(self.inner))
    }
}

/// What the model runtime would send when a character answers a message
/// (Format 24.3): the chat messages and the whole request body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prompt {
    /// Who answers: a cast member's ID or `narrator`.
    pub responder: String,
    /// The request's messages, in order.
    pub messages: Vec<ChatMessage>,
    /// The request body (Format 24.5's canonical form).
    pub body: Value,
}

impl History {
    /// What the model runtime would send when `character` answers message
    /// `at` (Format 24.3) of this history of `pack`, with `settings`:
    /// `character` `None` is the speaker the scenario's turn order chooses
    /// for a first reply answering that message (Format 24.3, 18.9: the
    /// narrator when no one is a speaker, else a character addressed in the
    /// message's text, else the strategy's choice); `at` `None` is the last
    /// message in file order.
    ///
    /// Errors: [`ErrorKind::NotFound`] when there is no such message (or no
    /// message at all), or `character` is neither `narrator` nor a cast
    /// member (the message suggests one).
    pub fn prompt(
        &self,
        at: Option<&str>,
        character: Option<&str>,
        settings: &Settings,
    ) -> Result<Prompt> {
        use crate::compile::Who;
        let engine = self.engine_ref();
        let at = match at.or_else(|| self.last_id()) {
            Some(id) => id.to_string(),
            None => {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    "the session has no message to ask about",
                ))
            }
        };
        let m = self.index_of(&at)?;
        let responder = match character {
            Some(c) if c == "narrator" || engine.ir.cast_index(c).is_some() => c.to_string(),
            Some(c) => {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "scenario `{}` has no cast member `{c}`{}",
                        engine.ir.scenario,
                        crate::diag::suggest::one_of(c, engine.ir.cast.iter().map(|x| &*x.id))
                    ),
                ))
            }
            None => {
                let st = engine.state_at(m);
                let floor = crate::runtime::turn_order::Floor {
                    engine,
                    order: &engine.ir.turn_order,
                };
                let parts = engine.session.messages[m as usize].parts.len();
                let text: Vec<String> = (0..parts)
                    .filter_map(|i| engine.render_part(m, i))
                    .collect();
                let who = floor
                    .first_speaker(m, &st, &text.join("\n"), None)
                    .map_or(Who::Narrator, |(who, _)| who);
                engine.ir.who_id(who).to_string()
            }
        };
        let messages = chat::prompt::messages(
            engine,
            m,
            &responder,
            &engine.ir.model.decl,
            settings.structured,
        );
        let schema = &engine.ir.model.schema;
        let body = chat::request_body(settings, &messages, schema, engine.session.seed);
        Ok(Prompt {
            responder,
            messages,
            body,
        })
    }
}

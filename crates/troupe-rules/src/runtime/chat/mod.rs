//! The model runtime (Format 24): a language model, behind an
//! OpenAI-compatible Chat Completions endpoint, writes the responder's
//! lines and proposes changes; Troupe checks every proposal against the
//! scenario's `model` block and the rules (who may change what, types,
//! bounds, step limits) and drops it whole when it does not conform.
//!
//! Backends: a live endpoint ([`client::HttpClient`], feature `model`), a
//! cassette replayed ([`cassette::Cassette`]), a live endpoint recorded to
//! a cassette, or proposals given inline in call order (fixtures'
//! `mocks.model`, Format 21.3).

pub mod cassette;
#[cfg(feature = "model")]
pub mod client;
pub mod prompt;
pub mod proposal;

use std::collections::VecDeque;
#[cfg(feature = "model")]
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
#[cfg(feature = "model")]
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::{Proposal, Runtime, TurnContext};
use crate::diag::{Code, Diagnostic};
pub use cassette::Cassette;
pub use prompt::{ChatMessage, Structured};
pub use proposal::{validate, ModelDecl};

/// A failed model call (Format 24.6): a stable code and a message that
/// never holds the API key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// MODEL_UNREACHABLE, MODEL_TIMEOUT, MODEL_AUTH, …
    pub code: Code,
    /// What happened, in plain words.
    pub message: String,
}

impl Failure {
    /// A failure with `code`.
    pub fn new(code: Code, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }
}

/// The exit code a failure gives (Format 24.6): 5 for MODEL_AUTH, 1 for
/// UNMOCKED_MODEL_CALL, 4 for every other model failure.
pub fn exit_code(code: Code) -> i32 {
    match code {
        Code::ModelAuth => 5,
        Code::UnmockedModelCall => 1,
        _ => 4,
    }
}

/// The request settings (Format 24.1).
#[derive(Clone)]
#[non_exhaustive]
pub struct Settings {
    /// The model name sent as `model`.
    pub model: String,
    /// `temperature`; `None`: not sent.
    pub temperature: Option<f64>,
    /// `max_tokens`.
    pub max_tokens: u32,
    /// How the answer's shape is asked for.
    pub structured: Structured,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            model: "local".into(),
            temperature: None,
            max_tokens: DEFAULT_MAX_TOKENS,
            structured: Structured::JsonSchema,
        }
    }
}

impl Settings {
    /// Checks the values Format 24.1 bounds: `temperature`, when sent, a
    /// finite number ≥ 0; `max_tokens` at least 1. A client reports the
    /// error as a usage error (exit 2, `400` over HTTP).
    pub fn check(&self) -> Result<(), String> {
        if let Some(t) = self.temperature {
            check_temperature(t)?;
        }
        check_max_tokens(self.max_tokens)
    }
}

/// Format 24.1: a `temperature` is a finite number ≥ 0.
pub fn check_temperature(t: f64) -> Result<(), String> {
    if t.is_finite() && t >= 0.0 {
        Ok(())
    } else {
        Err(format!(
            "the temperature {t} is not a finite number of at least 0 (Format 24.1)"
        ))
    }
}

/// Format 24.1: `max_tokens` is at least 1.
pub fn check_max_tokens(n: u32) -> Result<(), String> {
    if n >= 1 {
        Ok(())
    } else {
        Err("max_tokens is 0: an answer needs at least 1 token (Format 24.1)".to_string())
    }
}

/// The default `max_tokens` (Format 24.1).
pub const DEFAULT_MAX_TOKENS: u32 = 512;
/// The default timeout of one request, in seconds (Format 24.1).
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// Where answers come from.
pub enum Backend {
    /// A live endpoint.
    #[cfg(feature = "model")]
    Http(client::HttpClient),
    /// A live endpoint, each interaction recorded to the cassette file.
    #[cfg(feature = "model")]
    Record(client::HttpClient, Cassette, PathBuf),
    /// A cassette replayed; a request it does not hold is UNMOCKED_MODEL_CALL.
    Replay(Cassette),
    /// Answers in call order (fixtures' `mocks.model`): each is the answer's
    /// JSON object (or a string, sent as the message content).
    Mocks(VecDeque<Value>),
}

impl Backend {
    /// A live endpoint (`endpoint` like `http://127.0.0.1:8080/v1`).
    #[cfg(feature = "model")]
    pub fn http(endpoint: &str, api_key: Option<String>, timeout: Duration) -> Backend {
        Backend::Http(client::HttpClient::new(endpoint, api_key, timeout))
    }

    /// A live endpoint recorded to `cassette` (a new file, written after
    /// every interaction).
    #[cfg(feature = "model")]
    pub fn record(
        endpoint: &str,
        api_key: Option<String>,
        timeout: Duration,
        cassette: PathBuf,
    ) -> Backend {
        Backend::Record(
            client::HttpClient::new(endpoint, api_key, timeout),
            Cassette::default(),
            cassette,
        )
    }
}

/// Token usage (the answer's `usage`; missing numbers count 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// `prompt_tokens`.
    pub prompt_tokens: u64,
    /// `completion_tokens`.
    pub completion_tokens: u64,
    /// `total_tokens` (their sum when the server leaves it out).
    pub total_tokens: u64,
}

impl Usage {
    /// Adds `o` number by number (Format 24.7), saturating at
    /// `u64::MAX`: a server's numbers are untrusted and never wrap.
    pub fn add(&mut self, o: Usage) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(o.prompt_tokens);
        self.completion_tokens = self.completion_tokens.saturating_add(o.completion_tokens);
        self.total_tokens = self.total_tokens.saturating_add(o.total_tokens);
    }
}

/// What the model runtime did at one turn (the turn's `model` member,
/// Format 24.7).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TurnRecord {
    /// The input message's ID.
    pub input: String,
    /// Requests sent (2 with a repair request).
    pub requests: u32,
    /// Tokens used by them.
    pub usage: Usage,
    /// The emotion the accepted answer named.
    pub emotion: Option<String>,
    /// State names whose proposed value was clamped to the step limit.
    pub clamped: Vec<String>,
    /// The problems of a first answer that a repair request fixed.
    pub repaired: Option<String>,
    /// Why the proposal was dropped whole, when it was.
    pub dropped: Option<String>,
}

/// The turn records of a session, shared with whoever started it.
pub type Log = Arc<Mutex<Vec<TurnRecord>>>;

/// The record of the turn whose messages are `messages` (18.6), from the
/// log: a turn of several replies (18.9: `all`, reactions) makes one call
/// (or two, with a repair request) per reply it proposes for, each logged
/// with the message it answers (the input, then each reply but the last),
/// so the turn's record is the run of the log's last records whose
/// `input` is one of the turn's messages, summed (Format 24.7): requests
/// and usage added, `clamped` in call order, `repaired` and `dropped`
/// joined with `; `, the emotion of the last call that named one, `input`
/// the turn's input. `None` when the turn made no call.
pub fn turn_record(log: &[TurnRecord], messages: &[String]) -> Option<TurnRecord> {
    let first = messages.first()?;
    let n = log
        .iter()
        .rev()
        .take_while(|r| messages.contains(&r.input))
        .count();
    if n == 0 {
        return None;
    }
    let mut out = TurnRecord {
        input: first.clone(),
        ..TurnRecord::default()
    };
    let join = |a: &mut Option<String>, b: &Option<String>| {
        if let Some(b) = b {
            *a = Some(match a.take() {
                Some(x) => format!("{x}; {b}"),
                None => b.clone(),
            });
        }
    };
    for r in &log[log.len() - n..] {
        out.requests = out.requests.saturating_add(r.requests);
        out.usage.add(r.usage);
        if r.emotion.is_some() {
            out.emotion.clone_from(&r.emotion);
        }
        out.clamped.extend(r.clamped.iter().cloned());
        join(&mut out.repaired, &r.repaired);
        join(&mut out.dropped, &r.dropped);
    }
    Some(out)
}

/// The model runtime (Format 24).
pub struct ModelRuntime {
    settings: Settings,
    backend: Backend,
    log: Log,
    failure: Option<Failure>,
    diagnostics: Vec<Diagnostic>,
}

impl ModelRuntime {
    /// A runtime sending requests with `settings` to `backend`.
    pub fn new(settings: Settings, backend: Backend) -> ModelRuntime {
        ModelRuntime {
            settings,
            backend,
            log: Log::default(),
            failure: None,
            diagnostics: Vec::new(),
        }
    }

    /// The turn records, shared: read them after each turn.
    pub fn log(&self) -> Log {
        self.log.clone()
    }
}

/// The request body (Format 24.5's canonical form): members in the order
/// `model`, `messages`, `temperature`?, `max_tokens`, `seed`,
/// `response_format`?.
pub fn request_body(
    settings: &Settings,
    messages: &[ChatMessage],
    schema: &Value,
    seed: u64,
) -> Value {
    let mut b = Map::new();
    b.insert("model".into(), settings.model.clone().into());
    b.insert(
        "messages".into(),
        serde_json::to_value(messages).unwrap_or(Value::Null),
    );
    if let Some(t) = settings.temperature {
        b.insert("temperature".into(), json!(t));
    }
    b.insert("max_tokens".into(), settings.max_tokens.into());
    b.insert("seed".into(), seed.into());
    if let Some(f) = response_format(settings.structured, schema) {
        b.insert("response_format".into(), f);
    }
    Value::Object(b)
}

/// The request's `response_format` (Format 24.4) for answers of JSON
/// Schema `schema`: `json_schema` carries it, `json_object` asks for any
/// object, `none` sends no member.
pub fn response_format(structured: Structured, schema: &Value) -> Option<Value> {
    match structured {
        Structured::JsonSchema => Some(
            json!({"type": "json_schema", "json_schema": {"name": "proposal", "strict": true, "schema": schema}}),
        ),
        Structured::JsonObject => Some(json!({"type": "json_object"})),
        Structured::None => None,
    }
}

/// Reads a Chat Completions answer leniently (Format 24.6): the first
/// choice's `message.content`, and `usage`. A body that is not JSON or has
/// no content is MODEL_BAD_RESPONSE; `finish_reason: "length"` is
/// MODEL_TRUNCATED. Missing or empty optional fields are accepted.
///
/// The body is held to Format 16's value budget and nesting before any
/// value is built (16.1): a body of many tiny values is MODEL_BAD_RESPONSE
/// at a cost linear in its bytes, not a value tree many times its size.
pub fn read_answer(body: &str) -> Result<(String, Usage), Failure> {
    crate::load::json::check_bounds(body).map_err(|why| {
        Failure::new(
            Code::ModelBadResponse,
            format!("the answer's body is over Format 16's bounds: {why}"),
        )
    })?;
    let v: Value = serde_json::from_str(body).map_err(|_| {
        Failure::new(
            Code::ModelBadResponse,
            format!(
                "the answer is not JSON (starts {:?})",
                body.chars().take(40).collect::<String>()
            ),
        )
    })?;
    let choice = v.pointer("/choices/0");
    if choice
        .and_then(|c| c.get("finish_reason"))
        .and_then(Value::as_str)
        == Some("length")
    {
        return Err(Failure::new(
            Code::ModelTruncated,
            "the answer was cut off at the token limit (finish_reason \"length\"): raise --max-tokens",
        ));
    }
    let content = choice
        .and_then(|c| c.pointer("/message/content"))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            Failure::new(
                Code::ModelBadResponse,
                "the answer has no `choices[0].message.content` string",
            )
        })?;
    let n = |k: &str| v.pointer(&format!("/usage/{k}")).and_then(Value::as_u64);
    let prompt_tokens = n("prompt_tokens").unwrap_or(0);
    let completion_tokens = n("completion_tokens").unwrap_or(0);
    let usage = Usage {
        prompt_tokens,
        completion_tokens,
        total_tokens: n("total_tokens").unwrap_or(prompt_tokens.saturating_add(completion_tokens)),
    };
    Ok((content.to_string(), usage))
}

impl ModelRuntime {
    /// One model call: the answer's content and usage.
    /// `turn` names the turn in messages (`turn 2 (input m4)`).
    fn call(&mut self, body: &Value, turn: &str) -> Result<(String, Usage), Failure> {
        call_backend(&mut self.backend, body, turn)
    }
}

/// One model call through `backend` (Format 24.5, 24.6, 24.8): the answer's
/// content and usage. `turn` names the turn in messages (`turn 2 (input m4)`).
pub fn call_backend(
    backend: &mut Backend,
    body: &Value,
    turn: &str,
) -> Result<(String, Usage), Failure> {
    {
        let text = match backend {
            #[cfg(feature = "model")]
            Backend::Http(c) => c.post(&body.to_string())?,
            #[cfg(feature = "model")]
            Backend::Record(c, cas, path) => {
                let t = c.post(&body.to_string())?;
                // A body over Format 16's bounds is refused before the
                // cassette builds its value (16.1, 24.6).
                read_answer(&t)?;
                cas.push(body.clone(), &t);
                cas.write(path).map_err(|e| {
                    Failure::new(
                        Code::ModelCassette,
                        format!("cannot write the cassette {}: {e}", path.display()),
                    )
                })?;
                t
            }
            Backend::Replay(cas) => match cas.answer(body) {
                Some(t) => t,
                None => {
                    let (all, unused) = cas.counts();
                    let nearest = cas.nearest(body).map_or(String::new(), |(i, at)| {
                        let at = if at.is_empty() { "its root".to_string() } else { at };
                        format!("; the nearest recorded request (interaction {i}, from 0) differs at {at}")
                    });
                    return Err(Failure::new(
                        Code::UnmockedModelCall,
                        format!(
                            "{turn}: the cassette holds no answer for this request ({all} recorded, {unused} unused){nearest}; record it again with --record"
                        ),
                    ));
                }
            },
            Backend::Mocks(q) => match q.pop_front() {
                Some(Value::String(s)) => {
                    json!({"choices": [{"message": {"content": s}}]}).to_string()
                }
                Some(v) => {
                    json!({"choices": [{"message": {"content": v.to_string()}}]}).to_string()
                }
                None => {
                    return Err(Failure::new(
                        Code::UnmockedModelCall,
                        format!("{turn}: no `mocks.model` answer is left for this call"),
                    ))
                }
            },
        };
        read_answer(&text)
    }
}

/// The repair request's text (Format 24.4).
pub fn repair_text(errors: &[String]) -> String {
    format!(
        "Your answer was refused: {}. Answer again with one JSON object that follows the format.",
        errors.join("; ")
    )
}

impl Runtime for ModelRuntime {
    fn name(&self) -> &str {
        "model"
    }

    fn propose(&mut self, ctx: &TurnContext<'_>) -> Option<Proposal> {
        let engine = ctx.engine;
        let m = engine.session.find(ctx.input_id)?;
        let decl = &engine.ir.model.decl;
        let mut messages =
            prompt::messages(engine, m, ctx.responder, decl, self.settings.structured);
        let schema = &engine.ir.model.schema;
        let state = ctx.state();
        let mut record = TurnRecord {
            input: ctx.input_id.to_string(),
            ..TurnRecord::default()
        };
        let mut outcome = None;
        for attempt in 0..2 {
            let body = request_body(&self.settings, &messages, schema, ctx.seed);
            record.requests += 1;
            let turn = format!(
                "turn {} (input {})",
                engine.turn_round(ctx.state).0,
                ctx.input_id
            );
            let (text, usage) = match self.call(&body, &turn) {
                Ok(x) => x,
                Err(f) => {
                    self.failure = Some(f);
                    self.log.lock().map(|mut l| l.push(record)).ok();
                    return None;
                }
            };
            record.usage.add(usage);
            match validate(&text, &engine.ir, decl, &state) {
                Ok(v) => {
                    outcome = Some(v);
                    break;
                }
                Err(errors) if attempt == 0 => {
                    record.repaired = Some(errors.join("; "));
                    messages.push(ChatMessage {
                        role: "assistant",
                        content: text,
                    });
                    messages.push(ChatMessage {
                        role: "user",
                        content: repair_text(&errors),
                    });
                }
                Err(errors) => {
                    let why = format!(
                        "the model's answer was refused after one repair request, so the proposal was dropped whole: {}",
                        errors.join("; ")
                    );
                    self.diagnostics.push(
                        Diagnostic::error(Code::ModelAnswer, why.clone())
                            .at(format!("message:{}", ctx.reply_id)),
                    );
                    record.repaired = None;
                    record.dropped = Some(why);
                }
            }
        }
        let proposal = outcome.map(|v| {
            record.emotion = v.emotion.clone();
            record.clamped = v.clamped.clone();
            Proposal::adapter(v.reply, v.changes)
        });
        self.log.lock().map(|mut l| l.push(record)).ok();
        proposal
    }

    fn take_failure(&mut self) -> Option<Diagnostic> {
        self.failure
            .take()
            .map(|f| Diagnostic::error(f.code, f.message))
    }

    fn take_diagnostics(&mut self) -> Vec<Diagnostic> {
        std::mem::take(&mut self.diagnostics)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 43, item 12: usage near 2^64 saturates (Format 24.7) instead
    /// of wrapping, in an answer's missing total and in sums.
    #[test]
    fn usage_saturates() {
        let body = serde_json::json!({
            "choices": [{"message": {"content": "{}"}}],
            "usage": {"prompt_tokens": u64::MAX - 1, "completion_tokens": 5}
        })
        .to_string();
        let (_, usage) = read_answer(&body).unwrap();
        assert_eq!(usage.total_tokens, u64::MAX);
        let mut sum = usage;
        sum.add(usage);
        assert_eq!(sum.prompt_tokens, u64::MAX);
        assert_eq!(sum.completion_tokens, 10);
        assert_eq!(sum.total_tokens, u64::MAX);
    }
}

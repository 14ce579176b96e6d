//! The routes of `troupe serve` (docs/server.md "API"): `/api/v1`, every
//! body the JSON document the command line prints with `--json`, every
//! error an RFC 9457 `application/problem+json` document.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::db::{sha256_hex, Db, StoredAnswer};
use super::Config;
use axum::body::{Body, Bytes};
use axum::extract::{
    DefaultBodyLimit, FromRequest, FromRequestParts, Query, RawPathParams, Request, State,
};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put, MethodRouter};
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use troupe::{
    Code, Error, ErrorKind, OpenOptions, Pack, ResumeOptions, RuntimeChoice, Session,
    SessionOptions,
};

// ---------------------------------------------------------------- problems

/// An RFC 9457 problem: status, a stable code (a Troupe diagnostic code
/// when the library refused, else one of docs/server.md "Problem codes"),
/// a plain sentence, and members of its own.
#[derive(Debug)]
pub struct Problem {
    status: StatusCode,
    code: String,
    detail: String,
    /// Boxed: a problem travels in every `Result` of the handlers.
    extra: Box<Map<String, Value>>,
}

impl Problem {
    fn new(status: StatusCode, code: &str, detail: impl Into<String>) -> Problem {
        Problem {
            status,
            code: code.to_string(),
            detail: detail.into(),
            extra: Box::default(),
        }
    }
    fn with(mut self, key: &str, value: Value) -> Problem {
        self.extra.insert(key.to_string(), value);
        self
    }
    pub(super) fn not_found(what: &str) -> Problem {
        Problem::new(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            format!("no such {what}"),
        )
    }
    pub(super) fn bad_request(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::BAD_REQUEST, "BAD_REQUEST", detail)
    }
    /// A database failure: logged here, told to the client as 503 without
    /// the driver's text.
    fn db(e: impl std::fmt::Display) -> Problem {
        let (method, path) = requested();
        tracing::error!(method = %method, path = %path, error = %e, "database");
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "DATABASE",
            "the database is unavailable; retry later",
        )
    }
    pub(super) fn internal(what: &str) -> Problem {
        let (method, path) = requested();
        tracing::error!(method = %method, path = %path, what, "internal error");
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            "the server failed; the failure is logged",
        )
    }
    fn conflict(current: &str) -> Problem {
        Problem::new(
            StatusCode::CONFLICT,
            "CONFLICT",
            format!("the session's current message is `{current}`, not the one expected"),
        )
        .with("current", json!(current))
    }
}

/// The library's errors: the kind gives the status, the first diagnostic
/// the code; every diagnostic is in `diagnostics`.
impl From<Error> for Problem {
    fn from(e: Error) -> Problem {
        let status = match e.kind() {
            ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::Ended => StatusCode::CONFLICT,
            ErrorKind::Io | ErrorKind::Internal => return Problem::internal(&e.to_string()),
            ErrorKind::Runtime => StatusCode::BAD_GATEWAY,
            _ => StatusCode::UNPROCESSABLE_ENTITY,
        };
        let code = e.diagnostics().first().map_or_else(
            || e.kind().as_str().to_ascii_uppercase(),
            |d| d.code.to_string(),
        );
        let diags = serde_json::to_value(e.diagnostics()).unwrap_or(Value::Null);
        Problem::new(status, &code, e.to_string()).with("diagnostics", diags)
    }
}

fn title(status: StatusCode) -> &'static str {
    status.canonical_reason().unwrap_or("Error")
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let mut doc = Map::new();
        doc.insert(
            "type".into(),
            json!(format!("https://troupe.invalid/problems/{}", self.code)),
        );
        doc.insert("title".into(), json!(title(self.status)));
        doc.insert("status".into(), json!(self.status.as_u16()));
        doc.insert("detail".into(), json!(self.detail));
        doc.insert("code".into(), json!(self.code));
        doc.extend(*self.extra);
        let body = serde_json::to_vec_pretty(&Value::Object(doc)).unwrap_or_default();
        (
            self.status,
            [(header::CONTENT_TYPE, "application/problem+json")],
            body,
        )
            .into_response()
    }
}

pub(super) type Answer = Result<Response, Problem>;

pub(super) fn json_response(status: StatusCode, value: &impl serde::Serialize) -> Response {
    let mut body = serde_json::to_vec_pretty(value).unwrap_or_default();
    body.push(b'\n');
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn parse_json<T: serde::de::DeserializeOwned>(body: &Bytes) -> Result<T, Problem> {
    serde_json::from_slice(body).map_err(|e| {
        // serde names the Rust type it wanted (`expected struct TurnBody`):
        // a client is told the JSON it must send instead.
        let said = e.to_string();
        let said = match said.find("expected struct ") {
            Some(i) => {
                let end = said[i..].find(" at line").map_or(said.len(), |j| i + j);
                format!("{}expected a JSON object{}", &said[..i], &said[end..])
            }
            None => said,
        };
        Problem::bad_request(format!("the body: {said}"))
    })
}

/// A workspace ID: 1–64 of `A-Za-z0-9_-`.
pub fn valid_workspace(ws: &str) -> Result<(), String> {
    if ws.is_empty()
        || ws.len() > 64
        || !ws
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(format!(
            "workspace `{}` is not 1 to 64 letters, digits, `-` or `_`",
            troupe::escape_controls(ws)
        ));
    }
    Ok(())
}

// ----------------------------------------------------------------- metrics

/// Upper bounds (seconds) of the turn latency histogram's buckets.
const BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Debug, Default)]
struct Metrics {
    /// Answers by status class 1xx…5xx.
    requests: [AtomicU64; 6],
    /// Turns by the first bucket they fall in (one counter per turn; the
    /// histogram's cumulative counts are summed when `/metrics` is read).
    turn_buckets: [AtomicU64; 11],
    turn_count: AtomicU64,
    turn_micros: AtomicU64,
    /// Live sessions built from their whole stored file, and caught up
    /// from the lines after a cached copy (docs/server.md "Cost of a turn").
    rebuilds: AtomicU64,
    catch_ups: AtomicU64,
    /// Stored lines read to build or catch up live sessions.
    lines_read: AtomicU64,
    /// Messages the engine stepped to build or catch up live sessions
    /// (a catch-up steps only the new ones).
    messages_stepped: AtomicU64,
    /// Reads of a session's row (docs/server.md "Cost of a turn"): every
    /// read and export reads it, an operation on a held session does not.
    row_reads: AtomicU64,
}

impl Metrics {
    fn turn(&self, took: Duration) {
        let secs = took.as_secs_f64();
        if let Some(i) = BUCKETS.iter().position(|b| secs <= *b) {
            self.turn_buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.turn_count.fetch_add(1, Ordering::Relaxed);
        self.turn_micros
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }
}

// -------------------------------------------------------------- app state

/// A session played in this process, with what of it the database holds.
struct Live {
    session: Session,
    pack: Pack,
    /// Rows stored (`troupe_lines`) and their bytes: the session file's
    /// text up to `bytes` is in the database.
    rows: i64,
    bytes: usize,
    /// Under the model runtime: its turn records (docs/server.md
    /// "Runtimes"); `None` under the rules runtime.
    model: Option<troupe::model_runtime::Log>,
    /// The hash of the session's pack (its row's `pack`, which never
    /// changes).
    pack_hash: String,
    /// Whether another instance wrote the session while this copy was
    /// held (docs/server.md "Cost of a turn"): an operation then reads the
    /// session's row first, as every read does, until a read finds the
    /// copy up to date. Else an operation trusts the copy and its guarded
    /// `UPDATE` alone finds out ([`SessionRoute::live_to_write`]).
    contested: bool,
    /// The session file's bytes this copy holds, counted in the process's
    /// total (`cache_session_bytes`).
    held: Held,
}

/// A live session's share of [`Inner::live_bytes`]: the length of its
/// session file, added when counted and taken off when it changes or the
/// copy is dropped, so the total is always the copies held.
struct Held {
    total: Arc<std::sync::atomic::AtomicUsize>,
    counted: usize,
}

impl Held {
    fn new(total: &Arc<std::sync::atomic::AtomicUsize>, bytes: usize) -> Held {
        total.fetch_add(bytes, Ordering::Relaxed);
        Held {
            total: total.clone(),
            counted: bytes,
        }
    }

    /// The copy now holds `bytes` of session file.
    fn set(&mut self, bytes: usize) {
        if bytes >= self.counted {
            self.total
                .fetch_add(bytes - self.counted, Ordering::Relaxed);
        } else {
            self.total
                .fetch_sub(self.counted - bytes, Ordering::Relaxed);
        }
        self.counted = bytes;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.total.fetch_sub(self.counted, Ordering::Relaxed);
    }
}

type Slot = Arc<tokio::sync::Mutex<Option<Live>>>;

/// Most opened packs a process keeps, and most bytes of their uploads
/// together (an opened pack holds its upload and what was read from it):
/// beyond either the least recently used is let go. A live session keeps
/// its own pack, so letting one go costs only a later open.
const CACHE_PACKS: usize = 256;
const CACHE_PACK_BYTES: usize = 256 << 20;

/// The packs this process opened, by content hash, bounded by
/// [`CACHE_PACKS`] and [`CACHE_PACK_BYTES`] (so memory does not grow with
/// every pack ever uploaded; breaker, 2026-12-07).
#[derive(Default)]
struct PackCache {
    /// Hash → (the pack, its upload's bytes, when last used).
    packs: HashMap<String, (Pack, usize, u64)>,
    bytes: usize,
    clock: u64,
}

impl PackCache {
    fn get(&mut self, hash: &str) -> Option<Pack> {
        self.clock += 1;
        let now = self.clock;
        self.packs.get_mut(hash).map(|(p, _, used)| {
            *used = now;
            p.clone()
        })
    }

    fn insert(&mut self, hash: String, pack: Pack, size: usize) {
        self.clock += 1;
        if let Some((_, old, _)) = self.packs.insert(hash, (pack, size, self.clock)) {
            self.bytes -= old;
        }
        self.bytes += size;
        while self.packs.len() > 1
            && (self.packs.len() > CACHE_PACKS || self.bytes > CACHE_PACK_BYTES)
        {
            let oldest = self
                .packs
                .iter()
                .min_by_key(|(_, (_, _, used))| *used)
                .map(|(h, _)| h.clone());
            if let Some((_, size, _)) = oldest.and_then(|h| self.packs.remove(&h)) {
                self.bytes -= size;
            }
        }
    }
}

struct Inner {
    db: Db,
    packs: Mutex<PackCache>,
    sessions: Mutex<HashMap<(String, String), Slot>>,
    /// Checked tokens: SHA-256 → (workspace, when read, the token watch's
    /// epoch then).
    tokens: Mutex<HashMap<String, (String, Instant, u64)>>,
    cache_sessions: usize,
    /// The session files' bytes of the live sessions together, and the
    /// most of them kept (`cache_session_bytes`): beyond it idle sessions
    /// are dropped ([`App::slot`]).
    live_bytes: Arc<std::sync::atomic::AtomicUsize>,
    cache_session_bytes: usize,
    /// The largest request body in bytes.
    body_limit: usize,
    /// Seconds after which an unfinished `Idempotency-Key` claim counts as
    /// abandoned (twice the request time limit).
    claim_secs: i64,
    /// Seconds an `Idempotency-Key` is kept (`idempotency_key_secs`).
    key_secs: i64,
    metrics: Metrics,
    stopping: AtomicBool,
    /// The configured models, by name (docs/server.md "Runtimes").
    models: HashMap<String, super::ServedModel>,
    /// Permits for the checks of uploaded packs (`checks_at_once`): see
    /// [`on_permit`].
    checks: Arc<tokio::sync::Semaphore>,
}

/// The shared state of the server's handlers.
#[derive(Clone)]
pub struct App(Arc<Inner>);

impl App {
    /// The server's state; `Err` when a configured model cannot be served
    /// (its API key's variable unset).
    pub fn new(db: Db, config: &Config) -> Result<App, String> {
        let models = config.served_models()?;
        db.watch_tokens();
        let app = App(Arc::new(Inner {
            db,
            packs: Mutex::default(),
            sessions: Mutex::default(),
            tokens: Mutex::default(),
            cache_sessions: config.cache_sessions.max(1),
            live_bytes: Arc::default(),
            cache_session_bytes: config.cache_session_bytes,
            body_limit: config.body_limit,
            claim_secs: 2 * config.request_timeout_secs.max(1) as i64,
            key_secs: config.idempotency_key_secs.min(i64::MAX as u64) as i64,
            metrics: Metrics::default(),
            stopping: AtomicBool::new(false),
            models,
            checks: Arc::new(tokio::sync::Semaphore::new(match config.checks_at_once {
                0 => std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
                n => n,
            })),
        }));
        tokio::spawn(prune_keys(Arc::downgrade(&app.0)));
        Ok(app)
    }

    /// The runtime a session's settings name (docs/server.md "Runtimes"):
    /// the rules runtime, or the configured model `name` with its turn log.
    fn runtime_for(
        &self,
        model: Option<&str>,
    ) -> Result<(RuntimeChoice, Option<troupe::model_runtime::Log>), Problem> {
        use troupe::model_runtime::{Backend, ModelRuntime};
        let Some(name) = model else {
            return Ok((RuntimeChoice::Rules, None));
        };
        let Some(served) = self.0.models.get(name) else {
            let mut known: Vec<&str> = self.0.models.keys().map(String::as_str).collect();
            known.sort_unstable();
            let offered = if known.is_empty() {
                "this server configures no model".to_string()
            } else {
                format!("configured: {}", known.join(", "))
            };
            return Err(Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "UNKNOWN_MODEL",
                format!(
                    "no model `{}` is configured on this server ({offered})",
                    troupe::escape_controls(name)
                ),
            ));
        };
        let backend = Backend::connect(&served.connection).map_err(Problem::from)?;
        let runtime = ModelRuntime::new(served.settings.clone(), backend);
        let log = runtime.log();
        Ok((runtime.adapter(), Some(log)))
    }

    /// From now on new requests are answered 503 (graceful shutdown).
    pub fn begin_shutdown(&self) {
        self.0.stopping.store(true, Ordering::SeqCst);
    }

    fn db(&self) -> &Db {
        &self.0.db
    }

    fn has_slot(&self, ws: &str, id: &str) -> bool {
        self.0
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(&(ws.to_string(), id.to_string()))
    }

    /// Drops this process's slot of a session (deleted, or found gone).
    fn forget(&self, ws: &str, id: &str) {
        self.0
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(ws.to_string(), id.to_string()));
    }

    fn slot(&self, ws: &str, id: &str) -> Slot {
        let mut map = self.0.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let key = (ws.to_string(), id.to_string());
        let over = || self.0.live_bytes.load(Ordering::Relaxed) > self.0.cache_session_bytes;
        if let Some(s) = map.get(&key) {
            if !over() {
                return s.clone();
            }
        } else if map.len() >= self.0.cache_sessions {
            // Drop an idle one; it is rebuilt from the database when asked for.
            let idle = map
                .iter()
                .find(|(_, s)| Arc::strong_count(s) == 1)
                .map(|(k, _)| k.clone());
            if let Some(k) = idle {
                map.remove(&k);
            }
        }
        // Over the bytes' bound (a session grown by its turns, a large one
        // resumed), other idle sessions are dropped until it holds again
        // or none is idle: a dropped copy takes its bytes off the total.
        if over() {
            let idle: Vec<_> = map
                .iter()
                .filter(|(k, s)| Arc::strong_count(s) == 1 && **k != key)
                .map(|(k, _)| k.clone())
                .collect();
            for k in idle {
                if !over() {
                    break;
                }
                map.remove(&k);
            }
        }
        map.entry(key).or_default().clone()
    }

    /// The pack `hash` of workspace `ws` (deleted ones included: sessions
    /// keep reading theirs), opened once per process.
    pub(super) async fn pack(
        &self,
        ws: &str,
        hash: &str,
        live_only: bool,
    ) -> Result<Pack, Problem> {
        // The row's existence in this workspace is checked on every call;
        // its body is read only when this process has not opened it yet.
        let deleted = self
            .db()
            .pack_deleted(ws, hash)
            .await
            .map_err(Problem::db)?
            .ok_or_else(|| Problem::not_found("pack"))?;
        if live_only && deleted {
            return Err(Problem::not_found("pack"));
        }
        let cached = self
            .0
            .packs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(hash);
        if let Some(p) = cached {
            return Ok(p);
        }
        let (kind, body) = self
            .db()
            .pack_body(ws, hash)
            .await
            .map_err(Problem::db)?
            .ok_or_else(|| Problem::not_found("pack"))?;
        let size = body.len();
        let pack = blocking("opening a stored pack", move || open_pack(&kind, &body)).await?;
        self.0
            .packs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(hash.to_string(), pack.clone(), size);
        Ok(pack)
    }
}

/// An uploaded pack, opened as [`open_pack`] does a stored one but with a
/// package's compiled form verified against its `bundle.json` (Format
/// 14.4): what is stored is then a pack that passes `troupe check`, and
/// [`open_pack`] may trust it by its content hash afterwards.
fn upload_pack(kind: &str, body: &[u8]) -> Result<Pack, Problem> {
    match kind {
        "package" => Pack::from_package_with(body, OpenOptions::default().verify_ir(true))
            .map_err(Problem::from),
        _ => open_pack(kind, body),
    }
}

fn open_pack(kind: &str, body: &[u8]) -> Result<Pack, Problem> {
    match kind {
        "package" => Pack::from_package(body).map_err(Problem::from),
        _ => {
            let text = std::str::from_utf8(body)
                .map_err(|_| Problem::bad_request("a bundle is UTF-8 text (Format 13)"))?;
            Pack::from_bundle(text).map_err(Problem::from)
        }
    }
}

// ------------------------------------------------------------- extractors

/// Runs `work` off the async threads (the engine is synchronous); a
/// panic or cancellation there is an internal error naming `what`.
async fn blocking<T, E>(
    what: &'static str,
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, Problem>
where
    T: Send + 'static,
    E: Into<Problem> + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(r) => r.map_err(Into::into),
        Err(_) => Err(Problem::internal(what)),
    }
}

/// [`blocking`] holding one of `permits` from before it starts until the
/// work ends — not until the request ends: for the checks of uploaded
/// packs (`PUT …/packs`, `POST …/packs:test`, on [`Inner::checks`]) a
/// check whose request's time limit answered it meanwhile keeps its
/// permit, so the uploads being checked, and the memory they take (Format
/// 16.2), are bounded whatever the clients send.
async fn on_permit<T, E>(
    permits: &Arc<tokio::sync::Semaphore>,
    what: &'static str,
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, Problem>
where
    T: Send + 'static,
    E: Into<Problem> + Send + 'static,
{
    let permit = permits
        .clone()
        .acquire_owned()
        .await
        .map_err(|_| Problem::internal(what))?;
    blocking(what, move || {
        let _held = permit;
        work()
    })
    .await
}

/// A path parameter of the route (`ws`, `id`, `hash`), empty when absent.
fn param(params: &RawPathParams, name: &str) -> String {
    params
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
        .unwrap_or_default()
}

async fn params_of(parts: &mut Parts, app: &App) -> Result<RawPathParams, Problem> {
    RawPathParams::from_request_parts(parts, app)
        .await
        .map_err(|_| Problem::not_found("route"))
}

/// The workspace `{ws}` of a route (its token already checked by
/// [`auth`]) and the server's state: what every workspace handler starts
/// from.
struct Workspace {
    app: App,
    ws: String,
    /// The request's `Idempotency-Key`, claimed by [`idempotency`]: an
    /// upload's, a session start's or a revocation's answer is written in
    /// the operation's transaction ([`record`]).
    idem: Option<IdempotencyKey>,
}

impl FromRequestParts<App> for Workspace {
    type Rejection = Problem;
    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Workspace, Problem> {
        let params = params_of(parts, app).await?;
        Ok(Workspace {
            app: app.clone(),
            ws: param(&params, "ws"),
            idem: parts.extensions.get::<IdempotencyKey>().cloned(),
        })
    }
}

/// The session `{id}` of workspace `{ws}`: its live copy, its stored
/// history and its changes go through here (module "sessions" below).
pub(super) struct SessionRoute {
    app: App,
    ws: String,
    id: String,
    /// The request's `Idempotency-Key`, claimed by [`idempotency`]: its
    /// answer is written in the operation's transaction
    /// ([`SessionRoute::mutate_logged`]).
    idem: Option<IdempotencyKey>,
    /// SQLite: the request's token, remembered and not read again
    /// ([`auth`]): checked in the operation's transaction.
    unchecked: Option<UncheckedToken>,
}

/// A bearer token [`auth`] let through from memory without reading it
/// (SQLite, a session operation: docs/server.md "Tokens"), as its SHA-256
/// (a request extension).
#[derive(Debug, Clone)]
struct UncheckedToken(String);

/// Marks an answer whose operation was committed with its request's
/// token checked in the same transaction ([`UncheckedToken`]; a response
/// extension): [`auth`] need not read the token after it.
#[derive(Debug, Clone, Copy)]
struct TokenChecked;

/// An `Idempotency-Key` the [`idempotency`] layer claimed for this request
/// (a request extension).
#[derive(Debug, Clone)]
struct IdempotencyKey(String);

/// Marks an answer whose `Idempotency-Key` record its operation's
/// transaction already wrote (a response extension): [`idempotency`] does
/// not write it again.
#[derive(Debug, Clone, Copy)]
struct AnswerStored;

impl FromRequestParts<App> for SessionRoute {
    type Rejection = Problem;
    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<SessionRoute, Problem> {
        let params = params_of(parts, app).await?;
        Ok(SessionRoute {
            app: app.clone(),
            ws: param(&params, "ws"),
            id: param(&params, "id"),
            idem: parts.extensions.get::<IdempotencyKey>().cloned(),
            unchecked: parts.extensions.get::<UncheckedToken>().cloned(),
        })
    }
}

/// The pack `{hash}` of workspace `{ws}`.
pub(super) struct PackRoute {
    pub(super) app: App,
    pub(super) ws: String,
    pub(super) hash: String,
    /// The request's `Idempotency-Key` (a pack's delete).
    idem: Option<IdempotencyKey>,
}

impl FromRequestParts<App> for PackRoute {
    type Rejection = Problem;
    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<PackRoute, Problem> {
        let params = params_of(parts, app).await?;
        Ok(PackRoute {
            app: app.clone(),
            ws: param(&params, "ws"),
            hash: param(&params, "hash"),
            idem: parts.extensions.get::<IdempotencyKey>().cloned(),
        })
    }
}

/// A JSON request body, refused as `BAD_REQUEST` with serde's reason.
struct JsonBody<T>(T);

impl<T: serde::de::DeserializeOwned> FromRequest<App> for JsonBody<T> {
    type Rejection = Problem;
    async fn from_request(req: Request, app: &App) -> Result<JsonBody<T>, Problem> {
        let body = Bytes::from_request(req, app)
            .await
            .map_err(|_| Problem::bad_request("the body cannot be read"))?;
        parse_json(&body).map(JsonBody)
    }
}

/// [`JsonBody`], or `T::default()` when the body is empty.
struct JsonOrEmpty<T>(T);

impl<T: serde::de::DeserializeOwned + Default> FromRequest<App> for JsonOrEmpty<T> {
    type Rejection = Problem;
    async fn from_request(req: Request, app: &App) -> Result<JsonOrEmpty<T>, Problem> {
        let body = Bytes::from_request(req, app)
            .await
            .map_err(|_| Problem::bad_request("the body cannot be read"))?;
        if body.is_empty() {
            return Ok(JsonOrEmpty(T::default()));
        }
        parse_json(&body).map(JsonOrEmpty)
    }
}

// ------------------------------------------------------------------ router

/// A route of `/api/v1/workspaces/{ws}`. The router and the OpenAPI
/// document are both built from [`workspace_routes`], so every route served
/// is in the document.
pub(super) struct Route {
    pub(super) method: &'static str,
    pub(super) path: &'static str,
    pub(super) summary: &'static str,
    /// The request body's media type, if it takes one.
    pub(super) body: Option<&'static str>,
    /// The success status and its media type.
    pub(super) ok: (u16, &'static str),
    pub(super) handler: MethodRouter<App>,
}

fn workspace_routes() -> Vec<Route> {
    let r = |method, path, summary, body, ok, handler| Route {
        method,
        path,
        summary,
        body,
        ok,
        handler,
    };
    const JSON: &str = "application/json";
    vec![
        r("put", "/packs", "Upload a package (zip) or a bundle, checked; identified by its content hash. 422: the `troupe check --json` report.", Some("application/octet-stream"), (201, JSON), put(put_pack)),
        r("get", "/packs", "The workspace's packs.", None, (200, JSON), get(list_packs)),
        r("get", "/packs/{hash}", "A pack.", None, (200, JSON), get(get_pack)),
        r("delete", "/packs/{hash}", "Hide a pack from new sessions; its sessions keep reading it.", None, (204, JSON), delete(delete_pack)),
        r("post", "/packs:test", "Run `troupe test` on a zipped pack directory; nothing is stored. `format`: json (the `troupe test --json` report), text, junit, all.", Some("application/zip"), (200, JSON), post(test_pack)),
        r("get", "/sessions", "The workspace's sessions, by ID: `{sessions: [{id, pack, scenario, created, messages, current}], next}`; `?limit=N` (1–1000, default 100) per page, `?cursor=C` the `next` of the page before.", None, (200, JSON), get(list_sessions)),
        r("delete", "/tokens/current", "Revoke the bearer token of this request: from the next request on it opens nothing, on every instance.", None, (204, JSON), delete(revoke_current_token)),
        r("post", "/sessions", "Start a session: {pack, scenario?, seed?, difficulty?, opening?, player_name?, runtime?, model?} (`model`: a configured model's name).", Some(JSON), (201, JSON), post(create_session)),
        r("post", "/sessions:resume", "Go on with an uploaded session file (`?pack=HASH[&at=ID]`, Format 18.10).", Some("application/jsonl"), (201, JSON), post(resume_session)),
        r("get", "/sessions/{id}", "A session's summary; `{id}.jsonl`: its session file, byte-identical to `troupe run --out`.", None, (200, JSON), get(get_session)),
        r("delete", "/sessions/{id}", "Delete a session: its row and every stored line, in one transaction; from then on its routes answer 404. `?expected=ID&lines=N`: only while its current message and stored lines are still those (what `{id}.jsonl` answered in `Troupe-Current` and `Troupe-Lines`), else 409.", None, (204, JSON), delete(delete_session)),
        r("post", "/sessions/{id}/turns", "One turn {text, as?, to?, expected?}: the turn document of `troupe run --json`; 409 when `expected` is not the current message.", Some(JSON), (200, JSON), post(turn)),
        r("post", "/sessions/{id}/undo", "Take the last turn back {expected?}; nothing is lost.", Some(JSON), (200, JSON), post(undo)),
        r("post", "/sessions/{id}/goto", "Make a message current {message, expected?}: the next input starts a branch there.", Some(JSON), (200, JSON), post(goto)),
        r("post", "/sessions/{id}/settings", "Change the difficulty settings from now on {difficulty?, knobs?, expected?} (Format 8.9).", Some(JSON), (200, JSON), post(settings)),
        r("get", "/sessions/{id}/state", "What `troupe state --json` prints, at `?at=ID` or the last message.", None, (200, JSON), get(state)),
        r("get", "/sessions/{id}/ended", "What `troupe ended --json` prints, at `?at=ID` or the last message (Format 9.3).", None, (200, JSON), get(ended)),
        r("get", "/sessions/{id}/explain", "What `troupe explain --json` prints, at `?at=ID` or the last message (Format 5.3).", None, (200, JSON), get(explain)),
        r("get", "/sessions/{id}/knows", "What `troupe knows --json` prints: who knows `?message=ID` and `part=N` or `summary=true` (Format 7.4, 12.5).", None, (200, JSON), get(knows)),
        r("get", "/sessions/{id}/score", "The session's rubric score at its current message (Format 19.6), or null.", None, (200, JSON), get(score)),
        r("get", "/sessions/{id}/render", "What `troupe render --session FILE --json` prints: `?text=T` rendered at `at` (default: the initial state) for `char`, `owner`, `narrator`, `per_chat` (Format 10).", None, (200, JSON), get(render)),
        r("get", "/sessions/{id}/prompt", "What `troupe prompt --json` prints: the model runtime's request when `char` answers `at` (default: the last message), with `model`, `structured`, `max_tokens`, `temperature` (Format 24.3); nothing is sent.", None, (200, JSON), get(prompt)),
    ]
    .into_iter()
    .chain(super::web::api_routes())
    .collect()
}

/// The OpenAPI 3.1 document of the API (`GET /api/v1/openapi.json`),
/// built from the same table as the router.
fn openapi() -> Value {
    let problem = json!({"description": "An RFC 9457 problem (docs/server.md \"Problems\")", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}});
    let mut paths = Map::new();
    let mut add = |path: String, method: &str, op: Value| {
        let entry = paths.entry(path).or_insert_with(|| json!({}));
        entry[method] = op;
    };
    for r in workspace_routes() {
        let mut params = vec![
            json!({"name": "ws", "in": "path", "required": true, "schema": {"type": "string"}}),
        ];
        for seg in r.path.split('/') {
            if let Some(name) = seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                params.push(json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}));
            }
        }
        let bodies = super::schemas::operation(r.method, r.path);
        for (name, schema, required) in bodies.query {
            params
                .push(json!({"name": name, "in": "query", "required": required, "schema": schema}));
        }
        let success = match (r.ok.0, bodies.response) {
            (204, _) => json!({"description": "success, no content"}),
            (_, Some(schema)) => {
                json!({"description": "success", "content": {r.ok.1: {"schema": schema}}})
            }
            (_, None) => json!({"description": "success", "content": {r.ok.1: {}}}),
        };
        let mut op = json!({
            "summary": r.summary,
            "operationId": format!("{} {}", r.method, r.path),
            "parameters": params,
            "responses": {
                r.ok.0.to_string(): success,
                "default": problem,
            },
        });
        if let Some(media) = r.body {
            let content = match bodies.request {
                Some(schema) => json!({media: {"schema": schema}}),
                None => json!({media: {}}),
            };
            // Undo takes an empty body as `{}`.
            let required = r.path != "/sessions/{id}/undo";
            op["requestBody"] = json!({"required": required, "content": content});
        }
        add(format!("/api/v1/workspaces/{{ws}}{}", r.path), r.method, op);
    }
    for (path, summary) in [
        ("/healthz", "`ok` while the process runs."),
        ("/readyz", "`ready` when the database answers, else 503."),
        ("/metrics", "Prometheus text."),
        ("/api/v1/openapi.json", "This document."),
    ] {
        add(
            path.to_string(),
            "get",
            json!({"summary": summary, "operationId": format!("get {path}"), "security": [], "responses": {"200": {"description": "success"}}}),
        );
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "troupe serve", "version": env!("CARGO_PKG_VERSION"), "description": "Sessions of Troupe packs over HTTP/JSON (docs/server.md)."},
        "security": [{"bearer": []}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": super::schemas::components(),
        },
        "paths": paths,
    })
}

/// The server's routes and layers.
pub fn router(app: App, config: &Config) -> Router {
    let mut merged: Vec<(&'static str, MethodRouter<App>)> = Vec::new();
    for r in workspace_routes() {
        match merged.iter_mut().find(|(p, _)| *p == r.path) {
            Some((_, m)) => *m = std::mem::take(m).merge(r.handler),
            None => merged.push((r.path, r.handler)),
        }
    }
    let ws = merged
        .into_iter()
        .fold(Router::new(), |router, (path, m)| router.route(path, m))
        .layer(middleware::from_fn_with_state(app.clone(), idempotency))
        .layer(middleware::from_fn_with_state(app.clone(), auth));
    let doc = openapi();
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route(
            "/api/v1/openapi.json",
            get(move || async move { json_response(StatusCode::OK, &doc) }),
        )
        .nest("/api/v1/workspaces/{ws}", ws)
        .merge(super::web::page_routes())
        .fallback(|| async { Problem::not_found("route") })
        .layer(DefaultBodyLimit::max(config.body_limit))
        .layer(tower_http::limit::RequestBodyLimitLayer::new(
            config.body_limit,
        ))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            Duration::from_secs(config.request_timeout_secs.max(1)),
        ))
        // Inside `outer`: a panic is answered 500 and has its `answered`
        // line, its error line naming the request.
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            |_: Box<dyn std::any::Any + Send>| {
                Problem::internal("a handler panicked").into_response()
            },
        ))
        .layer(middleware::from_fn_with_state(app.clone(), outer))
        // Should `outer` itself panic.
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            |_: Box<dyn std::any::Any + Send>| {
                Problem::internal("a handler panicked").into_response()
            },
        ))
        .with_state(app)
}

/// Counts answers, refuses new requests once shutting down, and turns any
/// error answer that is not ours (the router's 405, the body limit's 413,
/// the timeout's 503, a rejected extractor's text) into a problem.
///
/// One log line per answer (method, path, status, latency in µs): one
/// `tracing` event, without a span per request around the handler
/// (docs/performance.md "Server", Run AG: tower-http's `TraceLayer` made
/// a span and an event per request).
async fn outer(State(app): State<App>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let uri = req.uri().clone();
    let response = REQUEST
        .scope((method.clone(), uri.clone()), answer_outer(&app, req, next))
        .await;
    tracing::info!(
        method = %method,
        path = uri.path(),
        status = response.status().as_u16(),
        micros = started.elapsed().as_micros() as u64,
        "answered"
    );
    response
}

tokio::task_local! {
    /// The method and URI of the request this task answers ([`outer`]),
    /// named by the error and warning lines logged while answering it
    /// ([`requested`]) — without a span per request (Run AG).
    static REQUEST: (Method, axum::http::Uri);
}

/// The method and path of the request being answered, for a log line
/// (`-` outside a request: a background task's line).
fn requested() -> (String, String) {
    REQUEST
        .try_with(|(m, u)| (m.to_string(), u.path().to_string()))
        .unwrap_or_else(|_| ("-".into(), "-".into()))
}

/// [`outer`] but its log line.
async fn answer_outer(app: &App, req: Request, next: Next) -> Response {
    let stopping = app.0.stopping.load(Ordering::SeqCst);
    let response = if stopping {
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "SHUTTING_DOWN",
            "the server is shutting down",
        )
        .into_response()
    } else {
        // The body is read whole (up to the limit) before any handler or
        // extractor answers: an answer given before the body was read
        // (a rejected query, say) would leave hyper closing the
        // connection under a client about to reuse it.
        // A body announced larger than the limit is refused before a
        // byte of it is read (and so before hyper answers an `Expect:
        // 100-continue` with `100 Continue`).
        let announced = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let (parts, body) = req.into_parts();
        let read = match announced {
            Some(n) if n > app.0.body_limit as u64 => None,
            _ => axum::body::to_bytes(body, app.0.body_limit).await.ok(),
        };
        match read {
            Some(bytes) => {
                next.run(Request::from_parts(parts, Body::from(bytes)))
                    .await
            }
            None => Problem::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "BODY_TOO_LARGE",
                format!("the body is larger than {} bytes", app.0.body_limit),
            )
            .into_response(),
        }
    };
    let status = response.status();
    let class = (status.as_u16() / 100) as usize;
    app.0.metrics.requests[class.min(5)].fetch_add(1, Ordering::Relaxed);
    // Ours: a problem, or a JSON report (`PUT /packs`' check report).
    let ours = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| {
            v.as_bytes() == b"application/problem+json" || v.as_bytes() == b"application/json"
        });
    if status.as_u16() >= 400 && !ours {
        let code = match status {
            StatusCode::PAYLOAD_TOO_LARGE => "BODY_TOO_LARGE",
            StatusCode::SERVICE_UNAVAILABLE | StatusCode::REQUEST_TIMEOUT => "TIMEOUT",
            StatusCode::METHOD_NOT_ALLOWED => "METHOD_NOT_ALLOWED",
            StatusCode::NOT_FOUND => "NOT_FOUND",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "UNSUPPORTED_MEDIA_TYPE",
            _ => "BAD_REQUEST",
        };
        // A rejection of axum's own extractors (a query string that does
        // not fit its route's parameters, say) says what was wrong in a
        // short plain text: that text is the detail, not just the status.
        let plain = response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/plain"));
        let detail = if plain && status.is_client_error() {
            axum::body::to_bytes(response.into_body(), 4096)
                .await
                .ok()
                .and_then(|b| String::from_utf8(b.to_vec()).ok())
                .filter(|t| !t.trim().is_empty())
        } else {
            None
        };
        let detail = detail.unwrap_or_else(|| title(status).to_lowercase());
        return Problem::new(status, code, detail).into_response();
    }
    response
}

/// Bearer tokens (docs/server.md "Access"): none or an unknown one is 401;
/// a token of another workspace is 404, as if nothing were there.
///
/// On SQLite a session operation ([`checked_in_commit`]) whose token this
/// process remembers runs without reading it: its commit reads the token
/// in its own transaction ([`UncheckedToken`]) and applies nothing if it
/// is gone; any answer not so committed (a refusal, a conflict, a failure)
/// is given only after the token is read now (docs/server.md "Tokens").
async fn auth(
    State(app): State<App>,
    params: RawPathParams,
    mut req: Request,
    next: Next,
) -> Response {
    let ws = param(&params, "ws");
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| t.trim().to_string());
    let Some(token) = token else {
        return unauthorized();
    };
    let key = sha256_hex(token.as_bytes());
    if app.db().is_sqlite()
        && checked_in_commit(&req)
        && app.remembered(&key).as_deref() == Some(ws.as_str())
    {
        req.extensions_mut().insert(UncheckedToken(key.clone()));
        let response = next.run(req).await;
        if response.extensions().get::<TokenChecked>().is_some() {
            return response;
        }
        return match app.token_workspace(&key).await {
            Err(e) => Problem::db(e).into_response(),
            Ok(None) => {
                // Revoked: not taken from memory again.
                app.forget_token(&key);
                unauthorized()
            }
            Ok(Some(w)) if w != ws => Problem::not_found("workspace").into_response(),
            Ok(Some(_)) => response,
        };
    }
    match app.token_workspace(&key).await {
        Err(e) => Problem::db(e).into_response(),
        Ok(None) => unauthorized(),
        Ok(Some(w)) if w != ws => Problem::not_found("workspace").into_response(),
        Ok(Some(_)) => next.run(req).await,
    }
}

/// Whether `req` is a session operation whose only write is its commit
/// (`POST …/sessions/{id}/turns`, `undo`, `goto`, `settings`) and carries
/// no `Idempotency-Key` (a key's claim and replay come before the
/// commit): what may run on a remembered token on SQLite ([`auth`]).
fn checked_in_commit(req: &Request) -> bool {
    let path = req.uri().path();
    req.method() == Method::POST
        && !req.headers().contains_key("idempotency-key")
        && path.contains("/sessions/")
        && ["/turns", "/undo", "/goto", "/settings"]
            .iter()
            .any(|op| path.ends_with(op))
}

/// How long a checked token is trusted without reading the database again.
const TOKEN_TTL: Duration = Duration::from_secs(60);

/// Most checked tokens remembered (all forgotten at once beyond).
const TOKEN_CACHE: usize = 10_000;

impl App {
    /// The workspace a bearer token opens, by its SHA-256 `key`. On
    /// PostgreSQL, while the server listens for revocations
    /// ([`super::db::TokenWatch`]), a valid token is remembered for
    /// [`TOKEN_TTL`] and until the next revocation, so a request does not
    /// read its token row each time; otherwise (SQLite, or the listening
    /// connection lost) every call reads it, so a revoked token is refused
    /// at once. On SQLite what was read is remembered too, for [`auth`]'s
    /// session operations only, whose commits read it again
    /// ([`App::remembered`]).
    async fn token_workspace(&self, key: &str) -> Result<Option<String>, String> {
        let watch = &self.db().tokens;
        let now = Instant::now();
        let epoch = watch.epoch.load(Ordering::SeqCst);
        let listening = watch.listening.load(Ordering::SeqCst);
        if listening {
            let cache = self.0.tokens.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((ws, at, e)) = cache.get(key) {
                if *e == epoch && now.duration_since(*at) < TOKEN_TTL {
                    return Ok(Some(ws.clone()));
                }
            }
        }
        let found = self.db().token_workspace(key).await?;
        // Remembered only when no revocation (nor a lost connection) came
        // in while the row was read; on SQLite, when this process revoked
        // nothing meanwhile.
        let unchanged = watch.epoch.load(Ordering::SeqCst) == epoch;
        let remember = if self.db().is_sqlite() {
            unchanged
        } else {
            listening && unchanged && watch.listening.load(Ordering::SeqCst)
        };
        if let (Some(ws), true) = (&found, remember) {
            let mut cache = self.0.tokens.lock().unwrap_or_else(|p| p.into_inner());
            if cache.len() >= TOKEN_CACHE {
                cache.clear();
            }
            cache.insert(key.to_string(), (ws.clone(), now, epoch));
        }
        Ok(found)
    }

    /// Forgets the token `key` (found revoked).
    fn forget_token(&self, key: &str) {
        let mut cache = self.0.tokens.lock().unwrap_or_else(|p| p.into_inner());
        cache.remove(key);
    }

    /// SQLite: the workspace of the token `key` as this process last read
    /// it (within [`TOKEN_TTL`], and unless it revoked a token since);
    /// trusted only until the operation's commit reads it again
    /// ([`auth`]).
    fn remembered(&self, key: &str) -> Option<String> {
        let epoch = self.db().tokens.epoch.load(Ordering::SeqCst);
        let cache = self.0.tokens.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .get(key)
            .filter(|(_, at, e)| *e == epoch && at.elapsed() < TOKEN_TTL)
            .map(|(ws, _, _)| ws.clone())
    }
}

/// The problem of a request without a valid token (401).
fn unauthorized_problem() -> Problem {
    Problem::new(
        StatusCode::UNAUTHORIZED,
        "UNAUTHORIZED",
        "a bearer token of this workspace is needed (`troupe serve token create`)",
    )
}

fn unauthorized() -> Response {
    let mut r = unauthorized_problem().into_response();
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

/// The longest `Idempotency-Key` kept, in bytes.
const MAX_KEY_LEN: usize = 200;

/// `Idempotency-Key` (docs/server.md): the first answer of a key is stored
/// (bar a 5xx) and a retry with the same key and request gets it again
/// without anything being done twice; the same key with another request
/// is 422, while the first is still running 409.
async fn idempotency(
    State(app): State<App>,
    params: RawPathParams,
    req: Request,
    next: Next,
) -> Response {
    let Some(raw) = req.headers().get("idempotency-key") else {
        return next.run(req).await;
    };
    if req.method() == Method::GET {
        return next.run(req).await;
    }
    // A key the server cannot keep is refused, never ignored: ignoring it
    // would let the client's retry do the request twice.
    let key = match raw.to_str() {
        Ok(k)
            if !k.is_empty()
                && k.len() <= MAX_KEY_LEN
                && k.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            k.to_string()
        }
        _ => {
            return Problem::bad_request(format!(
                "the Idempotency-Key is 1 to {MAX_KEY_LEN} visible ASCII characters"
            ))
            .into_response()
        }
    };
    let ws = param(&params, "ws");
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "BODY_TOO_LARGE",
            "the body is larger than the server takes",
        )
        .into_response();
    };
    let mut fingerprint = format!("{} {}\n", parts.method, parts.uri).into_bytes();
    fingerprint.extend_from_slice(&bytes);
    let fingerprint = sha256_hex(&fingerprint);
    let db = app.db();
    match db.claim_key(&ws, &key, &fingerprint).await {
        Err(e) => return Problem::db(e).into_response(),
        Ok(false) => match replay(db, &ws, &key, &fingerprint, app.0.claim_secs).await {
            Ok(Some(r)) => return r,
            Err(p) => return p.into_response(),
            // An abandoned claim, taken over: this request runs.
            Ok(None) => {}
        },
        Ok(true) => {}
    }
    let mut parts = parts;
    parts.extensions.insert(IdempotencyKey(key.clone()));
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    // A session operation wrote its answer in its own transaction.
    if response.extensions().get::<AnswerStored>().is_some() {
        return response;
    }
    let status = response.status();
    let (rparts, rbody) = response.into_parts();
    let rbytes = axum::body::to_bytes(rbody, usize::MAX)
        .await
        .unwrap_or_default();
    let answer = if status.is_server_error() {
        Err(key)
    } else {
        Ok(stored_answer(key, status, &rparts.headers, &rbytes))
    };
    if let Err(e) = db.answer_key(&ws, answer).await {
        let (method, path) = requested();
        tracing::error!(method = %method, path = %path, error = %e, "storing an idempotent answer");
    }
    Response::from_parts(rparts, Body::from(rbytes))
}

/// The record of an answer of `Idempotency-Key` `key`: its status,
/// content type, other headers (`Troupe-Current`, `Location`, … every one
/// the handler set but the body's length) and body.
fn stored_answer(
    key: String,
    status: StatusCode,
    headers: &axum::http::HeaderMap,
    body: &[u8],
) -> StoredAnswer {
    let others: Vec<(&str, &str)> = headers
        .iter()
        .filter(|(n, _)| **n != header::CONTENT_TYPE && **n != header::CONTENT_LENGTH)
        .filter_map(|(n, v)| Some((n.as_str(), v.to_str().ok()?)))
        .collect();
    StoredAnswer {
        key,
        status: status.as_u16() as i64,
        content_type: headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string(),
        headers: serde_json::to_string(&others).unwrap_or_default(),
        body: body.to_vec(),
    }
}

/// `response` and its `Idempotency-Key` record under `key`
/// ([`stored_answer`]): what an operation writes in its own transaction
/// when the request carries a key (docs/server.md "API").
async fn record(key: &str, response: Response) -> Result<(Response, StoredAnswer), Problem> {
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .map_err(|_| Problem::internal("an answer's body"))?;
    let a = stored_answer(key.to_string(), parts.status, &parts.headers, &bytes);
    Ok((Response::from_parts(parts, Body::from(bytes)), a))
}

/// `response` ready to be written with its operation: with a key, marked
/// [`AnswerStored`] and its record made the operation's answer whatever
/// the outcome `T` (narrow it with [`when_applied`]); without, unchanged.
async fn keyed<T>(
    idem: &Option<IdempotencyKey>,
    response: Response,
) -> Result<(Response, super::db::AnswerFor<T>), Problem> {
    let Some(IdempotencyKey(key)) = idem else {
        return Ok((response, None));
    };
    let (r, a) = record(key, response).await?;
    Ok((r.with_stored(), Some(Box::new(move |_: &T| Some(a)))))
}

/// `answer` written only when the operation applied (a delete that found
/// its row): the answer of one that did not is another (404, 409), which
/// [`idempotency`] stores after it, nothing having changed.
fn when_applied(answer: super::db::AnswerFor<bool>) -> super::db::AnswerFor<bool> {
    answer.map(|f| -> super::db::AnswerFn<bool> {
        Box::new(move |applied: &bool| if *applied { f(applied) } else { None })
    })
}

/// Marks an answer whose `Idempotency-Key` record went into its
/// operation's transaction ([`AnswerStored`]).
trait WithStored {
    fn with_stored(self) -> Self;
}

impl WithStored for Response {
    fn with_stored(mut self) -> Response {
        self.extensions_mut().insert(AnswerStored);
        self
    }
}

/// The most expired `Idempotency-Key` rows one statement deletes, and the
/// most statements one round of [`prune_keys`] runs: a round's work is
/// bounded whatever the table holds (a backlog is worked off over rounds).
const PRUNE_BATCH: i64 = 1000;
const PRUNE_BATCHES: usize = 20;

/// Deletes the `Idempotency-Key`s older than `idempotency_key_secs`
/// (docs/server.md "API"), on every instance, in rounds a quarter of that
/// lifetime apart (1 s to 60 s), until the server stops.
async fn prune_keys(app: std::sync::Weak<Inner>) {
    loop {
        let Some(inner) = app.upgrade() else { return };
        let period = Duration::from_secs((inner.key_secs / 4).clamp(1, 60) as u64);
        drop(inner);
        tokio::time::sleep(period).await;
        let Some(inner) = app.upgrade() else { return };
        let before = super::db::now().saturating_sub(inner.key_secs);
        for _ in 0..PRUNE_BATCHES {
            match inner.db.prune_keys(before, PRUNE_BATCH).await {
                Ok(n) if n as i64 == PRUNE_BATCH => {}
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "pruning expired idempotency keys");
                    break;
                }
            }
        }
    }
}

/// The stored answer of an `Idempotency-Key` already used; `Ok(None)` when
/// its first request never finished (the server stopped while it ran: its
/// claim is older than `claim_secs`) and this request took the claim over.
async fn replay(
    db: &Db,
    ws: &str,
    key: &str,
    fingerprint: &str,
    claim_secs: i64,
) -> Result<Option<Response>, Problem> {
    // Gone meanwhile (its first request failed with a 5xx): in progress.
    let Some(row) = db.idempotency_row(ws, key).await.map_err(Problem::db)? else {
        return Err(in_progress());
    };
    if row.request != fingerprint {
        return Err(Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "IDEMPOTENCY_MISMATCH",
            "this Idempotency-Key was used for another request",
        ));
    }
    if row.status == 0 {
        if row.created < super::db::now() - claim_secs
            && db
                .take_over_key(ws, key, row.created)
                .await
                .map_err(Problem::db)?
        {
            return Ok(None);
        }
        return Err(in_progress());
    }
    let mut r = Response::new(Body::from(row.body));
    *r.status_mut() = StatusCode::from_u16(row.status as u16).unwrap_or(StatusCode::OK);
    // An answer without a type (a `204`) is stored with an empty one.
    if !row.content_type.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&row.content_type) {
            r.headers_mut().insert(header::CONTENT_TYPE, v);
        }
    }
    // The first answer's other headers (none for an answer stored before
    // migration 2).
    let headers: Vec<(String, String)> = serde_json::from_str(&row.headers).unwrap_or_default();
    for (name, value) in headers {
        if let (Ok(n), Ok(v)) = (
            header::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            r.headers_mut().append(n, v);
        }
    }
    r.headers_mut()
        .insert("idempotency-replayed", HeaderValue::from_static("true"));
    Ok(Some(r))
}

fn in_progress() -> Problem {
    Problem::new(
        StatusCode::CONFLICT,
        "IDEMPOTENCY_IN_PROGRESS",
        "the first request with this Idempotency-Key is still running; retry later",
    )
}

// -------------------------------------------------------------- operations

async fn readyz(State(app): State<App>) -> Answer {
    app.db().ping().await.map_err(Problem::db)?;
    Ok("ready\n".into_response())
}

async fn metrics(State(app): State<App>) -> Response {
    use std::fmt::Write;
    let m = &app.0.metrics;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# HELP troupe_http_responses_total Answers by status class."
    );
    let _ = writeln!(s, "# TYPE troupe_http_responses_total counter");
    for (i, c) in m.requests.iter().enumerate().skip(1) {
        let _ = writeln!(
            s,
            "troupe_http_responses_total{{class=\"{i}xx\"}} {}",
            c.load(Ordering::Relaxed)
        );
    }
    let _ = writeln!(s, "# HELP troupe_turn_seconds Latency of applied turns.");
    let _ = writeln!(s, "# TYPE troupe_turn_seconds histogram");
    let mut within = 0;
    for (i, b) in BUCKETS.iter().enumerate() {
        within += m.turn_buckets[i].load(Ordering::Relaxed);
        let _ = writeln!(s, "troupe_turn_seconds_bucket{{le=\"{b}\"}} {within}");
    }
    let count = m.turn_count.load(Ordering::Relaxed);
    let _ = writeln!(s, "troupe_turn_seconds_bucket{{le=\"+Inf\"}} {count}");
    let _ = writeln!(
        s,
        "troupe_turn_seconds_sum {}",
        m.turn_micros.load(Ordering::Relaxed) as f64 / 1e6
    );
    let _ = writeln!(s, "troupe_turn_seconds_count {count}");
    let open = app
        .0
        .sessions
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .len();
    let _ = writeln!(
        s,
        "# HELP troupe_open_sessions Live sessions held in memory."
    );
    let _ = writeln!(s, "# TYPE troupe_open_sessions gauge");
    let _ = writeln!(s, "troupe_open_sessions {open}");
    for (name, help, c) in [
        (
            "troupe_session_rebuilds_total",
            "Live sessions built from their whole stored file.",
            &m.rebuilds,
        ),
        (
            "troupe_session_catch_ups_total",
            "Cached live sessions caught up with the lines another instance stored after them.",
            &m.catch_ups,
        ),
        (
            "troupe_session_lines_read_total",
            "Stored lines read to build or catch up live sessions.",
            &m.lines_read,
        ),
        (
            "troupe_session_messages_stepped_total",
            "Messages the engine stepped to build or catch up live sessions.",
            &m.messages_stepped,
        ),
        (
            "troupe_session_row_reads_total",
            "Reads of a session's stored row (an operation on a session held in memory reads none).",
            &m.row_reads,
        ),
    ] {
        let _ = writeln!(s, "# HELP {name} {help}");
        let _ = writeln!(s, "# TYPE {name} counter");
        let _ = writeln!(s, "{name} {}", c.load(Ordering::Relaxed));
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], s).into_response()
}

// ------------------------------------------------------------------- packs

fn pack_doc(hash: &str, kind: &str, size: i64, scenarios: &str, created: i64) -> Value {
    json!({
        "hash": hash,
        "kind": kind,
        "size": size,
        "scenarios": serde_json::from_str::<Value>(scenarios).unwrap_or(Value::Null),
        "created": created,
    })
}

/// A temporary folder, removed when dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, Problem> {
        let mut raw = [0u8; 12];
        getrandom::fill(&mut raw).map_err(|_| Problem::internal("no randomness"))?;
        let dir = std::env::temp_dir().join(format!("troupe-serve-{}", super::db::hex(&raw)));
        std::fs::create_dir_all(&dir).map_err(|_| Problem::internal("no temporary folder"))?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The `troupe check --json` report of an upload that does not open, its
/// file named `package.troupe` or `bundle.json`/`bundle.yaml` in it.
fn check_report_of(kind: &str, body: &[u8]) -> Result<Value, Problem> {
    let tmp = TempDir::new()?;
    let name = match kind {
        "package" => "package.troupe",
        _ if body.trim_ascii_start().starts_with(b"{") => "bundle.json",
        _ => "bundle.yaml",
    };
    let path = tmp.0.join(name);
    std::fs::write(&path, body).map_err(|_| Problem::internal("writing a temporary file"))?;
    let report = troupe::check_report(&[&path], false);
    let text = serde_json::to_string(&report).unwrap_or_default();
    let prefix = format!("{}{}", tmp.0.display(), std::path::MAIN_SEPARATOR);
    Ok(serde_json::from_str(&text.replace(&prefix, "")).unwrap_or(report))
}

/// `PUT /packs`: a package (a zip) or a bundle (JSON or YAML text),
/// checked; 201 (200 when already there) with the pack, or 422 with the
/// `troupe check --json` report.
async fn put_pack(Workspace { app, ws, idem }: Workspace, body: Bytes) -> Answer {
    let kind = if body.starts_with(b"PK\x03\x04") {
        "package"
    } else {
        "bundle"
    };
    let hash = sha256_hex(&body);
    let raw = body.to_vec();
    // The pack, or the check report of a refused one.
    // An upload is untrusted (Format 14.4, "Threat model"): a package is
    // opened with verification, so its `ir.compact`/`ir.json` is used only
    // when it is what its `bundle.json` compiles to, and one whose compiled
    // form is not (IR_MISMATCH, which `troupe check` reports as an error)
    // is refused with the check's report, like any pack that fails it.
    let opened = on_permit(
        &app.0.checks,
        "checking a pack",
        move || match upload_pack(kind, &raw) {
            Ok(p) if !p.warnings().iter().any(|d| d.code == Code::IrMismatch) => Ok(Ok(p)),
            Ok(_) => check_report_of(kind, &raw).map(Err),
            Err(p) if p.status == StatusCode::UNPROCESSABLE_ENTITY => {
                check_report_of(kind, &raw).map(Err)
            }
            Err(p) => Err(p),
        },
    )
    .await?;
    let pack = match opened {
        Ok(p) => p,
        Err(report) => return Ok(json_response(StatusCode::UNPROCESSABLE_ENTITY, &report)),
    };
    let scenarios = serde_json::to_string(&pack.scenarios()).unwrap_or_default();
    app.0
        .packs
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(hash.clone(), pack, body.len());
    let created = super::db::now();
    let response = json_response(
        StatusCode::CREATED,
        &pack_doc(&hash, kind, body.len() as i64, &scenarios, created),
    );
    // With a key, the answer (201 new, 200 already there) is written with
    // the pack.
    let (mut response, answer) = match &idem {
        Some(IdempotencyKey(key)) => {
            let (r, a) = record(key, response).await?;
            let answer: super::db::AnswerFor<bool> = Some(Box::new(move |new: &bool| {
                Some(StoredAnswer {
                    status: if *new { 201 } else { 200 },
                    ..a
                })
            }));
            (r.with_stored(), answer)
        }
        None => (response, None),
    };
    let new = app
        .db()
        .insert_pack(&ws, &hash, kind, body.to_vec(), &scenarios, created, answer)
        .await
        .map_err(Problem::db)?;
    if !new {
        *response.status_mut() = StatusCode::OK;
    }
    Ok(response)
}

/// [`pack_doc`] of a stored pack's row.
fn pack_doc_of(r: &super::db::PackRow) -> Value {
    pack_doc(&r.hash, &r.kind, r.size, &r.scenarios, r.created)
}

async fn list_packs(Workspace { app, ws, .. }: Workspace) -> Answer {
    let rows = app.db().list_packs(&ws, None).await.map_err(Problem::db)?;
    let packs: Vec<Value> = rows.iter().map(pack_doc_of).collect();
    Ok(json_response(StatusCode::OK, &json!({ "packs": packs })))
}

async fn get_pack(PackRoute { app, ws, hash, .. }: PackRoute) -> Answer {
    let rows = app
        .db()
        .list_packs(&ws, Some(&hash))
        .await
        .map_err(Problem::db)?;
    let r = rows.first().ok_or_else(|| Problem::not_found("pack"))?;
    Ok(json_response(StatusCode::OK, &pack_doc_of(r)))
}

/// The most sessions one page of `GET /sessions` lists, and the default.
const LIST_MAX: i64 = 1000;
const LIST_DEFAULT: i64 = 100;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    limit: Option<i64>,
}

/// `GET /sessions[?cursor=C&limit=N]` (docs/server.md "API"): one page of
/// the workspace's sessions in ID order, at most `limit` (1–[`LIST_MAX`]),
/// those after the session `cursor`; `next` is the cursor of the page
/// after it (`null` on the last page). Each is its stored row and its
/// header's scenario: nothing is rebuilt.
async fn list_sessions(Workspace { app, ws, .. }: Workspace, Query(q): Query<ListQuery>) -> Answer {
    let limit = q.limit.unwrap_or(LIST_DEFAULT);
    if !(1..=LIST_MAX).contains(&limit) {
        return Err(Problem::bad_request(format!("limit is 1 to {LIST_MAX}")));
    }
    let rows = app
        .db()
        .list_sessions(&ws, q.cursor.as_deref().unwrap_or(""), limit + 1)
        .await
        .map_err(Problem::db)?;
    let more = rows.len() as i64 > limit;
    let sessions: Vec<Value> = rows
        .iter()
        .take(limit as usize)
        .map(|r| {
            let scenario = serde_json::from_str::<Value>(&r.header)
                .ok()
                .and_then(|h| h.get("scenario").cloned())
                .unwrap_or(Value::Null);
            json!({
                "id": r.id,
                "pack": r.pack,
                "scenario": scenario,
                "created": r.created,
                "messages": (r.lines - 1).max(0),
                "current": (!r.current.is_empty()).then_some(&r.current),
            })
        })
        .collect();
    let next = more
        .then(|| {
            sessions
                .last()
                .and_then(|s| s["id"].as_str())
                .map(str::to_string)
        })
        .flatten();
    Ok(json_response(
        StatusCode::OK,
        &json!({"sessions": sessions, "next": next}),
    ))
}

/// `DELETE /tokens/current` (docs/server.md "Tokens"): the request's own
/// bearer token is revoked — deleted, and on PostgreSQL every instance
/// notified — and this process forgets every token it remembered, so the
/// token's next request is 401 here at once.
async fn revoke_current_token(
    Workspace { app, ws, idem }: Workspace,
    headers: axum::http::HeaderMap,
) -> Answer {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| t.trim().to_string())
        .ok_or_else(|| Problem::internal("a checked request without its token"))?;
    let (response, answer) = keyed(&idem, StatusCode::NO_CONTENT.into_response()).await?;
    let db = app.db();
    db.revoke_tokens(&ws, Some(&token), answer)
        .await
        .map_err(Problem::db)?;
    db.tokens.epoch.fetch_add(1, Ordering::SeqCst);
    app.0
        .tokens
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clear();
    Ok(response)
}

/// `DELETE /packs/{hash}`: hidden from the list and from new sessions;
/// sessions already started on it keep reading it.
async fn delete_pack(
    PackRoute {
        app,
        ws,
        hash,
        idem,
        ..
    }: PackRoute,
) -> Answer {
    let (response, answer) = keyed(&idem, StatusCode::NO_CONTENT.into_response()).await?;
    let live = app
        .db()
        .delete_pack(&ws, &hash, when_applied(answer))
        .await
        .map_err(Problem::db)?;
    if !live {
        return Err(Problem::not_found("pack"));
    }
    Ok(response)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TestQuery {
    /// `json` (default: the report), `text`, `junit`, or `all` (one JSON
    /// object with the three and the exit code).
    #[serde(default)]
    format: Option<String>,
    /// The pack's name in the report (the path the client gave).
    #[serde(default)]
    name: Option<String>,
    /// One fixture (`troupe test --test NAME`).
    #[serde(default)]
    test: Option<String>,
}

/// Most files and bytes a `packs:test` upload unpacks to.
const TEST_MAX_FILES: usize = 10_000;
const TEST_MAX_BYTES: u64 = 256 * 1024 * 1024;

fn unzip_bounded(body: &[u8], dir: &std::path::Path) -> Result<(), Problem> {
    let bad = |why: &str| {
        Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "LIMIT",
            format!("the pack archive {why}"),
        )
    };
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(body))
        .map_err(|_| Problem::bad_request("the body is not a zip of a pack directory"))?;
    if zip.len() > TEST_MAX_FILES {
        return Err(bad("has too many files"));
    }
    let mut total = 0u64;
    for i in 0..zip.len() {
        let mut f = zip
            .by_index(i)
            .map_err(|_| Problem::bad_request("a file of the zip cannot be read"))?;
        let Some(rel) = f.enclosed_name() else {
            return Err(bad("names a file outside itself"));
        };
        let path = dir.join(&rel);
        // In a fresh folder, unpacking fails only where the archive names
        // one path as a file and as a folder (two entries, or a folder
        // below a symbolic link's entry, unpacked as a plain file): the
        // body is not a pack directory's zip.
        let clash = |_| {
            Problem::bad_request(format!(
                "the pack archive holds `{}` both as a file and as a folder (or below a file)",
                rel.display()
            ))
        };
        if f.is_dir() {
            std::fs::create_dir_all(&path).map_err(clash)?;
            continue;
        }
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).map_err(clash)?;
        }
        let mut out = std::fs::File::create(&path).map_err(clash)?;
        let left = TEST_MAX_BYTES - total;
        let n = std::io::copy(&mut std::io::Read::take(&mut f, left + 1), &mut out)
            .map_err(|_| Problem::bad_request("a file of the zip cannot be read"))?;
        total += n;
        if total > TEST_MAX_BYTES {
            return Err(bad("unpacks to too many bytes"));
        }
    }
    Ok(())
}

/// `POST /packs:test`: a zip of a pack directory with its tests; runs
/// `troupe test` on it (Format 21) and answers its report; stores nothing.
async fn test_pack(State(app): State<App>, Query(q): Query<TestQuery>, body: Bytes) -> Answer {
    let name = q.name.unwrap_or_else(|| "pack".to_string());
    let format = q.format.unwrap_or_else(|| "json".to_string());
    if !matches!(format.as_str(), "json" | "text" | "junit" | "all") {
        return Err(Problem::bad_request(
            "format is one of json, text, junit, all",
        ));
    }
    let result = on_permit(&app.0.checks, "running tests", move || -> Result<Value, Problem> {
        let tmp = TempDir::new()?;
        let dir = tmp.0.join("pack");
        std::fs::create_dir_all(&dir).map_err(|_| Problem::internal("unpacking"))?;
        unzip_bounded(&body, &dir)?;
        let run = troupe::tools::run_tests_with(
            &dir,
            q.test.as_deref(),
            troupe::tools::Snapshots::Check,
            &mut troupe::tools::Quiet,
            None,
        )
        .map_err(|e| Problem::new(StatusCode::UNPROCESSABLE_ENTITY, "USAGE", e.to_string()))?;
        let shown = dir.display().to_string();
        let named = |s: String| s.replace(&shown, &name);
        Ok(json!({
            "exit_code": run.exit_code(),
            "json": named(run.to_json()),
            "text": named(run.to_text()),
            "junit": named(run.to_junit()),
            // Each fixture's run as `troupe run` prints it, each recorded
            // session's and playtest's as `troupe transcript` does (the page
            // links a failure to it, docs/web.md).
            "transcripts": run
                .transcripts()
                .into_iter()
                .map(|(stage, test, text)| json!({"stage": stage.as_str(), "test": test, "transcript": named(text)}))
                .collect::<Vec<_>>(),
        }))
    })
    .await?;
    let text = |k: &str| result[k].as_str().unwrap_or_default().to_string();
    Ok(match format.as_str() {
        "json" => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            text("json"),
        )
            .into_response(),
        "text" => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            text("text"),
        )
            .into_response(),
        "junit" => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/xml")],
            text("junit"),
        )
            .into_response(),
        _ => json_response(StatusCode::OK, &result),
    })
}

// ---------------------------------------------------------------- sessions

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateSession {
    pack: String,
    #[serde(default)]
    scenario: Option<String>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    difficulty: Option<String>,
    #[serde(default)]
    opening: Option<String>,
    #[serde(default)]
    player_name: Option<String>,
    #[serde(default)]
    runtime: Option<String>,
    /// With `runtime: model`: a model of the server's configuration.
    #[serde(default)]
    model: Option<String>,
}

/// The model a session is played with, from its `runtime` and `model`
/// settings (docs/server.md "Runtimes"); `None`: the rules runtime.
fn model_of(runtime: Option<&str>, model: Option<&str>) -> Result<Option<String>, Problem> {
    match (runtime, model) {
        (None | Some("rules"), None) => Ok(None),
        (Some("model"), Some(m)) => Ok(Some(m.to_string())),
        (Some("model"), None) => Err(Problem::bad_request(
            "`runtime: model` needs `model`, the name of a model this server configures",
        )),
        (None | Some("rules"), Some(_)) => Err(Problem::bad_request(
            "`model` names the model of `runtime: model`; give both",
        )),
        (Some("fake"), _) => Err(Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "UNSUPPORTED",
            "the fake runtime writes no session file (Format 18.7), so the server cannot store its sessions; use `rules`",
        )),
        (Some(other), _) => Err(Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "UNSUPPORTED",
            format!(
                "runtime `{}` is not served (this server plays `rules` and `model`)",
                troupe::escape_controls(other)
            ),
        )),
    }
}

fn new_id() -> Result<String, Problem> {
    let mut raw = [0u8; 12];
    getrandom::fill(&mut raw).map_err(|_| Problem::internal("no randomness"))?;
    Ok(format!("s{}", super::db::hex(&raw)))
}

/// The summary of a session (`GET …/sessions/{id}`, and what create,
/// resume, undo and goto answer).
fn session_doc(id: &str, pack_hash: &str, live: &Live) -> Value {
    json!({
        "id": id,
        "pack": pack_hash,
        "current": live.session.current_id(),
        "ended": live.session.ended(),
        "outcome": live.session.outcome(),
        "header": live.session.header(),
        "opening": live.session.opening(),
    })
}

/// The live session of a request, locked, with its pack's hash.
pub(super) struct Locked {
    guard: tokio::sync::OwnedMutexGuard<Option<Live>>,
    pack_hash: String,
}

impl Locked {
    /// The live session (the page's read-only routes read it, crates/troupe-server/src/web.rs).
    pub(super) fn session(&self) -> Result<&Session, Problem> {
        Ok(&self.live()?.session)
    }

    fn live(&self) -> Result<&Live, Problem> {
        self.guard
            .as_ref()
            .ok_or_else(|| Problem::internal("a session slot was empty"))
    }
}

impl Workspace {
    /// Stores a new session `session` of pack `pack_hash` (its row and
    /// every line, and with an `Idempotency-Key` the answer, in one
    /// transaction) and keeps it live: the 201 answer with its summary and
    /// its `Location`.
    async fn start_live(
        &self,
        pack: Pack,
        pack_hash: &str,
        settings: &Value,
        session: Session,
        model: Option<troupe::model_runtime::Log>,
    ) -> Answer {
        let id = new_id()?;
        let jsonl = session.jsonl().to_string();
        let chunks: Vec<&str> = jsonl.split_inclusive('\n').collect();
        let live = Live {
            rows: chunks.len() as i64,
            bytes: jsonl.len(),
            held: Held::new(&self.app.0.live_bytes, jsonl.len()),
            session,
            pack,
            model,
            pack_hash: pack_hash.to_string(),
            contested: false,
        };
        let mut r = json_response(StatusCode::CREATED, &session_doc(&id, pack_hash, &live));
        let ws = &self.ws;
        if let Ok(v) = HeaderValue::from_str(&format!("/api/v1/workspaces/{ws}/sessions/{id}")) {
            r.headers_mut().insert(header::LOCATION, v);
        }
        let (r, answer) = keyed(&self.idem, r).await?;
        self.app
            .db()
            .insert_session(
                super::db::NewSession {
                    workspace: self.ws.clone(),
                    id: id.clone(),
                    pack: pack_hash.to_string(),
                    settings: settings.to_string(),
                    current: live.session.current_id().unwrap_or("").to_string(),
                    lines: chunks.iter().map(|l| l.to_string()).collect(),
                    created: super::db::now(),
                },
                answer,
            )
            .await
            .map_err(Problem::db)?;
        *self.app.slot(&self.ws, &id).lock().await = Some(live);
        Ok(r)
    }
}

/// `POST /sessions`: a new session of an uploaded pack (Format 18).
async fn create_session(w: Workspace, body: Bytes) -> Answer {
    let req: CreateSession = parse_json(&body)?;
    let model = model_of(req.runtime.as_deref(), req.model.as_deref())?;
    let pack = w.app.pack(&w.ws, &req.pack, true).await?;
    let (runtime, log) = w.app.runtime_for(model.as_deref())?;
    let settings: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let options = {
        let mut o = SessionOptions::default();
        o.scenario = req.scenario;
        o.seed = req.seed.unwrap_or(0);
        o.difficulty = req.difficulty;
        o.opening = req.opening;
        o.player_name = req.player_name;
        o.runtime = runtime;
        o
    };
    let p = pack.clone();
    let session = blocking("starting a session", move || p.start(options)).await?;
    w.start_live(pack, &req.pack, &settings, session, log).await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResumeQuery {
    pack: String,
    #[serde(default)]
    at: Option<String>,
    #[serde(default)]
    runtime: Option<String>,
    #[serde(default)]
    model: Option<String>,
}

/// `POST /sessions:resume?pack=HASH[&at=ID]`: the body is a session file
/// (Format 18.8) that goes on as a live session (Format 18.10).
async fn resume_session(w: Workspace, Query(q): Query<ResumeQuery>, body: Bytes) -> Answer {
    let text = String::from_utf8(body.to_vec())
        .map_err(|_| Problem::bad_request("the session is not UTF-8 (Format 12.1)"))?;
    let model = model_of(q.runtime.as_deref(), q.model.as_deref())?;
    let pack = w.app.pack(&w.ws, &q.pack, true).await?;
    let (runtime, log) = w.app.runtime_for(model.as_deref())?;
    let p = pack.clone();
    let at = q.at.clone();
    let session = blocking("resuming a session", move || {
        p.resume_with(&text, {
            let mut o = ResumeOptions::default();
            o.at = at;
            o.runtime = runtime;
            o
        })
    })
    .await?;
    let mut settings = json!({"pack": q.pack, "resumed": true});
    if let Some(m) = &model {
        settings["runtime"] = json!("model");
        settings["model"] = json!(m);
    }
    w.start_live(pack, &q.pack, &settings, session, log).await
}

impl SessionRoute {
    /// The stored row of the session: `(pack, current, lines)`.
    async fn row(&self) -> Result<(String, String, i64), Problem> {
        self.app.0.metrics.row_reads.fetch_add(1, Ordering::Relaxed);
        self.app
            .db()
            .session_row(&self.ws, &self.id)
            .await
            .map_err(Problem::db)?
            .ok_or_else(|| Problem::not_found("session"))
    }

    /// The model the session was created with (its stored settings'
    /// `runtime` and `model`); `None`: the rules runtime.
    async fn stored_model(&self) -> Result<Option<String>, Problem> {
        let text = self
            .app
            .db()
            .session_settings(&self.ws, &self.id)
            .await
            .map_err(Problem::db)?
            .ok_or_else(|| Problem::not_found("session"))?;
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(match (v["runtime"].as_str(), v["model"].as_str()) {
            (Some("model"), Some(m)) => Some(m.to_string()),
            _ => None,
        })
    }

    /// The session file as stored, every line in order.
    async fn stored_text(&self) -> Result<String, Problem> {
        Ok(self.stored_text_from(0, i64::MAX).await?.0)
    }

    /// The stored lines `from..upto` (0: the header), in order, and how
    /// many they are. `upto` is the line count of the row read before: a
    /// turn another instance commits meanwhile adds lines past it, which
    /// must not be read with that row's current message and count.
    async fn stored_text_from(&self, from: i64, upto: i64) -> Result<(String, i64), Problem> {
        self.app
            .db()
            .session_lines(&self.ws, &self.id, from, upto)
            .await
            .map_err(Problem::db)
    }

    /// The live session, locked, up to date with the database: the one in
    /// memory when it matches the stored row; caught up when another
    /// instance moved it since (only the lines stored after the copy's are
    /// read, and the engine checks and steps only their messages:
    /// `Session::append_lines`, then the stored current message); else —
    /// this process never saw it, or dropped it, or the catch-up failed —
    /// rebuilt from every stored line.
    pub(super) async fn live(&self) -> Result<Locked, Problem> {
        // A session this process holds is known to exist; any other is
        // looked up before a slot is made for it (no slot for a made-up ID).
        if !self.app.has_slot(&self.ws, &self.id) {
            self.row().await?;
        }
        let guard = self.app.slot(&self.ws, &self.id).lock_owned().await;
        self.refresh(guard).await
    }

    /// The live session an operation runs on, locked, and whether it was
    /// checked against the stored row (docs/server.md "Cost of a turn"):
    /// a copy this process holds is trusted unchecked — no read of the row —
    /// unless another instance was found writing the session
    /// ([`Live::contested`]) or it plays under the model runtime (a model
    /// turn is not run twice); the operation's guarded `UPDATE` refuses a
    /// copy another instance moved, and [`SessionRoute::mutate_logged`]
    /// then runs it again on the refreshed copy. Any other session is
    /// [`SessionRoute::live`].
    async fn live_to_write(&self) -> Result<(Locked, bool), Problem> {
        if self.app.has_slot(&self.ws, &self.id) {
            let guard = self.app.slot(&self.ws, &self.id).lock_owned().await;
            let trusted = guard
                .as_ref()
                .filter(|l| !l.contested && l.model.is_none())
                .map(|l| l.pack_hash.clone());
            if let Some(pack_hash) = trusted {
                return Ok((Locked { guard, pack_hash }, false));
            }
            return Ok((self.refresh(guard).await?, true));
        }
        Ok((self.live().await?, true))
    }

    /// [`SessionRoute::live`] once its slot is locked: the copy `guard`
    /// holds checked against the stored row, and caught up or rebuilt.
    async fn refresh(
        &self,
        mut guard: tokio::sync::OwnedMutexGuard<Option<Live>>,
    ) -> Result<Locked, Problem> {
        // Read under the lock: a turn of this process (or another's) may
        // have finished while we waited — or the session was deleted.
        let (pack_hash, current, lines) = match self.row().await {
            Ok(r) => r,
            Err(p) => {
                if p.status == StatusCode::NOT_FOUND {
                    *guard = None;
                    self.app.forget(&self.ws, &self.id);
                }
                return Err(p);
            }
        };
        let fresh = guard
            .as_ref()
            .is_some_and(|l| l.rows == lines && l.session.current_id().unwrap_or("") == current);
        if fresh {
            if let Some(l) = guard.as_mut() {
                l.contested = false;
            }
            return Ok(Locked { guard, pack_hash });
        }
        // A copy held but out of date: another instance wrote the session.
        let contested = guard.is_some();
        let metrics = &self.app.0.metrics;
        // A session's stored lines are only ever appended to (a turn adds
        // lines; undo and goto move `current` only), so the first `rows` of
        // them are the copy's, byte for byte — when the copy holds no line
        // it did not store (a turn whose commit failed).
        let cached = guard
            .take()
            .filter(|l| l.rows <= lines && l.session.jsonl().len() == l.bytes);
        if let Some(mut live) = cached {
            let (rest, n) = self.stored_text_from(live.rows, lines).await?;
            metrics.catch_ups.fetch_add(1, Ordering::Relaxed);
            metrics.lines_read.fetch_add(n as u64, Ordering::Relaxed);
            let at = (!current.is_empty()).then(|| current.clone());
            let (live, stepped) = blocking("catching up a session", move || {
                let r = live.session.append_lines(&live.pack, &rest, at.as_deref());
                Ok::<_, Problem>((live, r))
            })
            .await?;
            match stepped {
                Ok(k) => {
                    metrics
                        .messages_stepped
                        .fetch_add(k as u64, Ordering::Relaxed);
                    let mut live = live;
                    live.rows = lines;
                    live.bytes = live.session.jsonl().len();
                    live.held.set(live.bytes);
                    live.contested = true;
                    *guard = Some(live);
                    return Ok(Locked { guard, pack_hash });
                }
                // Lines this copy cannot go on with (not expected: they
                // were checked when stored): rebuilt from every line below.
                Err(e) => tracing::warn!(
                    method = %requested().0,
                    path = %requested().1,
                    session = %self.id,
                    error = %e,
                    "a catch-up was refused; rebuilding the session"
                ),
            }
        }
        let pack = self.app.pack(&self.ws, &pack_hash, false).await?;
        let (text, n) = self.stored_text_from(0, lines).await?;
        metrics.rebuilds.fetch_add(1, Ordering::Relaxed);
        metrics.lines_read.fetch_add(n as u64, Ordering::Relaxed);
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .and_then(|l| serde_json::from_str::<Value>(l).ok())
            .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_string));
        let at = (!current.is_empty() && last.as_deref() != Some(current.as_str()))
            .then(|| current.clone());
        let model = self.stored_model().await?;
        let (runtime, log) = self.app.runtime_for(model.as_deref())?;
        let p = pack.clone();
        let bytes = text.len();
        let session = blocking("rebuilding a session", move || {
            p.resume_with(&text, {
                let mut o = ResumeOptions::default();
                o.at = at;
                o.runtime = runtime;
                o
            })
        })
        .await?;
        // Every message but the header line.
        metrics
            .messages_stepped
            .fetch_add(n.saturating_sub(1) as u64, Ordering::Relaxed);
        *guard = Some(Live {
            session,
            pack,
            rows: lines,
            bytes,
            held: Held::new(&self.app.0.live_bytes, bytes),
            model: log,
            pack_hash: pack_hash.clone(),
            contested,
        });
        Ok(Locked { guard, pack_hash })
    }

    /// Writes what the session appended since `live.rows` and its new
    /// current message, and `answer` (the request's `Idempotency-Key`
    /// record) when given, in one transaction, only if the stored row is
    /// still what this process last saw (`old_current`, `live.rows`):
    /// `Ok(false)` otherwise (nothing written).
    async fn commit(
        &self,
        live: &mut Live,
        old_current: &str,
        answer: Option<StoredAnswer>,
    ) -> Result<bool, Problem> {
        let jsonl = live.session.jsonl();
        let new_text = jsonl.get(live.bytes..).unwrap_or_default();
        let lines: Vec<String> = new_text.split_inclusive('\n').map(str::to_string).collect();
        let rows = live.rows + lines.len() as i64;
        let write = super::db::TurnWrite {
            workspace: self.ws.clone(),
            session: self.id.clone(),
            old_current: old_current.to_string(),
            old_rows: live.rows,
            current: live.session.current_id().unwrap_or("").to_string(),
            lines,
            answer,
            token: self.unchecked.as_ref().map(|t| t.0.clone()),
        };
        let written = self.app.db().write_turn(write).await.map_err(|e| {
            if e == super::db::TOKEN_REVOKED {
                unauthorized_problem()
            } else {
                Problem::db(e)
            }
        })?;
        if !written {
            return Ok(false);
        }
        live.rows = rows;
        live.bytes = jsonl.len();
        live.held.set(live.bytes);
        Ok(true)
    }

    /// Runs `op` on the live session under its lock, then commits what it
    /// wrote; a stale `expected` is 409 before anything
    /// runs, and losing the race to another instance is 409 after. The
    /// answer is what `answer` makes of what `op` returned and the
    /// session's summary after it. `op` and `answer` are `Clone`: run on
    /// a copy found out of date, they run again on the refreshed one
    /// ([`SessionRoute::mutate_logged`]).
    async fn mutate<T: Send + 'static>(
        &self,
        expected: Option<&str>,
        op: impl FnOnce(&mut Session) -> Result<T, Problem> + Clone + Send + 'static,
        answer: impl FnOnce(T, &dyn Fn() -> Value) -> Response + Clone,
    ) -> Answer {
        self.mutate_logged(expected, op, |out, doc, _| answer(out, doc))
            .await
    }

    /// [`SessionRoute::mutate`], `answer` also given the model runtime's
    /// turn records of the operation when the session is played under it
    /// (emptied before `op` runs, so they are this operation's only). The
    /// answer is made before the commit: with an `Idempotency-Key` it is
    /// written in the operation's transaction (docs/server.md "API"), so a
    /// retry after a crash finds the operation and its answer, or neither.
    ///
    /// A copy this process holds is used without reading the session's
    /// row ([`SessionRoute::live_to_write`]): what such an unchecked copy
    /// decides against the request — a stale `expected`, a refused
    /// operation, a refused commit — is not answered from it; the copy is
    /// checked against the row (caught up, or rebuilt when the operation
    /// already changed it) and everything runs once more, as it would
    /// have with the row read first. Only a checked copy's verdict is
    /// answered.
    async fn mutate_logged<T: Send + 'static>(
        &self,
        expected: Option<&str>,
        op: impl FnOnce(&mut Session) -> Result<T, Problem> + Clone + Send + 'static,
        answer: impl FnOnce(
                T,
                &dyn Fn() -> Value,
                Option<Vec<troupe::model_runtime::TurnRecord>>,
            ) -> Response
            + Clone,
    ) -> Answer {
        let (mut locked, mut checked) = self.live_to_write().await?;
        loop {
            let Locked {
                mut guard,
                pack_hash,
            } = locked;
            match self
                .mutate_once(&mut guard, &pack_hash, expected, op.clone(), answer.clone())
                .await
            {
                Err(Refused::Commit) | Err(Refused::Op(_)) if !checked => {
                    // Decided on an unchecked copy: check it and run again.
                    // A copy the operation changed but did not store is
                    // dropped and rebuilt (`mutate_once` emptied the slot).
                    let dropped = guard.is_none();
                    locked = self.refresh(guard).await?;
                    if dropped {
                        if let Some(l) = locked.guard.as_mut() {
                            l.contested = true;
                        }
                    }
                    checked = true;
                }
                Err(Refused::Commit) => {
                    let (_, now_current, _) = self.row().await?;
                    return Err(Problem::conflict(&now_current));
                }
                Err(Refused::Op(p) | Refused::Failed(p)) => return Err(p),
                Ok(r) => return Ok(r),
            }
        }
    }

    /// One run of [`SessionRoute::mutate_logged`] on the copy `guard`
    /// holds: `expected` compared, `op` run, its answer made and the
    /// commit written. A copy changed but not stored is dropped (the slot
    /// left empty).
    async fn mutate_once<T: Send + 'static>(
        &self,
        guard: &mut tokio::sync::OwnedMutexGuard<Option<Live>>,
        pack_hash: &str,
        expected: Option<&str>,
        op: impl FnOnce(&mut Session) -> Result<T, Problem> + Send + 'static,
        answer: impl FnOnce(
            T,
            &dyn Fn() -> Value,
            Option<Vec<troupe::model_runtime::TurnRecord>>,
        ) -> Response,
    ) -> Result<Response, Refused> {
        let current = guard
            .as_ref()
            .and_then(|l| l.session.current_id())
            .unwrap_or("")
            .to_string();
        if let Some(e) = expected {
            if e != current {
                return Err(Refused::Op(Problem::conflict(&current)));
            }
        }
        // Every operation runs on the blocking pool, never on an async
        // worker (docs/server.md "Turns off the async workers"): a turn of
        // an uploaded pack may take long however the engine bounds it, and
        // a worker it held would stall every other request, /healthz, and
        // this request's own time limit (a future that is not polled
        // cannot time out). The hop costs little beside a served turn
        // (docs/performance.md, Run AX).
        let log = guard.as_ref().and_then(|l| l.model.clone());
        if let Some(l) = &log {
            // A model call is not made on a token taken from memory: it is
            // read first ([`auth`] reads it again for the answer).
            if let Some(UncheckedToken(hash)) = &self.unchecked {
                match self.app.db().token_workspace(hash).await {
                    Ok(Some(w)) if w == self.ws => {}
                    Ok(_) => return Err(Refused::Failed(unauthorized_problem())),
                    Err(e) => return Err(Refused::Failed(Problem::db(e))),
                }
            }
            l.lock().map(|mut l| l.clear()).ok();
        }
        // The session is moved to the blocking pool and back. Should the
        // request be dropped meanwhile (its time limit), the slot stays
        // empty and the next request rebuilds the session from what is
        // stored.
        let out = match guard.take() {
            Some(mut live) => {
                // The request's method and path go along for the model
                // runtime's warning lines.
                let request = REQUEST.try_with(Clone::clone).ok();
                match tokio::task::spawn_blocking(move || {
                    let r = match request {
                        Some(q) => REQUEST.sync_scope(q, || op(&mut live.session)),
                        None => op(&mut live.session),
                    };
                    (live, r)
                })
                .await
                {
                    Ok((live, r)) => {
                        **guard = Some(live);
                        r
                    }
                    Err(_) => Err(Problem::internal("a session operation")),
                }
            }
            None => Err(Problem::internal("a session slot was empty")),
        };
        let out = match out {
            Ok(o) => o,
            Err(p) => {
                // Nothing of a refused operation is written (the library's
                // promise); keep the session only if it still matches.
                if guard.as_ref().map(|l| l.session.jsonl().len())
                    != guard.as_ref().map(|l| l.bytes)
                {
                    **guard = None;
                }
                return Err(if p.status.is_client_error() {
                    Refused::Op(p)
                } else {
                    Refused::Failed(p)
                });
            }
        };
        let Some(live) = guard.as_mut() else {
            return Err(Refused::Failed(Problem::internal(
                "a session slot was empty",
            )));
        };
        // The session's summary, made only for an answer that shows it
        // (undo, goto; a turn's answer is its turn document).
        let records = log.and_then(|l| l.lock().ok().map(|l| l.clone()));
        let mut response = {
            let live: &Live = live;
            answer(out, &|| session_doc(&self.id, pack_hash, live), records)
        };
        // The Idempotency-Key's record of the answer (never a 5xx's).
        let stored = match &self.idem {
            Some(IdempotencyKey(key)) if !response.status().is_server_error() => {
                let (r, a) = record(key, response).await.map_err(Refused::Failed)?;
                response = r;
                Some(a)
            }
            _ => None,
        };
        let wrote_answer = stored.is_some();
        match self.commit(live, &current, stored).await {
            Ok(true) => {}
            Ok(false) => {
                **guard = None;
                return Err(Refused::Commit);
            }
            Err(p) => {
                // The database failed mid-turn: whether the commit landed is
                // unknown here, so the copy in memory (turn applied) is
                // dropped and the next request rebuilds from what is stored.
                **guard = None;
                return Err(Refused::Failed(p));
            }
        }
        if wrote_answer {
            response.extensions_mut().insert(AnswerStored);
        }
        if self.unchecked.is_some() {
            response.extensions_mut().insert(TokenChecked);
        }
        Ok(response)
    }
    /// The recorded session (its file as stored) as a `History`, with its
    /// pack, for the read-only views.
    pub(super) async fn recorded(&self) -> Result<(Pack, troupe::History), Problem> {
        let (pack_hash, _, _) = self.row().await?;
        let pack = self.app.pack(&self.ws, &pack_hash, false).await?;
        let text = self.stored_text().await?;
        let p = pack.clone();
        let history = blocking("reading a session", move || p.history(&text)).await?;
        Ok((pack, history))
    }

    /// [`SessionRoute::recorded`], and the message `at` or its last
    /// message.
    pub(super) async fn history_at(
        &self,
        at: Option<String>,
    ) -> Result<(troupe::History, String), Problem> {
        let (_, history) = self.recorded().await?;
        let at = at
            .or_else(|| history.last_id().map(str::to_string))
            .ok_or_else(|| Problem::not_found("message"))?;
        Ok((history, at))
    }
}

/// Why one run of an operation ([`SessionRoute::mutate_once`]) did not
/// answer 200.
enum Refused {
    /// The guarded `UPDATE` found the row moved: nothing written.
    Commit,
    /// A stale `expected`, or the operation refused (a 4xx): decided on
    /// the copy.
    Op(Problem),
    /// A failure (a 5xx): answered as it is.
    Failed(Problem),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnBody {
    text: String,
    #[serde(default, rename = "as")]
    as_player: Option<String>,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    expected: Option<String>,
}

/// `POST /sessions/{id}/turns`: one turn (Format 18.5); the turn document
/// of `troupe run --json` (Format 18.6).
async fn turn(s: SessionRoute, JsonBody(req): JsonBody<TurnBody>) -> Answer {
    if req.as_player.is_some() && req.to.is_some() {
        return Err(Problem::bad_request(
            "give `as` (the player speaking) or `to` (the character answering), not both",
        ));
    }
    let started = Instant::now();
    let expected = req.expected.clone();
    let r = s
        .mutate_logged(
            expected.as_deref(),
            move |s| {
                let r = match (&req.as_player, &req.to) {
                    (Some(p), _) => s.turn_as(p, &req.text),
                    (_, Some(c)) => s.turn_to(c, &req.text),
                    _ => s.turn(&req.text),
                };
                r.map_err(|e| {
                    if e.kind() == ErrorKind::Runtime {
                        model_failure(&e)
                    } else {
                        Problem::from(e)
                    }
                })
            },
            |result, _, records| turn_answer(&result, records),
        )
        .await?;
    s.app.0.metrics.turn(started.elapsed());
    Ok(r)
}

/// The answer of a turn: the turn document of `troupe run --json`, and
/// under the model runtime its `model` member, as `troupe run --runtime
/// model --json` prints it (Format 24.7).
fn turn_answer(
    result: &troupe::TurnResult,
    records: Option<Vec<troupe::model_runtime::TurnRecord>>,
) -> Response {
    let record = records.and_then(|l| troupe::model_runtime::turn_record(&l, &result.messages));
    // Under the rules runtime the result is serialized as it is, without
    // a `Value` tree between (the same bytes: serde_json keeps the
    // struct's field order either way).
    let mut r = match &record {
        None => json_response(StatusCode::OK, result),
        Some(rec) => {
            let mut doc = serde_json::to_value(result).unwrap_or(Value::Null);
            if let Some(obj) = doc.as_object_mut() {
                let mut m = serde_json::to_value(rec).unwrap_or(Value::Null);
                if let Some(m) = m.as_object_mut() {
                    m.remove("input");
                }
                obj.insert("model".into(), m);
            }
            json_response(StatusCode::OK, &doc)
        }
    };
    if let Some(last) = result.messages.last() {
        if let Ok(v) = HeaderValue::from_str(last) {
            r.headers_mut().insert("troupe-current", v);
        }
    }
    r
}

/// A failed model call (Format 24.6) as a problem: 502 (504 for
/// MODEL_TIMEOUT) with the model runtime's code; the message, which names
/// the endpoint, goes to the log and not to the client (docs/server.md
/// "Runtimes").
fn model_failure(e: &Error) -> Problem {
    let Some(d) = e.diagnostics().first() else {
        return Problem::internal("a model failure without a diagnostic");
    };
    let (method, path) = requested();
    tracing::warn!(method = %method, path = %path, code = %d.code, message = %d.message, "model call failed");
    let code = d.code.to_string();
    let status = if code == "MODEL_TIMEOUT" {
        StatusCode::GATEWAY_TIMEOUT
    } else {
        StatusCode::BAD_GATEWAY
    };
    Problem::new(
        status,
        &code,
        format!("the model failed ({code}); nothing of the turn was played, and the server's log has the details"),
    )
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct MoveBody {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    expected: Option<String>,
}

/// `POST /sessions/{id}/undo`: the last turn taken back (Format 18.4); the
/// next input is a sibling of its input; nothing is lost.
async fn undo(s: SessionRoute, JsonOrEmpty(req): JsonOrEmpty<MoveBody>) -> Answer {
    s.mutate(
        req.expected.as_deref(),
        |s| {
            if s.undo() {
                Ok(())
            } else {
                Err(Problem::new(
                    StatusCode::CONFLICT,
                    "NOTHING_TO_UNDO",
                    "the session has no turn to undo",
                ))
            }
        },
        |_, doc| json_response(StatusCode::OK, &doc()),
    )
    .await
}

/// `POST /sessions/{id}/goto`: `{"message": ID}` becomes the current
/// message, so the next input is its child (a branch; nothing is lost).
async fn goto(s: SessionRoute, JsonBody(req): JsonBody<MoveBody>) -> Answer {
    let Some(target) = req.message else {
        return Err(Problem::bad_request("`message` names the message to go to"));
    };
    s.mutate(
        req.expected.as_deref(),
        move |s| {
            if s.go_to(&target) {
                Ok(())
            } else {
                Err(Problem::new(
                    StatusCode::NOT_FOUND,
                    "UNKNOWN_REF",
                    format!(
                        "the session has no message `{}`",
                        troupe::escape_controls(&target)
                    ),
                ))
            }
        },
        |_, doc| json_response(StatusCode::OK, &doc()),
    )
    .await
}

/// `GET /sessions/{id}` (its summary) and `GET /sessions/{id}.jsonl` (its
/// file, byte for byte what `troupe run --out` writes, Format 18.8).
async fn get_session(s: SessionRoute) -> Answer {
    if let Some(id) = s.id.strip_suffix(".jsonl") {
        let file = SessionRoute {
            id: id.to_string(),
            app: s.app.clone(),
            ws: s.ws.clone(),
            idem: None,
            unchecked: None,
        };
        let (_, current, lines) = file.row().await?;
        let text = file.stored_text().await?;
        // What an archive's `DELETE ?expected=…&lines=…` names, so that it
        // deletes only what this file holds. The row is read before the
        // lines, and lines are only ever added: a turn landing in between
        // adds lines the file holds but the row does not count, and the
        // DELETE then refuses (409) — never the other way round.
        let mut r = (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/jsonl")],
            text,
        )
            .into_response();
        if let Ok(v) = HeaderValue::from_str(&current) {
            r.headers_mut().insert("troupe-current", v);
        }
        r.headers_mut()
            .insert("troupe-lines", HeaderValue::from(lines));
        return Ok(r);
    }
    let locked = s.live().await?;
    Ok(json_response(
        StatusCode::OK,
        &session_doc(&s.id, &locked.pack_hash, locked.live()?),
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteQuery {
    #[serde(default)]
    expected: Option<String>,
    #[serde(default)]
    lines: Option<i64>,
}

/// `DELETE /sessions/{id}[?expected=ID&lines=N]` (docs/server.md
/// "Deleting and archiving"): the session's row and every line go in one
/// transaction, guarded like a turn's `UPDATE` when `expected`/`lines` are
/// given; a turn racing it either lands first (and is deleted with the
/// rest) or finds no row (404). This process forgets its live copy;
/// another instance's copy answers 404 at its next request: a read reads
/// the row first, an operation's guarded `UPDATE` finds none and the row
/// is read then ([`SessionRoute::mutate_logged`]).
async fn delete_session(s: SessionRoute, Query(q): Query<DeleteQuery>) -> Answer {
    // No local operation on it meanwhile (none made up for an unknown ID).
    let held = if s.app.has_slot(&s.ws, &s.id) {
        Some(s.app.slot(&s.ws, &s.id).lock_owned().await)
    } else {
        None
    };
    let (response, answer) = keyed(&s.idem, StatusCode::NO_CONTENT.into_response()).await?;
    let db = s.app.db();
    let deleted = db
        .delete_session(&s.ws, &s.id, q.expected, q.lines, when_applied(answer))
        .await
        .map_err(Problem::db)?;
    if !deleted {
        // Gone already (404), or moved since the archive was read (409).
        let (_, current, _) = s.row().await?;
        return Err(Problem::conflict(&current));
    }
    if let Some(mut guard) = held {
        *guard = None;
    }
    s.app.forget(&s.ws, &s.id);
    Ok(response)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StateQuery {
    #[serde(default)]
    at: Option<String>,
}

/// `GET /sessions/{id}/state[?at=ID]`: what `troupe state --json` prints
/// (Format 8.6), at `at` or the last message in file order.
async fn state(s: SessionRoute, Query(q): Query<StateQuery>) -> Answer {
    let (jsonl, pack) = {
        let locked = s.live().await?;
        let live = locked.live()?;
        (live.session.jsonl().to_string(), live.pack.clone())
    };
    let view = blocking("reading a state", move || -> Result<Value, Problem> {
        let history = pack.history(&jsonl)?;
        let at = q.at.or_else(|| history.last_id().map(str::to_string));
        let view = history.state(at.as_deref())?;
        Ok(serde_json::to_value(&view).unwrap_or(Value::Null))
    })
    .await?;
    Ok(json_response(StatusCode::OK, &view))
}

/// `POST /sessions/{id}/settings`: the host changes the difficulty
/// settings from now on (Format 8.9); what `Session::change_settings`
/// answers.
async fn settings(s: SessionRoute, JsonBody(mut req): JsonBody<Map<String, Value>>) -> Answer {
    let expected = match req.remove("expected") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(_) => return Err(Problem::bad_request("`expected` is a message ID")),
    };
    let settings = Value::Object(req);
    s.mutate(
        expected.as_deref(),
        move |s| s.change_settings(&settings).map_err(Problem::from),
        |result, _| json_response(StatusCode::OK, &result),
    )
    .await
}

/// `GET /sessions/{id}/ended[?at=ID]`: what `troupe ended --json` prints.
async fn ended(s: SessionRoute, Query(q): Query<StateQuery>) -> Answer {
    let (history, at) = s.history_at(q.at).await?;
    Ok(json_response(StatusCode::OK, &history.ended_at(&at)?))
}

/// `GET /sessions/{id}/explain[?at=ID]`: what `troupe explain --json`
/// prints.
async fn explain(s: SessionRoute, Query(q): Query<StateQuery>) -> Answer {
    let (history, at) = s.history_at(q.at).await?;
    Ok(json_response(StatusCode::OK, &history.explain(&at)?))
}

/// `GET /sessions/{id}/score`: the rubric score at the current message
/// (Format 19.6), `null` without a rubric.
async fn score(s: SessionRoute) -> Answer {
    let locked = s.live().await?;
    Ok(json_response(
        StatusCode::OK,
        &locked.live()?.session.score(),
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KnowsQuery {
    message: String,
    #[serde(default)]
    part: Option<usize>,
    #[serde(default)]
    summary: bool,
}

/// `GET /sessions/{id}/knows?message=ID&(part=N|summary=true)`: what
/// `troupe knows --json` prints, the knowers in code point order.
async fn knows(s: SessionRoute, Query(q): Query<KnowsQuery>) -> Answer {
    let what = match (q.part, q.summary) {
        (Some(p), false) => troupe::Knowable::Part(p),
        (None, true) => troupe::Knowable::Summary,
        _ => {
            return Err(Problem::bad_request(
                "give `part=N` or `summary=true`, one of them",
            ))
        }
    };
    let (history, _) = s.history_at(Some(q.message.clone())).await?;
    Ok(json_response(
        StatusCode::OK,
        &history.knows(&q.message, what)?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RenderQuery {
    text: String,
    #[serde(default)]
    at: Option<String>,
    #[serde(default, rename = "char")]
    char_id: Option<String>,
    #[serde(default)]
    owner: Option<String>,
    #[serde(default)]
    narrator: bool,
    #[serde(default)]
    per_chat: bool,
}

/// `GET /sessions/{id}/render?text=T[&at=ID][&char=C][&owner=O][&narrator=true][&per_chat=true]`:
/// what `troupe render --session FILE --json` prints (Format 10, 10.6), a
/// JSON string; without `at` the scenario's initial state, as the command
/// renders without `--at`.
async fn render(s: SessionRoute, Query(q): Query<RenderQuery>) -> Answer {
    let (_, history) = s.recorded().await?;
    let who = {
        let mut o = troupe::RenderOptions::default();
        o.char = q.char_id;
        o.owner = q.owner;
        o.narrator = q.narrator;
        o.per_chat = q.per_chat;
        o
    };
    let out = history.render(&q.text, q.at.as_deref(), &who)?;
    Ok(json_response(StatusCode::OK, &Value::String(out)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PromptQuery {
    #[serde(default)]
    at: Option<String>,
    #[serde(default, rename = "char")]
    character: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    structured: Option<String>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    temperature: Option<f64>,
}

/// `GET /sessions/{id}/prompt[?at=ID][&char=C][&model=NAME][&structured=json_schema|json_object|none][&max_tokens=N][&temperature=T]`:
/// what `troupe prompt --json` prints (Format 24.3), the request the model
/// runtime would send when C answers message `at` (default: the last
/// message in file order). Nothing is sent anywhere: `model` is only the
/// name written in the request.
async fn prompt(s: SessionRoute, Query(q): Query<PromptQuery>) -> Answer {
    use troupe::model_runtime::{Settings, Structured, DEFAULT_MAX_TOKENS};
    let structured = match q.structured.as_deref() {
        None | Some("json_schema") => Structured::JsonSchema,
        Some("json_object") => Structured::JsonObject,
        Some("none") => Structured::None,
        Some(_) => {
            return Err(Problem::bad_request(
                "structured is one of json_schema, json_object, none",
            ))
        }
    };
    let settings = {
        let mut o = Settings::default();
        o.model = q.model.unwrap_or_else(|| "local".to_string());
        o.temperature = q.temperature;
        o.max_tokens = q.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        o.structured = structured;
        o
    };
    settings.check().map_err(Problem::bad_request)?;
    let (_, history) = s.recorded().await?;
    let prompt = history.prompt(q.at.as_deref(), q.character.as_deref(), &settings)?;
    Ok(json_response(StatusCode::OK, &prompt.body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack() -> Pack {
        Pack::from_bundle(
            r#"{"troupe": "0.1", "kind": "bundle",
              "characters": [{"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult"}],
              "scenarios": [{"id": "s", "name": "S", "cast": [{"character": "kai"}]}]}"#,
        )
        .unwrap()
    }

    /// The opened packs are bounded by count and by their uploads' bytes,
    /// the least recently used let go first.
    #[test]
    fn the_pack_cache_lets_the_least_recently_used_go() {
        let p = pack();
        let mut c = PackCache::default();
        for i in 0..CACHE_PACKS {
            c.insert(format!("h{i}"), p.clone(), 1);
        }
        assert!(c.get("h0").is_some()); // h0 used again: h1 is now the oldest
        c.insert("new".into(), p.clone(), 1);
        assert_eq!(c.packs.len(), CACHE_PACKS);
        assert!(c.get("h0").is_some() && c.get("h1").is_none());
        // By bytes: two halves of the budget fit, a third lets the oldest go.
        let mut c = PackCache::default();
        let half = CACHE_PACK_BYTES / 2;
        c.insert("a".into(), p.clone(), half);
        c.insert("b".into(), p.clone(), half);
        assert_eq!((c.packs.len(), c.bytes), (2, 2 * half));
        c.insert("c".into(), p.clone(), half);
        assert!(c.get("a").is_none() && c.get("b").is_some() && c.get("c").is_some());
        assert_eq!(c.bytes, 2 * half);
        // One pack over the whole budget is still kept (the one in use).
        c.insert("huge".into(), p, CACHE_PACK_BYTES + 1);
        assert_eq!(c.packs.len(), 1);
        assert!(c.get("huge").is_some());
    }

    /// Checks of uploads run at most `checks_at_once` at a time (the
    /// permits): sixteen checks on two permits never run three at once,
    /// and all of them end. A check's permit is held by its work, so a
    /// request dropped while its check runs (its time limit) does not
    /// free a place for another.
    #[test]
    fn checks_of_uploads_run_at_most_as_many_at_once_as_there_are_permits() {
        use std::sync::atomic::AtomicUsize;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        let permits = Arc::new(tokio::sync::Semaphore::new(2));
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let done: Vec<usize> = rt.block_on(async {
            let mut tasks = Vec::new();
            for i in 0..16usize {
                let (permits, running, most) = (permits.clone(), running.clone(), most.clone());
                tasks.push(tokio::spawn(async move {
                    let work = on_permit(&permits, "a check", move || {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(5));
                        running.fetch_sub(1, Ordering::SeqCst);
                        Ok::<_, Problem>(i)
                    });
                    // Every fourth request is dropped at once (its time
                    // limit): its work, once started, still holds a permit.
                    if i % 4 == 0 {
                        let _ = tokio::time::timeout(Duration::ZERO, work).await;
                        None
                    } else {
                        work.await.ok()
                    }
                }));
            }
            let mut done = Vec::new();
            for t in tasks {
                done.extend(t.await.unwrap());
            }
            // The dropped requests' work that had started ends too.
            while permits.available_permits() < 2 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            done
        });
        assert!(
            most.load(Ordering::SeqCst) <= 2,
            "{}",
            most.load(Ordering::SeqCst)
        );
        assert_eq!(done.len(), 12);
        assert_eq!(running.load(Ordering::SeqCst), 0);
    }
}

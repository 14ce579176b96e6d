//! `troupe serve` (docs/server.md): sessions as an HTTP/JSON service over
//! SQLite or PostgreSQL, and the client side of `troupe test --server` and
//! `troupe play --server`.
//!
//! A crate of its own, beside the command line (`troupe-cli`, whose
//! feature `server` turns it on): it reaches the core only through its
//! public API ([`troupe::Pack`], [`troupe::Session`], [`troupe::History`]
//! and the report functions), never the engine's internals.

pub mod client;
mod db;
mod http;
mod lite;
mod log;
mod schemas;
pub mod web;

use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;

pub use http::valid_workspace;

/// The settings of `troupe serve` (docs/server.md "Configuration"): the
/// command line's flags, or a JSON file given with `--config` whose keys
/// are these fields' names.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Config {
    /// The address to listen on (port 0: any free port; the address bound
    /// is printed on stdout as `listening on http://ADDR`).
    pub listen: String,
    /// A SQLite file path (created when missing) or a `postgres://` URL.
    pub database: String,
    /// The largest request body in bytes (a pack upload included).
    pub body_limit: usize,
    /// Seconds one request may take before it is answered 503.
    pub request_timeout_secs: u64,
    /// Live sessions kept in memory (least recently used dropped first;
    /// a dropped one is rebuilt from the database when asked for).
    pub cache_sessions: usize,
    /// The most bytes of session files the live sessions hold together
    /// (default 256 MiB; docs/server.md "Start"): beyond it idle sessions
    /// are dropped as beyond `cache_sessions`. A live session takes about
    /// ten times its file's bytes in memory.
    pub cache_session_bytes: usize,
    /// The models sessions may be played with, by name (docs/server.md
    /// "Runtimes"): a client names one, never a URL.
    pub models: std::collections::BTreeMap<String, ModelConfig>,
    /// PostgreSQL: the turns of concurrent requests share transactions
    /// (docs/server.md "Group commit"); `false`: one transaction per turn.
    /// SQLite always groups.
    pub group_commit: bool,
    /// Seconds an `Idempotency-Key` and its answer are kept (docs/server.md
    /// "API"; default 86,400, a day): a retry within it gets the first
    /// answer; after it the key is deleted (within a minute) and may be
    /// used again. At least twice `request_timeout_secs`, the age at which
    /// an unanswered claim counts as abandoned.
    pub idempotency_key_secs: u64,
    /// PostgreSQL: the most connections the server's pool opens (default
    /// 8; docs/server.md "Start" and "Sizing"): the requests' reads and
    /// the group commit's writes share them. 1 to 1,000. SQLite ignores it.
    pub pg_connections: u32,
    /// Checks of uploaded packs (`PUT …/packs`, `POST …/packs:test`) run at
    /// once (docs/server.md "Start"); more wait for a turn. 0 (the
    /// default): the machine's cores. Each check holds up to Format 16.2's
    /// bound of its upload in memory, so this bounds what uploads hold
    /// together, also after a request's time limit answered it.
    pub checks_at_once: usize,
    /// Seconds a client may take to send a request's line and headers
    /// (default 10; docs/server.md "Start"): a connection that trickles
    /// them is closed, so slow clients cannot hold connections open.
    pub header_read_timeout_secs: u64,
}

/// A model of the server's configuration (docs/server.md "Runtimes"):
/// what `troupe run --runtime model` takes as flags (Format 24.1). The API
/// key is not here: only the name of the environment variable holding it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ModelConfig {
    /// The OpenAI-compatible base URL (`http://127.0.0.1:8081/v1`).
    pub endpoint: String,
    /// The model name sent in each request; default: the entry's name.
    #[serde(default)]
    pub model: Option<String>,
    /// The environment variable holding the API key, read once at start.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Seconds one request may take (Format 24.1, default 60).
    #[serde(default = "default_model_timeout")]
    pub timeout_secs: u64,
    /// The most tokens an answer may have (default 512).
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    /// The sampling temperature (not sent when absent).
    #[serde(default)]
    pub temperature: Option<f64>,
    /// `json_schema` (default), `json_object` or `none` (Format 24.4).
    #[serde(default)]
    pub structured: Option<String>,
}

fn default_model_timeout() -> u64 {
    troupe::model_runtime::DEFAULT_TIMEOUT_SECS
}

fn default_max_tokens() -> u32 {
    troupe::model_runtime::DEFAULT_MAX_TOKENS
}

/// A configured model ready to serve: its request settings and how to
/// reach it. No `Debug`: the connection holds the API key.
#[derive(Clone)]
pub(crate) struct ServedModel {
    pub(crate) settings: troupe::model_runtime::Settings,
    pub(crate) connection: troupe::model_runtime::Connection,
}

impl ModelConfig {
    /// The model `name` ready to serve: its settings checked and its API
    /// key read from `api_key_env` (an unset variable is an error naming
    /// the variable, never a value).
    fn served(&self, name: &str) -> Result<ServedModel, String> {
        use troupe::model_runtime::{Settings, Structured};
        let at = format!("models.{name}");
        if !(self.endpoint.starts_with("http://") || self.endpoint.starts_with("https://")) {
            return Err(format!("{at}.endpoint is not an http:// or https:// URL"));
        }
        let structured = match self.structured.as_deref() {
            None | Some("json_schema") => Structured::JsonSchema,
            Some("json_object") => Structured::JsonObject,
            Some("none") => Structured::None,
            Some(_) => {
                return Err(format!(
                    "{at}.structured is one of json_schema, json_object, none"
                ))
            }
        };
        let api_key = match &self.api_key_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(k) if !k.is_empty() => Some(k),
                _ => return Err(format!("{at}.api_key_env: the variable {var} is not set")),
            },
        };
        let settings = {
            let mut o = Settings::default();
            o.model = self.model.clone().unwrap_or_else(|| name.to_string());
            o.temperature = self.temperature;
            o.max_tokens = self.max_tokens;
            o.structured = structured;
            o
        };
        settings.check().map_err(|e| format!("{at}: {e}"))?;
        Ok(ServedModel {
            settings,
            connection: troupe::model_runtime::Connection {
                endpoint: Some(self.endpoint.clone()),
                api_key,
                timeout_secs: self.timeout_secs.max(1),
                cassette: None,
                record: false,
            },
        })
    }
}

impl Default for Config {
    fn default() -> Config {
        Config {
            listen: "127.0.0.1:8080".to_string(),
            database: "troupe.db".to_string(),
            body_limit: 16 * 1024 * 1024,
            request_timeout_secs: 30,
            cache_sessions: 10_000,
            cache_session_bytes: 256 << 20,
            models: std::collections::BTreeMap::new(),
            group_commit: true,
            idempotency_key_secs: 86_400,
            pg_connections: db::DEFAULT_PG_CONNECTIONS,
            checks_at_once: 0,
            header_read_timeout_secs: 10,
        }
    }
}

impl Config {
    /// The configuration file `path` (JSON, the fields of [`Config`]).
    /// It is read as every input is ([`troupe::files::read_input`], Format
    /// 16): a regular file of at most 64 MiB, never a FIFO or a device
    /// (opening a FIFO would wait for a writer).
    pub fn from_file(path: &std::path::Path) -> Result<Config, String> {
        let bytes = troupe::files::read_input(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Checks what can be checked before the server starts: every model's
    /// settings, that its API key's variable is set, and that one request
    /// to it (`timeout_secs`) ends before the HTTP request that waits for
    /// it (`request_timeout_secs`) does (docs/server.md "Runtimes").
    /// `troupe serve` exits 2 when this fails.
    pub fn check(&self) -> Result<(), String> {
        self.served_models()?;
        if !(1..=1000).contains(&self.pg_connections) {
            return Err(format!(
                "pg_connections ({}) is not between 1 and 1000",
                self.pg_connections
            ));
        }
        let limit = self.request_timeout_secs.max(1);
        if self.idempotency_key_secs < 2 * limit {
            return Err(format!(
                "idempotency_key_secs ({}) is below twice request_timeout_secs ({limit}): a key could be deleted while its first request still runs, and a retry would run it again; give idempotency_key_secs at least {}",
                self.idempotency_key_secs,
                2 * limit
            ));
        }
        for (name, m) in &self.models {
            if m.timeout_secs.max(1) >= limit {
                return Err(format!(
                    "models.{name}.timeout_secs ({}) is not below request_timeout_secs ({limit}): a turn waiting for one model request could be answered 503 TIMEOUT while the model still works; give request_timeout_secs more than {} (room for a turn's requests and retries: Format 24.6), or the model a shorter timeout_secs",
                    m.timeout_secs, m.timeout_secs
                ));
            }
        }
        Ok(())
    }

    /// The configured models ready to serve, by name.
    pub(crate) fn served_models(
        &self,
    ) -> Result<std::collections::HashMap<String, ServedModel>, String> {
        self.models
            .iter()
            .map(|(name, m)| m.served(name).map(|s| (name.clone(), s)))
            .collect()
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// Runs the server until SIGTERM or Ctrl-C (docs/server.md): opens and
/// migrates the database, listens, and on the signal stops accepting,
/// lets requests in flight finish, and returns.
pub fn serve(config: Config) -> Result<(), String> {
    // Buffered (docs/server.md "Start"; [`log`]): flushed at once for a
    // warning or an error, by a timer, and below at a clean shutdown.
    let log = log::Log::new();
    let _ = tracing_subscriber::fmt()
        .with_writer(log.clone())
        .with_ansi(false)
        .try_init();
    let rt = runtime()?;
    let served = rt.block_on(async {
        tokio::spawn(log::flush_every(log.clone()));
        let mut db = db::Db::open_with(&config.database, config.pg_connections).await?;
        if config.group_commit {
            db.group_commit();
        }
        let (listener, bound, app, router) = bind(db, &config).await?;
        println!("listening on http://{bound}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        tracing::info!(%bound, "troupe serve listening");
        let headers = Duration::from_secs(config.header_read_timeout_secs.max(1));
        serve_connections(listener, router, headers, shutdown(app, log.clone())).await;
        Ok(())
    });
    // Every request in flight has been answered. What still runs on the
    // blocking pool is a session operation whose request its time limit
    // dropped (docs/server.md "Turns off the async workers"): its result
    // is never written, so it is not waited for (the runtime's drop
    // would wait for it to the end).
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    log.flush();
    served
}

/// Serves HTTP/1.1 on `listener` with `router` until `stop` completes:
/// then stops accepting, asks every connection to close once its request
/// in flight is answered, and waits for them (the caller's `stop` bounds
/// the wait). What `axum::serve` does, with hyper's header read timeout
/// (`header_read_timeout_secs`) in effect.
async fn serve_connections(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    header_read_timeout: Duration,
    stop: impl std::future::Future<Output = ()>,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let mut stop = std::pin::pin!(stop);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Out of file descriptors and the like: wait, then go on
                // accepting (as axum's loop does).
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            // A connection's end (closed, reset, timed out) is no error
            // of the server's.
            let _ = conn.await;
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Binds `config.listen` and builds the app and its router over `db`: what
/// `troupe serve` and `troupe play` share before they serve. Returns the
/// listener and the address it is bound to (port 0 picks one).
async fn bind(
    db: db::Db,
    config: &Config,
) -> Result<(tokio::net::TcpListener, SocketAddr, http::App, axum::Router), String> {
    let addr: SocketAddr = config
        .listen
        .parse()
        .map_err(|e| format!("--listen {}: {e}", config.listen))?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let app = http::App::new(db, config)?;
    let router = http::router(app.clone(), config);
    Ok((listener, bound, app, router))
}

/// Resolves on SIGTERM or Ctrl-C; from then on new requests get 503.
async fn shutdown(app: http::App, log: log::Log) {
    let stop = std::sync::Arc::new(tokio::sync::Notify::new());
    let on_ctrl_c = stop.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.notify_one();
        }
    });
    #[cfg(unix)]
    {
        let on_term = stop.clone();
        if let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            tokio::spawn(async move {
                term.recv().await;
                on_term.notify_one();
            });
        }
    }
    stop.notified().await;
    tracing::info!("shutting down: finishing requests in flight");
    app.begin_shutdown();
    // Requests in flight finish; an idle keep-alive connection does not
    // hold the process past this grace period.
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(30)).await;
        log.flush();
        std::process::exit(0);
    });
}

/// `troupe serve token create --workspace WS`: a new bearer token for
/// workspace `workspace`, stored hashed (SHA-256) in `database`; the token
/// itself is returned once and never stored.
pub fn create_token(database: &str, workspace: &str) -> Result<String, String> {
    valid_workspace(workspace)?;
    runtime()?.block_on(async move {
        let db = db::Db::open(database).await?;
        db.create_token(workspace).await
    })
}

/// `troupe serve token revoke --workspace WS (TOKEN | --all)`: deletes the
/// token `token` of `workspace`, or every token of it when `None`; a
/// running server refuses it from its next request (docs/server.md
/// "Tokens"). Returns how many were revoked.
pub fn revoke_tokens(database: &str, workspace: &str, token: Option<&str>) -> Result<u64, String> {
    valid_workspace(workspace)?;
    runtime()?.block_on(async move {
        let db = db::Db::open(database).await?;
        db.revoke_tokens(workspace, token, None).await
    })
}

//! `troupe serve` (docs/server.md): sessions as an HTTP/JSON service over
//! SQLite or PostgreSQL (feature `server`, part of `cli`).
//!
//! A module of the `troupe` binary, beside `cli`, not of the library: it
//! can only reach the library's public API ([`troupe::Pack`],
//! [`troupe::Session`], [`troupe::History`] and the report functions), never
//! the engine's internals, so it can move into a crate of its own (issue
//! 38) unchanged.

pub mod client;
mod db;
mod http;
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
}

impl Default for Config {
    fn default() -> Config {
        Config {
            listen: "127.0.0.1:8080".to_string(),
            database: "troupe.db".to_string(),
            body_limit: 16 * 1024 * 1024,
            request_timeout_secs: 30,
            cache_sessions: 10_000,
        }
    }
}

impl Config {
    /// The configuration file `path` (JSON, the fields of [`Config`]).
    pub fn from_file(path: &std::path::Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
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
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    runtime()?.block_on(async move {
        let db = db::Db::open(&config.database).await?;
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
        let app = http::App::new(db, &config);
        let router = http::router(app.clone(), &config);
        println!("listening on http://{bound}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        tracing::info!(%bound, "troupe serve listening");
        axum::serve(listener, router)
            .with_graceful_shutdown(shutdown(app))
            .await
            .map_err(|e| format!("server error: {e}"))
    })
}

/// Resolves on SIGTERM or Ctrl-C; from then on new requests get 503.
async fn shutdown(app: http::App) {
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
    tokio::spawn(async {
        tokio::time::sleep(Duration::from_secs(30)).await;
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

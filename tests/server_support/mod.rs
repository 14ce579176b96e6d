//! Helpers of the `troupe serve` suites (`server_api`, `server_views`,
//! `server_load` in `tests/it/`, `server_bounds` in `tests/bounds/`): the
//! spawning of the binary on a loopback port, the databases (SQLite;
//! PostgreSQL when `TROUPE_PG_URL` is set, required under
//! `TROUPE_REQUIRE_PG=1`) and the HTTP calls, written once.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use serde_json::{json, Value};

use super::common;

pub const BIN: &str = env!("CARGO_BIN_EXE_troupe");
pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// A database the suite runs against.
#[derive(Debug, Clone)]
pub enum Backend {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Backend {
    pub fn arg(&self) -> String {
        match self {
            Backend::Sqlite(p) => p.display().to_string(),
            Backend::Postgres(u) => u.clone(),
        }
    }
}

/// Whether `host:port` of a postgres URL accepts a connection.
pub fn reachable(url: &str) -> bool {
    let rest = url.split("://").nth(1).unwrap_or_default();
    let hostport = rest.rsplit('@').next().unwrap_or_default();
    let hostport = hostport.split(['/', '?']).next().unwrap_or_default();
    let hostport = if hostport.contains(':') {
        hostport.to_string()
    } else {
        format!("{hostport}:5432")
    };
    use std::net::ToSocketAddrs;
    hostport
        .to_socket_addrs()
        .ok()
        .into_iter()
        .flatten()
        .any(|a| {
            std::net::TcpStream::connect_timeout(&a, std::time::Duration::from_secs(2)).is_ok()
        })
}

/// The one PostgreSQL of a run is shared by every server suite of the test
/// binary, and `server_load`'s outage test stops it. A test that uses it
/// shares this lock (taken by [`postgres`], held until the test's thread
/// ends); the outage test holds it alone ([`pg_alone`]), so no other test
/// meets its outage.
static PG: std::sync::RwLock<()> = std::sync::RwLock::new(());

thread_local! {
    /// This test's share of [`PG`], or `Alone` while it holds it alone.
    static PG_HELD: std::cell::RefCell<PgHeld> = const { std::cell::RefCell::new(PgHeld::No) };
}

enum PgHeld {
    No,
    Shared(#[allow(dead_code)] std::sync::RwLockReadGuard<'static, ()>),
    Alone,
}

/// Takes [`PG`] for this test alone, for as long as the guard lives; call
/// it before [`postgres`] (which then takes no share).
pub fn pg_alone() -> std::sync::RwLockWriteGuard<'static, ()> {
    let guard = PG.write().unwrap_or_else(|p| p.into_inner());
    PG_HELD.with(|h| *h.borrow_mut() = PgHeld::Alone);
    guard
}

/// The PostgreSQL URL, when the suite is to run against one.
pub fn postgres(test: &str) -> Option<String> {
    let required = std::env::var("TROUPE_REQUIRE_PG").as_deref() == Ok("1");
    match std::env::var("TROUPE_PG_URL") {
        Ok(url) if reachable(&url) => {
            PG_HELD.with(|h| {
                let mut h = h.borrow_mut();
                if matches!(*h, PgHeld::No) {
                    *h = PgHeld::Shared(PG.read().unwrap_or_else(|p| p.into_inner()));
                }
            });
            Some(url)
        }
        Ok(url) => {
            assert!(
                !required,
                "{test}: PostgreSQL is required (TROUPE_REQUIRE_PG=1) but {url} is not reachable"
            );
            println!("{test}: PostgreSQL part did not run: TROUPE_PG_URL is not reachable");
            None
        }
        Err(_) => {
            assert!(
                !required,
                "{test}: PostgreSQL is required (TROUPE_REQUIRE_PG=1) but TROUPE_PG_URL is not set (scripts/with-postgres.sh sets it)"
            );
            println!("{test}: PostgreSQL part did not run: TROUPE_PG_URL is not set (scripts/with-postgres.sh CMD starts one)");
            None
        }
    }
}

/// SQLite in `dir`, and PostgreSQL when there is one.
pub fn backends(dir: &Path, test: &str) -> Vec<Backend> {
    let mut all = vec![Backend::Sqlite(dir.join("troupe.db"))];
    all.extend(postgres(test).map(Backend::Postgres));
    all
}

/// A workspace name no other test (or earlier run on a shared
/// PostgreSQL) uses.
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{prefix}-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

pub fn token(db: &Backend, ws: &str) -> String {
    let out = Command::new(BIN)
        .args(["serve", "token", "create", "--workspace", ws, "--database"])
        .arg(db.arg())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "token create: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.trim();
    assert!(!line.is_empty() && !line.contains(char::is_whitespace));
    line.to_string()
}

/// A running `troupe serve`, killed when dropped.
pub struct Server {
    pub child: Child,
    pub base: String,
}

impl Server {
    pub fn start(db: &Backend) -> Server {
        Server::try_start(db, &[], Stdio::null())
            .unwrap_or_else(|(line, _)| panic!("troupe serve did not start: {line:?}"))
    }

    /// `troupe serve` on `db` with `args` after the database and its
    /// stderr to `stderr`: the server once it says where it listens, or
    /// the line it printed instead and its process.
    pub fn try_start(
        db: &Backend,
        args: &[&std::ffi::OsStr],
        stderr: Stdio,
    ) -> Result<Server, (String, Child)> {
        let mut child = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--database"])
            .arg(db.arg())
            .args(args)
            .current_dir(ROOT)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        match line.trim().strip_prefix("listening on ") {
            Some(base) => Ok(Server {
                base: base.to_string(),
                child,
            }),
            None => Err((line, child)),
        }
    }

    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn agent() -> &'static ureq::Agent {
    static AGENT: OnceLock<ureq::Agent> = OnceLock::new();
    AGENT.get_or_init(|| {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(std::time::Duration::from_secs(120)))
            .build()
            .into()
    })
}

/// An answer: status, content type, body text, `idempotency-replayed`.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub body: String,
    pub replayed: bool,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// The ID of a turn's last message (the `messages` of its answer).
    pub fn last_message(&self) -> Value {
        let doc = self.json();
        doc["messages"]
            .as_array()
            .and_then(|m| m.last())
            .cloned()
            .unwrap_or_else(|| panic!("no messages in {doc}"))
    }
}

pub fn call(
    method: &str,
    url: &str,
    token: Option<&str>,
    body: Option<&[u8]>,
    key: Option<&str>,
) -> Answer {
    try_call(method, url, token, body, key).unwrap_or_else(|e| panic!("{method} {url}: {e}"))
}

/// [`call`], with a transport failure (the server killed) as `Err`.
pub fn try_call(
    method: &str,
    url: &str,
    token: Option<&str>,
    body: Option<&[u8]>,
    key: Option<&str>,
) -> Result<Answer, ureq::Error> {
    let a = agent();
    let auth = token.map(|t| format!("Bearer {t}"));
    let result = match (method, body) {
        ("GET", _) => {
            let mut r = a.get(url);
            if let Some(h) = &auth {
                r = r.header("Authorization", h);
            }
            r.call()
        }
        ("DELETE", _) => {
            let mut r = a.delete(url);
            if let Some(h) = &auth {
                r = r.header("Authorization", h);
            }
            r.call()
        }
        (m, b) => {
            let mut r = if m == "PUT" { a.put(url) } else { a.post(url) };
            if let Some(h) = &auth {
                r = r.header("Authorization", h);
            }
            if let Some(k) = key {
                r = r.header("Idempotency-Key", k);
            }
            r.send(b.unwrap_or_default())
        }
    };
    let mut resp = result?;
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let replayed = resp.headers().get("idempotency-replayed").is_some();
    let body = resp
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_string()?;
    Ok(Answer {
        status,
        content_type,
        body,
        replayed,
    })
}

/// A workspace on a server, with its token.
pub struct Ws {
    pub base: String,
    pub token: String,
}

impl Ws {
    pub fn url(&self, rest: &str) -> String {
        format!("{}{rest}", self.base)
    }
    pub fn get(&self, rest: &str) -> Answer {
        call("GET", &self.url(rest), Some(&self.token), None, None)
    }
    pub fn post(&self, rest: &str, body: &Value) -> Answer {
        call(
            "POST",
            &self.url(rest),
            Some(&self.token),
            Some(body.to_string().as_bytes()),
            None,
        )
    }
}

pub fn workspace(server: &Server, db: &Backend, prefix: &str) -> (Ws, String) {
    let name = unique(prefix);
    let token = token(db, &name);
    (
        Ws {
            base: format!("{}/api/v1/workspaces/{name}", server.base),
            token,
        },
        name,
    )
}

/// The everyday-negotiation pack compiled to a package, once.
pub fn package() -> &'static (PathBuf, Vec<u8>) {
    static PKG: OnceLock<(PathBuf, Vec<u8>)> = OnceLock::new();
    PKG.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("troupe-server-api-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("negotiation.troupe");
        let (code, _, err) = common::run(&[
            "compile",
            "examples/packs/everyday-negotiation",
            "--out",
            path.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let bytes = std::fs::read(&path).unwrap();
        (path, bytes)
    })
}

pub fn upload(ws: &Ws) -> String {
    let (_, bytes) = package();
    let a = call("PUT", &ws.url("/packs"), Some(&ws.token), Some(bytes), None);
    assert!(a.status == 201 || a.status == 200, "{a:?}");
    a.json()["hash"].as_str().unwrap().to_string()
}

pub fn create(ws: &Ws, pack: &str, seed: u64) -> (String, Value) {
    let a = ws.post("/sessions", &json!({"pack": pack, "seed": seed}));
    assert_eq!(a.status, 201, "{a:?}");
    let doc = a.json();
    (doc["id"].as_str().unwrap().to_string(), doc)
}

/// `url` (a `postgres://` URL) naming the database `name` instead of its
/// own; its query, if any, kept.
pub fn pg_url_with_database(url: &str, name: &str) -> String {
    let mut u = url::Url::parse(url).expect("a postgres:// URL");
    u.set_path(&format!("/{name}"));
    u.to_string()
}

/// A database of its own on the run's PostgreSQL (`CREATE DATABASE`
/// through the run's URL), for a test that must start from a database
/// nobody else wrote: dropped (`WITH (FORCE)`) with this value.
pub struct PgDatabase {
    /// The URL of the new database.
    pub url: String,
    admin: String,
    name: String,
}

fn pg_block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

impl PgDatabase {
    /// A new, empty database on the server of `admin_url`.
    pub fn create(admin_url: &str, prefix: &str) -> PgDatabase {
        use sqlx::Connection;
        let name = unique(prefix).replace('-', "_").to_lowercase();
        pg_block(async {
            let mut c = sqlx::PgConnection::connect(admin_url).await.unwrap();
            sqlx::raw_sql(&format!("CREATE DATABASE {name}"))
                .execute(&mut c)
                .await
                .unwrap();
            let _ = c.close().await;
        });
        PgDatabase {
            url: pg_url_with_database(admin_url, &name),
            admin: admin_url.to_string(),
            name,
        }
    }

    /// Runs `sql` (one or more statements) in the database.
    pub fn batch(&self, sql: &str) {
        use sqlx::Connection;
        pg_block(async {
            let mut c = sqlx::PgConnection::connect(&self.url).await.unwrap();
            sqlx::raw_sql(sql)
                .execute(&mut c)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
            let _ = c.close().await;
        })
    }

    /// The first column of the rows of `sql`, as text (`CAST … AS TEXT` it
    /// when it is not).
    pub fn column(&self, sql: &str) -> Vec<String> {
        use sqlx::{Connection, Row};
        pg_block(async {
            let mut c = sqlx::PgConnection::connect(&self.url).await.unwrap();
            let rows = sqlx::query(sql)
                .fetch_all(&mut c)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
            let _ = c.close().await;
            rows.iter().map(|r| r.get::<String, _>(0)).collect()
        })
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        use sqlx::Connection;
        let (admin, name) = (self.admin.clone(), self.name.clone());
        pg_block(async move {
            if let Ok(mut c) = sqlx::PgConnection::connect(&admin).await {
                let _ = sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut c)
                    .await;
                let _ = c.close().await;
            }
        });
    }
}

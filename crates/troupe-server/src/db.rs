//! Storage of `troupe serve` (docs/server.md "Storage"): one SQLite file or
//! one PostgreSQL database, through sqlx's `Any` driver (no macros), with
//! versioned migrations applied at start.
//!
//! A session is its header row (`troupe_sessions`) and one row per line of
//! its session file (`troupe_lines`, the header line included, in file
//! order); a turn is one transaction whose `UPDATE … WHERE current = …
//! AND lines = …` applies only when nobody else moved the session first.

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Connection, Executor, Row};
use std::str::FromStr;

/// The schema version this build writes and reads. A database whose
/// `troupe_schema` holds a higher version is refused.
pub const SCHEMA_VERSION: i64 = 1;

/// Every table Troupe creates; a database holding any other table is
/// refused before anything is written.
const TABLES: &[&str] = &[
    "troupe_schema",
    "troupe_tokens",
    "troupe_packs",
    "troupe_sessions",
    "troupe_lines",
    "troupe_idempotency",
];

/// Migration 1, in the dialect both databases accept (`BLOB` is written
/// `BYTEA` for PostgreSQL).
const MIGRATION_1: &[&str] = &[
    "CREATE TABLE troupe_tokens (hash TEXT PRIMARY KEY, workspace TEXT NOT NULL, created BIGINT NOT NULL)",
    "CREATE TABLE troupe_packs (workspace TEXT NOT NULL, hash TEXT NOT NULL, kind TEXT NOT NULL, body BLOB NOT NULL, size BIGINT NOT NULL, scenarios TEXT NOT NULL, deleted BIGINT NOT NULL DEFAULT 0, created BIGINT NOT NULL, PRIMARY KEY (workspace, hash))",
    "CREATE TABLE troupe_sessions (workspace TEXT NOT NULL, id TEXT NOT NULL, pack TEXT NOT NULL, settings TEXT NOT NULL, current TEXT NOT NULL, lines BIGINT NOT NULL, created BIGINT NOT NULL, PRIMARY KEY (workspace, id))",
    "CREATE TABLE troupe_lines (workspace TEXT NOT NULL, session TEXT NOT NULL, seq BIGINT NOT NULL, line TEXT NOT NULL, PRIMARY KEY (workspace, session, seq))",
    "CREATE TABLE troupe_idempotency (workspace TEXT NOT NULL, key TEXT NOT NULL, request TEXT NOT NULL, status BIGINT NOT NULL, content_type TEXT NOT NULL, body BLOB NOT NULL, created BIGINT NOT NULL, PRIMARY KEY (workspace, key))",
];

/// The database of a server: its pool and which backend it is.
#[derive(Debug, Clone)]
pub struct Db {
    pub pool: AnyPool,
    /// SQLite (one writer at a time, serialized in the process by
    /// [`Db::write_lock`]) rather than PostgreSQL.
    pub sqlite: bool,
    pub write_lock: std::sync::Arc<tokio::sync::Mutex<()>>,
    /// The group commit (docs/server.md "Storage and durability"): the
    /// queue of [`Db::write_turn`]s committed together — by one task on
    /// SQLite, by [`PG_COMMITTERS`] on PostgreSQL ([`Db::group_commit`]).
    turns: Option<tokio::sync::mpsc::UnboundedSender<Queued>>,
    /// SQLite: the reader and writer threads of its hot path (token and
    /// session-row reads, turns, new sessions: [`super::lite`]); `None` on
    /// PostgreSQL.
    lite: Option<super::lite::Lite>,
    /// Revoked tokens, as this process learns of them (docs/server.md
    /// "Tokens"): see [`TokenWatch`].
    pub tokens: TokenWatch,
    /// The PostgreSQL URL (for the token watch's own connection); `None`
    /// on SQLite. Never shown: it may hold a password.
    pg_url: Option<Hidden>,
}

/// A string `Debug` does not show.
#[derive(Clone)]
struct Hidden(String);

impl std::fmt::Debug for Hidden {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("(hidden)")
    }
}

/// Whether a checked token may be remembered (docs/server.md "Tokens"):
/// only while this process listens on PostgreSQL's `troupe_tokens`
/// channel, which every revocation notifies in its transaction. `epoch`
/// moves at each notification and each time the listening stops or
/// starts; a token remembered under another epoch is read again. On
/// SQLite nothing is remembered (another process, `troupe serve token
/// revoke`, changes the file without telling anyone), so a revoked token
/// is refused at its next request.
#[derive(Debug, Clone, Default)]
pub struct TokenWatch {
    pub listening: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub epoch: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// The channel a revocation notifies.
const TOKENS_CHANNEL: &str = "troupe_tokens";

/// Listens on [`TOKENS_CHANNEL`] for as long as the process runs,
/// reconnecting after a lost connection (notifications sent meanwhile are
/// lost, so the epoch moves and nothing is remembered until listening
/// again).
async fn watch_tokens(url: String, watch: TokenWatch) {
    use std::sync::atomic::Ordering;
    loop {
        let listener = async {
            let mut l = sqlx::postgres::PgListener::connect(&url).await?;
            l.listen(TOKENS_CHANNEL).await?;
            Ok::<_, sqlx::Error>(l)
        }
        .await;
        match listener {
            Ok(mut l) => {
                watch.epoch.fetch_add(1, Ordering::SeqCst);
                watch.listening.store(true, Ordering::SeqCst);
                // `Ok(None)` or an error: the connection is lost.
                while let Ok(Some(_)) = l.try_recv().await {
                    watch.epoch.fetch_add(1, Ordering::SeqCst);
                }
                watch.listening.store(false, Ordering::SeqCst);
                watch.epoch.fetch_add(1, Ordering::SeqCst);
                tracing::warn!(
                    "lost the token watch's connection; reading every token until it is back"
                );
            }
            Err(e) => tracing::warn!(error = %e, "cannot listen for revoked tokens"),
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// What one operation on a live session writes: its row moves from
/// `(old_current, old_rows)` to `(current, old_rows + lines.len())` and its
/// new lines are added — only if the row is still at `(old_current,
/// old_rows)`, i.e. nobody moved the session first.
#[derive(Debug)]
pub struct TurnWrite {
    pub workspace: String,
    pub session: String,
    pub old_current: String,
    pub old_rows: i64,
    pub current: String,
    pub lines: Vec<String>,
}

/// A session as `GET /sessions` lists it ([`Db::list_sessions`]).
#[derive(Debug)]
pub struct ListedSession {
    pub id: String,
    pub pack: String,
    pub current: String,
    pub lines: i64,
    pub created: i64,
    /// The session file's first line.
    pub header: String,
}

/// A new session's rows ([`Db::insert_session`]).
#[derive(Debug)]
pub struct NewSession {
    pub workspace: String,
    pub id: String,
    pub pack: String,
    pub settings: String,
    pub current: String,
    /// Every line of its file, the header first.
    pub lines: Vec<String>,
    pub created: i64,
}

type Queued = (
    TurnWrite,
    tokio::sync::oneshot::Sender<Result<bool, String>>,
);

/// Most turns one group commit takes.
pub(super) const GROUP_MAX: usize = 256;

/// Writes `w` in `tx`: `Ok(false)` (nothing written) when the row moved.
async fn write_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    w: &TurnWrite,
) -> Result<bool, sqlx::Error> {
    let moved = sqlx::query("UPDATE troupe_sessions SET current = $1, lines = $2 WHERE workspace = $3 AND id = $4 AND current = $5 AND lines = $6")
        .bind(w.current.clone())
        .bind(w.old_rows + w.lines.len() as i64)
        .bind(w.workspace.clone())
        .bind(w.session.clone())
        .bind(w.old_current.clone())
        .bind(w.old_rows)
        .execute(&mut **tx)
        .await?;
    if moved.rows_affected() != 1 {
        return Ok(false);
    }
    // One statement for the turn's lines (a turn writes a few).
    for (c, chunk) in w.lines.chunks(64).enumerate() {
        let mut sql =
            String::from("INSERT INTO troupe_lines (workspace, session, seq, line) VALUES ");
        for i in 0..chunk.len() {
            if i > 0 {
                sql.push_str(", ");
            }
            let b = 4 * i;
            sql.push_str(&format!("(${}, ${}, ${}, ${})", b + 1, b + 2, b + 3, b + 4));
        }
        let first = w.old_rows + (c * 64) as i64;
        let mut q = sqlx::query(&sql);
        for (i, line) in chunk.iter().enumerate() {
            q = q
                .bind(w.workspace.clone())
                .bind(w.session.clone())
                .bind(first + i as i64)
                .bind(line.clone());
        }
        q.execute(&mut **tx).await?;
    }
    Ok(true)
}

/// Committers of PostgreSQL's group commit: each takes a group from the
/// shared queue and writes it while the others gather the next ones.
const PG_COMMITTERS: usize = 3;

/// PostgreSQL's group commit (docs/server.md "Group commit"): the turns
/// queued together are written in one transaction of five statements
/// whatever their number — the sessions' rows locked in key order (`SELECT
/// … ORDER BY … FOR UPDATE`: instances sharing the database lock in one
/// order, so two groups never deadlock), one `UPDATE … FROM (VALUES …)`
/// guarded like a single turn's (its `RETURNING` says which applied), one
/// `INSERT` of the applied turns' lines — and one commit. A process never
/// queues two writes of one session at once (its slot lock is held until
/// the write is answered); should a group hold one twice anyway, it is
/// written turn by turn, as is a group of one turn (no lock query).
async fn group_commit_pg(
    pool: AnyPool,
    queue: std::sync::Arc<tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<Queued>>>,
) {
    loop {
        let group = {
            let mut q = queue.lock().await;
            let Some(first) = q.recv().await else { return };
            let mut group = vec![first];
            while group.len() < GROUP_MAX {
                match q.try_recv() {
                    Ok(w) => group.push(w),
                    Err(_) => break,
                }
            }
            group
        };
        let written = write_group_pg(&pool, &group).await;
        match written {
            Ok(applied) => {
                for ((_, answer), ok) in group.into_iter().zip(applied) {
                    let _ = answer.send(Ok(ok));
                }
            }
            Err(e) => {
                let e = e.to_string();
                for (_, answer) in group {
                    let _ = answer.send(Err(e.clone()));
                }
            }
        }
    }
}

/// Writes `group` in one transaction (see [`group_commit_pg`]): which
/// applied, in order.
async fn write_group_pg(pool: &AnyPool, group: &[Queued]) -> Result<Vec<bool>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let applied = write_group_in(&mut tx, group).await?;
    tx.commit().await?;
    Ok(applied)
}

/// Writes `group` in `tx` (PostgreSQL) with the sessions' rows locked in
/// key order, one guarded `UPDATE … FROM (VALUES …) RETURNING` and one
/// `INSERT` (a group of one turn, or one holding a session twice, turn by
/// turn): which turns applied, in order. SQLite writes its groups on its
/// own thread ([`super::lite`]).
async fn write_group_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    group: &[Queued],
) -> Result<Vec<bool>, sqlx::Error> {
    let mut keys: Vec<(&str, &str)> = group
        .iter()
        .map(|(w, _)| (w.workspace.as_str(), w.session.as_str()))
        .collect();
    keys.sort_unstable();
    let distinct = keys.windows(2).all(|k| k[0] != k[1]);
    // One turn alone: its own two statements, without the lock query.
    if group.len() == 1 || !distinct {
        let mut applied = Vec::with_capacity(group.len());
        for (w, _) in group {
            applied.push(write_in(tx, w).await?);
        }
        return Ok(applied);
    }
    lock_in_order(tx, &keys).await?;
    update_and_insert(tx, group).await
}

/// Locks the sessions' rows `keys` (sorted) in that order.
async fn lock_in_order(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    keys: &[(&str, &str)],
) -> Result<(), sqlx::Error> {
    let mut sql =
        String::from("SELECT workspace, id FROM troupe_sessions WHERE (workspace, id) IN (");
    for i in 0..keys.len() {
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push_str(&format!("(${}, ${})", 2 * i + 1, 2 * i + 2));
    }
    sql.push_str(") ORDER BY workspace, id FOR UPDATE");
    let mut q = sqlx::query(&sql);
    for (ws, id) in keys {
        q = q.bind(ws.to_string()).bind(id.to_string());
    }
    q.fetch_all(&mut **tx).await?;
    Ok(())
}

/// The guarded `UPDATE` of every turn of `group` (sessions distinct) and
/// the `INSERT` of the applied turns' lines: which applied, in order.
async fn update_and_insert(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    group: &[Queued],
) -> Result<Vec<bool>, sqlx::Error> {
    // One guarded UPDATE for all. A VALUES list's columns are `column1`…
    // in both databases (SQLite takes no column names after its alias).
    let mut sql = String::from(
        "UPDATE troupe_sessions AS s SET current = v.column4, lines = v.column6 FROM (VALUES ",
    );
    for i in 0..group.len() {
        if i > 0 {
            sql.push_str(", ");
        }
        let b = 6 * i;
        sql.push_str(&format!(
            "(${}, ${}, ${}, ${}, CAST(${} AS BIGINT), CAST(${} AS BIGINT))",
            b + 1,
            b + 2,
            b + 3,
            b + 4,
            b + 5,
            b + 6
        ));
    }
    sql.push_str(") AS v WHERE s.workspace = v.column1 AND s.id = v.column2 AND s.current = v.column3 AND s.lines = v.column5 RETURNING workspace, id");
    let mut q = sqlx::query(&sql);
    for (w, _) in group {
        q = q
            .bind(w.workspace.clone())
            .bind(w.session.clone())
            .bind(w.old_current.clone())
            .bind(w.current.clone())
            .bind(w.old_rows)
            .bind(w.old_rows + w.lines.len() as i64);
    }
    let rows = q.fetch_all(&mut **tx).await?;
    let mut moved = std::collections::HashSet::new();
    for r in &rows {
        moved.insert((r.try_get::<String, _>(0)?, r.try_get::<String, _>(1)?));
    }
    let applied: Vec<bool> = group
        .iter()
        .map(|(w, _)| moved.contains(&(w.workspace.clone(), w.session.clone())))
        .collect();
    // One INSERT of the applied turns' lines (chunked under PostgreSQL's
    // 65,535 parameters).
    let lines: Vec<(&TurnWrite, i64, &String)> = group
        .iter()
        .zip(&applied)
        .filter(|(_, ok)| **ok)
        .flat_map(|((w, _), _)| {
            w.lines
                .iter()
                .enumerate()
                .map(move |(i, l)| (w, w.old_rows + i as i64, l))
        })
        .collect();
    for chunk in lines.chunks(4096) {
        let mut sql =
            String::from("INSERT INTO troupe_lines (workspace, session, seq, line) VALUES ");
        for i in 0..chunk.len() {
            if i > 0 {
                sql.push_str(", ");
            }
            let b = 4 * i;
            sql.push_str(&format!("(${}, ${}, ${}, ${})", b + 1, b + 2, b + 3, b + 4));
        }
        let mut q = sqlx::query(&sql);
        for (w, seq, line) in chunk {
            q = q
                .bind(w.workspace.clone())
                .bind(w.session.clone())
                .bind(*seq)
                .bind((*line).clone());
        }
        q.execute(&mut **tx).await?;
    }
    Ok(applied)
}

/// `--database` as sqlx's URL: `postgres://…`/`postgresql://…` as given,
/// anything else a SQLite file path (created when missing).
fn url_of(database: &str) -> (String, bool) {
    if database.starts_with("postgres://") || database.starts_with("postgresql://") {
        (database.to_string(), false)
    } else if let Some(rest) = database.strip_prefix("sqlite://") {
        (format!("sqlite://{rest}"), true)
    } else {
        (format!("sqlite://{database}?mode=rwc"), true)
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn err(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

/// The tables of the database, read without writing anything.
async fn tables(conn: &mut sqlx::AnyConnection, sqlite: bool) -> Result<Vec<String>, String> {
    let sql = if sqlite {
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    } else {
        "SELECT CAST(tablename AS TEXT) FROM pg_tables WHERE schemaname = current_schema()"
    };
    let rows = sqlx::query(sql)
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| err("cannot list the database's tables", e))?;
    rows.iter()
        .map(|r| r.try_get::<String, _>(0).map_err(|e| err("table name", e)))
        .collect()
}

/// Refuses a database holding a table Troupe did not create, or a schema
/// newer than [`SCHEMA_VERSION`]; reads only. `Ok(version)`: the schema
/// version found (0: an empty database).
async fn inspect(conn: &mut sqlx::AnyConnection, sqlite: bool, shown: &str) -> Result<i64, String> {
    let names = tables(conn, sqlite).await?;
    let foreign: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| !TABLES.contains(n))
        .collect();
    if !foreign.is_empty() {
        return Err(format!(
            "{shown} holds tables Troupe did not create ({}); `troupe serve` uses only an empty database or one it prepared itself — give it a database of its own",
            foreign.join(", ")
        ));
    }
    if !names.iter().any(|n| n == "troupe_schema") {
        return Ok(0);
    }
    let version: Option<i64> = sqlx::query("SELECT MAX(version) FROM troupe_schema")
        .fetch_one(&mut *conn)
        .await
        .and_then(|r| r.try_get::<Option<i64>, _>(0))
        .map_err(|e| err("cannot read the schema version", e))?;
    let version = version.unwrap_or(0);
    if version > SCHEMA_VERSION {
        return Err(format!(
            "{shown} has schema version {version}, newer than this troupe knows ({SCHEMA_VERSION}); run the troupe that wrote it, or a newer one"
        ));
    }
    Ok(version)
}

impl Db {
    /// The process's turn to write: SQLite takes one writer at a time, so
    /// its writes queue here rather than on `busy_timeout`; PostgreSQL
    /// needs no such guard (`None`).
    pub async fn write_guard(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        if self.sqlite {
            Some(self.write_lock.lock().await)
        } else {
            None
        }
    }

    /// Opens `database` (module docs): checks it is Troupe's before any
    /// write, then applies the migrations it lacks. SQLite runs in WAL
    /// mode with `synchronous=FULL`: a commit is on disk before the
    /// answer that acknowledges it.
    pub async fn open(database: &str) -> Result<Db, String> {
        sqlx::any::install_default_drivers();
        let (url, sqlite) = url_of(database);
        let shown = if sqlite {
            format!("the database {database}")
        } else {
            "the PostgreSQL database".to_string()
        };
        // Inspect first, read-only: an existing SQLite file is opened with
        // `mode=ro` so nothing (not even the WAL switch) touches it yet.
        let inspect_url = if sqlite {
            let path = url
                .trim_start_matches("sqlite://")
                .split('?')
                .next()
                .unwrap_or_default()
                .to_string();
            std::path::Path::new(&path)
                .exists()
                .then(|| format!("sqlite://{path}?mode=ro"))
        } else {
            Some(url.clone())
        };
        if let Some(u) = inspect_url {
            let opts = AnyConnectOptions::from_str(&u).map_err(|e| err("bad --database", e))?;
            let mut conn = sqlx::AnyConnection::connect_with(&opts)
                .await
                .map_err(|e| err(&format!("cannot open {shown}"), e))?;
            inspect(&mut conn, sqlite, &shown).await?;
            let _ = conn.close().await;
        }
        let opts = AnyConnectOptions::from_str(&url).map_err(|e| err("bad --database", e))?;
        let pool = AnyPoolOptions::new()
            .max_connections(if sqlite { 4 } else { 8 })
            .acquire_timeout(std::time::Duration::from_secs(5))
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if sqlite {
                        conn.execute("PRAGMA busy_timeout = 10000").await?;
                        conn.execute("PRAGMA journal_mode = WAL").await?;
                        conn.execute("PRAGMA synchronous = FULL").await?;
                    }
                    Ok(())
                })
            })
            .connect_with(opts)
            .await
            .map_err(|e| err(&format!("cannot open {shown}"), e))?;
        let write_lock: std::sync::Arc<tokio::sync::Mutex<()>> = Default::default();
        let mut db = Db {
            pool,
            sqlite,
            write_lock,
            turns: None,
            lite: None,
            tokens: TokenWatch::default(),
            pg_url: (!sqlite).then(|| Hidden(url.clone())),
        };
        db.migrate(&shown).await?;
        if sqlite {
            let path = url
                .trim_start_matches("sqlite://")
                .split('?')
                .next()
                .unwrap_or_default();
            db.lite = Some(super::lite::Lite::start(path, db.write_lock.clone())?);
        }
        Ok(db)
    }

    /// Applies the migrations the database lacks, each in a transaction
    /// with its version row. Instances starting together take turns: a
    /// transaction-scoped advisory lock on PostgreSQL, SQLite's write lock
    /// (the transaction's first statement writes), and the version is read
    /// again inside.
    async fn migrate(&self, shown: &str) -> Result<(), String> {
        let mut conn = self.pool.acquire().await.map_err(|e| err("database", e))?;
        let version = inspect(&mut conn, self.sqlite, shown).await?;
        drop(conn);
        if version >= SCHEMA_VERSION {
            return Ok(());
        }
        let mut tx = self.pool.begin().await.map_err(|e| err("database", e))?;
        if !self.sqlite {
            sqlx::query("SELECT pg_advisory_xact_lock(3917390001)")
                .execute(&mut *tx)
                .await
                .map_err(|e| err("migration lock", e))?;
        }
        sqlx::query("CREATE TABLE IF NOT EXISTS troupe_schema (version BIGINT PRIMARY KEY, applied BIGINT NOT NULL)")
            .execute(&mut *tx)
            .await
            .map_err(|e| err("migration", e))?;
        let version = inspect(&mut tx, self.sqlite, shown).await?;
        if version < 1 {
            for stmt in MIGRATION_1 {
                let stmt = if self.sqlite {
                    stmt.to_string()
                } else {
                    stmt.replace("BLOB", "BYTEA")
                };
                sqlx::query(&stmt)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| err("migration 1", e))?;
            }
            sqlx::query("INSERT INTO troupe_schema (version, applied) VALUES (1, $1)")
                .bind(now())
                .execute(&mut *tx)
                .await
                .map_err(|e| err("migration 1", e))?;
        }
        tx.commit().await.map_err(|e| err("migration", e))
    }

    /// Writes one operation on a live session, durably (committed before
    /// this returns): `Ok(false)` when the row moved first. The turns of
    /// concurrent requests share one transaction and one flush: on SQLite
    /// ([`super::lite`]'s writer) always, on PostgreSQL ([`group_commit_pg`])
    /// once [`Db::group_commit`] turned it on; else each is its own
    /// transaction.
    pub async fn write_turn(&self, w: TurnWrite) -> Result<bool, String> {
        if let Some(lite) = &self.lite {
            return lite.write_turn(w).await;
        }
        if let Some(queue) = &self.turns {
            let (answer, answered) = tokio::sync::oneshot::channel();
            queue
                .send((w, answer))
                .map_err(|_| "the group commit stopped".to_string())?;
            return answered
                .await
                .map_err(|_| "the group commit stopped".to_string())?;
        }
        let written: Result<bool, sqlx::Error> = async {
            let mut tx = self.pool.begin().await?;
            let ok = write_in(&mut tx, &w).await?;
            if ok {
                tx.commit().await?;
            } else {
                tx.rollback().await?;
            }
            Ok(ok)
        }
        .await;
        written.map_err(|e| e.to_string())
    }

    /// A new token for `workspace`: stored as its SHA-256, printed once.
    pub async fn create_token(&self, workspace: &str) -> Result<String, String> {
        let mut raw = [0u8; 24];
        getrandom::fill(&mut raw).map_err(|e| err("no randomness", e))?;
        let token = format!("trp_{}", hex(&raw));
        sqlx::query("INSERT INTO troupe_tokens (hash, workspace, created) VALUES ($1, $2, $3)")
            .bind(sha256_hex(token.as_bytes()))
            .bind(workspace.to_string())
            .bind(now())
            .execute(&self.pool)
            .await
            .map_err(|e| err("cannot store the token", e))?;
        Ok(token)
    }

    /// Turns PostgreSQL's group commit on ([`group_commit_pg`]; SQLite
    /// always has its own): from now on [`Db::write_turn`] queues.
    pub fn group_commit(&mut self) {
        if self.sqlite || self.turns.is_some() {
            return;
        }
        let (send, receive) = tokio::sync::mpsc::unbounded_channel();
        let receive = std::sync::Arc::new(tokio::sync::Mutex::new(receive));
        for _ in 0..PG_COMMITTERS {
            tokio::spawn(group_commit_pg(self.pool.clone(), receive.clone()));
        }
        self.turns = Some(send);
    }

    /// Starts listening for revoked tokens (PostgreSQL; nothing on SQLite):
    /// what lets a server remember checked tokens ([`TokenWatch`]).
    pub fn watch_tokens(&self) {
        if let Some(url) = &self.pg_url {
            tokio::spawn(watch_tokens(url.0.clone(), self.tokens.clone()));
        }
    }

    /// `troupe serve token revoke`: deletes the token `token` of
    /// `workspace` (every token of it when `None`) and, on PostgreSQL,
    /// notifies every listening server in the same transaction. Returns
    /// how many were revoked.
    pub async fn revoke_tokens(&self, workspace: &str, token: Option<&str>) -> Result<u64, String> {
        let _w = self.write_guard().await;
        let mut tx = self.pool.begin().await.map_err(|e| err("database", e))?;
        let gone = match token {
            Some(t) => {
                sqlx::query("DELETE FROM troupe_tokens WHERE workspace = $1 AND hash = $2")
                    .bind(workspace.to_string())
                    .bind(sha256_hex(t.as_bytes()))
                    .execute(&mut *tx)
                    .await
            }
            None => {
                sqlx::query("DELETE FROM troupe_tokens WHERE workspace = $1")
                    .bind(workspace.to_string())
                    .execute(&mut *tx)
                    .await
            }
        }
        .map_err(|e| err("cannot revoke", e))?
        .rows_affected();
        if !self.sqlite && gone > 0 {
            // Delivered at commit, to every session listening.
            sqlx::query("NOTIFY troupe_tokens")
                .execute(&mut *tx)
                .await
                .map_err(|e| err("cannot notify the servers", e))?;
        }
        tx.commit().await.map_err(|e| err("cannot revoke", e))?;
        Ok(gone)
    }

    /// The workspace a bearer token opens, if any (read from the database
    /// each time: SQLite on its reader thread, [`super::lite`]).
    pub async fn token_workspace(&self, token: &str) -> Result<Option<String>, String> {
        let hash = sha256_hex(token.as_bytes());
        if let Some(lite) = &self.lite {
            return lite
                .read(move |c| super::lite::token_workspace(c, &hash))
                .await;
        }
        let row = sqlx::query("SELECT workspace FROM troupe_tokens WHERE hash = $1")
            .bind(hash)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| e.to_string())?;
        row.map(|r| r.try_get::<String, _>(0))
            .transpose()
            .map_err(|e| e.to_string())
    }

    /// A session's stored row, `(pack, current, lines)`; `None`: no such
    /// session in `ws`.
    pub async fn session_row(
        &self,
        ws: &str,
        id: &str,
    ) -> Result<Option<(String, String, i64)>, String> {
        if let Some(lite) = &self.lite {
            let (ws, id) = (ws.to_string(), id.to_string());
            return lite
                .read(move |c| super::lite::session_row(c, &ws, &id))
                .await;
        }
        let r = sqlx::query(
            "SELECT pack, current, lines FROM troupe_sessions WHERE workspace = $1 AND id = $2",
        )
        .bind(ws.to_string())
        .bind(id.to_string())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| e.to_string())?;
        r.map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
            .transpose()
            .map_err(|e: sqlx::Error| e.to_string())
    }

    /// The stored lines `from..upto` of a session (0: the header), joined
    /// in order, and how many they are: on SQLite on the line reader's
    /// thread ([`super::lite`]), else through the pool.
    pub async fn session_lines(
        &self,
        ws: &str,
        id: &str,
        from: i64,
        upto: i64,
    ) -> Result<(String, i64), String> {
        let (ws, id) = (ws.to_string(), id.to_string());
        if let Some(lite) = &self.lite {
            return lite.session_lines(ws, id, from, upto).await;
        }
        let rows = sqlx::query(
            "SELECT line FROM troupe_lines WHERE workspace = $1 AND session = $2 AND seq >= $3 AND seq < $4 ORDER BY seq",
        )
        .bind(ws)
        .bind(id)
        .bind(from)
        .bind(upto)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| e.to_string())?;
        let mut text = String::new();
        for r in &rows {
            text.push_str(&r.try_get::<String, _>(0).map_err(|e| e.to_string())?);
        }
        Ok((text, rows.len() as i64))
    }

    /// At most `limit` sessions of `ws` whose ID sorts after `after`, in ID
    /// order, each with its header line (one indexed range read).
    pub async fn list_sessions(
        &self,
        ws: &str,
        after: &str,
        limit: i64,
    ) -> Result<Vec<ListedSession>, String> {
        const SQL: &str = "SELECT s.id, s.pack, s.current, s.lines, s.created, l.line FROM troupe_sessions s JOIN troupe_lines l ON l.workspace = s.workspace AND l.session = s.id AND l.seq = 0 WHERE s.workspace = $1 AND s.id > $2 ORDER BY s.id LIMIT $3";
        let rows = sqlx::query(SQL)
            .bind(ws.to_string())
            .bind(after.to_string())
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| e.to_string())?;
        rows.iter()
            .map(|r| {
                Ok(ListedSession {
                    id: r.try_get(0)?,
                    pack: r.try_get(1)?,
                    current: r.try_get(2)?,
                    lines: r.try_get(3)?,
                    created: r.try_get(4)?,
                    header: r.try_get(5)?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(|e| e.to_string())
    }

    /// Stores a new session: its row and every line of its file, in one
    /// transaction (SQLite: on its writer thread, [`super::lite`]).
    pub async fn insert_session(&self, s: NewSession) -> Result<(), String> {
        if let Some(lite) = &self.lite {
            return lite
                .write(move |tx| {
                    tx.prepare_cached("INSERT INTO troupe_sessions (workspace, id, pack, settings, current, lines, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")?
                        .execute(rusqlite::params![s.workspace, s.id, s.pack, s.settings, s.current, s.lines.len() as i64, s.created])?;
                    let mut insert = tx.prepare_cached(
                        "INSERT INTO troupe_lines (workspace, session, seq, line) VALUES (?1, ?2, ?3, ?4)",
                    )?;
                    for (seq, line) in s.lines.iter().enumerate() {
                        insert.execute(rusqlite::params![s.workspace, s.id, seq as i64, line])?;
                    }
                    Ok(())
                })
                .await;
        }
        let written: Result<(), sqlx::Error> = async {
            let mut tx = self.pool.begin().await?;
            sqlx::query("INSERT INTO troupe_sessions (workspace, id, pack, settings, current, lines, created) VALUES ($1, $2, $3, $4, $5, $6, $7)")
                .bind(s.workspace.clone())
                .bind(s.id.clone())
                .bind(s.pack.clone())
                .bind(s.settings.clone())
                .bind(s.current.clone())
                .bind(s.lines.len() as i64)
                .bind(s.created)
                .execute(&mut *tx)
                .await?;
            for (seq, line) in s.lines.iter().enumerate() {
                sqlx::query(
                    "INSERT INTO troupe_lines (workspace, session, seq, line) VALUES ($1, $2, $3, $4)",
                )
                .bind(s.workspace.clone())
                .bind(s.id.clone())
                .bind(seq as i64)
                .bind(line.clone())
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await
        }
        .await;
        written.map_err(|e| e.to_string())
    }
}

/// Lower-case hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// SHA-256 as lower-case hexadecimal (pack hashes, token hashes).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(bytes))
}

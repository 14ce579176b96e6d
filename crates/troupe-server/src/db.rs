//! Storage of `troupe serve` (docs/server.md "Storage"): one SQLite file,
//! every statement on threads of Troupe's own, each owning a rusqlite
//! connection ([`super::lite`]), or one PostgreSQL database through sqlx's
//! `PgPool` (no macros); versioned migrations applied at start.
//!
//! A session is its header row (`troupe_sessions`) and one row per line of
//! its session file (`troupe_lines`, the header line included, in file
//! order); a turn is one transaction whose `UPDATE … WHERE current = …
//! AND lines = …` applies only when nobody else moved the session first.

use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};
use sqlx::{Connection, PgPool, Row};
use std::str::FromStr;

use super::lite::Lite;

/// The schema version this build writes and reads. A database whose
/// `troupe_schema` holds a higher version is refused.
pub const SCHEMA_VERSION: i64 = 2;

/// Every table Troupe creates; a database holding any other table is
/// refused before anything is written.
pub(super) const TABLES: &[&str] = &[
    "troupe_schema",
    "troupe_tokens",
    "troupe_packs",
    "troupe_sessions",
    "troupe_lines",
    "troupe_idempotency",
];

/// Migration 1, in the dialect both databases accept (`BLOB` is written
/// `BYTEA` for PostgreSQL).
pub(super) const MIGRATION_1: &[&str] = &[
    "CREATE TABLE troupe_tokens (hash TEXT PRIMARY KEY, workspace TEXT NOT NULL, created BIGINT NOT NULL)",
    "CREATE TABLE troupe_packs (workspace TEXT NOT NULL, hash TEXT NOT NULL, kind TEXT NOT NULL, body BLOB NOT NULL, size BIGINT NOT NULL, scenarios TEXT NOT NULL, deleted BIGINT NOT NULL DEFAULT 0, created BIGINT NOT NULL, PRIMARY KEY (workspace, hash))",
    "CREATE TABLE troupe_sessions (workspace TEXT NOT NULL, id TEXT NOT NULL, pack TEXT NOT NULL, settings TEXT NOT NULL, current TEXT NOT NULL, lines BIGINT NOT NULL, created BIGINT NOT NULL, PRIMARY KEY (workspace, id))",
    "CREATE TABLE troupe_lines (workspace TEXT NOT NULL, session TEXT NOT NULL, seq BIGINT NOT NULL, line TEXT NOT NULL, PRIMARY KEY (workspace, session, seq))",
    "CREATE TABLE troupe_idempotency (workspace TEXT NOT NULL, key TEXT NOT NULL, request TEXT NOT NULL, status BIGINT NOT NULL, content_type TEXT NOT NULL, body BLOB NOT NULL, created BIGINT NOT NULL, PRIMARY KEY (workspace, key))",
];

/// Migration 2 (docs/server.md "API", `Idempotency-Key`): the headers of
/// a stored answer (`Troupe-Current`, `Location`, …: a JSON array of
/// `[name, value]` pairs, `''` for answers stored before), and the index
/// the pruning of expired keys reads by age.
pub(super) const MIGRATION_2: &[&str] = &[
    "ALTER TABLE troupe_idempotency ADD COLUMN headers TEXT NOT NULL DEFAULT ''",
    "CREATE INDEX troupe_idempotency_created ON troupe_idempotency (created)",
];

/// Every migration, version `i + 1` at index `i`; the last one is
/// [`SCHEMA_VERSION`].
pub(super) const MIGRATIONS: &[&[&str]] = &[MIGRATION_1, MIGRATION_2];

/// The database of a server: SQLite on its own threads, or PostgreSQL's
/// pool.
#[derive(Debug, Clone)]
pub struct Db {
    store: Store,
    /// PostgreSQL's group commit (docs/server.md "Storage and
    /// durability"): the queue of [`Db::write_turn`]s committed together
    /// by [`PG_COMMITTERS`] tasks ([`Db::group_commit`]). SQLite's writer
    /// thread always commits in groups ([`super::lite`]).
    turns: Option<tokio::sync::mpsc::UnboundedSender<Queued>>,
    /// Revoked tokens, as this process learns of them (docs/server.md
    /// "Tokens"): see [`TokenWatch`].
    pub tokens: TokenWatch,
    /// The PostgreSQL URL (for the token watch's own connection); `None`
    /// on SQLite. Never shown: it may hold a password.
    pg_url: Option<Hidden>,
}

/// Where a [`Db`]'s statements run.
#[derive(Debug, Clone)]
enum Store {
    /// SQLite: every statement on the reader, line reader and writer
    /// threads of [`super::lite`] (reads on a reader, writes as jobs of the
    /// writer's group transaction).
    Lite(Lite),
    Pg(PgPool),
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
    /// The answer of the request, when it carries an `Idempotency-Key`
    /// (docs/server.md "API"): written in the turn's transaction, so a
    /// retry after a crash finds both the turn and its answer, or neither.
    pub answer: Option<StoredAnswer>,
    /// SQLite: the SHA-256 of the request's bearer token when the request
    /// ran on a token this process remembered without reading it again
    /// (docs/server.md "Tokens"): the turn applies only if that token of
    /// `workspace` is still stored, read in the turn's transaction; else
    /// nothing is written and the write answers [`TOKEN_REVOKED`]. `None`
    /// on PostgreSQL (its remembered tokens follow `NOTIFY`).
    pub token: Option<String>,
}

/// The error a turn's write answers when its request's token
/// ([`TurnWrite::token`]) is no longer stored.
pub const TOKEN_REVOKED: &str = "the request's bearer token is revoked";

/// The first answer of an `Idempotency-Key` of the turn's workspace, as
/// stored in `troupe_idempotency`.
#[derive(Debug, Clone)]
pub struct StoredAnswer {
    pub key: String,
    pub status: i64,
    pub content_type: String,
    /// The answer's other headers, a JSON array of `[name, value]` pairs
    /// (migration 2).
    pub headers: String,
    pub body: Vec<u8>,
}

/// The `Idempotency-Key` answer of a keyed request that is not a session
/// operation (an upload, a session start, a delete, a revocation), made
/// from the operation's outcome `T` and written in the operation's own
/// transaction when it makes one (docs/server.md "API"); `None` when the
/// request carries no key.
pub type AnswerFor<T> = Option<AnswerFn<T>>;

/// The function of an [`AnswerFor`].
pub type AnswerFn<T> = Box<dyn FnOnce(&T) -> Option<StoredAnswer> + Send>;

/// An `Idempotency-Key`'s row ([`Db::idempotency_row`]): the request's
/// fingerprint, the answer's status (0: still running), content type and
/// body, and when it was claimed.
#[derive(Debug)]
pub struct IdempotencyRow {
    pub request: String,
    pub status: i64,
    pub content_type: String,
    pub body: Vec<u8>,
    pub created: i64,
    /// [`StoredAnswer::headers`].
    pub headers: String,
}

/// A pack as `GET /packs` lists it: `hash, kind, size, scenarios, created`.
#[derive(Debug)]
pub struct PackRow {
    pub hash: String,
    pub kind: String,
    pub size: i64,
    pub scenarios: String,
    pub created: i64,
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

/// A row of either database, read by column (mend D1): what each row
/// type of this module is mapped from, once ([`FromRow`]) — rusqlite's
/// `Row::get` and sqlx's `PgRow::try_get` behind one name per column type.
pub(super) trait RowRead {
    type Error;
    fn text(&self, i: usize) -> Result<String, Self::Error>;
    fn int(&self, i: usize) -> Result<i64, Self::Error>;
    fn bytes(&self, i: usize) -> Result<Vec<u8>, Self::Error>;
}

impl RowRead for rusqlite::Row<'_> {
    type Error = rusqlite::Error;
    fn text(&self, i: usize) -> rusqlite::Result<String> {
        self.get(i)
    }
    fn int(&self, i: usize) -> rusqlite::Result<i64> {
        self.get(i)
    }
    fn bytes(&self, i: usize) -> rusqlite::Result<Vec<u8>> {
        self.get(i)
    }
}

impl RowRead for sqlx::postgres::PgRow {
    type Error = sqlx::Error;
    fn text(&self, i: usize) -> Result<String, sqlx::Error> {
        self.try_get(i)
    }
    fn int(&self, i: usize) -> Result<i64, sqlx::Error> {
        self.try_get(i)
    }
    fn bytes(&self, i: usize) -> Result<Vec<u8>, sqlx::Error> {
        self.try_get(i)
    }
}

/// A value made from one row of a `SELECT` whose columns are in the order
/// its fields are listed, on either database ([`RowRead`]).
pub(super) trait FromRow: Sized {
    fn from_row<R: RowRead>(r: &R) -> Result<Self, R::Error>;
}

/// One text column (a workspace, a session's settings, a line).
impl FromRow for String {
    fn from_row<R: RowRead>(r: &R) -> Result<String, R::Error> {
        r.text(0)
    }
}

/// One integer column (a pack's `deleted`).
impl FromRow for i64 {
    fn from_row<R: RowRead>(r: &R) -> Result<i64, R::Error> {
        r.int(0)
    }
}

/// A pack's `kind, body`.
impl FromRow for (String, Vec<u8>) {
    fn from_row<R: RowRead>(r: &R) -> Result<Self, R::Error> {
        Ok((r.text(0)?, r.bytes(1)?))
    }
}

/// A session's `pack, current, lines`.
impl FromRow for (String, String, i64) {
    fn from_row<R: RowRead>(r: &R) -> Result<Self, R::Error> {
        Ok((r.text(0)?, r.text(1)?, r.int(2)?))
    }
}

impl FromRow for PackRow {
    fn from_row<R: RowRead>(r: &R) -> Result<PackRow, R::Error> {
        Ok(PackRow {
            hash: r.text(0)?,
            kind: r.text(1)?,
            size: r.int(2)?,
            scenarios: r.text(3)?,
            created: r.int(4)?,
        })
    }
}

impl FromRow for ListedSession {
    fn from_row<R: RowRead>(r: &R) -> Result<ListedSession, R::Error> {
        Ok(ListedSession {
            id: r.text(0)?,
            pack: r.text(1)?,
            current: r.text(2)?,
            lines: r.int(3)?,
            created: r.int(4)?,
            header: r.text(5)?,
        })
    }
}

impl FromRow for IdempotencyRow {
    fn from_row<R: RowRead>(r: &R) -> Result<IdempotencyRow, R::Error> {
        Ok(IdempotencyRow {
            request: r.text(0)?,
            status: r.int(1)?,
            content_type: r.text(2)?,
            body: r.bytes(3)?,
            created: r.int(4)?,
            headers: r.text(5)?,
        })
    }
}

type PgQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// The row `q` reads on `pool`, if any, as a `T`.
async fn pg_optional<T: FromRow>(q: PgQuery<'_>, pool: &PgPool) -> Result<Option<T>, String> {
    q.fetch_optional(pool)
        .await
        .and_then(|r| r.map(|r| T::from_row(&r)).transpose())
        .map_err(|e| e.to_string())
}

/// Every row `q` reads on `pool`, as `T`s.
async fn pg_all<T: FromRow>(q: PgQuery<'_>, pool: &PgPool) -> Result<Vec<T>, String> {
    let rows = q.fetch_all(pool).await.map_err(|e| e.to_string())?;
    rows.iter()
        .map(T::from_row)
        .collect::<Result<_, sqlx::Error>>()
        .map_err(|e| e.to_string())
}

type Queued = (
    TurnWrite,
    tokio::sync::oneshot::Sender<Result<bool, String>>,
);

/// Most turns one group commit takes.
pub(super) const GROUP_MAX: usize = 256;

/// One operation's whole write as one PostgreSQL statement (docs/server.md
/// "Group commit (PostgreSQL)"): the guarded `UPDATE` of the session's
/// row, the `INSERT` of its lines (one array parameter, so the text is
/// the same for every turn and prepared once per connection) and its
/// `Idempotency-Key` answer (NULL parameters when it has none), the last
/// two only when the `UPDATE` matched. Alone on the pool it is its own
/// transaction: one round trip where `BEGIN`, `UPDATE`, `INSERT`, the
/// answer's `UPDATE` and `COMMIT` were five.
const WRITE_ONE: &str = "WITH moved AS (UPDATE troupe_sessions SET current = $1, lines = $2 WHERE workspace = $3 AND id = $4 AND current = $5 AND lines = $6 RETURNING 1), \
    added AS (INSERT INTO troupe_lines (workspace, session, seq, line) SELECT $3, $4, $6 + l.n - 1, l.line FROM moved, unnest(CAST($7 AS TEXT[])) WITH ORDINALITY AS l(line, n)), \
    answered AS (UPDATE troupe_idempotency SET status = $8, content_type = $9, body = $10, headers = $11 WHERE workspace = $3 AND key = $12 AND EXISTS (SELECT 1 FROM moved)) \
    SELECT COUNT(*) FROM moved";

/// A new session's whole write as one PostgreSQL statement (its own
/// transaction): the session's row, every line of its file (one array
/// parameter, numbered from 0) and its `Idempotency-Key` answer (NULL
/// parameters when it has none), as [`WRITE_ONE`] does for a turn. A
/// session ID already taken fails the row's `INSERT`, and with it the
/// whole statement.
const START_ONE: &str = "WITH started AS (INSERT INTO troupe_sessions (workspace, id, pack, settings, current, lines, created) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING 1), \
    added AS (INSERT INTO troupe_lines (workspace, session, seq, line) SELECT $1, $2, l.n - 1, l.line FROM started, unnest(CAST($8 AS TEXT[])) WITH ORDINALITY AS l(line, n)) \
    UPDATE troupe_idempotency SET status = $9, content_type = $10, body = $11, headers = $12 WHERE workspace = $1 AND key = $13 AND EXISTS (SELECT 1 FROM started)";

/// Writes `w` ([`WRITE_ONE`]) on `e` (the pool, or a transaction's
/// connection): `Ok(false)` (nothing written) when the row moved.
async fn write_in<'e>(e: impl sqlx::PgExecutor<'e>, w: &TurnWrite) -> Result<bool, sqlx::Error> {
    let a = w.answer.as_ref();
    let moved: i64 = sqlx::query(WRITE_ONE)
        .bind(&w.current)
        .bind(w.old_rows + w.lines.len() as i64)
        .bind(&w.workspace)
        .bind(&w.session)
        .bind(&w.old_current)
        .bind(w.old_rows)
        .bind(&w.lines)
        .bind(a.map(|a| a.status))
        .bind(a.map(|a| &a.content_type))
        .bind(a.map(|a| &a.body))
        .bind(a.map(|a| &a.headers))
        .bind(a.map(|a| &a.key))
        .fetch_one(e)
        .await?
        .try_get(0)?;
    Ok(moved == 1)
}

/// Stores the first answer of an `Idempotency-Key` of `ws` (PostgreSQL):
/// the claim row the request made becomes its answer.
async fn store_answer_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    ws: &str,
    a: &StoredAnswer,
) -> Result<(), sqlx::Error> {
    sqlx::query(STORE_ANSWER)
        .bind(a.status)
        .bind(&a.content_type)
        .bind(&a.body)
        .bind(&a.headers)
        .bind(ws)
        .bind(&a.key)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Turns the claim row of an `Idempotency-Key` into its answer (both
/// databases: [`store_answer_in`], [`super::lite::store_answer`]).
pub(super) const STORE_ANSWER: &str = "UPDATE troupe_idempotency SET status = $1, content_type = $2, body = $3, headers = $4 WHERE workspace = $5 AND key = $6";

/// The connections of a server's PostgreSQL pool unless `--config`'s
/// `pg_connections` says otherwise (docs/server.md "Start").
pub const DEFAULT_PG_CONNECTIONS: u32 = 8;

/// Committers of PostgreSQL's group commit: each takes a group from the
/// shared queue and writes it while the others gather the next ones.
const PG_COMMITTERS: usize = 3;

/// PostgreSQL's group commit (docs/server.md "Group commit"): the turns
/// queued together are written as one statement whatever their number
/// ([`WRITE_GROUP`]: the sessions' rows locked in key order — instances
/// sharing the database lock in one order, so two groups never deadlock —
/// one `UPDATE` guarded like a single turn's, the `INSERT` of the applied
/// turns' lines and their answers), a transaction by itself. A process
/// never queues two writes of one session at once (its slot lock is held
/// until the write is answered); should a group hold one twice anyway, it
/// is written turn by turn in one transaction, and a group of one turn is
/// [`WRITE_ONE`] (no lock query).
async fn group_commit_pg(
    pool: PgPool,
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

/// Writes `group` (see [`group_commit_pg`]): which applied, in order. A
/// group of one turn is [`WRITE_ONE`], one of distinct sessions
/// [`WRITE_GROUP`], each a transaction by itself; one holding a session
/// twice is written turn by turn in one transaction.
async fn write_group_pg(pool: &PgPool, group: &[Queued]) -> Result<Vec<bool>, sqlx::Error> {
    if let [(w, _)] = group {
        return Ok(vec![write_in(pool, w).await?]);
    }
    let mut keys: Vec<(&str, &str)> = group
        .iter()
        .map(|(w, _)| (w.workspace.as_str(), w.session.as_str()))
        .collect();
    keys.sort_unstable();
    if keys.windows(2).all(|k| k[0] != k[1]) {
        return write_group_one(pool, group).await;
    }
    let mut tx = pool.begin().await?;
    let mut applied = Vec::with_capacity(group.len());
    for (w, _) in group {
        applied.push(write_in(&mut *tx, w).await?);
    }
    tx.commit().await?;
    Ok(applied)
}

/// A group's whole write as one PostgreSQL statement (docs/server.md
/// "Group commit (PostgreSQL)"), every value an array parameter, so the
/// text is the same for every group and prepared once per connection:
/// `v` the turns (sessions distinct); `locked` their rows, `FOR UPDATE` in
/// key order (PostgreSQL locks after sorting), materialized; `moved` the
/// `UPDATE` guarded like [`WRITE_ONE`]'s, which touches only rows
/// `locked` returned — so every row lock is taken in key order, whatever
/// the plan — and, when another transaction moved a row first, re-checks
/// its guard on the new version (`READ COMMITTED`) and leaves it: that
/// turn did not apply; `added` the applied turns' lines and `answered`
/// their `Idempotency-Key` answers, both joined on `moved`. Where the
/// rows' lock, the `UPDATE`, the `INSERT`, the answers and the commit were
/// five or six round trips, it is one.
const WRITE_GROUP: &str = "WITH v AS (SELECT * FROM unnest(CAST($1 AS TEXT[]), CAST($2 AS TEXT[]), CAST($3 AS TEXT[]), CAST($4 AS TEXT[]), CAST($5 AS BIGINT[]), CAST($6 AS BIGINT[])) AS v(workspace, id, old_current, current, old_lines, lines)), \
    locked AS MATERIALIZED (SELECT s.workspace, s.id FROM troupe_sessions AS s WHERE (s.workspace, s.id) IN (SELECT v.workspace, v.id FROM v) ORDER BY s.workspace, s.id FOR UPDATE), \
    moved AS (UPDATE troupe_sessions AS s SET current = v.current, lines = v.lines FROM locked, v WHERE s.workspace = locked.workspace AND s.id = locked.id AND v.workspace = locked.workspace AND v.id = locked.id AND s.current = v.old_current AND s.lines = v.old_lines RETURNING s.workspace, s.id), \
    added AS (INSERT INTO troupe_lines (workspace, session, seq, line) SELECT l.workspace, l.session, l.seq, l.line FROM unnest(CAST($7 AS TEXT[]), CAST($8 AS TEXT[]), CAST($9 AS BIGINT[]), CAST($10 AS TEXT[])) AS l(workspace, session, seq, line) JOIN moved ON moved.workspace = l.workspace AND moved.id = l.session), \
    answered AS (UPDATE troupe_idempotency AS i SET status = a.status, content_type = a.content_type, body = a.body, headers = a.headers FROM unnest(CAST($11 AS BIGINT[]), CAST($12 AS TEXT[]), CAST($13 AS BYTEA[]), CAST($14 AS TEXT[]), CAST($15 AS TEXT[]), CAST($16 AS TEXT[]), CAST($17 AS TEXT[])) AS a(status, content_type, body, headers, workspace, session, key) JOIN moved ON moved.workspace = a.workspace AND moved.id = a.session WHERE i.workspace = a.workspace AND i.key = a.key) \
    SELECT workspace, id FROM moved";

/// Writes `group` (sessions distinct) as [`WRITE_GROUP`]: which turns
/// applied, in order.
async fn write_group_one(pool: &PgPool, group: &[Queued]) -> Result<Vec<bool>, sqlx::Error> {
    let turns = || group.iter().map(|(w, _)| w);
    let lines = || {
        turns().flat_map(|w| {
            w.lines
                .iter()
                .enumerate()
                .map(move |(i, l)| (w, w.old_rows + i as i64, l.as_str()))
        })
    };
    let answers = || turns().filter_map(|w| Some((w, w.answer.as_ref()?)));
    let rows = sqlx::query(WRITE_GROUP)
        .bind(turns().map(|w| w.workspace.as_str()).collect::<Vec<_>>())
        .bind(turns().map(|w| w.session.as_str()).collect::<Vec<_>>())
        .bind(turns().map(|w| w.old_current.as_str()).collect::<Vec<_>>())
        .bind(turns().map(|w| w.current.as_str()).collect::<Vec<_>>())
        .bind(turns().map(|w| w.old_rows).collect::<Vec<_>>())
        .bind(
            turns()
                .map(|w| w.old_rows + w.lines.len() as i64)
                .collect::<Vec<_>>(),
        )
        .bind(
            lines()
                .map(|(w, _, _)| w.workspace.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(
            lines()
                .map(|(w, _, _)| w.session.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(lines().map(|(_, seq, _)| seq).collect::<Vec<_>>())
        .bind(lines().map(|(_, _, l)| l).collect::<Vec<_>>())
        .bind(answers().map(|(_, a)| a.status).collect::<Vec<_>>())
        .bind(
            answers()
                .map(|(_, a)| a.content_type.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(
            answers()
                .map(|(_, a)| a.body.as_slice())
                .collect::<Vec<_>>(),
        )
        .bind(
            answers()
                .map(|(_, a)| a.headers.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(
            answers()
                .map(|(w, _)| w.workspace.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(
            answers()
                .map(|(w, _)| w.session.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(answers().map(|(_, a)| a.key.as_str()).collect::<Vec<_>>())
        .fetch_all(pool)
        .await?;
    let mut moved = std::collections::HashSet::new();
    for r in &rows {
        moved.insert((r.try_get::<String, _>(0)?, r.try_get::<String, _>(1)?));
    }
    Ok(turns()
        .map(|w| moved.contains(&(w.workspace.clone(), w.session.clone())))
        .collect())
}

/// `--database` as a SQLite file path (created when missing; a
/// `sqlite://` prefix and a `?…` suffix are dropped), or `None` for a
/// PostgreSQL URL (`postgres://…`/`postgresql://…`).
fn sqlite_path(database: &str) -> Option<String> {
    if database.starts_with("postgres://") || database.starts_with("postgresql://") {
        return None;
    }
    let path = database.strip_prefix("sqlite://").unwrap_or(database);
    let path = match path.strip_prefix("sqlite:") {
        Some(p) => p,
        None => path,
    };
    Some(path.split('?').next().unwrap_or_default().to_string())
}

/// Whether a SQLite `--database` names an in-memory (or temporary,
/// unnamed) database rather than a file.
fn in_memory(path: &str, database: &str) -> bool {
    path.is_empty() || path == ":memory:" || database.contains("mode=memory")
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

pub(super) fn err(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

/// Refuses a database holding a table Troupe did not create ([`TABLES`]);
/// `Ok(true)` when it holds `troupe_schema`. Both databases.
pub(super) fn check_tables(names: &[String], shown: &str) -> Result<bool, String> {
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
    Ok(names.iter().any(|n| n == "troupe_schema"))
}

/// Refuses a schema newer than [`SCHEMA_VERSION`]. Both databases.
pub(super) fn check_version(version: i64, shown: &str) -> Result<i64, String> {
    if version > SCHEMA_VERSION {
        return Err(format!(
            "{shown} has schema version {version}, newer than this troupe knows ({SCHEMA_VERSION}); run the troupe that wrote it, or a newer one"
        ));
    }
    Ok(version)
}

/// Refuses a PostgreSQL database holding a table Troupe did not create, or
/// a schema newer than [`SCHEMA_VERSION`]; reads only. `Ok(version)`: the
/// schema version found (0: an empty database). SQLite's is
/// [`super::lite::inspect`].
async fn inspect(conn: &mut PgConnection, shown: &str) -> Result<i64, String> {
    let rows = sqlx::query(
        "SELECT CAST(tablename AS TEXT) FROM pg_tables WHERE schemaname = current_schema()",
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(|e| err("cannot list the database's tables", e))?;
    let names = rows
        .iter()
        .map(|r| r.try_get::<String, _>(0).map_err(|e| err("table name", e)))
        .collect::<Result<Vec<_>, _>>()?;
    if !check_tables(&names, shown)? {
        return Ok(0);
    }
    let version: Option<i64> = sqlx::query("SELECT MAX(version) FROM troupe_schema")
        .fetch_one(&mut *conn)
        .await
        .and_then(|r| r.try_get::<Option<i64>, _>(0))
        .map_err(|e| err("cannot read the schema version", e))?;
    check_version(version.unwrap_or(0), shown)
}

/// A `rows_affected` of PostgreSQL as a count.
fn affected(r: Result<sqlx::postgres::PgQueryResult, sqlx::Error>) -> Result<u64, String> {
    r.map(|r| r.rows_affected()).map_err(|e| e.to_string())
}

impl Db {
    /// Opens `database` (module docs): checks it is Troupe's before any
    /// write, then applies the migrations it lacks. SQLite runs in WAL
    /// mode with `synchronous=FULL`: a commit is on disk before the
    /// answer that acknowledges it.
    pub async fn open(database: &str) -> Result<Db, String> {
        Db::open_with(database, DEFAULT_PG_CONNECTIONS).await
    }

    /// [`Db::open`] with a PostgreSQL pool of at most `pg_connections`
    /// connections (`pg_connections` of `--config`; SQLite ignores it).
    pub async fn open_with(database: &str, pg_connections: u32) -> Result<Db, String> {
        if let Some(path) = sqlite_path(database) {
            let shown = format!("the database {database}");
            if in_memory(&path, database) {
                return Err(format!(
                    "{shown}: an in-memory SQLite database cannot be served: the server's \
                     reader and writer threads each open the database, so each would see its \
                     own empty one; give a file path (the default is troupe.db)"
                ));
            }
            // Inspected first, read-only, on a thread of its own (opening a
            // file blocks): an existing file is opened read-only so nothing
            // (not even the WAL switch) touches it yet; then migrated, and
            // the reader and writer threads start.
            let lite = tokio::task::spawn_blocking(move || {
                super::lite::prepare(&path, &shown)?;
                Lite::start(&path)
            })
            .await
            .map_err(|e| err("database", e))??;
            return Ok(Db {
                store: Store::Lite(lite),
                turns: None,
                tokens: TokenWatch::default(),
                pg_url: None,
            });
        }
        let shown = "the PostgreSQL database".to_string();
        let opts = PgConnectOptions::from_str(database).map_err(|e| err("bad --database", e))?;
        let mut conn = PgConnection::connect_with(&opts)
            .await
            .map_err(|e| err(&format!("cannot open {shown}"), e))?;
        inspect(&mut conn, &shown).await?;
        let _ = conn.close().await;
        let pool = PgPoolOptions::new()
            .max_connections(pg_connections.max(1))
            .acquire_timeout(std::time::Duration::from_secs(5))
            .connect_with(opts)
            .await
            .map_err(|e| err(&format!("cannot open {shown}"), e))?;
        migrate_pg(&pool, &shown).await?;
        Ok(Db {
            store: Store::Pg(pool),
            turns: None,
            tokens: TokenWatch::default(),
            pg_url: Some(Hidden(database.to_string())),
        })
    }

    /// Writes one operation on a live session, durably (committed before
    /// this returns), with the request's `Idempotency-Key` answer when it
    /// has one: `Ok(false)` when the row moved first (nothing written).
    /// The turns of concurrent requests share one transaction and one
    /// flush: on SQLite ([`super::lite`]'s writer) always, on PostgreSQL
    /// ([`group_commit_pg`]) once [`Db::group_commit`] turned it on; else
    /// each is its own transaction.
    pub async fn write_turn(&self, w: TurnWrite) -> Result<bool, String> {
        let pool = match &self.store {
            Store::Lite(lite) => return lite.write_turn(w).await,
            Store::Pg(pool) => pool,
        };
        if let Some(queue) = &self.turns {
            let (answer, answered) = tokio::sync::oneshot::channel();
            queue
                .send((w, answer))
                .map_err(|_| "the group commit stopped".to_string())?;
            return answered
                .await
                .map_err(|_| "the group commit stopped".to_string())?;
        }
        write_in(pool, &w).await.map_err(|e| e.to_string())
    }

    /// A new token for `workspace`: stored as its SHA-256, printed once.
    pub async fn create_token(&self, workspace: &str) -> Result<String, String> {
        let mut raw = [0u8; 24];
        getrandom::fill(&mut raw).map_err(|e| err("no randomness", e))?;
        let token = format!("trp_{}", hex(&raw));
        let (hash, ws, created) = (sha256_hex(token.as_bytes()), workspace.to_string(), now());
        const SQL: &str =
            "INSERT INTO troupe_tokens (hash, workspace, created) VALUES ($1, $2, $3)";
        match &self.store {
            Store::Lite(lite) => lite
                .write(move |c| {
                    c.prepare_cached(SQL)?
                        .execute(rusqlite::params![hash, ws, created])
                        .map(drop)
                })
                .await
                .map_err(|e| err("cannot store the token", e))?,
            Store::Pg(pool) => {
                sqlx::query(SQL)
                    .bind(hash)
                    .bind(ws)
                    .bind(created)
                    .execute(pool)
                    .await
                    .map_err(|e| err("cannot store the token", e))?;
            }
        }
        Ok(token)
    }

    /// Turns PostgreSQL's group commit on ([`group_commit_pg`]; SQLite
    /// always has its own): from now on [`Db::write_turn`] queues.
    pub fn group_commit(&mut self) {
        let Store::Pg(pool) = &self.store else { return };
        if self.turns.is_some() {
            return;
        }
        let (send, receive) = tokio::sync::mpsc::unbounded_channel();
        let receive = std::sync::Arc::new(tokio::sync::Mutex::new(receive));
        for _ in 0..PG_COMMITTERS {
            tokio::spawn(group_commit_pg(pool.clone(), receive.clone()));
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
    /// notifies every listening server in the same transaction, with
    /// `answer` (`DELETE /tokens/current`). Returns how many were revoked.
    pub async fn revoke_tokens(
        &self,
        workspace: &str,
        token: Option<&str>,
        answer: AnswerFor<u64>,
    ) -> Result<u64, String> {
        let ws = workspace.to_string();
        let hash = token.map(|t| sha256_hex(t.as_bytes()));
        let pool = match &self.store {
            Store::Lite(lite) => {
                return lite
                    .write(move |c| {
                        let gone = super::lite::revoke_tokens(c, &ws, hash.as_deref())?;
                        if let Some(a) = answer.and_then(|f| f(&gone)) {
                            super::lite::store_answer(c, &ws, &a)?;
                        }
                        Ok(gone)
                    })
                    .await
                    .map_err(|e| err("cannot revoke", e))
            }
            Store::Pg(pool) => pool,
        };
        let mut tx = pool.begin().await.map_err(|e| err("database", e))?;
        let gone = match &hash {
            Some(h) => {
                sqlx::query("DELETE FROM troupe_tokens WHERE workspace = $1 AND hash = $2")
                    .bind(&ws)
                    .bind(h)
                    .execute(&mut *tx)
                    .await
            }
            None => {
                sqlx::query("DELETE FROM troupe_tokens WHERE workspace = $1")
                    .bind(&ws)
                    .execute(&mut *tx)
                    .await
            }
        }
        .map_err(|e| err("cannot revoke", e))?
        .rows_affected();
        if gone > 0 {
            // Delivered at commit, to every session listening.
            sqlx::query("NOTIFY troupe_tokens")
                .execute(&mut *tx)
                .await
                .map_err(|e| err("cannot notify the servers", e))?;
        }
        if let Some(a) = answer.and_then(|f| f(&gone)) {
            store_answer_in(&mut tx, &ws, &a)
                .await
                .map_err(|e| err("cannot store the answer", e))?;
        }
        tx.commit().await.map_err(|e| err("cannot revoke", e))?;
        Ok(gone)
    }

    /// Whether the database is SQLite (its remembered tokens are checked
    /// in the turn's transaction: [`TurnWrite::token`]).
    pub fn is_sqlite(&self) -> bool {
        matches!(self.store, Store::Lite(_))
    }

    /// The workspace of the bearer token whose SHA-256 (hex, as stored)
    /// is `hash`, if any (read from the database each time: SQLite on its
    /// reader thread, [`super::lite`]).
    pub async fn token_workspace(&self, hash: &str) -> Result<Option<String>, String> {
        const SQL: &str = "SELECT workspace FROM troupe_tokens WHERE hash = $1";
        let hash = hash.to_string();
        match &self.store {
            Store::Lite(lite) => {
                lite.read(move |c| super::lite::optional(c, SQL, rusqlite::params![hash]))
                    .await
            }
            Store::Pg(pool) => pg_optional(sqlx::query(SQL).bind(hash), pool).await,
        }
    }

    /// A session's stored row, `(pack, current, lines)`; `None`: no such
    /// session in `ws`.
    pub async fn session_row(
        &self,
        ws: &str,
        id: &str,
    ) -> Result<Option<(String, String, i64)>, String> {
        const SQL: &str =
            "SELECT pack, current, lines FROM troupe_sessions WHERE workspace = $1 AND id = $2";
        let (ws, id) = (ws.to_string(), id.to_string());
        match &self.store {
            Store::Lite(lite) => {
                lite.read(move |c| super::lite::optional(c, SQL, rusqlite::params![ws, id]))
                    .await
            }
            Store::Pg(pool) => pg_optional(sqlx::query(SQL).bind(ws).bind(id), pool).await,
        }
    }

    /// The settings a session was created with (its row's JSON text);
    /// `None`: no such session in `ws`.
    pub async fn session_settings(&self, ws: &str, id: &str) -> Result<Option<String>, String> {
        const SQL: &str = "SELECT settings FROM troupe_sessions WHERE workspace = $1 AND id = $2";
        let (ws, id) = (ws.to_string(), id.to_string());
        match &self.store {
            Store::Lite(lite) => {
                lite.read(move |c| super::lite::optional(c, SQL, rusqlite::params![ws, id]))
                    .await
            }
            Store::Pg(pool) => pg_optional(sqlx::query(SQL).bind(ws).bind(id), pool).await,
        }
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
        let pool = match &self.store {
            Store::Lite(lite) => return lite.session_lines(ws, id, from, upto).await,
            Store::Pg(pool) => pool,
        };
        let rows = sqlx::query(
            "SELECT line FROM troupe_lines WHERE workspace = $1 AND session = $2 AND seq >= $3 AND seq < $4 ORDER BY seq",
        )
        .bind(ws)
        .bind(id)
        .bind(from)
        .bind(upto)
        .fetch_all(pool)
        .await
        .map_err(|e| e.to_string())?;
        let mut text = String::new();
        for r in &rows {
            text.push_str(&r.text(0).map_err(|e| e.to_string())?);
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
        let (ws, after) = (ws.to_string(), after.to_string());
        match &self.store {
            Store::Lite(lite) => {
                lite.read(move |c| super::lite::all(c, SQL, rusqlite::params![ws, after, limit]))
                    .await
            }
            Store::Pg(pool) => {
                pg_all(sqlx::query(SQL).bind(ws).bind(after).bind(limit), pool).await
            }
        }
    }

    /// Stores a new session: its row and every line of its file, and
    /// `answer`, in one transaction (SQLite: in the writer's next group,
    /// [`super::lite`]).
    pub async fn insert_session(&self, s: NewSession, answer: AnswerFor<()>) -> Result<(), String> {
        const ROW: &str = "INSERT INTO troupe_sessions (workspace, id, pack, settings, current, lines, created) VALUES ($1, $2, $3, $4, $5, $6, $7)";
        const LINE: &str =
            "INSERT INTO troupe_lines (workspace, session, seq, line) VALUES ($1, $2, $3, $4)";
        let pool = match &self.store {
            Store::Lite(lite) => {
                return lite
                    .write(move |tx| {
                        tx.prepare_cached(ROW)?.execute(rusqlite::params![
                            s.workspace,
                            s.id,
                            s.pack,
                            s.settings,
                            s.current,
                            s.lines.len() as i64,
                            s.created
                        ])?;
                        let mut insert = tx.prepare_cached(LINE)?;
                        for (seq, line) in s.lines.iter().enumerate() {
                            insert.execute(rusqlite::params![
                                s.workspace,
                                s.id,
                                seq as i64,
                                line
                            ])?;
                        }
                        if let Some(a) = answer.and_then(|f| f(&())) {
                            super::lite::store_answer(tx, &s.workspace, &a)?;
                        }
                        Ok(())
                    })
                    .await
            }
            Store::Pg(pool) => pool,
        };
        // One statement, so one round trip and its own transaction where
        // `BEGIN`, the row's `INSERT`, one `INSERT` per line, the answer
        // and `COMMIT` were 4 + lines (a session start is about one
        // request in eleven of the load example's; docs/performance.md
        // Run AV).
        let a = answer.and_then(|f| f(&()));
        let lines = s.lines.len() as i64;
        sqlx::query(START_ONE)
            .bind(&s.workspace)
            .bind(&s.id)
            .bind(&s.pack)
            .bind(&s.settings)
            .bind(&s.current)
            .bind(lines)
            .bind(s.created)
            .bind(&s.lines)
            .bind(a.as_ref().map(|a| a.status))
            .bind(a.as_ref().map(|a| &a.content_type))
            .bind(a.as_ref().map(|a| &a.body))
            .bind(a.as_ref().map(|a| &a.headers))
            .bind(a.as_ref().map(|a| &a.key))
            .execute(pool)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Deletes session `id` of `ws`, its row and every line in one
    /// transaction, only if its row is still at `expected`/`lines` when
    /// given (docs/server.md "Deleting and archiving"), with `answer`:
    /// whether it was.
    pub async fn delete_session(
        &self,
        ws: &str,
        id: &str,
        expected: Option<String>,
        lines: Option<i64>,
        answer: AnswerFor<bool>,
    ) -> Result<bool, String> {
        // The row's guard: `current` and `lines` compared only when given
        // (a NULL parameter matches any row).
        const ROW: &str = "DELETE FROM troupe_sessions WHERE workspace = $1 AND id = $2 AND ($3 IS NULL OR current = $3) AND ($4 IS NULL OR lines = $4)";
        const LINES: &str = "DELETE FROM troupe_lines WHERE workspace = $1 AND session = $2";
        let (ws, id) = (ws.to_string(), id.to_string());
        let pool = match &self.store {
            Store::Lite(lite) => {
                return lite
                    .write(move |c| {
                        let gone = c
                            .prepare_cached(ROW)?
                            .execute(rusqlite::params![ws, id, expected, lines])?;
                        if gone == 1 {
                            c.prepare_cached(LINES)?
                                .execute(rusqlite::params![ws, id])?;
                        }
                        if let Some(a) = answer.and_then(|f| f(&(gone == 1))) {
                            super::lite::store_answer(c, &ws, &a)?;
                        }
                        Ok(gone == 1)
                    })
                    .await
            }
            Store::Pg(pool) => pool,
        };
        let deleted: Result<bool, sqlx::Error> = async {
            let mut tx = pool.begin().await?;
            let gone = sqlx::query(ROW)
                .bind(&ws)
                .bind(&id)
                .bind(&expected)
                .bind(lines)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if gone == 1 {
                sqlx::query(LINES)
                    .bind(&ws)
                    .bind(&id)
                    .execute(&mut *tx)
                    .await?;
            }
            if let Some(a) = answer.and_then(|f| f(&(gone == 1))) {
                store_answer_in(&mut tx, &ws, &a).await?;
            }
            tx.commit().await?;
            Ok(gone == 1)
        }
        .await;
        deleted.map_err(|e| e.to_string())
    }

    /// Whether the database answers (`/readyz`).
    pub async fn ping(&self) -> Result<(), String> {
        match &self.store {
            Store::Lite(lite) => lite.read(|c| c.query_row("SELECT 1", [], |_| Ok(()))).await,
            Store::Pg(pool) => sqlx::query("SELECT 1")
                .execute(pool)
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
        }
    }

    /// Stores pack `hash` of `ws` (`PUT /packs`), or marks a deleted one
    /// live again, with `answer` in the same transaction: `Ok(true)` when
    /// it was new.
    #[allow(clippy::too_many_arguments)]
    pub async fn insert_pack(
        &self,
        ws: &str,
        hash: &str,
        kind: &str,
        body: Vec<u8>,
        scenarios: &str,
        created: i64,
        answer: AnswerFor<bool>,
    ) -> Result<bool, String> {
        const INSERT: &str = "INSERT INTO troupe_packs (workspace, hash, kind, body, size, scenarios, deleted, created) VALUES ($1, $2, $3, $4, $5, $6, 0, $7) ON CONFLICT DO NOTHING";
        const LIVE: &str = "UPDATE troupe_packs SET deleted = 0 WHERE workspace = $1 AND hash = $2";
        let (ws, hash, kind, scenarios) = (
            ws.to_string(),
            hash.to_string(),
            kind.to_string(),
            scenarios.to_string(),
        );
        let size = body.len() as i64;
        let pool = match &self.store {
            Store::Lite(lite) => {
                return lite
                    .write(move |c| {
                        let new = c.prepare_cached(INSERT)?.execute(rusqlite::params![
                            ws, hash, kind, body, size, scenarios, created
                        ])? == 1;
                        if !new {
                            c.prepare_cached(LIVE)?
                                .execute(rusqlite::params![ws, hash])?;
                        }
                        if let Some(a) = answer.and_then(|f| f(&new)) {
                            super::lite::store_answer(c, &ws, &a)?;
                        }
                        Ok(new)
                    })
                    .await
            }
            Store::Pg(pool) => pool,
        };
        let written: Result<bool, sqlx::Error> = async {
            let mut tx = pool.begin().await?;
            let new = sqlx::query(INSERT)
                .bind(&ws)
                .bind(&hash)
                .bind(kind)
                .bind(body)
                .bind(size)
                .bind(scenarios)
                .bind(created)
                .execute(&mut *tx)
                .await?
                .rows_affected()
                == 1;
            if !new {
                sqlx::query(LIVE)
                    .bind(&ws)
                    .bind(&hash)
                    .execute(&mut *tx)
                    .await?;
            }
            if let Some(a) = answer.and_then(|f| f(&new)) {
                store_answer_in(&mut tx, &ws, &a).await?;
            }
            tx.commit().await?;
            Ok(new)
        }
        .await;
        written.map_err(|e| e.to_string())
    }

    /// Whether pack `hash` of `ws` is marked deleted; `None`: no such pack.
    pub async fn pack_deleted(&self, ws: &str, hash: &str) -> Result<Option<bool>, String> {
        const SQL: &str = "SELECT deleted FROM troupe_packs WHERE workspace = $1 AND hash = $2";
        let (ws, hash) = (ws.to_string(), hash.to_string());
        let deleted: Option<i64> = match &self.store {
            Store::Lite(lite) => {
                lite.read(move |c| super::lite::optional(c, SQL, rusqlite::params![ws, hash]))
                    .await?
            }
            Store::Pg(pool) => pg_optional(sqlx::query(SQL).bind(ws).bind(hash), pool).await?,
        };
        Ok(deleted.map(|d| d != 0))
    }

    /// The kind and bytes of pack `hash` of `ws` (deleted ones included);
    /// `None`: no such pack. SQLite reads it on the line reader (a pack
    /// may be megabytes).
    pub async fn pack_body(
        &self,
        ws: &str,
        hash: &str,
    ) -> Result<Option<(String, Vec<u8>)>, String> {
        const SQL: &str = "SELECT kind, body FROM troupe_packs WHERE workspace = $1 AND hash = $2";
        let (ws, hash) = (ws.to_string(), hash.to_string());
        match &self.store {
            Store::Lite(lite) => {
                lite.read_long(move |c| super::lite::optional(c, SQL, rusqlite::params![ws, hash]))
                    .await
            }
            Store::Pg(pool) => pg_optional(sqlx::query(SQL).bind(ws).bind(hash), pool).await,
        }
    }

    /// The live packs of `ws` by hash (`GET /packs`), or only `hash`.
    pub async fn list_packs(&self, ws: &str, hash: Option<&str>) -> Result<Vec<PackRow>, String> {
        const SQL: &str = "SELECT hash, kind, size, scenarios, created FROM troupe_packs WHERE workspace = $1 AND ($2 IS NULL OR hash = $2) AND deleted = 0 ORDER BY hash";
        let (ws, hash) = (ws.to_string(), hash.map(str::to_string));
        match &self.store {
            Store::Lite(lite) => {
                lite.read(move |c| super::lite::all(c, SQL, rusqlite::params![ws, hash]))
                    .await
            }
            Store::Pg(pool) => pg_all(sqlx::query(SQL).bind(ws).bind(hash), pool).await,
        }
    }

    /// Marks pack `hash` of `ws` deleted, with `answer` in the same
    /// transaction: whether it was live.
    pub async fn delete_pack(
        &self,
        ws: &str,
        hash: &str,
        answer: AnswerFor<bool>,
    ) -> Result<bool, String> {
        const SQL: &str = "UPDATE troupe_packs SET deleted = 1 WHERE workspace = $1 AND hash = $2 AND deleted = 0";
        let (ws, hash) = (ws.to_string(), hash.to_string());
        let pool = match &self.store {
            Store::Lite(lite) => {
                return lite
                    .write(move |c| {
                        let live = c
                            .prepare_cached(SQL)?
                            .execute(rusqlite::params![ws, hash])?
                            == 1;
                        if let Some(a) = answer.and_then(|f| f(&live)) {
                            super::lite::store_answer(c, &ws, &a)?;
                        }
                        Ok(live)
                    })
                    .await
            }
            Store::Pg(pool) => pool,
        };
        let written: Result<bool, sqlx::Error> = async {
            let mut tx = pool.begin().await?;
            let live = sqlx::query(SQL)
                .bind(&ws)
                .bind(&hash)
                .execute(&mut *tx)
                .await?
                .rows_affected()
                == 1;
            if let Some(a) = answer.and_then(|f| f(&live)) {
                store_answer_in(&mut tx, &ws, &a).await?;
            }
            tx.commit().await?;
            Ok(live)
        }
        .await;
        written.map_err(|e| e.to_string())
    }

    /// Claims `Idempotency-Key` `key` of `ws` for the request of
    /// fingerprint `request` (a row with status 0): `Ok(false)` when the key
    /// has a row already. On SQLite without waiting for its own fsync
    /// ([`super::lite::Lite::write_unsynced`]).
    pub async fn claim_key(&self, ws: &str, key: &str, request: &str) -> Result<bool, String> {
        const SQL: &str = "INSERT INTO troupe_idempotency (workspace, key, request, status, content_type, body, created) VALUES ($1, $2, $3, 0, '', $4, $5) ON CONFLICT DO NOTHING";
        let (ws, key, request, created) =
            (ws.to_string(), key.to_string(), request.to_string(), now());
        let empty: Vec<u8> = Vec::new();
        match &self.store {
            Store::Lite(lite) => {
                lite.write_unsynced(move |c| {
                    Ok(c.prepare_cached(SQL)?
                        .execute(rusqlite::params![ws, key, request, empty, created])?
                        == 1)
                })
                .await
            }
            Store::Pg(pool) => Ok(affected(
                sqlx::query(SQL)
                    .bind(ws)
                    .bind(key)
                    .bind(request)
                    .bind(empty)
                    .bind(created)
                    .execute(pool)
                    .await,
            )? == 1),
        }
    }

    /// The row of `Idempotency-Key` `key` of `ws`, if any.
    pub async fn idempotency_row(
        &self,
        ws: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRow>, String> {
        const SQL: &str = "SELECT request, status, content_type, body, created, headers FROM troupe_idempotency WHERE workspace = $1 AND key = $2";
        let (ws, key) = (ws.to_string(), key.to_string());
        match &self.store {
            Store::Lite(lite) => {
                lite.read(move |c| super::lite::optional(c, SQL, rusqlite::params![ws, key]))
                    .await
            }
            Store::Pg(pool) => pg_optional(sqlx::query(SQL).bind(ws).bind(key), pool).await,
        }
    }

    /// Deletes at most `limit` `Idempotency-Key` rows (answers and
    /// claims, of every workspace) made before `before`, oldest first
    /// (docs/server.md "API": a key's lifetime): how many. One indexed
    /// statement; on SQLite a job of the writer's next group that waits
    /// for no fsync of its own (losing a prune loses nothing).
    pub async fn prune_keys(&self, before: i64, limit: i64) -> Result<u64, String> {
        const SQL: &str = "DELETE FROM troupe_idempotency WHERE (workspace, key) IN (SELECT workspace, key FROM troupe_idempotency WHERE created < $1 ORDER BY created LIMIT $2)";
        match &self.store {
            Store::Lite(lite) => {
                lite.write_unsynced(move |c| {
                    Ok(c.prepare_cached(SQL)?
                        .execute(rusqlite::params![before, limit])? as u64)
                })
                .await
            }
            Store::Pg(pool) => affected(
                sqlx::query(SQL)
                    .bind(before)
                    .bind(limit)
                    .execute(pool)
                    .await,
            ),
        }
    }

    /// Takes over the abandoned claim of `key` of `ws` made at `created`
    /// (still unanswered): whether this caller got it.
    pub async fn take_over_key(&self, ws: &str, key: &str, created: i64) -> Result<bool, String> {
        const SQL: &str = "UPDATE troupe_idempotency SET created = $1 WHERE workspace = $2 AND key = $3 AND status = 0 AND created = $4";
        let (ws, key, at) = (ws.to_string(), key.to_string(), now());
        match &self.store {
            Store::Lite(lite) => {
                lite.write(move |c| {
                    Ok(c.prepare_cached(SQL)?
                        .execute(rusqlite::params![at, ws, key, created])?
                        == 1)
                })
                .await
            }
            Store::Pg(pool) => Ok(affected(
                sqlx::query(SQL)
                    .bind(at)
                    .bind(ws)
                    .bind(key)
                    .bind(created)
                    .execute(pool)
                    .await,
            )? == 1),
        }
    }

    /// Stores the first answer of `key` of `ws` (its claim row becomes the
    /// answer), or with `Err(key)` drops the claim (a 5xx is not stored) —
    /// unless an answer was stored meanwhile: a session operation whose
    /// commit was answered with an error may still have committed, answer
    /// included, and that answer stays.
    pub async fn answer_key(
        &self,
        ws: &str,
        answer: Result<StoredAnswer, String>,
    ) -> Result<(), String> {
        const DROP: &str =
            "DELETE FROM troupe_idempotency WHERE workspace = $1 AND key = $2 AND status = 0";
        let ws = ws.to_string();
        match (&self.store, answer) {
            (Store::Lite(lite), Ok(a)) => {
                lite.write(move |c| super::lite::store_answer(c, &ws, &a))
                    .await
            }
            (Store::Lite(lite), Err(key)) => {
                lite.write(move |c| {
                    c.prepare_cached(DROP)?
                        .execute(rusqlite::params![ws, key])
                        .map(drop)
                })
                .await
            }
            (Store::Pg(pool), Ok(a)) => affected(
                sqlx::query(STORE_ANSWER)
                    .bind(a.status)
                    .bind(a.content_type)
                    .bind(a.body)
                    .bind(a.headers)
                    .bind(ws)
                    .bind(a.key)
                    .execute(pool)
                    .await,
            )
            .map(drop),
            (Store::Pg(pool), Err(key)) => {
                affected(sqlx::query(DROP).bind(ws).bind(key).execute(pool).await).map(drop)
            }
        }
    }
}

/// Applies the migrations a PostgreSQL database lacks, in one transaction
/// with their version rows. Instances starting together take
/// turns on a transaction-scoped advisory lock, and the version is read
/// again inside. SQLite's are [`super::lite::prepare`].
async fn migrate_pg(pool: &PgPool, shown: &str) -> Result<(), String> {
    let mut conn = pool.acquire().await.map_err(|e| err("database", e))?;
    let version = inspect(&mut conn, shown).await?;
    drop(conn);
    if version >= SCHEMA_VERSION {
        return Ok(());
    }
    let mut tx = pool.begin().await.map_err(|e| err("database", e))?;
    sqlx::query("SELECT pg_advisory_xact_lock(3917390001)")
        .execute(&mut *tx)
        .await
        .map_err(|e| err("migration lock", e))?;
    sqlx::query(SCHEMA_TABLE)
        .execute(&mut *tx)
        .await
        .map_err(|e| err("migration", e))?;
    let version = inspect(&mut tx, shown).await?;
    for (v, stmts) in (1i64..).zip(MIGRATIONS).skip(version.max(0) as usize) {
        let what = format!("migration {v}");
        for stmt in *stmts {
            sqlx::query(&stmt.replace("BLOB", "BYTEA"))
                .execute(&mut *tx)
                .await
                .map_err(|e| err(&what, e))?;
        }
        sqlx::query(SCHEMA_ROW)
            .bind(v)
            .bind(now())
            .execute(&mut *tx)
            .await
            .map_err(|e| err(&what, e))?;
    }
    tx.commit().await.map_err(|e| err("migration", e))
}

/// The table of applied schema versions, and one version's row.
pub(super) const SCHEMA_TABLE: &str = "CREATE TABLE IF NOT EXISTS troupe_schema (version BIGINT PRIMARY KEY, applied BIGINT NOT NULL)";
pub(super) const SCHEMA_ROW: &str = "INSERT INTO troupe_schema (version, applied) VALUES ($1, $2)";

/// Lower-case hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    // By table, not `write!` per byte: a request's token hash is one
    // (docs/performance.md "Server", Run AG).
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 * bytes.len());
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// SHA-256 as lower-case hexadecimal (pack hashes, token hashes).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(bytes))
}

//! SQLite (docs/server.md "Storage and durability", "SQLite's own
//! threads"): every statement runs on threads of this module, each owning
//! one rusqlite connection with its statements prepared once and cached —
//! instead of a pool whose worker thread every statement was handed to and
//! back (docs/performance.md "Server").
//!
//! - The **reader** answers small reads one after another (a request's
//!   bearer token, its session's row, an `Idempotency-Key`'s row, the
//!   listings); in WAL mode it never waits for the writer, so a request's
//!   reads do not queue behind a group's fsync.
//! - The **line reader** reads a session's stored lines (a rebuild, a
//!   catch-up, an export) and a pack's bytes: a long read there never
//!   holds up the reader's small ones.
//! - The **writer** takes every queued write at once and commits them in
//!   one transaction, one fsync: the other writes (a new session's rows,
//!   packs, deletes, tokens, `Idempotency-Key` claims and answers), each
//!   under a savepoint so that a failing one fails alone, then the turns
//!   (the group commit, up to [`super::db::GROUP_MAX`] turns), each with
//!   the answer of its `Idempotency-Key` when it has one.
//!
//! It is the only writer of the process, so no lock is needed between
//! writers of this process; another process's (`troupe serve token
//! revoke`, a second server on the file) waits on SQLite's busy timeout.
//! [`prepare`] checks and migrates the file before the threads start.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use rusqlite::{params, Connection, OpenFlags, TransactionBehavior};

use super::db::{err, FromRow, RowRead, StoredAnswer, TurnWrite, GROUP_MAX};

/// A read, run on the reader's connection.
type ReadJob = Box<dyn FnOnce(&Connection) + Send>;

/// A write other than a turn, run under a savepoint of the next group's
/// transaction.
type WriteJob = Box<dyn FnOnce(&Connection) -> rusqlite::Result<()> + Send>;

type Answer<T> = tokio::sync::oneshot::Sender<Result<T, String>>;

enum Write {
    Turn(Box<TurnWrite>, Answer<bool>),
    /// A job, and whether its commit must be on disk before it is answered
    /// (false: an `Idempotency-Key` claim, [`Lite::write_unsynced`]).
    Job(WriteJob, Answer<()>, bool),
}

/// The two threads of a SQLite database ([module docs](self)); dropping
/// the last clone stops them once their queues are empty.
#[derive(Debug, Clone)]
pub struct Lite {
    reads: mpsc::Sender<ReadJob>,
    line_reads: mpsc::Sender<ReadJob>,
    writes: mpsc::Sender<Write>,
}

/// Opens a connection to the (migrated) database `path` with the server's
/// settings: WAL, `synchronous = FULL` (a commit is on disk before it is
/// acknowledged), a busy timeout for writers of other processes.
fn connect(path: &str) -> Result<Connection, String> {
    connect_with(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
}

/// [`connect`], with `flags` (creating the file, for [`prepare`]).
fn connect_with(path: &str, flags: OpenFlags) -> Result<Connection, String> {
    let c = Connection::open_with_flags(path, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(|e| format!("cannot open the database {path}: {e}"))?;
    let setup = || -> rusqlite::Result<()> {
        c.busy_timeout(std::time::Duration::from_secs(10))?;
        c.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
        c.execute_batch("PRAGMA synchronous = FULL")?;
        c.set_prepared_statement_cache_capacity(32);
        Ok(())
    };
    setup().map_err(|e| format!("cannot set up the database {path}: {e}"))?;
    Ok(c)
}

impl Lite {
    /// Starts the reader, the line reader and the writer on the (migrated:
    /// [`prepare`]) database file `path`.
    pub fn start(path: &str) -> Result<Lite, String> {
        let reader = connect(path)?;
        let line_reader = connect(path)?;
        let writer = connect(path)?;
        let (reads, read_queue) = mpsc::channel::<ReadJob>();
        let (line_reads, line_read_queue) = mpsc::channel::<ReadJob>();
        std::thread::Builder::new()
            .name("troupe-sqlite-lines".into())
            .spawn(move || {
                while let Ok(job) = line_read_queue.recv() {
                    job(&line_reader);
                }
            })
            .map_err(|e| format!("cannot start the SQLite line reader: {e}"))?;
        let (writes, write_queue) = mpsc::channel::<Write>();
        std::thread::Builder::new()
            .name("troupe-sqlite-read".into())
            .spawn(move || {
                while let Ok(job) = read_queue.recv() {
                    job(&reader);
                }
            })
            .map_err(|e| format!("cannot start the SQLite reader: {e}"))?;
        std::thread::Builder::new()
            .name("troupe-sqlite-write".into())
            .spawn(move || write_loop(writer, write_queue))
            .map_err(|e| format!("cannot start the SQLite writer: {e}"))?;
        Ok(Lite {
            reads,
            line_reads,
            writes,
        })
    }

    /// Runs `f` on the reader's connection and answers what it returned.
    pub async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, String> {
        Self::read_on(&self.reads, f).await
    }

    /// Runs `f` on the line reader's connection (a long read: a pack's
    /// bytes) and answers what it returned.
    pub async fn read_long<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, String> {
        Self::read_on(&self.line_reads, f).await
    }

    /// The stored lines `from..upto` of session `id` of `ws` (0: the
    /// header), joined in order, and how many they are, read on the line
    /// reader's connection.
    pub async fn session_lines(
        &self,
        ws: String,
        id: String,
        from: i64,
        upto: i64,
    ) -> Result<(String, i64), String> {
        Self::read_on(&self.line_reads, move |c| {
            session_lines(c, &ws, &id, from, upto)
        })
        .await
    }

    async fn read_on<T: Send + 'static>(
        queue: &mpsc::Sender<ReadJob>,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, String> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        queue
            .send(Box::new(move |c| {
                let _ = answer.send(f(c).map_err(|e| e.to_string()));
            }))
            .map_err(|_| "the SQLite reader stopped".to_string())?;
        answered
            .await
            .map_err(|_| "the SQLite reader stopped".to_string())?
    }

    /// Runs `f` in the writer's next transaction, under a savepoint of its
    /// own (an error undoes only `f`'s statements and is answered to this
    /// caller alone), committed (durably) before this returns what `f`
    /// returned.
    pub async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, String> {
        self.write_job(f, true).await
    }

    /// [`Lite::write`] for a write that may be answered before it is on
    /// disk: an `Idempotency-Key`'s claim. Should a group hold only such
    /// writes, it commits with `synchronous = NORMAL` (no fsync of its
    /// own; docs/server.md "SQLite's own threads"). A SIGKILL loses
    /// nothing (the commit is in the WAL file); a power cut may lose the
    /// claim, but then also every later commit, the claimed operation's
    /// included (the WAL is written in order and each durable commit's
    /// fsync covers all before it), so a retry finds neither, as after a
    /// crash before the commit.
    pub async fn write_unsynced<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, String> {
        self.write_job(f, false).await
    }

    async fn write_job<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
        durable: bool,
    ) -> Result<T, String> {
        // What `f` returned waits here until its transaction committed.
        let out = Arc::new(Mutex::new(None));
        let put = out.clone();
        let job: WriteJob = Box::new(move |c| {
            let v = f(c)?;
            *put.lock().unwrap_or_else(|p| p.into_inner()) = Some(v);
            Ok(())
        });
        let (answer, answered) = tokio::sync::oneshot::channel();
        self.writes
            .send(Write::Job(job, answer, durable))
            .map_err(|_| "the SQLite writer stopped".to_string())?;
        answered
            .await
            .map_err(|_| "the SQLite writer stopped".to_string())??;
        let v = out.lock().unwrap_or_else(|p| p.into_inner()).take();
        v.ok_or_else(|| "the SQLite writer lost an answer".to_string())
    }

    /// Writes a turn in the next group commit: `Ok(false)` when the
    /// session's row moved first (docs/server.md "Group commit (SQLite)").
    pub async fn write_turn(&self, w: TurnWrite) -> Result<bool, String> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        self.writes
            .send(Write::Turn(Box::new(w), answer))
            .map_err(|_| "the group commit stopped".to_string())?;
        answered
            .await
            .map_err(|_| "the group commit stopped".to_string())?
    }
}

/// The writer: takes every write queued (up to [`GROUP_MAX`] turns), runs
/// the other writes one by one, then the turns as one group. A group of
/// unsynced jobs only commits without an fsync of its own
/// ([`Lite::write_unsynced`]); any other with `synchronous = FULL`.
fn write_loop(mut conn: Connection, queue: mpsc::Receiver<Write>) {
    // The connection's setting (FULL from `connect`).
    let mut full = true;
    while let Ok(first) = queue.recv() {
        let mut turns = Vec::new();
        let mut jobs = Vec::new();
        let mut durable = false;
        let mut next = Some(first);
        while let Some(w) = next {
            match w {
                Write::Turn(t, a) => {
                    durable = true;
                    turns.push((t, a))
                }
                Write::Job(j, a, d) => {
                    durable |= d;
                    jobs.push((j, a))
                }
            }
            next = if turns.len() < GROUP_MAX {
                queue.try_recv().ok()
            } else {
                None
            };
        }
        if durable != full {
            let sql = if durable {
                "PRAGMA synchronous = FULL"
            } else {
                "PRAGMA synchronous = NORMAL"
            };
            match conn.execute_batch(sql) {
                Ok(()) => full = durable,
                // Still FULL: the unsynced jobs are merely flushed too.
                Err(_) if !durable => {}
                Err(e) => {
                    // Not sure to be on disk: nothing of the group is written.
                    let e = e.to_string();
                    for (_, answer) in jobs {
                        let _ = answer.send(Err(e.clone()));
                    }
                    for (_, answer) in turns {
                        let _ = answer.send(Err(e.clone()));
                    }
                    continue;
                }
            }
        }
        let mut done = Vec::with_capacity(jobs.len());
        match write_group(&mut conn, jobs, &mut done, &turns) {
            Ok(applied) => {
                for answer in done {
                    let _ = answer.send(Ok(()));
                }
                for ((_, answer), ok) in turns.into_iter().zip(applied) {
                    let _ = answer.send(ok);
                }
            }
            Err(e) => {
                let e = e.to_string();
                for answer in done {
                    let _ = answer.send(Err(e.clone()));
                }
                for (_, answer) in turns {
                    let _ = answer.send(Err(e.clone()));
                }
            }
        }
    }
}

/// One transaction for the group: each job under a savepoint (one that
/// fails is rolled back to it and answered at once; those that ran go to
/// `done`, answered after the commit), then per turn its guarded `UPDATE`
/// (applies only when the row is still where the turn started:
/// docs/server.md "Storage and durability") and, when it applied, the
/// `INSERT` of each of its lines — cached statements, so a statement costs
/// microseconds; the `BEGIN IMMEDIATE` and `COMMIT` too (rusqlite's
/// `Transaction` prepares them again for every group). Which turns
/// applied, in order (a turn whose request's remembered token is gone:
/// [`super::db::TOKEN_REVOKED`], nothing of it written); an error of a
/// turn's statement or of the commit
/// fails (rolls back) the whole group.
fn write_group(
    conn: &mut Connection,
    jobs: Vec<(WriteJob, Answer<()>)>,
    done: &mut Vec<Answer<()>>,
    turns: &[(Box<TurnWrite>, Answer<bool>)],
) -> rusqlite::Result<Vec<Result<bool, String>>> {
    conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    let r = group_statements(conn, jobs, done, turns)
        .and_then(|applied| conn.prepare_cached("COMMIT")?.execute([]).map(|_| applied));
    if r.is_err() && !conn.is_autocommit() {
        // Nothing of the group stays: what `Transaction`'s drop did.
        let _ = conn.execute_batch("ROLLBACK");
    }
    r
}

/// The statements of [`write_group`]'s transaction, which is open.
fn group_statements(
    conn: &mut Connection,
    jobs: Vec<(WriteJob, Answer<()>)>,
    done: &mut Vec<Answer<()>>,
    turns: &[(Box<TurnWrite>, Answer<bool>)],
) -> rusqlite::Result<Vec<Result<bool, String>>> {
    for (job, answer) in jobs {
        let sp = conn.savepoint()?;
        match job(&sp) {
            Ok(()) => {
                done.push(answer);
                sp.commit()?;
            }
            Err(e) => {
                // Dropping the savepoint rolls its statements back.
                drop(sp);
                let _ = answer.send(Err(e.to_string()));
            }
        }
    }
    let mut applied = Vec::with_capacity(turns.len());
    let mut token =
        conn.prepare_cached("SELECT 1 FROM troupe_tokens WHERE hash = ?1 AND workspace = ?2")?;
    let mut update = conn.prepare_cached(
        "UPDATE troupe_sessions SET current = ?1, lines = ?2 WHERE workspace = ?3 AND id = ?4 AND current = ?5 AND lines = ?6",
    )?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO troupe_lines (workspace, session, seq, line) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (w, _) in turns {
        // A remembered token is read here, in the turn's transaction: a
        // revocation committed before it (by any process) refuses it.
        if let Some(hash) = &w.token {
            if !token.exists(params![hash, w.workspace])? {
                applied.push(Err(super::db::TOKEN_REVOKED.to_string()));
                continue;
            }
        }
        let moved = update.execute(params![
            w.current,
            w.old_rows + w.lines.len() as i64,
            w.workspace,
            w.session,
            w.old_current,
            w.old_rows
        ])?;
        applied.push(Ok(moved == 1));
        if moved == 1 {
            for (i, line) in w.lines.iter().enumerate() {
                insert.execute(params![w.workspace, w.session, w.old_rows + i as i64, line])?;
            }
            // The request's Idempotency-Key answer, in the turn's
            // transaction: a retry finds both or neither.
            if let Some(a) = &w.answer {
                store_answer(conn, &w.workspace, a)?;
            }
        }
    }
    Ok(applied)
}

/// Turns the claim row of `Idempotency-Key` `a.key` of `ws` into its
/// answer `a`.
pub fn store_answer(c: &Connection, ws: &str, a: &StoredAnswer) -> rusqlite::Result<()> {
    c.prepare_cached(super::db::STORE_ANSWER)?
        .execute(params![
            a.status,
            a.content_type,
            a.body,
            a.headers,
            ws,
            a.key
        ])
        .map(drop)
}

/// Checks the SQLite file `path` is Troupe's and migrates it (docs/server.md
/// "Storage and durability"): an existing file is first inspected through
/// a read-only connection (nothing written, not even the WAL switch); a
/// file holding another table, or of a newer schema, is refused
/// ([`super::db::check_tables`], [`super::db::check_version`]). Then the
/// migrations it lacks are applied in one `BEGIN IMMEDIATE` transaction
/// with their version rows (processes starting together take turns on
/// SQLite's write lock, and the version is read again inside).
/// `shown` names the file in errors.
pub fn prepare(path: &str, shown: &str) -> Result<(), String> {
    if std::path::Path::new(path).exists() {
        let c = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| err(&format!("cannot open {shown}"), e))?;
        inspect(&c, shown)?;
    }
    let mut c = connect_with(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
    )?;
    if inspect(&c, shown)? >= super::db::SCHEMA_VERSION {
        return Ok(());
    }
    let tx = c
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| err("database", e))?;
    tx.execute_batch(super::db::SCHEMA_TABLE)
        .map_err(|e| err("migration", e))?;
    let version = inspect(&tx, shown)?;
    for (v, stmts) in (1i64..)
        .zip(super::db::MIGRATIONS)
        .skip(version.max(0) as usize)
    {
        let what = format!("migration {v}");
        for stmt in *stmts {
            tx.execute_batch(stmt).map_err(|e| err(&what, e))?;
        }
        tx.execute(super::db::SCHEMA_ROW, params![v, super::db::now()])
            .map_err(|e| err(&what, e))?;
    }
    tx.commit().map_err(|e| err("migration", e))
}

/// Refuses a database holding a table Troupe did not create, or a schema
/// newer than this build's; reads only. `Ok(version)`: the schema version
/// found (0: an empty database).
fn inspect(c: &Connection, shown: &str) -> Result<i64, String> {
    let names = (|| {
        let mut q = c.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        )?;
        let rows = q.query_map([], |r| r.get::<_, String>(0))?;
        rows.collect::<rusqlite::Result<Vec<String>>>()
    })()
    .map_err(|e| err("cannot list the database's tables", e))?;
    if !super::db::check_tables(&names, shown)? {
        return Ok(0);
    }
    let version: Option<i64> = c
        .query_row("SELECT MAX(version) FROM troupe_schema", [], |r| r.get(0))
        .map_err(|e| err("cannot read the schema version", e))?;
    super::db::check_version(version.unwrap_or(0), shown)
}

/// The row `sql` (with `params`) reads, if any, as a `T`.
pub fn optional<T: FromRow>(
    c: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> rusqlite::Result<Option<T>> {
    let mut q = c.prepare_cached(sql)?;
    let mut rows = q.query(params)?;
    rows.next()?.map(T::from_row).transpose()
}

/// Every row `sql` (with `params`) reads, as `T`s.
pub fn all<T: FromRow>(
    c: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> rusqlite::Result<Vec<T>> {
    let mut q = c.prepare_cached(sql)?;
    let mut rows = q.query(params)?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        out.push(T::from_row(r)?);
    }
    Ok(out)
}

/// Deletes the token of SHA-256 `hash` of `ws` (every token of it when
/// `None`): how many were deleted.
pub fn revoke_tokens(c: &Connection, ws: &str, hash: Option<&str>) -> rusqlite::Result<u64> {
    let n = match hash {
        Some(h) => c
            .prepare_cached("DELETE FROM troupe_tokens WHERE workspace = ?1 AND hash = ?2")?
            .execute(params![ws, h])?,
        None => c
            .prepare_cached("DELETE FROM troupe_tokens WHERE workspace = ?1")?
            .execute(params![ws])?,
    };
    Ok(n as u64)
}

/// The stored lines `from..upto` of a session (0: the header), joined in
/// order, and how many they are.
fn session_lines(
    c: &Connection,
    ws: &str,
    id: &str,
    from: i64,
    upto: i64,
) -> rusqlite::Result<(String, i64)> {
    let mut q = c.prepare_cached(
        "SELECT line FROM troupe_lines WHERE workspace = ?1 AND session = ?2 AND seq >= ?3 AND seq < ?4 ORDER BY seq",
    )?;
    let mut rows = q.query(params![ws, id, from, upto])?;
    let (mut text, mut n) = (String::new(), 0);
    while let Some(r) = rows.next()? {
        text.push_str(&r.text(0)?);
        n += 1;
    }
    Ok((text, n))
}

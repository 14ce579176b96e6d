//! `Idempotency-Key` on every keyed route, its headers and its lifetime
//! (docs/server.md "API"): an upload, a session start, a turn and the
//! deletes replay their first answer with the headers it carried; a
//! non-turn operation's answer is written in the operation's own
//! transaction; keys older than `idempotency_key_secs` are deleted and
//! may be used again. Both databases (PostgreSQL when `TROUPE_PG_URL` is
//! set, as in `server_api`).

use std::collections::BTreeMap;

use serde_json::json;

use crate::server_support::*;

/// An answer with every header (lower-case names; `date` dropped).
#[derive(Debug)]
struct Full {
    status: u16,
    headers: BTreeMap<String, String>,
    body: String,
}

/// `method url` with the workspace's token, `body` and `Idempotency-Key`
/// `key` (any method, `DELETE` included).
fn send(ws: &Ws, method: &str, rest: &str, body: &[u8], key: &str) -> Full {
    let url = ws.url(rest);
    let auth = format!("Bearer {}", ws.token);
    let a = agent();
    let result = match method {
        "DELETE" => a
            .delete(&url)
            .header("Authorization", &auth)
            .header("Idempotency-Key", key)
            .call(),
        "PUT" => a
            .put(&url)
            .header("Authorization", &auth)
            .header("Idempotency-Key", key)
            .send(body),
        _ => a
            .post(&url)
            .header("Authorization", &auth)
            .header("Idempotency-Key", key)
            .send(body),
    };
    let mut resp = result.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let status = resp.status().as_u16();
    let headers = resp
        .headers()
        .iter()
        .filter(|(n, _)| n.as_str() != "date")
        .map(|(n, v)| (n.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let body = resp
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_string()
        .unwrap();
    Full {
        status,
        headers,
        body,
    }
}

/// The retry `again` of `first`: the same status, body and headers, and
/// `Idempotency-Replayed: true` besides.
fn assert_replayed(first: &Full, again: &Full, what: &str) {
    assert_eq!(
        again
            .headers
            .get("idempotency-replayed")
            .map(String::as_str),
        Some("true"),
        "{what}: {again:?}"
    );
    assert_eq!(again.status, first.status, "{what}");
    assert_eq!(again.body, first.body, "{what}: byte for byte");
    let mut headers = again.headers.clone();
    headers.remove("idempotency-replayed");
    assert_eq!(headers, first.headers, "{what}: the first answer's headers");
}

/// docs/server.md "API": each keyed route's retry gets the first answer
/// with its headers — an upload's `201`, a session start's `Location`, a
/// turn's `Troupe-Current`, the deletes' `204` (not the `404` a second
/// delete would answer) — and nothing is done twice (one session, one
/// turn).
#[test]
fn every_keyed_route_replays_its_first_answer_with_its_headers() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "idempotency_keys_replay") {
        let server = Server::start(&db);
        let (ws, _) = workspace(&server, &db, "idem-keys");
        let (_, bytes) = package();

        let put = send(&ws, "PUT", "/packs", bytes, "p1");
        assert_eq!(put.status, 201, "{put:?}");
        let put_again = send(&ws, "PUT", "/packs", bytes, "p1");
        assert_replayed(&put, &put_again, "upload");
        let pack = serde_json::from_str::<serde_json::Value>(&put.body).unwrap()["hash"]
            .as_str()
            .unwrap()
            .to_string();

        let start = json!({"pack": pack, "seed": 3}).to_string();
        let created = send(&ws, "POST", "/sessions", start.as_bytes(), "s1");
        assert_eq!(created.status, 201, "{created:?}");
        let id = serde_json::from_str::<serde_json::Value>(&created.body).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            created.headers["location"].ends_with(&format!("/sessions/{id}")),
            "{created:?}"
        );
        let created_again = send(&ws, "POST", "/sessions", start.as_bytes(), "s1");
        assert_replayed(&created, &created_again, "session start");
        let listed = ws.get("/sessions").json();
        assert_eq!(listed["sessions"].as_array().unwrap().len(), 1, "{listed}");

        let text = json!({"text": "Hello, I saw your advert."}).to_string();
        let turns = format!("/sessions/{id}/turns");
        let turn = send(&ws, "POST", &turns, text.as_bytes(), "t1");
        assert_eq!(turn.status, 200, "{turn:?}");
        assert!(turn.headers.contains_key("troupe-current"), "{turn:?}");
        let file = ws.get(&format!("/sessions/{id}.jsonl")).body;
        let turn_again = send(&ws, "POST", &turns, text.as_bytes(), "t1");
        assert_replayed(&turn, &turn_again, "turn");
        assert_eq!(ws.get(&format!("/sessions/{id}.jsonl")).body, file);

        let gone = send(&ws, "DELETE", &format!("/sessions/{id}"), b"", "d1");
        assert_eq!(gone.status, 204, "{gone:?}");
        let gone_again = send(&ws, "DELETE", &format!("/sessions/{id}"), b"", "d1");
        assert_replayed(&gone, &gone_again, "session delete");

        let hidden = send(&ws, "DELETE", &format!("/packs/{pack}"), b"", "d2");
        assert_eq!(hidden.status, 204, "{hidden:?}");
        let hidden_again = send(&ws, "DELETE", &format!("/packs/{pack}"), b"", "d2");
        assert_replayed(&hidden, &hidden_again, "pack delete");
    }
}

/// The answer of a session start is written in the session's own
/// transaction: when writing the answer fails (a trigger refuses it), the
/// session is not stored either, and the request is a `503` whose retry
/// runs the start once. Before, the session was committed first and its
/// answer after, so a failure (or a crash) in between left a session
/// without its answer and a retry started a second one. SQLite: the
/// trigger is written into the file.
#[test]
fn a_session_start_and_its_answer_are_written_together_or_not_at_all() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("troupe.db");
    let db = Backend::Sqlite(path.clone());
    let server = Server::start(&db);
    let (ws, _) = workspace(&server, &db, "idem-atomic");
    let pack = upload(&ws);
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
        c.execute_batch(
            "CREATE TRIGGER refuse_answer BEFORE UPDATE ON troupe_idempotency WHEN NEW.status = 201 AND NEW.key = 'boom' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
        )
        .unwrap();
    }
    let start = json!({"pack": pack, "seed": 4}).to_string();
    let failed = send(&ws, "POST", "/sessions", start.as_bytes(), "boom");
    assert_eq!(failed.status, 503, "{failed:?}");
    let listed = ws.get("/sessions").json();
    assert_eq!(
        listed["sessions"].as_array().unwrap().len(),
        0,
        "no session without its answer: {listed}"
    );
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
        c.execute_batch("DROP TRIGGER refuse_answer").unwrap();
    }
    // The 5xx's claim was dropped: the retry runs, once.
    let created = send(&ws, "POST", "/sessions", start.as_bytes(), "boom");
    assert_eq!(created.status, 201, "{created:?}");
    let again = send(&ws, "POST", "/sessions", start.as_bytes(), "boom");
    assert_replayed(&created, &again, "session start");
    let listed = ws.get("/sessions").json();
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1, "{listed}");
}

/// `troupe serve --config` with `config` on `db`: the server, or the
/// exit code and stderr of a refusal.
fn serve_config(
    db: &Backend,
    dir: &std::path::Path,
    config: &serde_json::Value,
) -> Result<Server, (Option<i32>, String)> {
    let path = dir.join("config.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let log = dir.join("serve.log");
    let stderr = std::fs::File::create(&log).unwrap().into();
    Server::try_start(db, &["--config".as_ref(), path.as_os_str()], stderr).map_err(
        |(_, mut child)| {
            let code = child.wait().unwrap().code();
            (code, std::fs::read_to_string(&log).unwrap_or_default())
        },
    )
}

/// docs/server.md "API": a key lives `idempotency_key_secs` (here 2 s);
/// after it the key is deleted (a round every quarter of that, at least
/// 1 s apart), so the same key and request then play a second turn. A
/// lifetime shorter than twice `request_timeout_secs` is refused at start
/// (exit 2, naming both settings).
#[test]
fn a_key_older_than_its_lifetime_is_deleted_and_may_be_used_again() {
    let tmp = tempfile::tempdir().unwrap();
    let refused = serve_config(
        &Backend::Sqlite(tmp.path().join("refused.db")),
        tmp.path(),
        &json!({"request_timeout_secs": 30, "idempotency_key_secs": 59}),
    )
    .err()
    .expect("a lifetime under twice the request time limit is refused");
    assert_eq!(refused.0, Some(2), "{}", refused.1);
    assert!(
        refused.1.contains("idempotency_key_secs (59)")
            && refused.1.contains("request_timeout_secs (30)"),
        "{}",
        refused.1
    );

    for db in backends(tmp.path(), "idempotency_keys_lifetime") {
        let server = serve_config(
            &db,
            tmp.path(),
            &json!({"request_timeout_secs": 1, "idempotency_key_secs": 2}),
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        let (ws, _) = workspace(&server, &db, "idem-life");
        let pack = upload(&ws);
        let (id, _) = create(&ws, &pack, 7);
        let before = ws.get(&format!("/sessions/{id}.jsonl")).body;
        let text = json!({"text": "Hello, I saw your advert."}).to_string();
        let turns = format!("/sessions/{id}/turns");
        let first = send(&ws, "POST", &turns, text.as_bytes(), "life");
        assert_eq!(first.status, 200, "{first:?}");
        // Replayed while the key lives; played again once it is deleted.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let again = loop {
            let a = send(&ws, "POST", &turns, text.as_bytes(), "life");
            if !a.headers.contains_key("idempotency-replayed") {
                break a;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the key was never deleted"
            );
            std::thread::sleep(std::time::Duration::from_millis(300));
        };
        assert_eq!(again.status, 200, "{again:?}");
        let after = ws.get(&format!("/sessions/{id}.jsonl")).body;
        assert_eq!(
            after.lines().count(),
            before.lines().count() + 4,
            "two turns, each the player's line and a reply"
        );
    }
}

/// The tables of schema 1 as the first slices made them (written here by
/// hand, in SQLite's dialect; PostgreSQL's writes `BLOB` as `BYTEA`, as
/// the server's migrations do), with version 1 recorded.
const SCHEMA_1: &str = "CREATE TABLE troupe_schema (version BIGINT PRIMARY KEY, applied BIGINT NOT NULL);
     INSERT INTO troupe_schema VALUES (1, 0);
     CREATE TABLE troupe_tokens (hash TEXT PRIMARY KEY, workspace TEXT NOT NULL, created BIGINT NOT NULL);
     CREATE TABLE troupe_packs (workspace TEXT NOT NULL, hash TEXT NOT NULL, kind TEXT NOT NULL, body BLOB NOT NULL, size BIGINT NOT NULL, scenarios TEXT NOT NULL, deleted BIGINT NOT NULL DEFAULT 0, created BIGINT NOT NULL, PRIMARY KEY (workspace, hash));
     CREATE TABLE troupe_sessions (workspace TEXT NOT NULL, id TEXT NOT NULL, pack TEXT NOT NULL, settings TEXT NOT NULL, current TEXT NOT NULL, lines BIGINT NOT NULL, created BIGINT NOT NULL, PRIMARY KEY (workspace, id));
     CREATE TABLE troupe_lines (workspace TEXT NOT NULL, session TEXT NOT NULL, seq BIGINT NOT NULL, line TEXT NOT NULL, PRIMARY KEY (workspace, session, seq));
     CREATE TABLE troupe_idempotency (workspace TEXT NOT NULL, key TEXT NOT NULL, request TEXT NOT NULL, status BIGINT NOT NULL, content_type TEXT NOT NULL, body BLOB NOT NULL, created BIGINT NOT NULL, PRIMARY KEY (workspace, key));";

/// The token of workspace `old` in a schema-1 database.
const OLD_TOKEN: &str = "trp_schema1";

/// SHA-256 as lower-case hexadecimal.
fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// The statements that store, in a schema-1 database, the token
/// [`OLD_TOKEN`] of workspace `old` and the answer of its key `k-old` (a
/// `POST /sessions` with body `{}`, answered 200 `{"stored": true}`).
/// docs/server.md "API": the request is the SHA-256 of the method, the
/// path inside the workspace, a newline and the body; `created` now, so
/// that the pruning leaves it. Literals only: the same text for both
/// databases.
fn old_rows() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    format!(
        "INSERT INTO troupe_tokens VALUES ('{}', 'old', 0);
         INSERT INTO troupe_idempotency VALUES ('old', 'k-old', '{}', 200, 'application/json', CAST('{{\"stored\": true}}' AS BLOB), {now});",
        sha256_hex(OLD_TOKEN.as_bytes()),
        sha256_hex(b"POST /sessions\n{}"),
    )
}

/// Starts a server on the schema-1 database `db` and checks that the old
/// answer of `k-old` replays as it was (status, body, content type) with
/// `Idempotency-Replayed: true`. The server is returned, still running.
fn replay_old_answer(db: &Backend) -> Server {
    let server = Server::start(db);
    let ws = Ws {
        base: format!("{}/api/v1/workspaces/old", server.base),
        token: OLD_TOKEN.to_string(),
    };
    let again = send(&ws, "POST", "/sessions", b"{}", "k-old");
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(again.body, "{\"stored\": true}");
    assert_eq!(
        again
            .headers
            .get("idempotency-replayed")
            .map(String::as_str),
        Some("true")
    );
    assert_eq!(
        again.headers.get("content-type").map(String::as_str),
        Some("application/json")
    );
    server
}

/// Migration 2 on a database of schema 1 ([`SCHEMA_1`]): the server adds
/// the headers column and the index at start, records version 2, and an
/// answer stored before replays as it was, without headers. SQLite; the
/// PostgreSQL form is the next test.
#[test]
fn a_schema_1_database_is_migrated_and_its_old_answers_replay() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("troupe.db");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(SCHEMA_1).unwrap();
        c.execute_batch(&old_rows()).unwrap();
    }
    let server = replay_old_answer(&Backend::Sqlite(path.clone()));
    drop(server);
    let c = rusqlite::Connection::open(&path).unwrap();
    let versions: Vec<i64> = c
        .prepare("SELECT version FROM troupe_schema ORDER BY version")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(versions, [1, 2]);
    let headers: String = c
        .query_row(
            "SELECT headers FROM troupe_idempotency WHERE key = 'k-old'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(headers, "", "an old answer has no headers");
}

/// The same on PostgreSQL (a database of its own on the run's cluster,
/// made schema 1 by hand): migration 2 adds the headers column and the
/// `created` index, records version 2 beside 1, and the old answer
/// replays without headers. Runs when `TROUPE_PG_URL` is set (required
/// under `TROUPE_REQUIRE_PG=1`).
#[test]
fn a_schema_1_postgresql_database_is_migrated_and_its_old_answers_replay() {
    let Some(url) = postgres("a_schema_1_postgresql_database_is_migrated") else {
        return;
    };
    let pg = PgDatabase::create(&url, "troupe_schema1");
    pg.batch(&SCHEMA_1.replace("BLOB", "BYTEA"));
    pg.batch(&old_rows().replace("BLOB", "BYTEA"));
    assert_eq!(
        pg.column("SELECT CAST(version AS TEXT) FROM troupe_schema"),
        ["1"]
    );
    let server = replay_old_answer(&Backend::Postgres(pg.url.clone()));
    server.kill();
    assert_eq!(
        pg.column("SELECT CAST(version AS TEXT) FROM troupe_schema ORDER BY version"),
        ["1", "2"]
    );
    assert_eq!(
        pg.column("SELECT headers FROM troupe_idempotency WHERE key = 'k-old'"),
        [""],
        "an old answer has no headers"
    );
    assert_eq!(
        pg.column(
            "SELECT CAST(indexname AS TEXT) FROM pg_indexes WHERE tablename = 'troupe_idempotency' AND indexname = 'troupe_idempotency_created'"
        ),
        ["troupe_idempotency_created"]
    );
}

//! `Idempotency-Key` across a crash (docs/server.md "API", "Storage and
//! durability"): a session operation's answer is written in the
//! operation's own transaction, so a retry after the server died finds the
//! operation and its answer, or neither. Both databases (PostgreSQL when
//! `TROUPE_PG_URL` is set, as in `server_api`).

use serde_json::json;

use crate::server_support::*;

/// A turn and an undo acknowledged with their keys, the server killed with
/// SIGKILL, another started on the same database: each retry gets the
/// first answer byte for byte (`Idempotency-Replayed`), and nothing is
/// played twice. (The client losing the answer and the server dying after
/// the commit look the same to the retry: the record was committed with
/// the operation.)
#[test]
fn a_retried_key_gets_the_first_answer_byte_for_byte_after_a_sigkill() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "idempotency_sigkill") {
        let server = Server::start(&db);
        let (ws, name) = workspace(&server, &db, "idem-kill");
        let pack = upload(&ws);
        let (id, _) = create(&ws, &pack, 5);
        let turns = ws.url(&format!("/sessions/{id}/turns"));
        let body = json!({"text": "Hello, I saw your advert."}).to_string();
        let first = call(
            "POST",
            &turns,
            Some(&ws.token),
            Some(body.as_bytes()),
            Some("t1"),
        );
        assert_eq!(first.status, 200, "{first:?}");
        let second = json!({"text": "What is your best price?"}).to_string();
        let played = call(
            "POST",
            &turns,
            Some(&ws.token),
            Some(second.as_bytes()),
            Some("t2"),
        );
        assert_eq!(played.status, 200, "{played:?}");
        let undo_url = ws.url(&format!("/sessions/{id}/undo"));
        let undone = call("POST", &undo_url, Some(&ws.token), Some(b"{}"), Some("u1"));
        assert_eq!(undone.status, 200, "{undone:?}");
        let file = ws.get(&format!("/sessions/{id}.jsonl")).body;
        server.kill();

        let server = Server::start(&db);
        let ws = Ws {
            base: format!("{}/api/v1/workspaces/{name}", server.base),
            token: ws.token.clone(),
        };
        let turns = ws.url(&format!("/sessions/{id}/turns"));
        let again = call(
            "POST",
            &turns,
            Some(&ws.token),
            Some(body.as_bytes()),
            Some("t1"),
        );
        assert_eq!(again.status, 200, "{again:?}");
        assert!(again.replayed, "{again:?}");
        assert_eq!(again.body, first.body, "byte for byte");
        assert_eq!(again.content_type, first.content_type);
        let undo_url = ws.url(&format!("/sessions/{id}/undo"));
        let undo_again = call("POST", &undo_url, Some(&ws.token), Some(b"{}"), Some("u1"));
        assert!(
            undo_again.replayed && undo_again.status == 200,
            "{undo_again:?}"
        );
        assert_eq!(undo_again.body, undone.body, "byte for byte");
        // Nothing played or undone twice: the file is the one acknowledged.
        assert_eq!(ws.get(&format!("/sessions/{id}.jsonl")).body, file);
    }
}

/// The other half: a key claimed by a request that never committed (the
/// server died before the turn's transaction) holds no answer, and the
/// session no turn; a retry once the claim is older than twice the
/// request time limit takes it over and plays the turn once. The claim is
/// written into the SQLite file directly, as a crash would leave it.
#[test]
fn a_claim_whose_turn_never_committed_is_taken_over_and_played_once() {
    use sha2::Digest;
    let tmp = tempfile::tempdir().unwrap();
    let db = Backend::Sqlite(tmp.path().join("troupe.db"));
    let server = Server::start(&db);
    let (ws, name) = workspace(&server, &db, "idem-claim");
    let pack = upload(&ws);
    let (id, _) = create(&ws, &pack, 6);
    let before = ws.get(&format!("/sessions/{id}.jsonl")).body;
    let body = json!({"text": "Hello, I saw your advert."}).to_string();
    // docs/server.md "API": the fingerprint is the SHA-256 of the method,
    // the path inside the workspace and the body.
    let request = format!("POST /sessions/{id}/turns\n{body}");
    let fingerprint: String = sha2::Sha256::digest(request.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    {
        let c = rusqlite::Connection::open(tmp.path().join("troupe.db")).unwrap();
        c.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
        c.execute(
            "INSERT INTO troupe_idempotency (workspace, key, request, status, content_type, body, created) VALUES (?1, 'k', ?2, 0, '', x'', 1)",
            rusqlite::params![name, fingerprint],
        )
        .unwrap();
    }
    let turns = ws.url(&format!("/sessions/{id}/turns"));
    let first = call(
        "POST",
        &turns,
        Some(&ws.token),
        Some(body.as_bytes()),
        Some("k"),
    );
    assert_eq!(
        first.status, 200,
        "the abandoned claim is taken over: {first:?}"
    );
    assert!(!first.replayed);
    let again = call(
        "POST",
        &turns,
        Some(&ws.token),
        Some(body.as_bytes()),
        Some("k"),
    );
    assert!(again.replayed && again.body == first.body, "{again:?}");
    let after = ws.get(&format!("/sessions/{id}.jsonl")).body;
    assert_eq!(
        after.lines().count(),
        before.lines().count() + 2,
        "one turn: the player's line and the reply"
    );
}

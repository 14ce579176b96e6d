//! Breaker: `troupe serve`'s `Idempotency-Key` (docs/server.md "API"):
//! "a retry with the same key and the same request gets that answer
//! again … and nothing is done twice". A key the server cannot keep — over
//! 200 bytes, or not visible ASCII (a UTF-8 `é`) — was silently ignored, so
//! the client's retry played its turn twice. Expected: such a key is
//! refused (`400 BAD_REQUEST`, nothing done), never ignored.

use serde_json::json;

use crate::server_support::*;

#[test]
fn a_key_the_server_cannot_keep_is_refused_never_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "breaker_idem_key") {
        let server = Server::start(&db);
        let (ws, _) = workspace(&server, &db, "breaker-key");
        let pack = upload(&ws);
        let (id, _) = create(&ws, &pack, 5);
        let turns = ws.url(&format!("/sessions/{id}/turns"));
        let body = json!({"text": "Hello, I saw your advert."}).to_string();
        let long = "k".repeat(201);
        for key in [long.as_str(), "café"] {
            let lines = |ws: &Ws| {
                ws.get(&format!("/sessions/{id}.jsonl"))
                    .body
                    .lines()
                    .count()
            };
            let before = lines(&ws);
            let first = call(
                "POST",
                &turns,
                Some(&ws.token),
                Some(body.as_bytes()),
                Some(key),
            );
            let again = call(
                "POST",
                &turns,
                Some(&ws.token),
                Some(body.as_bytes()),
                Some(key),
            );
            let after = lines(&ws);
            assert!(
                again.replayed || after == before,
                "key {key:?}: played twice ({before} lines, then {after}): {first:?} {again:?}"
            );
            if !again.replayed {
                assert_eq!(first.status, 400, "{first:?}");
                assert_eq!(first.json()["code"], "BAD_REQUEST", "{first:?}");
            }
        }
        // A 200-byte key of visible ASCII still works.
        let key = "k".repeat(200);
        let first = call(
            "POST",
            &turns,
            Some(&ws.token),
            Some(body.as_bytes()),
            Some(&key),
        );
        let again = call(
            "POST",
            &turns,
            Some(&ws.token),
            Some(body.as_bytes()),
            Some(&key),
        );
        assert_eq!(first.status, 200, "{first:?}");
        assert!(again.replayed && again.body == first.body, "{again:?}");
        server.kill();
    }
}

/// A replayed answer is the first one again: a keyed `DELETE`'s `204` has
/// no `Content-Type`, and its replay had one with an empty value.
#[test]
fn a_replayed_204_has_no_empty_content_type() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "breaker_replay_204") {
        let server = Server::start(&db);
        let (ws, _) = workspace(&server, &db, "breaker-204");
        let pack = upload(&ws);
        let (id, _) = create(&ws, &pack, 5);
        let url = ws.url(&format!("/sessions/{id}"));
        let delete = || {
            agent()
                .delete(&url)
                .header("Authorization", &format!("Bearer {}", ws.token))
                .header("Idempotency-Key", "del-1")
                .call()
                .unwrap()
        };
        let first = delete();
        let again = delete();
        assert_eq!(first.status().as_u16(), 204);
        assert_eq!(again.status().as_u16(), 204);
        assert!(again.headers().get("idempotency-replayed").is_some());
        assert_eq!(
            first.headers().get("content-type"),
            again.headers().get("content-type"),
            "{:?}",
            again.headers()
        );
        server.kill();
    }
}

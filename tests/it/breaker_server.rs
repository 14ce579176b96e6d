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
        for key in [long.as_str(), "café", "two words"] {
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

/// Breaker (2026-12-07): `PUT /packs` took a package's compiled form on
/// trust, so a package whose `ir.json` was edited (a reply rewritten, every
/// hash fixed up) — one `troupe check` refuses with IR_MISMATCH — was
/// stored and played. An upload is untrusted (Format 14.4, "Threat
/// model": checked first or loaded with verification): expected, 422 with
/// the check's report naming IR_MISMATCH, nothing stored; the package as
/// compiled is still accepted.
#[test]
fn an_uploaded_package_whose_ir_is_not_its_bundle_is_refused() {
    use crate::common::packages::{compiled, edited, fix_ir_hash, set, zip};
    let tmp = tempfile::tempdir().unwrap();
    let db = backends(tmp.path(), "breaker_forged_ir").remove(0);
    let server = Server::start(&db);
    let (ws, _) = workspace(&server, &db, "breaker-forged");
    let honest = compiled("examples/packs/everyday-negotiation");
    let mut forged = honest.clone();
    let ir = edited(&forged, |ir| {
        ir["runtime"]["rules"][0]["replies"] = json!(["Rewritten."]);
    });
    set(&mut forged, "ir.json", ir);
    fix_ir_hash(&mut forged);
    let put = |e: &[(String, Vec<u8>)]| {
        call(
            "PUT",
            &ws.url("/packs"),
            Some(&ws.token),
            Some(&zip(e)),
            None,
        )
    };
    let refused = put(&forged);
    assert_eq!(refused.status, 422, "{refused:?}");
    assert!(refused.body.contains("IR_MISMATCH"), "{}", refused.body);
    assert_eq!(
        ws.get("/packs").json()["packs"],
        json!([]),
        "nothing stored"
    );
    let accepted = put(&honest);
    assert_eq!(accepted.status, 201, "{accepted:?}");
}

/// Breaker (2026-12-07): a turn body just under `body_limit` was played and
/// stored as a session line over Format 16.1's 16 MiB line bound, after
/// which the session could not be read (`/state` 422 LIMIT, and every view
/// after a restart). Format 16.2: an input is a message part, rendered to
/// at most 1 MiB: expected, a turn of 1 MiB + 1 byte is `422 LIMIT` with
/// nothing stored, and the session plays on; 1 MiB exactly is a turn.
#[test]
fn a_turn_over_the_rendering_budget_is_refused_and_nothing_is_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let db = backends(tmp.path(), "breaker_long_turn").remove(0);
    let server = Server::start(&db);
    let (ws, _) = workspace(&server, &db, "breaker-long");
    let pack = upload(&ws);
    let (id, doc) = create(&ws, &pack, 3);
    let current = doc["current"].clone();
    let lines = |ws: &Ws| {
        ws.get(&format!("/sessions/{id}.jsonl"))
            .body
            .lines()
            .count()
    };
    let before = lines(&ws);
    // 1 MiB + 1 byte: refused, nothing stored; 1 MiB exactly: a turn.
    for (len, status) in [((1 << 20) + 1, 422), (1 << 20, 200)] {
        let a = ws.post(
            &format!("/sessions/{id}/turns"),
            &json!({"text": "a".repeat(len), "expected": current}),
        );
        let shown = &a.body[..a.body.len().min(400)];
        assert_eq!(a.status, status, "{len}: {shown}");
        if status == 422 {
            assert_eq!(a.json()["code"], "LIMIT", "{shown}");
            assert_eq!(lines(&ws), before, "nothing stored");
        }
    }
    assert_eq!(ws.get(&format!("/sessions/{id}/state")).status, 200);
}

/// Breaker (2026-12-07): `POST /packs:test` answered `500 INTERNAL` for an
/// archive naming one path both as a file and as a folder (a bug's status
/// for a client's mistake). Expected: `400 BAD_REQUEST` naming the path,
/// as for any body that is not a pack directory's zip.
#[test]
fn a_test_archive_with_a_file_and_a_folder_of_one_name_is_a_bad_request() {
    use crate::common::packages::zip;
    let tmp = tempfile::tempdir().unwrap();
    let db = backends(tmp.path(), "breaker_zip_clash").remove(0);
    let server = Server::start(&db);
    let (ws, _) = workspace(&server, &db, "breaker-zip");
    let body = zip(&[
        ("clash".to_string(), b"x".to_vec()),
        ("clash/inner.txt".to_string(), b"y".to_vec()),
    ]);
    let a = call(
        "POST",
        &ws.url("/packs:test?format=json"),
        Some(&ws.token),
        Some(&body),
        None,
    );
    assert_eq!(a.status, 400, "{a:?}");
    assert_eq!(a.json()["code"], "BAD_REQUEST", "{a:?}");
    assert!(a.body.contains("`clash/inner.txt`"), "{}", a.body);
}

/// Breaker (2026-12-07): a body of the wrong JSON type was answered with
/// serde's words for the Rust type (`expected struct TurnBody`). Expected:
/// `400 BAD_REQUEST` saying a JSON object was expected, no Rust name.
#[test]
fn a_body_of_the_wrong_type_is_told_what_json_to_send() {
    let tmp = tempfile::tempdir().unwrap();
    let db = backends(tmp.path(), "breaker_body_type").remove(0);
    let server = Server::start(&db);
    let (ws, _) = workspace(&server, &db, "breaker-body");
    let pack = upload(&ws);
    let (id, _) = create(&ws, &pack, 1);
    let a = ws.post(&format!("/sessions/{id}/turns"), &serde_json::Value::Null);
    assert_eq!(a.status, 400, "{a:?}");
    assert!(a.body.contains("expected a JSON object"), "{}", a.body);
    assert!(
        !a.body.contains("TurnBody") && !a.body.contains("struct"),
        "{}",
        a.body
    );
}

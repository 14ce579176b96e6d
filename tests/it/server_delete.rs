//! Deleting and archiving sessions, and revoking tokens, on `troupe serve`
//! (docs/server.md "Deleting and archiving", "Tokens"): on SQLite, and on
//! PostgreSQL when `TROUPE_PG_URL` is set, with two instances sharing the
//! database.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::server_support::*;

/// `GET …/sessions/{id}.jsonl`: the file and its `Troupe-Current` and
/// `Troupe-Lines` headers.
fn export(ws: &Ws, id: &str) -> (u16, String, String, String) {
    let mut resp = agent()
        .get(ws.url(&format!("/sessions/{id}.jsonl")))
        .header("Authorization", &format!("Bearer {}", ws.token))
        .call()
        .unwrap();
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let (current, lines) = (header("troupe-current"), header("troupe-lines"));
    let status = resp.status().as_u16();
    let body = resp.body_mut().read_to_string().unwrap();
    (status, body, current, lines)
}

fn delete(ws: &Ws, rest: &str, key: Option<&str>) -> Answer {
    let mut r = agent()
        .delete(ws.url(rest))
        .header("Authorization", &format!("Bearer {}", ws.token));
    if let Some(k) = key {
        r = r.header("Idempotency-Key", k);
    }
    let mut resp = r.call().unwrap();
    Answer {
        status: resp.status().as_u16(),
        content_type: resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string(),
        replayed: resp.headers().get("idempotency-replayed").is_some(),
        body: resp.body_mut().read_to_string().unwrap_or_default(),
    }
}

#[test]
fn an_archived_session_is_exported_then_deleted_and_answers_404() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "delete") {
        let one = Server::start(&db);
        let two = Server::start(&db);
        let (a, name) = workspace(&one, &db, "delete");
        let b = Ws {
            base: format!("{}/api/v1/workspaces/{name}", two.base),
            token: a.token.clone(),
        };
        let pack = upload(&a);
        let (id, doc) = create(&a, &pack, 5);
        let t = a.post(
            &format!("/sessions/{id}/turns"),
            &json!({"text": "Hello", "expected": doc["current"]}),
        );
        assert_eq!(t.status, 200, "{t:?}");
        // Both instances hold it live.
        assert_eq!(b.get(&format!("/sessions/{id}")).status, 200);
        let (status, file, current, lines) = export(&a, &id);
        assert_eq!(status, 200);
        assert_eq!(current, t.last_message().as_str().unwrap());
        assert_eq!(lines, file.lines().count().to_string());
        // A turn after the export: the archive no longer holds everything,
        // so the guarded delete refuses and names the current message.
        let t2 = b.post(
            &format!("/sessions/{id}/turns"),
            &json!({"text": "One more", "expected": current}),
        );
        assert_eq!(t2.status, 200, "{t2:?}");
        let stale = delete(
            &a,
            &format!("/sessions/{id}?expected={current}&lines={lines}"),
            None,
        );
        assert_eq!(stale.status, 409, "{db:?}: {stale:?}");
        assert_eq!(stale.json()["code"], "CONFLICT");
        assert_eq!(stale.json()["current"], t2.last_message());
        // Exported again, then deleted with the key; the retry replays.
        let (_, file, current, lines) = export(&b, &id);
        assert_eq!(file.lines().count().to_string(), lines);
        let gone = delete(
            &b,
            &format!("/sessions/{id}?expected={current}&lines={lines}"),
            Some("archive-1"),
        );
        assert_eq!(gone.status, 204, "{db:?}: {gone:?}");
        let again = delete(
            &b,
            &format!("/sessions/{id}?expected={current}&lines={lines}"),
            Some("archive-1"),
        );
        assert_eq!(again.status, 204, "{again:?}");
        assert!(again.replayed);
        // Every route of it answers 404, on both instances (the other one
        // held it live), and a second delete too.
        for ws in [&a, &b] {
            for rest in [
                format!("/sessions/{id}"),
                format!("/sessions/{id}.jsonl"),
                format!("/sessions/{id}/state"),
                format!("/sessions/{id}/ended"),
            ] {
                let r = ws.get(&rest);
                assert_eq!(r.status, 404, "{db:?} {rest}: {r:?}");
                assert_eq!(r.json()["code"], "NOT_FOUND");
            }
            let t = ws.post(&format!("/sessions/{id}/turns"), &json!({"text": "Hi"}));
            assert_eq!(t.status, 404, "{db:?}: {t:?}");
            let u = ws.post(&format!("/sessions/{id}/undo"), &json!({}));
            assert_eq!(u.status, 404, "{db:?}: {u:?}");
            assert_eq!(delete(ws, &format!("/sessions/{id}"), None).status, 404);
        }
        // The archive goes on as a new live session.
        let resumed = call(
            "POST",
            &a.url(&format!("/sessions:resume?pack={pack}")),
            Some(&a.token),
            Some(file.as_bytes()),
            None,
        );
        assert_eq!(resumed.status, 201, "{resumed:?}");
        // Another workspace's token cannot delete (404, nothing learnt).
        let (other, _) = workspace(&one, &db, "other");
        let (id2, _) = create(&a, &pack, 6);
        let foreign = Ws {
            base: a.base.clone(),
            token: other.token.clone(),
        };
        assert_eq!(
            delete(&foreign, &format!("/sessions/{id2}"), None).status,
            404
        );
        assert_eq!(a.get(&format!("/sessions/{id2}")).status, 200);
        // Unguarded: deleted whatever its state.
        assert_eq!(delete(&a, &format!("/sessions/{id2}"), None).status, 204);
        assert_eq!(a.get(&format!("/sessions/{id2}")).status, 404);
    }
}

#[test]
fn a_turn_racing_a_delete_is_stored_whole_or_answered_404() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "delete_race") {
        let one = Server::start(&db);
        let two = Server::start(&db);
        let (a, name) = workspace(&one, &db, "race");
        let b = Ws {
            base: format!("{}/api/v1/workspaces/{name}", two.base),
            token: a.token.clone(),
        };
        let pack = upload(&a);
        for round in 0..6 {
            let (id, _) = create(&a, &pack, round);
            assert_eq!(b.get(&format!("/sessions/{id}")).status, 200);
            let url = b.url(&format!("/sessions/{id}/turns"));
            let token = b.token.clone();
            let turn = std::thread::spawn(move || {
                call(
                    "POST",
                    &url,
                    Some(&token),
                    Some(json!({"text": "Hello"}).to_string().as_bytes()),
                    None,
                )
            });
            let d = delete(&a, &format!("/sessions/{id}"), None);
            let t = turn.join().unwrap();
            assert_eq!(d.status, 204, "{db:?}: {d:?}");
            assert!(t.status == 200 || t.status == 404, "{db:?}: {t:?}");
            assert_eq!(b.get(&format!("/sessions/{id}.jsonl")).status, 404);
        }
    }
}

fn revoke(db: &Backend, args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    let mut child = Command::new(BIN)
        .args(["serve", "token", "revoke", "--database"])
        .arg(db.arg())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(s) = stdin {
        child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    let o = child.wait_with_output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The status of `GET /packs` with `ws`'s token; on PostgreSQL a revoked
/// token is refused once the revocation's notification has arrived
/// (docs/server.md "Tokens": milliseconds), so a 200 there is asked again
/// for up to a second.
fn status_after_revoke(ws: &Ws, db: &Backend) -> u16 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    loop {
        let s = ws.get("/packs").status;
        let waiting = matches!(db, Backend::Postgres(_)) && s == 200;
        if !waiting || std::time::Instant::now() > deadline {
            return s;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn a_revoked_token_gets_401_on_every_instance() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "revoke") {
        let one = Server::start(&db);
        let two = Server::start(&db);
        let (a, name) = workspace(&one, &db, "revoke");
        let keep = token(&db, &name);
        let on = |server: &Server, token: &str| Ws {
            base: format!("{}/api/v1/workspaces/{name}", server.base),
            token: token.to_string(),
        };
        let b = on(&two, &a.token);
        // Checked (and remembered, on PostgreSQL) by both instances.
        assert_eq!(a.get("/packs").status, 200);
        assert_eq!(b.get("/packs").status, 200);
        // Another workspace's revoke does not match it.
        let (code, _, err) = revoke(&db, &["--workspace", "nobody", &a.token], None);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("no such token"), "{err}");
        // The token from standard input (off the process list).
        let (code, out, err) = revoke(
            &db,
            &["--workspace", &name, "-"],
            Some(&format!("{}\n", a.token)),
        );
        assert_eq!(code, 0, "{err}");
        assert_eq!(out.trim(), "revoked 1 token");
        for ws in [&a, &b] {
            assert_eq!(status_after_revoke(ws, &db), 401, "{db:?}");
        }
        // The workspace's other token still opens it; `--all` revokes it.
        assert_eq!(on(&one, &keep).get("/packs").status, 200);
        assert_eq!(on(&two, &keep).get("/packs").status, 200);
        let (code, out, err) = revoke(&db, &["--workspace", &name, "--all"], None);
        assert_eq!(code, 0, "{err}");
        assert_eq!(out.trim(), "revoked 1 token");
        assert_eq!(status_after_revoke(&on(&one, &keep), &db), 401);
        assert_eq!(status_after_revoke(&on(&two, &keep), &db), 401);
        // Usage: a token or --all.
        let (code, _, _) = revoke(&db, &["--workspace", &name], None);
        assert_eq!(code, 2);
    }
}

/// A token revoked by another process while this server remembers it
/// (docs/server.md "Tokens"; on SQLite a session operation runs on a
/// remembered token and its commit reads the token in its transaction):
/// the next turn is 401 and stores nothing, and so is an operation
/// refused before any commit (a stale `expected`) — no answer leaks the
/// session to the revoked token. The session plays on with another token.
#[test]
fn a_turn_on_a_remembered_token_revoked_elsewhere_is_401_and_stores_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "revoke_turn") {
        let server = Server::start(&db);
        let (a, name) = workspace(&server, &db, "revoketurn");
        let keep = Ws {
            base: a.base.clone(),
            token: token(&db, &name),
        };
        let pack = upload(&a);
        let (id, _) = create(&a, &pack, 7);
        // Two turns: the token is read, then remembered.
        for text in ["Hello", "What is your price?"] {
            let t = a.post(&format!("/sessions/{id}/turns"), &json!({"text": text}));
            assert_eq!(t.status, 200, "{db:?}: {t:?}");
        }
        let (_, before, current, _) = export(&keep, &id);
        let (code, out, err) = revoke(&db, &["--workspace", &name, &a.token], None);
        assert_eq!((code, out.trim()), (0, "revoked 1 token"), "{err}");
        // PostgreSQL forgets it when the notification arrives
        // (milliseconds): asked again for up to a second.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        let t = loop {
            let t = a.post(&format!("/sessions/{id}/turns"), &json!({"text": "Deal?"}));
            let waiting = matches!(db, Backend::Postgres(_)) && t.status == 200;
            if !waiting || std::time::Instant::now() > deadline {
                break t;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert_eq!(t.status, 401, "{db:?}: {t:?}");
        if matches!(db, Backend::Sqlite(_)) {
            // The first request after the revocation: nothing stored.
            assert_eq!(
                export(&keep, &id).1,
                before,
                "the refused turn stored nothing"
            );
        }
        let stale = a.post(
            &format!("/sessions/{id}/turns"),
            &json!({"text": "Deal?", "expected": "m0"}),
        );
        assert_eq!(stale.status, 401, "{db:?}: {stale:?}");
        assert!(!stale.body.contains(&current), "{stale:?}");
        let undo = a.post(&format!("/sessions/{id}/undo"), &json!({}));
        assert_eq!(undo.status, 401, "{db:?}: {undo:?}");
        // The session goes on with the other token, from where it was.
        let t = keep.post(&format!("/sessions/{id}/turns"), &json!({"text": "Deal?"}));
        assert_eq!(t.status, 200, "{db:?}: {t:?}");
        let (_, after, _, _) = export(&keep, &id);
        assert!(after.starts_with(&before), "{db:?}");
    }
}

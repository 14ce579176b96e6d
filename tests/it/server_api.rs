//! `troupe serve` over real HTTP (docs/server.md): each test spawns the
//! binary on a free loopback port against a temporary SQLite file, and
//! again against PostgreSQL when `TROUPE_PG_URL` is set
//! (`scripts/with-postgres.sh` starts a throwaway cluster and sets it).
//! Without it the PostgreSQL part says plainly that it did not run; with
//! `TROUPE_REQUIRE_PG=1` (as `.ci/run` sets) it fails instead.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::server_support::*;

const INPUTS: &[&str] = &[
    "Hello Marco! What's your best price?",
    "That's too much. I can offer 7,000.",
    "Let's meet in the middle.",
];

#[test]
fn a_session_played_over_http_exports_the_bytes_troupe_run_writes() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "export") {
        let server = Server::start(&db);
        let (ws, _) = workspace(&server, &db, "export");
        let pack = upload(&ws);
        let (id, doc) = create(&ws, &pack, 7);
        let mut expected = doc["current"].as_str().map(str::to_string);
        for text in INPUTS {
            let a = ws.post(
                &format!("/sessions/{id}/turns"),
                &json!({"text": text, "expected": expected}),
            );
            assert_eq!(a.status, 200, "{a:?}");
            expected = a.last_message().as_str().map(str::to_string);
        }
        let exported = ws.get(&format!("/sessions/{id}.jsonl"));
        assert_eq!(exported.status, 200);
        let script = tmp.path().join("script.txt");
        std::fs::write(&script, INPUTS.join("\n") + "\n").unwrap();
        let out = tmp.path().join(format!("run-{}.jsonl", unique("o")));
        let (code, _, err) = common::run(&[
            "run",
            package().0.to_str().unwrap(),
            "--seed",
            "7",
            "--script",
            script.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            exported.body,
            std::fs::read_to_string(&out).unwrap(),
            "{db:?}: the exported session differs from `troupe run --out`"
        );
        // The state at a message is the engine's, as `troupe state` reads it.
        let state = ws.get(&format!("/sessions/{id}/state?at=m2"));
        assert_eq!(state.status, 200, "{state:?}");
        assert_eq!(state.json()["at"], "m2");
        // Uploaded again, the file goes on as a live session.
        let resumed = call(
            "POST",
            &ws.url(&format!("/sessions:resume?pack={pack}")),
            Some(&ws.token),
            Some(exported.body.as_bytes()),
            None,
        );
        assert_eq!(resumed.status, 201, "{resumed:?}");
        let rid = resumed.json()["id"].as_str().unwrap().to_string();
        let again = ws.get(&format!("/sessions/{rid}.jsonl"));
        assert_eq!(again.body, exported.body);
        let t = ws.post(&format!("/sessions/{rid}/turns"), &json!({"text": "Deal."}));
        assert_eq!(t.status, 200, "{t:?}");
    }
}

#[test]
fn a_stale_expected_message_is_409_naming_the_current_one() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "conflict") {
        let server = Server::start(&db);
        let (ws, _) = workspace(&server, &db, "conflict");
        let pack = upload(&ws);
        let (id, doc) = create(&ws, &pack, 1);
        let first = doc["current"].clone();
        let a = ws.post(
            &format!("/sessions/{id}/turns"),
            &json!({"text": "Hello", "expected": first}),
        );
        assert_eq!(a.status, 200, "{a:?}");
        let now = a.last_message();
        let stale = ws.post(
            &format!("/sessions/{id}/turns"),
            &json!({"text": "Again", "expected": first}),
        );
        assert_eq!(stale.status, 409, "{stale:?}");
        assert_eq!(stale.content_type, "application/problem+json");
        let p = stale.json();
        assert_eq!(p["code"], "CONFLICT");
        assert_eq!(p["current"], now);
        // Undo and go to branch without losing anything.
        let u = ws.post(&format!("/sessions/{id}/undo"), &json!({"expected": now}));
        assert_eq!(u.status, 200, "{u:?}");
        assert_eq!(u.json()["current"], first);
        let b = ws.post(
            &format!("/sessions/{id}/turns"),
            &json!({"text": "Another way", "expected": first}),
        );
        assert_eq!(b.status, 200, "{b:?}");
        let g = ws.post(&format!("/sessions/{id}/goto"), &json!({"message": now}));
        assert_eq!(g.status, 200, "{g:?}");
        assert_eq!(g.json()["current"], now);
        let text = ws.get(&format!("/sessions/{id}.jsonl")).body;
        assert_eq!(
            text.lines().count(),
            1 + 1 + 2 + 2,
            "header, opening, two turns: {text}"
        );
    }
}

/// A turn's `as` names the player speaking and `to` the character
/// answering (Format 18.9, docs/server.md): one that names no player, or no
/// speaker, is `422` and nothing is written; the default seat's player
/// (`player`, 18.4) may be named.
#[test]
fn a_turn_as_no_player_or_to_no_speaker_is_422_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "as") {
        let server = Server::start(&db);
        let (ws, _) = workspace(&server, &db, "as");
        let pack = upload(&ws);
        let (id, _) = create(&ws, &pack, 1);
        let before = ws.get(&format!("/sessions/{id}.jsonl")).body;
        for (body, says) in [
            (json!({"text": "Hello", "as": "nobody"}), "not a player"),
            (json!({"text": "Hello", "as": "marco"}), "not a player"),
            (json!({"text": "Hello", "to": "nobody"}), "cannot reply"),
        ] {
            let r = ws.post(&format!("/sessions/{id}/turns"), &body);
            assert_eq!(r.status, 422, "{body}: {r:?}");
            assert_eq!(r.content_type, "application/problem+json");
            let p = r.json();
            assert_eq!(p["code"], "REFUSED", "{p}");
            assert!(p["detail"].as_str().unwrap().contains(says), "{p}");
        }
        assert_eq!(ws.get(&format!("/sessions/{id}.jsonl")).body, before);
        let ok = ws.post(
            &format!("/sessions/{id}/turns"),
            &json!({"text": "Hello", "as": "player"}),
        );
        assert_eq!(ok.status, 200, "{ok:?}");
    }
}

#[test]
fn two_concurrent_turns_give_one_200_and_one_409() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "race") {
        let server = Server::start(&db);
        let (ws, _) = workspace(&server, &db, "race");
        let pack = upload(&ws);
        for round in 0..5 {
            let (id, doc) = create(&ws, &pack, round);
            let expected = doc["current"].clone();
            let url = ws.url(&format!("/sessions/{id}/turns"));
            let handles: Vec<_> = (0..2)
                .map(|n| {
                    let url = url.clone();
                    let token = ws.token.clone();
                    let body =
                        json!({"text": format!("Hello {n}"), "expected": expected}).to_string();
                    std::thread::spawn(move || {
                        call("POST", &url, Some(&token), Some(body.as_bytes()), None).status
                    })
                })
                .collect();
            let mut statuses: Vec<u16> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            statuses.sort();
            assert_eq!(statuses, [200, 409], "{db:?}");
            let text = ws.get(&format!("/sessions/{id}.jsonl")).body;
            assert_eq!(text.lines().count(), 4, "one turn only: {text}");
        }
    }
}

#[test]
fn a_retried_request_with_its_idempotency_key_gets_the_first_answer() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "idempotency") {
        let server = Server::start(&db);
        let (ws, _) = workspace(&server, &db, "idem");
        let pack = upload(&ws);
        let (id, _) = create(&ws, &pack, 3);
        let url = ws.url(&format!("/sessions/{id}/turns"));
        let body = json!({"text": "Hello"}).to_string();
        let first = call(
            "POST",
            &url,
            Some(&ws.token),
            Some(body.as_bytes()),
            Some("k1"),
        );
        let second = call(
            "POST",
            &url,
            Some(&ws.token),
            Some(body.as_bytes()),
            Some("k1"),
        );
        assert_eq!(first.status, 200, "{first:?}");
        assert_eq!((second.status, &second.body), (200, &first.body));
        assert!(!first.replayed && second.replayed);
        let text = ws.get(&format!("/sessions/{id}.jsonl")).body;
        assert_eq!(text.lines().count(), 4, "one turn only");
        let other = json!({"text": "Something else"}).to_string();
        let mismatch = call(
            "POST",
            &url,
            Some(&ws.token),
            Some(other.as_bytes()),
            Some("k1"),
        );
        assert_eq!(mismatch.status, 422);
        assert_eq!(mismatch.json()["code"], "IDEMPOTENCY_MISMATCH");
    }
}

#[test]
fn another_workspaces_token_gets_404_and_no_token_401() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "access") {
        let server = Server::start(&db);
        let (a, _) = workspace(&server, &db, "a");
        let (b, _) = workspace(&server, &db, "b");
        let pack = upload(&a);
        let (id, _) = create(&a, &pack, 0);
        for rest in [
            format!("/packs/{pack}"),
            format!("/sessions/{id}"),
            format!("/sessions/{id}.jsonl"),
            "/packs".to_string(),
        ] {
            let foreign = call("GET", &a.url(&rest), Some(&b.token), None, None);
            assert_eq!(foreign.status, 404, "{rest}: {foreign:?}");
            assert_eq!(foreign.content_type, "application/problem+json");
            let none = call("GET", &a.url(&rest), None, None, None);
            assert_eq!(none.status, 401, "{rest}");
            let wrong = call("GET", &a.url(&rest), Some("trp_nope"), None, None);
            assert_eq!(wrong.status, 401, "{rest}");
        }
        // Workspace b does not see a's pack under its own name either.
        assert_eq!(b.get(&format!("/packs/{pack}")).status, 404);
        assert_eq!(b.get("/packs").json()["packs"], json!([]));
        // Bad input is a problem document, never a panic or Debug text.
        let bad = call(
            "POST",
            &a.url(&format!("/sessions/{id}/turns")),
            Some(&a.token),
            Some(b"{not json"),
            None,
        );
        assert_eq!(bad.status, 400);
        assert_eq!(bad.content_type, "application/problem+json");
        let refused = call(
            "PUT",
            &a.url("/packs"),
            Some(&a.token),
            Some(b"{\"troupe\": \"0.1\""),
            None,
        );
        assert_eq!(refused.status, 422, "{refused:?}");
        let report = refused.json();
        assert_eq!(
            report["valid"], false,
            "the `troupe check --json` report: {report}"
        );
        let health = call("GET", &format!("{}/healthz", server.base), None, None, None);
        assert_eq!(health.status, 200);
        let ready = call("GET", &format!("{}/readyz", server.base), None, None, None);
        assert_eq!(ready.status, 200);
        let metrics = call("GET", &format!("{}/metrics", server.base), None, None, None);
        assert!(
            metrics.body.contains("troupe_turn_seconds_count"),
            "{}",
            metrics.body
        );
        // A deleted pack is gone for new sessions, still read by its own.
        assert_eq!(
            call(
                "DELETE",
                &a.url(&format!("/packs/{pack}")),
                Some(&a.token),
                None,
                None
            )
            .status,
            204
        );
        assert_eq!(a.get(&format!("/packs/{pack}")).status, 404);
        assert_eq!(a.post("/sessions", &json!({"pack": pack})).status, 404);
        assert_eq!(
            a.post(&format!("/sessions/{id}/turns"), &json!({"text": "Hi"}))
                .status,
            200
        );
    }
}

#[test]
fn an_acknowledged_turn_survives_sigkill() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "sigkill") {
        let server = Server::start(&db);
        let (ws, name) = workspace(&server, &db, "kill");
        let pack = upload(&ws);
        let (id, _) = create(&ws, &pack, 5);
        let a = ws.post(
            &format!("/sessions/{id}/turns"),
            &json!({"text": INPUTS[0]}),
        );
        assert_eq!(a.status, 200);
        let before = ws.get(&format!("/sessions/{id}.jsonl")).body;
        server.kill(); // SIGKILL
        let server = Server::start(&db);
        let ws = Ws {
            base: format!("{}/api/v1/workspaces/{name}", server.base),
            token: ws.token,
        };
        assert_eq!(ws.get(&format!("/sessions/{id}.jsonl")).body, before);
        // A server that never saw the session rebuilds it from the database.
        let last = a.last_message();
        let b = ws.post(
            &format!("/sessions/{id}/turns"),
            &json!({"text": INPUTS[1], "expected": last}),
        );
        assert_eq!(b.status, 200, "{b:?}");
    }
}

#[test]
fn a_database_holding_other_tables_or_a_newer_schema_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    // A foreign SQLite file: refused, and left as it was.
    let foreign = tmp.path().join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE users (id INTEGER)")
        .unwrap();
    let before = std::fs::read(&foreign).unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--database"])
        .arg(&foreign)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tables Troupe did not create (users)"),
        "{err}"
    );
    assert_eq!(std::fs::read(&foreign).unwrap(), before, "nothing written");
    // A newer schema: refused with a clear error.
    let db = Backend::Sqlite(tmp.path().join("newer.db"));
    token(&db, "w");
    {
        let c = rusqlite::Connection::open(tmp.path().join("newer.db")).unwrap();
        // The file Troupe prepared is in WAL mode (docs/server.md "Durability").
        let mode: String = c
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        c.execute_batch("INSERT INTO troupe_schema (version, applied) VALUES (99, 0)")
            .unwrap();
    }
    let out = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--database"])
        .arg(db.arg())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("schema version 99, newer than this troupe knows"),
        "{err}"
    );
}

/// An in-memory SQLite database would be one empty database per server
/// thread (the reader's, the writer's): refused with a clear error
/// (docs/server.md "Storage and durability"), never served.
#[test]
fn an_in_memory_sqlite_database_is_refused() {
    for database in ["sqlite::memory:", ":memory:", "sqlite://x.db?mode=memory"] {
        let out = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--database", database])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "{database}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("an in-memory SQLite database cannot be served"),
            "{err}"
        );
    }
}

#[test]
fn test_server_prints_the_local_report() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "test_server") {
        let server = Server::start(&db);
        let (_, name) = workspace(&server, &db, "tests");
        let token = token(&db, &name);
        // A passing pack, and a copy with a failing static assertion (exit 1).
        let (_broken_dir, broken) = common::pack("everyday-negotiation");
        common::edit(
            &broken,
            "tests/golden_used_car_negotiation.yaml",
            "variable=impression AND threshold=70",
            "variable=impression AND threshold=75",
        );
        let broken = broken.display().to_string();
        for pack in ["examples/packs/everyday-negotiation", broken.as_str()] {
            for flags in [&["--json"][..], &[][..]] {
                let ljunit = tmp.path().join("local.xml");
                let rjunit = tmp.path().join("remote.xml");
                let mut local = vec!["test", pack, "--junit", ljunit.to_str().unwrap()];
                local.extend_from_slice(flags);
                let (lcode, lout, _) = common::run(&local);
                let mut remote = vec![
                    "test",
                    pack,
                    "--server",
                    &server.base,
                    "--workspace",
                    &name,
                    "--junit",
                    rjunit.to_str().unwrap(),
                ];
                remote.extend_from_slice(flags);
                let out = Command::new(BIN)
                    .args(&remote)
                    .current_dir(ROOT)
                    .env("TROUPE_TOKEN", &token)
                    .output()
                    .unwrap();
                assert_eq!(
                    (
                        out.status.code(),
                        String::from_utf8_lossy(&out.stdout).into_owned()
                    ),
                    (Some(lcode), lout),
                    "{db:?} {pack} {flags:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                assert_eq!(
                    std::fs::read_to_string(&rjunit).unwrap(),
                    std::fs::read_to_string(&ljunit).unwrap()
                );
                assert_eq!(lcode, if pack == broken { 1 } else { 0 });
            }
        }
        // Nothing was stored.
        let ws = Ws {
            base: format!("{}/api/v1/workspaces/{name}", server.base),
            token: token.clone(),
        };
        assert_eq!(ws.get("/packs").json()["packs"], json!([]));
    }
}

#[test]
fn two_instances_sharing_one_database_never_both_apply_a_turn() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "two_instances") {
        let one = Server::start(&db);
        let two = Server::start(&db);
        let (a, name) = workspace(&one, &db, "two");
        let b = Ws {
            base: format!("{}/api/v1/workspaces/{name}", two.base),
            token: a.token.clone(),
        };
        let pack = upload(&a);
        let (id, doc) = create(&a, &pack, 11);
        let mut current = doc["current"].clone();
        for round in 0..4 {
            let handles: Vec<_> = [&a, &b]
                .iter()
                .map(|ws| {
                    let url = ws.url(&format!("/sessions/{id}/turns"));
                    let token = ws.token.clone();
                    let body =
                        json!({"text": format!("Round {round}"), "expected": current}).to_string();
                    std::thread::spawn(move || {
                        call("POST", &url, Some(&token), Some(body.as_bytes()), None)
                    })
                })
                .collect();
            let answers: Vec<Answer> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            let mut statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
            statuses.sort();
            assert_eq!(statuses, [200, 409], "{db:?} round {round}: {answers:?}");
            current = answers
                .iter()
                .find(|a| a.status == 200)
                .unwrap()
                .last_message();
            let lost = answers.iter().find(|a| a.status == 409).unwrap().json();
            assert_eq!(lost["code"], "CONFLICT");
            assert_eq!(
                lost["current"], current,
                "the 409 names the winner's message"
            );
        }
        let from_a = a.get(&format!("/sessions/{id}.jsonl")).body;
        let from_b = b.get(&format!("/sessions/{id}.jsonl")).body;
        assert_eq!(from_a, from_b);
        assert_eq!(
            from_a.lines().count(),
            2 + 4 * 2,
            "four turns, no more: {from_a}"
        );
        // Each instance goes on from the other's turn (rebuilt from the database).
        let t = b.post(
            &format!("/sessions/{id}/turns"),
            &json!({"text": "On b", "expected": current}),
        );
        assert_eq!(t.status, 200, "{t:?}");
        let next = t.last_message();
        let t = a.post(
            &format!("/sessions/{id}/turns"),
            &json!({"text": "On a", "expected": next}),
        );
        assert_eq!(t.status, 200, "{t:?}");
    }
}

#[test]
fn sigterm_stops_the_server_gracefully_and_big_bodies_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Backend::Sqlite(tmp.path().join("t.db"));
    let config = tmp.path().join("config.json");
    std::fs::write(
        &config,
        r#"{"body_limit": 1000, "header_read_timeout_secs": 1}"#,
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .arg("--database")
        .arg(db.arg())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    let name = unique("limit");
    let token = token(&db, &name);
    let big = vec![b'x'; 5000];
    let a = call(
        "PUT",
        &format!("{base}/api/v1/workspaces/{name}/packs"),
        Some(&token),
        Some(&big),
        None,
    );
    assert_eq!(a.status, 413, "{a:?}");
    assert_eq!(a.content_type, "application/problem+json");
    assert_eq!(a.json()["code"], "BODY_TOO_LARGE");
    // A body announced over the limit is refused before it is read: an
    // `Expect: 100-continue` gets the 413 itself, never `100 Continue`
    // (which would invite the client to send a gigabyte).
    {
        use std::io::{Read, Write};
        let addr = base.strip_prefix("http://").unwrap();
        let mut tcp = std::net::TcpStream::connect(addr).unwrap();
        tcp.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        write!(
            tcp,
            "PUT /api/v1/workspaces/{name}/packs HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Length: 1000000000\r\nExpect: 100-continue\r\n\r\n"
        )
        .unwrap();
        let mut head = [0u8; 12];
        tcp.read_exact(&mut head).unwrap();
        assert_eq!(&head, b"HTTP/1.1 413", "{}", String::from_utf8_lossy(&head));
    }
    // A client that trickles its request's headers (here: stops before
    // their end) is cut off after `header_read_timeout_secs`, not held
    // open for ever; the read's own 30 s limit only stops the test from
    // hanging if it were not.
    {
        use std::io::{Read, Write};
        let addr = base.strip_prefix("http://").unwrap();
        let mut tcp = std::net::TcpStream::connect(addr).unwrap();
        tcp.set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        write!(tcp, "GET /healthz HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").unwrap();
        let mut rest = Vec::new();
        let end = tcp.read_to_end(&mut rest);
        assert!(
            !matches!(&end, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
            "the connection was still open after 30 s: {end:?}"
        );
    }
    let none = call("GET", &format!("{base}/nowhere"), None, None, None);
    assert_eq!(
        (none.status, none.json()["code"].clone()),
        (404, json!("NOT_FOUND"))
    );
    // SAFETY: sending a signal to the child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "a graceful shutdown exits 0");
}

/// A small bounded load: 16 clients, two per session, 50 turns each; no
/// answer but 200 and the expected 409s, and every acknowledged turn is in
/// the exported session.
#[test]
fn sixteen_clients_fifty_turns_each_only_200s_and_409s() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "load") {
        let server = Server::start(&db);
        let (ws, _) = workspace(&server, &db, "load");
        let pack = upload(&ws);
        let sessions: Vec<(String, Value)> = (0..8).map(|n| create(&ws, &pack, n)).collect();
        let ws = std::sync::Arc::new(ws);
        let handles: Vec<_> = (0..16)
            .map(|c| {
                let ws = ws.clone();
                let pack = pack.clone();
                let (mut id, doc) = sessions[c / 2].clone();
                let mut current = doc["current"].clone();
                std::thread::spawn(move || {
                    let mut played = std::collections::HashMap::<String, usize>::new();
                    for t in 0..50 {
                        let a = ws.post(
                            &format!("/sessions/{id}/turns"),
                            &json!({"text": format!("client {c} turn {t}"), "expected": current}),
                        );
                        match a.status {
                            200 => {
                                *played.entry(id.clone()).or_default() += 1;
                                current = a.last_message();
                            }
                            409 if a.json()["code"] == "CONFLICT" => {
                                current = a.json()["current"].clone()
                            }
                            409 => {
                                // The session ended: go on in a new one.
                                let (nid, doc) = create(&ws, &pack, 100 + c as u64 * 100 + t);
                                id = nid;
                                current = doc["current"].clone();
                            }
                            _ => panic!("client {c}: {a:?}"),
                        }
                    }
                    played
                })
            })
            .collect();
        let mut played = std::collections::HashMap::<String, usize>::new();
        for h in handles {
            for (id, n) in h.join().unwrap() {
                *played.entry(id).or_default() += n;
            }
        }
        let total: usize = played.values().sum();
        println!(
            "load: {db:?}: {total} turns acknowledged in {} sessions",
            played.len()
        );
        assert!(total >= 50, "{played:?}");
        for (id, n) in &played {
            let text = ws.get(&format!("/sessions/{id}.jsonl")).body;
            let inputs = text
                .lines()
                .filter(|l| l.contains(r#""author":"player""#))
                .count();
            assert_eq!(
                inputs, *n,
                "{db:?}: session {id} holds every acknowledged turn, once"
            );
        }
    }
}

/// Every operation the server answers is in `/api/v1/openapi.json` (OpenAPI
/// 3.1), and every operation there is served (not the router's 404).
#[test]
fn the_openapi_document_lists_every_route() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Backend::Sqlite(tmp.path().join("o.db"));
    let server = Server::start(&db);
    let (ws, name) = workspace(&server, &db, "openapi");
    let doc = call(
        "GET",
        &format!("{}/api/v1/openapi.json", server.base),
        None,
        None,
        None,
    )
    .json();
    assert_eq!(doc["openapi"], "3.1.0");
    let mut listed: Vec<String> = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for method in ops.as_object().unwrap().keys() {
            listed.push(format!("{} {path}", method.to_uppercase()));
        }
    }
    listed.sort();
    let w = "/api/v1/workspaces/{ws}";
    let mut expected: Vec<String> = [
        "GET /healthz".to_string(),
        "GET /readyz".to_string(),
        "GET /metrics".to_string(),
        "GET /api/v1/openapi.json".to_string(),
        format!("PUT {w}/packs"),
        format!("GET {w}/packs"),
        format!("GET {w}/packs/{{hash}}"),
        format!("DELETE {w}/packs/{{hash}}"),
        format!("POST {w}/packs:test"),
        format!("POST {w}/sessions"),
        format!("GET {w}/sessions"),
        format!("DELETE {w}/tokens/current"),
        format!("POST {w}/sessions:resume"),
        format!("GET {w}/sessions/{{id}}"),
        format!("DELETE {w}/sessions/{{id}}"),
        format!("POST {w}/sessions/{{id}}/turns"),
        format!("POST {w}/sessions/{{id}}/undo"),
        format!("POST {w}/sessions/{{id}}/goto"),
        format!("POST {w}/sessions/{{id}}/settings"),
        format!("GET {w}/sessions/{{id}}/state"),
        format!("GET {w}/sessions/{{id}}/ended"),
        format!("GET {w}/sessions/{{id}}/explain"),
        format!("GET {w}/sessions/{{id}}/knows"),
        format!("GET {w}/sessions/{{id}}/score"),
        format!("GET {w}/sessions/{{id}}/render"),
        format!("GET {w}/sessions/{{id}}/prompt"),
        // The web page's routes (docs/web.md "Routes of the page").
        format!("GET {w}/packs/{{hash}}/scenarios"),
        format!("GET {w}/packs/{{hash}}/lines"),
        format!("GET {w}/sessions/{{id}}/transcript"),
        format!("GET {w}/sessions/{{id}}/next"),
        format!("GET {w}/sessions/{{id}}/graph.svg"),
        format!("GET {w}/sessions/{{id}}/plot.svg"),
    ]
    .to_vec();
    expected.sort();
    assert_eq!(listed, expected);
    // Each listed operation is routed: whatever it answers, it is not the
    // fallback's "no such route".
    for op in &listed {
        let (method, path) = op.split_once(' ').unwrap();
        let url = format!(
            "{}{}",
            server.base,
            path.replace("{ws}", &name)
                .replace("{hash}", "nohash")
                .replace("{id}", "noid")
        );
        let body: Option<&[u8]> = if method == "GET" || method == "DELETE" {
            None
        } else {
            Some(b"{}")
        };
        // The revoking route revokes a token of its own.
        let tok = if op.ends_with("/tokens/current") {
            token(&db, &name)
        } else {
            ws.token.clone()
        };
        let a = call(method, &url, Some(&tok), body, None);
        assert!(
            !(a.status == 404 && a.body.contains("no such route")) && a.status != 405,
            "{op}: {a:?}"
        );
    }
    // The views of a played session.
    let pack = upload(&ws);
    let (id, _) = create(&ws, &pack, 2);
    assert_eq!(
        ws.post(&format!("/sessions/{id}/turns"), &json!({"text": "Hello"}))
            .status,
        200
    );
    let s = ws.post(
        &format!("/sessions/{id}/settings"),
        &json!({"difficulty": "hard"}),
    );
    assert_eq!(s.status, 200, "{s:?}");
    assert!(s.json()["message"].is_string(), "{}", s.body);
    let bad = ws.post(
        &format!("/sessions/{id}/settings"),
        &json!({"difficulty": "nope"}),
    );
    assert_eq!(bad.status, 422, "{bad:?}");
    assert_eq!(bad.content_type, "application/problem+json");
    let e = ws.get(&format!("/sessions/{id}/ended?at=m3"));
    assert_eq!(
        (e.status, e.json()["at"].clone()),
        (200, json!("m3")),
        "{e:?}"
    );
    assert_eq!(ws.get(&format!("/sessions/{id}/explain")).status, 200);
    assert_eq!(ws.get(&format!("/sessions/{id}/score")).status, 200);
    let k = ws.get(&format!("/sessions/{id}/knows?message=m3&part=0"));
    assert_eq!(k.status, 200, "{k:?}");
    assert!(
        k.json().as_array().unwrap().contains(&json!("player")),
        "{}",
        k.body
    );
    assert_eq!(
        ws.get(&format!("/sessions/{id}/knows?message=m3")).status,
        400
    );
}

/// The server killed with SIGKILL in the middle of a load: after a restart
/// every acknowledged turn is there, at most one more per session (a turn
/// committed whose answer the kill lost), and every stored session passes
/// `troupe check` — no half turn.
#[test]
fn sigkill_mid_load_loses_no_acknowledged_turn_and_leaves_no_half_turn() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "kill_mid_load") {
        let server = Server::start(&db);
        let (ws, name) = workspace(&server, &db, "killload");
        let pack = upload(&ws);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        // Turns acknowledged so far: the kill waits for some (bounded).
        let acknowledged = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let base = ws.base.clone();
        let handles: Vec<_> = (0..6u64)
            .map(|c| {
                let token = ws.token.clone();
                let stop = stop.clone();
                let acknowledged = acknowledged.clone();
                let base = base.clone();
                let pack = pack.clone();
                std::thread::spawn(move || {
                    // (session, turns acknowledged) in the order played;
                    // an ended session is followed by a new one.
                    let mut played: Vec<(String, usize)> = Vec::new();
                    let mut n = 0;
                    'sessions: while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                        let start = json!({"pack": pack, "seed": c * 1000 + n}).to_string();
                        let id = match try_call(
                            "POST",
                            &format!("{base}/sessions"),
                            Some(&token),
                            Some(start.as_bytes()),
                            None,
                        ) {
                            Ok(a) if a.status == 201 => {
                                a.json()["id"].as_str().unwrap().to_string()
                            }
                            Ok(a) => panic!("{a:?}"),
                            Err(_) => break,
                        };
                        played.push((id.clone(), 0));
                        let url = format!("{base}/sessions/{id}/turns");
                        loop {
                            n += 1;
                            let body = json!({"text": format!("offer {n}")}).to_string();
                            match try_call("POST", &url, Some(&token), Some(body.as_bytes()), None)
                            {
                                Ok(a) if a.status == 200 => {
                                    played.last_mut().unwrap().1 += 1;
                                    acknowledged.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                                }
                                Ok(a) if a.status == 409 => continue 'sessions, // ended
                                Ok(a) => panic!("{a:?}"),
                                Err(_) => break 'sessions, // the server is gone
                            }
                        }
                    }
                    played
                })
            })
            .collect();
        // Killed once the load is under way (a dozen turns acknowledged),
        // not after a fixed time a loaded machine may spend starting up.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while acknowledged.load(std::sync::atomic::Ordering::SeqCst) < 12
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let before = acknowledged.load(std::sync::atomic::Ordering::SeqCst);
        server.kill(); // SIGKILL, turns in flight
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let played: Vec<(String, usize)> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        assert!(
            before >= 12,
            "{db:?}: only {before} turns acknowledged in 120 s of load: the server answered too slowly to be killed mid-load"
        );
        let server = Server::start(&db);
        let ws = Ws {
            base: format!("{}/api/v1/workspaces/{name}", server.base),
            token: ws.token,
        };
        for (id, n) in &played {
            let text = ws.get(&format!("/sessions/{id}.jsonl")).body;
            let stored = text
                .lines()
                .filter(|l| l.contains(r#""author":"player""#))
                .count();
            assert!(
                stored == *n || stored == n + 1,
                "{db:?}: session {id}: {n} acknowledged, {stored} stored"
            );
            let file = tmp.path().join(format!("{id}.jsonl"));
            std::fs::write(&file, &text).unwrap();
            let (code, out, err) = common::run(&[
                "check",
                package().0.to_str().unwrap(),
                file.to_str().unwrap(),
            ]);
            assert_eq!(code, 0, "{db:?}: {id}: {out}{err}");
        }
        let acked: usize = played.iter().map(|(_, n)| n).sum();
        let acked = format!("{acked} turns in {} sessions", played.len());
        println!("kill_mid_load: {db:?}: acknowledged before the kill: {acked:?}");
    }
}

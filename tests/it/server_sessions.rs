//! Issue 39's fourth slice over HTTP (docs/server.md): listing a
//! workspace's sessions, a token revoking itself, and a live session
//! cached on one instance caught up with what another instance stored
//! after it — on SQLite and, with `TROUPE_PG_URL`, PostgreSQL.

use serde_json::{json, Value};

use super::server_support::*;

/// A counter of `/metrics`.
fn metric(server: &Server, name: &str) -> u64 {
    let a = call("GET", &format!("{}/metrics", server.base), None, None, None);
    a.body
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in {}", a.body))
        .trim()
        .parse()
        .unwrap()
}

/// `GET /sessions`: pages in ID order, `next` the cursor of the following
/// page (null on the last), each entry its stored row and its header's
/// scenario; bad limits 400; another workspace's token 404.
#[test]
fn sessions_are_listed_by_page() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    for db in backends(dir, "sessions_are_listed_by_page") {
        let server = Server::start(&db);
        let (ws, _) = workspace(&server, &db, "list");
        let pack = upload(&ws);
        let empty = ws.get("/sessions");
        assert_eq!(empty.status, 200, "{empty:?}");
        assert_eq!(empty.json(), json!({"sessions": [], "next": null}));
        let mut made: Vec<(String, Value)> = (0..3).map(|seed| create(&ws, &pack, seed)).collect();
        // One of them played one turn.
        let turn = ws.post(
            &format!("/sessions/{}/turns", made[0].0),
            &json!({"text": "Hello! What's your best price?"}),
        );
        assert_eq!(turn.status, 200, "{turn:?}");
        made[0].1 = ws.get(&format!("/sessions/{}", made[0].0)).json();
        made.sort_by(|a, b| a.0.cmp(&b.0));
        let first = ws.get("/sessions?limit=2");
        assert_eq!(first.status, 200, "{first:?}");
        let first = first.json();
        let second = ws
            .get(&format!(
                "/sessions?limit=2&cursor={}",
                first["next"].as_str().unwrap()
            ))
            .json();
        assert_eq!(second["next"], Value::Null);
        let listed: Vec<Value> = first["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .chain(second["sessions"].as_array().unwrap())
            .cloned()
            .collect();
        assert_eq!(listed.len(), 3);
        assert_eq!(first["next"], listed[1]["id"]);
        for (entry, (id, doc)) in listed.iter().zip(&made) {
            let file = ws.get(&format!("/sessions/{id}.jsonl")).body;
            assert_eq!(entry["id"], json!(id));
            assert_eq!(entry["pack"], json!(pack));
            assert_eq!(entry["scenario"], doc["header"]["scenario"]);
            assert_eq!(entry["current"], doc["current"]);
            assert_eq!(
                entry["messages"],
                json!(file.lines().count() - 1),
                "{entry}"
            );
            assert!(entry["created"].as_i64().unwrap() > 1_700_000_000);
        }
        for bad in [
            "/sessions?limit=0",
            "/sessions?limit=1001",
            "/sessions?limit=x",
        ] {
            let a = ws.get(bad);
            assert_eq!(a.status, 400, "{bad}: {a:?}");
            assert_eq!(a.json()["code"], "BAD_REQUEST");
        }
        // A query string that does not fit the route says what is wrong
        // (the rejection's own text), not only "bad request".
        for (bad, says) in [
            ("/sessions?limt=2", "unknown field `limt`"),
            ("/sessions?limit=x", "invalid digit"),
        ] {
            let a = ws.get(bad);
            assert_eq!(a.status, 400, "{bad}: {a:?}");
            let detail = a.json()["detail"].as_str().unwrap_or_default().to_string();
            assert!(detail.contains(says), "{bad}: {detail}");
        }
        let (other, _) = workspace(&server, &db, "list-other");
        let a = call("GET", &ws.url("/sessions"), Some(&other.token), None, None);
        assert_eq!(a.status, 404, "{a:?}");
    }
}

/// `DELETE /tokens/current`: the token of the request is revoked (204),
/// its next request is 401 on this instance at once and on another one
/// soon after (PostgreSQL notifies it); the workspace's other token still
/// works.
#[test]
fn a_token_revokes_itself() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    for db in backends(dir, "a_token_revokes_itself") {
        let a = Server::start(&db);
        let b = Server::start(&db);
        let (ws, name) = workspace(&a, &db, "revoke");
        let second = token(&db, &name);
        let on_b = format!("{}/api/v1/workspaces/{name}/sessions", b.base);
        // Checked (and, on PostgreSQL, remembered) by the other instance.
        assert_eq!(call("GET", &on_b, Some(&second), None, None).status, 200);
        let gone = call(
            "DELETE",
            &ws.url("/tokens/current"),
            Some(&second),
            None,
            None,
        );
        assert_eq!(gone.status, 204, "{gone:?}");
        let again = call("GET", &ws.url("/sessions"), Some(&second), None, None);
        assert_eq!(again.status, 401, "{again:?}");
        assert_eq!(again.json()["code"], "UNAUTHORIZED");
        let refused = (0..50).any(|_| {
            let r = call("GET", &on_b, Some(&second), None, None).status == 401;
            if !r {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            r
        });
        assert!(refused, "the other instance still takes the revoked token");
        assert_eq!(ws.get("/sessions").status, 200);
        // Revoking it again: it opens nothing any more.
        let twice = call(
            "DELETE",
            &ws.url("/tokens/current"),
            Some(&second),
            None,
            None,
        );
        assert_eq!(twice.status, 401, "{twice:?}");
    }
}

/// A session live on instance A that instance B moved forward: A's next
/// operation reads only the lines B stored after A's copy and the engine
/// steps only their messages (a catch-up, not a rebuild), and both
/// instances then hold the same file.
#[test]
fn a_cached_session_catches_up_with_another_instance() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for db in backends(dir, "a_cached_session_catches_up_with_another_instance") {
        let a = Server::start(&db);
        let b = Server::start(&db);
        let (ws_a, name) = workspace(&a, &db, "catch-up");
        let ws_b = Ws {
            base: format!("{}/api/v1/workspaces/{name}", b.base),
            token: ws_a.token.clone(),
        };
        let pack = upload(&ws_a);
        let (id, _) = create(&ws_a, &pack, 3);
        let t = ws_a.post(
            &format!("/sessions/{id}/turns"),
            &json!({"text": "Hello! What's your best price?"}),
        );
        assert_eq!(t.status, 200, "{t:?}");
        // B plays two turns: B never saw the session, so it rebuilds it.
        let mut written = 0;
        let mut current = t.last_message();
        for text in ["That is too much for me.", "I can offer 7,000."] {
            let t = ws_b.post(
                &format!("/sessions/{id}/turns"),
                &json!({"text": text, "expected": current}),
            );
            assert_eq!(t.status, 200, "{t:?}");
            written += t.json()["messages"].as_array().unwrap().len() as u64;
            current = t.last_message();
        }
        assert_eq!(metric(&b, "troupe_session_rebuilds_total"), 1);
        assert_eq!(metric(&a, "troupe_session_lines_read_total"), 0);
        // B's rebuild stepped every message stored before its first turn.
        let stored = metric(&b, "troupe_session_lines_read_total");
        assert_eq!(
            metric(&b, "troupe_session_messages_stepped_total"),
            stored - 1
        );
        assert_eq!(metric(&a, "troupe_session_messages_stepped_total"), 0);
        // A's copy is behind by B's lines: it reads those, nothing else.
        let t = ws_a.post(
            &format!("/sessions/{id}/turns"),
            &json!({"text": "Deal?", "expected": current}),
        );
        assert_eq!(t.status, 200, "{t:?}");
        assert_eq!(metric(&a, "troupe_session_catch_ups_total"), 1);
        assert_eq!(metric(&a, "troupe_session_rebuilds_total"), 0);
        assert_eq!(metric(&a, "troupe_session_lines_read_total"), written);
        // The engine stepped B's messages only, not the whole file again.
        assert_eq!(metric(&a, "troupe_session_messages_stepped_total"), written);
        // An undo on B moves only the current message: A catches up
        // reading no line.
        let u = ws_b.post(&format!("/sessions/{id}/undo"), &json!({}));
        assert_eq!(u.status, 200, "{u:?}");
        let after = ws_a.get(&format!("/sessions/{id}"));
        assert_eq!(after.json()["current"], u.json()["current"]);
        assert_eq!(metric(&a, "troupe_session_catch_ups_total"), 2);
        assert_eq!(metric(&a, "troupe_session_lines_read_total"), written);
        assert_eq!(metric(&a, "troupe_session_messages_stepped_total"), written);
        assert_eq!(metric(&a, "troupe_session_rebuilds_total"), 0);
        assert_eq!(
            ws_a.get(&format!("/sessions/{id}.jsonl")).body,
            ws_b.get(&format!("/sessions/{id}.jsonl")).body
        );
        // The file A and B hold is a session of the pack.
        let file = dir.join(format!("{id}.jsonl"));
        std::fs::write(&file, ws_a.get(&format!("/sessions/{id}.jsonl")).body).unwrap();
        let (code, out, err) = super::common::run(&[
            "check",
            package().0.to_str().unwrap(),
            file.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{out}{err}");
    }
}

/// Issue 39's ninth slice (docs/server.md "Cost of a turn"): an operation
/// on a session this process holds reads no session row — the guarded
/// `UPDATE` alone finds a copy another instance moved. Such a copy is
/// then checked against the row and the operation runs again on it: a
/// turn without `expected` applies after the other instance's, a stale
/// `expected` is 409 naming the stored current message, a session deleted
/// elsewhere is 404. A copy found moved reads the row before each
/// operation until a read finds it up to date, then trusts itself again.
#[test]
fn a_held_session_is_played_without_reading_its_row() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for db in backends(dir, "a_held_session_is_played_without_reading_its_row") {
        let a = Server::start(&db);
        let b = Server::start(&db);
        let (ws_a, name) = workspace(&a, &db, "held");
        let ws_b = Ws {
            base: format!("{}/api/v1/workspaces/{name}", b.base),
            token: ws_a.token.clone(),
        };
        let pack = upload(&ws_a);
        let (id, doc) = create(&ws_a, &pack, 5);
        let turns = format!("/sessions/{id}/turns");
        let reads = |s: &Server| metric(s, "troupe_session_row_reads_total");
        // Turns on the instance that holds it: no row read, no rebuild.
        let before = reads(&a);
        let mut current = doc["current"].clone();
        for text in ["Hello! What's your best price?", "That is too much for me."] {
            let t = ws_a.post(&turns, &json!({"text": text, "expected": current}));
            assert_eq!(t.status, 200, "{t:?}");
            current = t.last_message();
        }
        let t = ws_a.post(&turns, &json!({"text": "Hm."}));
        assert_eq!(t.status, 200, "{t:?}");
        assert_eq!(reads(&a), before, "a held session's turns read no row");
        assert_eq!(metric(&a, "troupe_session_rebuilds_total"), 0);
        // B plays a turn: A's copy is one turn behind.
        let on_b = ws_b.post(&turns, &json!({"text": "I can offer 7,000."}));
        assert_eq!(on_b.status, 200, "{on_b:?}");
        // A's turn without `expected` runs on its copy, its `UPDATE` is
        // refused, the copy rebuilt (the turn had changed it) and the turn
        // applied after B's.
        let t = ws_a.post(&turns, &json!({"text": "Deal?"}));
        assert_eq!(t.status, 200, "{t:?}");
        assert_eq!(metric(&a, "troupe_session_rebuilds_total"), 1);
        let file = ws_b.get(&format!("/sessions/{id}.jsonl")).body;
        assert_eq!(
            file.lines().count(),
            2 + 5 * 2,
            "header, opening, five turns: {file}"
        );
        let after_b = file.find(&format!("\"id\":{}", on_b.last_message()));
        let after_a = file.find(&format!("\"id\":{}", t.last_message()));
        assert!(after_b.is_some() && after_b < after_a, "{file}");
        assert_eq!(
            ws_b.get(&format!("/sessions/{id}")).json()["current"],
            t.last_message()
        );
        current = t.last_message();
        // Found moved once: A's next operation reads the row first, finds
        // its copy up to date, and the one after trusts it again.
        let r = reads(&a);
        let t = ws_a.post(&turns, &json!({"text": "Fine.", "expected": current}));
        assert_eq!(t.status, 200, "{t:?}");
        assert_eq!(reads(&a), r + 1);
        current = t.last_message();
        let t = ws_a.post(&turns, &json!({"text": "Good.", "expected": current}));
        assert_eq!(t.status, 200, "{t:?}");
        assert_eq!(reads(&a), r + 1);
        let stale = current.clone();
        current = t.last_message();
        // B moves it again; A's stale `expected` is checked against the
        // row before it is answered (A's copy caught up): 409 naming B's
        // message.
        let on_b = ws_b.post(&turns, &json!({"text": "Well?", "expected": current}));
        assert_eq!(on_b.status, 200, "{on_b:?}");
        let catch_ups = metric(&a, "troupe_session_catch_ups_total");
        let lost = ws_a.post(&turns, &json!({"text": "Late.", "expected": stale}));
        assert_eq!(lost.status, 409, "{lost:?}");
        assert_eq!(lost.json()["current"], on_b.last_message());
        assert_eq!(metric(&a, "troupe_session_catch_ups_total"), catch_ups + 1);
        // One naming B's message applies on A's caught-up copy.
        let t = ws_a.post(
            &turns,
            &json!({"text": "Again.", "expected": on_b.last_message()}),
        );
        assert_eq!(t.status, 200, "{t:?}");
        assert_eq!(metric(&a, "troupe_session_catch_ups_total"), catch_ups + 1);
        assert_eq!(metric(&a, "troupe_session_rebuilds_total"), 1);
        // Deleted through B: A's held copy answers 404, not 200.
        let d = call(
            "DELETE",
            &ws_b.url(&format!("/sessions/{id}")),
            Some(&ws_b.token),
            None,
            None,
        );
        assert_eq!(d.status, 204, "{d:?}");
        let t = ws_a.post(&turns, &json!({"text": "Hello?"}));
        assert_eq!(t.status, 404, "{t:?}");
        // The file B exported before is a session of the pack.
        let path = dir.join(format!("{id}.jsonl"));
        std::fs::write(&path, &file).unwrap();
        let (code, out, err) = super::common::run(&[
            "check",
            package().0.to_str().unwrap(),
            path.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{out}{err}");
    }
}

/// `cache_session_bytes` bounds the session files' bytes the live
/// sessions hold together (docs/server.md "Start"): with a bound of one
/// byte, starting a second session drops the first, idle one (one live
/// session, not two), and the dropped session still plays — rebuilt from
/// the database. Without the bound both stay live.
#[test]
fn live_sessions_are_bounded_by_their_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    for db in backends(dir, "live_sessions_are_bounded_by_their_bytes") {
        for (bound, live_after) in [(Some(1u64), 1), (None, 2)] {
            let config = dir.join("bytes.json");
            let json = match bound {
                Some(b) => json!({ "cache_session_bytes": b }),
                None => json!({}),
            };
            std::fs::write(&config, json.to_string()).unwrap();
            let server = Server::try_start(
                &db,
                &["--config".as_ref(), config.as_os_str()],
                std::process::Stdio::null(),
            )
            .unwrap_or_else(|(line, _)| panic!("did not start: {line}"));
            let (ws, _) = workspace(&server, &db, "bytes");
            let pack = upload(&ws);
            let (first, _) = create(&ws, &pack, 1);
            let (_second, _) = create(&ws, &pack, 2);
            assert_eq!(
                metric(&server, "troupe_open_sessions"),
                live_after,
                "{bound:?}"
            );
            let rebuilds = metric(&server, "troupe_session_rebuilds_total");
            let turn = ws.post(
                &format!("/sessions/{first}/turns"),
                &json!({"text": "Hello! What's your best price?"}),
            );
            assert_eq!(turn.status, 200, "{turn:?}");
            let rebuilt = metric(&server, "troupe_session_rebuilds_total") - rebuilds;
            assert_eq!(rebuilt, if bound.is_some() { 1 } else { 0 }, "{bound:?}");
            server.kill();
        }
    }
}

//! Breaker: a turn of an uploaded pack may cost a lot of work (each
//! condition within its budget, Format 11.6, but many of them); such a
//! turn ran on one of tokio's async workers, so as many costly turns as
//! the machine has cores stalled every other session, `/healthz`, and the
//! request's own time limit (docs/server.md "Turns off the async
//! workers"). Expected: while costly turns run, `/healthz` and another
//! session's turn answer without waiting for them, and the time limit
//! answers `503 TIMEOUT`, and SIGTERM does not wait for the timed-out turn.
//!
//! No fixed time is asserted: the bound is derived from what the costly
//! turn itself takes, measured at two pack sizes.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::server_support::*;

/// A bundle whose every message recomputes `n` derived variables, each a
/// comprehension of 90,300 budget units (within the 100,000 of one
/// evaluation; the derived variables of a message share no budget, Format
/// 11.6), from the first turn on (`turn >= 1`: the session's start costs
/// nothing).
fn costly_bundle(n: usize) -> Value {
    let xs: Vec<i64> = (0..300).collect();
    let mut variables = vec![json!({"id": "xs", "type": "list(int)", "default": xs})];
    variables.extend((0..n).map(|i| {
        json!({"id": format!("d{i}"), "type": "bool",
               "derived": "turn >= 1 && state.xs.exists(x, state.xs.exists(y, x + y < -turn))"})
    }));
    json!({"troupe": "0.1", "kind": "bundle",
        "characters": [{"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult"}],
        "scenarios": [{"id": "s", "name": "S",
            "cast": [{"character": "kai"}, {"seat": "guest", "player": true}],
            "openings": [{"id": "o", "text": "Hello."}],
            "variables": variables}]})
}

fn upload_bundle(ws: &Ws, bundle: &Value) -> String {
    let a = call(
        "PUT",
        &ws.url("/packs"),
        Some(&ws.token),
        Some(bundle.to_string().as_bytes()),
        None,
    );
    assert!(a.status == 201 || a.status == 200, "{a:?}");
    a.json()["hash"].as_str().unwrap().to_string()
}

/// One turn of a new session of `pack`: its answer and how long it took.
fn timed_turn(ws: &Ws, pack: &str) -> (Answer, Duration) {
    let (id, _) = create(ws, pack, 1);
    let url = ws.url(&format!("/sessions/{id}/turns"));
    let body = json!({"text": "Hello there."}).to_string();
    let t = Instant::now();
    let a = call("POST", &url, Some(&ws.token), Some(body.as_bytes()), None);
    (a, t.elapsed())
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

#[test]
fn costly_turns_hold_no_async_worker() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Backend::Sqlite(tmp.path().join("troupe.db"));
    let server = Server::start(&db);
    let (ws, _) = workspace(&server, &db, "turn-cost");
    let small = upload_bundle(&ws, &costly_bundle(4));
    let large = upload_bundle(&ws, &costly_bundle(16));
    let ordinary = upload(&ws);
    // Warm: each pack opened and compiled once.
    for p in [&small, &large, &ordinary] {
        assert_eq!(timed_turn(&ws, p).0.status, 200);
    }
    let (_, t_small) = timed_turn(&ws, &small);
    let (a, t_large) = timed_turn(&ws, &large);
    assert_eq!(a.status, 200, "{a:?}");
    // The turn's work grows with the pack (four times the conditions).
    assert!(
        t_large > t_small * 2,
        "a turn of 16 costly conditions ({t_large:?}) is not slower than one of 4 ({t_small:?})"
    );
    // As many costly turns at once as there are async workers (one per
    // core), each on its own session.
    let busy: Vec<_> = (0..cores())
        .map(|_| {
            let (ws, large) = (
                Ws {
                    base: ws.base.clone(),
                    token: ws.token.clone(),
                },
                large.clone(),
            );
            std::thread::spawn(move || timed_turn(&ws, &large))
        })
        .collect();
    // Let them start (the session is created first), then ask.
    std::thread::sleep(t_large / 4);
    let t = Instant::now();
    let health = call("GET", &format!("{}/healthz", server.base), None, None, None);
    let t_health = t.elapsed();
    let (turn, t_turn) = timed_turn(&ws, &ordinary);
    let mut slowest = Duration::ZERO;
    for b in busy {
        let (a, d) = b.join().unwrap();
        assert_eq!(a.status, 200, "{a:?}");
        slowest = slowest.max(d);
    }
    assert_eq!(health.status, 200, "{health:?}");
    assert_eq!(turn.status, 200, "{turn:?}");
    // Had a costly turn held a worker, these would have waited for it:
    // about three quarters of a costly turn.
    let bound = t_large / 2;
    assert!(
        t_health < bound && t_turn < bound,
        "/healthz took {t_health:?} and an ordinary turn {t_turn:?} while {} costly turns ran \
         (one alone: {t_large:?}, the slowest of them: {slowest:?})",
        cores()
    );
    server.kill();
}

#[test]
fn the_time_limit_answers_a_costly_turn() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config.json");
    std::fs::write(&config, json!({"request_timeout_secs": 1}).to_string()).unwrap();
    let db = Backend::Sqlite(tmp.path().join("troupe.db"));
    let args = [std::ffi::OsStr::new("--config"), config.as_os_str()];
    let server = Server::try_start(&db, &args, std::process::Stdio::null())
        .unwrap_or_else(|(line, _)| panic!("troupe serve did not start: {line:?}"));
    let (ws, _) = workspace(&server, &db, "turn-limit");
    // What one costly condition costs here, from a turn of four.
    let small = upload_bundle(&ws, &costly_bundle(4));
    timed_turn(&ws, &small);
    let (a, t_small) = timed_turn(&ws, &small);
    assert_eq!(a.status, 200, "{a:?}");
    // A pack whose turn takes about 6 s: six times the limit.
    let per_one = t_small.as_secs_f64() / 4.0;
    let n = ((6.0 / per_one).ceil() as usize).clamp(8, 40_000);
    let large = upload_bundle(&ws, &costly_bundle(n));
    let (a, took) = timed_turn(&ws, &large);
    assert_eq!(a.status, 503, "{a:?} after {took:?} ({n} conditions)");
    assert_eq!(a.json()["code"], "TIMEOUT", "{a:?}");
    let expected = Duration::from_secs_f64(per_one * n as f64);
    assert!(
        took < Duration::from_secs(1) + (expected - Duration::from_secs(1).min(expected)) / 2,
        "the 1 s limit answered after {took:?}; the turn takes about {expected:?}"
    );
    // The server still answers.
    let health = call("GET", &format!("{}/healthz", server.base), None, None, None);
    assert_eq!(health.status, 200, "{health:?}");
    // SIGTERM does not wait for the timed-out turn, which still runs: the
    // process exits before the turn could have ended.
    let mut server = server;
    let t = Instant::now();
    // SAFETY: sending a signal to the child this test started.
    unsafe {
        libc::kill(server.child.id() as i32, libc::SIGTERM);
    }
    let status = server.child.wait().unwrap();
    let exit = t.elapsed();
    assert!(status.success(), "{status:?}");
    let left = expected.saturating_sub(took);
    assert!(
        exit < left / 2 + Duration::from_secs(1),
        "SIGTERM took {exit:?} to exit; the timed-out turn had about {left:?} to run"
    );
}

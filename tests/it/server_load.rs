//! Load and fault tests of `troupe serve` (issue 39 item 8; docs/server.md
//! "Tests"), bounded and on loopback only: 64 clients × 200 turns on one
//! server over SQLite, and on two servers sharing PostgreSQL; a SIGKILL in
//! the middle of a load and a restart; PostgreSQL stopped in the middle of
//! a load and started again (only on the throwaway cluster of
//! `scripts/with-postgres.sh`, which says how to stop and start it).
//!
//! Every load checks the same things: no answer but 200, the expected 409s
//! (two clients share each session, so they race) and, during a fault, 503
//! or a lost connection; every acknowledged turn stored, once (at most one
//! more per answer the fault swallowed); every stored session passing
//! `troupe check` — no half turn.

use crate::common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::server_support::*;
use serde_json::{json, Value};

/// What a load did, per session and overall.
#[derive(Debug, Default)]
struct Load {
    /// Turns answered 200, per session.
    acked: HashMap<String, usize>,
    /// Turns whose answer was lost or 503, per session: each may or may
    /// not be stored.
    unsure: HashMap<String, usize>,
    conflicts: usize,
    ended: usize,
    unavailable: usize,
}

impl Load {
    fn merge(&mut self, other: Load) {
        for (k, v) in other.acked {
            *self.acked.entry(k).or_default() += v;
        }
        for (k, v) in other.unsure {
            *self.unsure.entry(k).or_default() += v;
        }
        self.conflicts += other.conflicts;
        self.ended += other.ended;
        self.unavailable += other.unavailable;
    }
    fn total(&self) -> usize {
        self.acked.values().sum()
    }
}

/// How a load runs.
struct Plan {
    clients: usize,
    turns: usize,
    /// 503s and lost connections are expected (a fault is injected).
    faults: bool,
    /// Set to end the load early.
    stop: Arc<AtomicBool>,
    /// Turns acknowledged so far (all clients): a fault waits for it.
    acknowledged: Arc<AtomicUsize>,
}

/// Runs `plan.clients` clients, client `c` on server `wss[c % len]`, two
/// clients per session (sessions created up front; a client whose session
/// ends starts one of its own), each trying `plan.turns` turns with the
/// `expected` message it last saw.
fn drive(wss: &[Arc<Ws>], pack: &str, plan: &Plan) -> Load {
    let pairs = plan.clients.div_ceil(2);
    let sessions: Vec<(String, Value)> = (0..pairs)
        .map(|n| create(&wss[n % wss.len()], pack, n as u64))
        .collect();
    let handles: Vec<_> = (0..plan.clients)
        .map(|c| {
            let ws = wss[c % wss.len()].clone();
            let pack = pack.to_string();
            let (mut id, doc) = sessions[c / 2].clone();
            let mut current = doc["current"].clone();
            let (turns, faults, stop) = (plan.turns, plan.faults, plan.stop.clone());
            let acknowledged = plan.acknowledged.clone();
            std::thread::spawn(move || {
                let mut load = Load::default();
                let mut fresh = 0u64;
                for t in 0..turns {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let body = json!({"text": format!("client {c} turn {t}"), "expected": current})
                        .to_string();
                    let url = ws.url(&format!("/sessions/{id}/turns"));
                    let a = match try_call(
                        "POST",
                        &url,
                        Some(&ws.token),
                        Some(body.as_bytes()),
                        None,
                    ) {
                        Ok(a) => a,
                        Err(e) => {
                            // The server is gone (killed): this turn may
                            // or may not have been committed; stop here.
                            assert!(faults, "client {c}: {e}");
                            *load.unsure.entry(id.clone()).or_default() += 1;
                            load.unavailable += 1;
                            break;
                        }
                    };
                    match a.status {
                        200 => {
                            acknowledged.fetch_add(1, Ordering::SeqCst);
                            *load.acked.entry(id.clone()).or_default() += 1;
                            current = a.last_message();
                        }
                        409 if a.json()["code"] == "CONFLICT" => {
                            load.conflicts += 1;
                            current = a.json()["current"].clone();
                        }
                        409 => {
                            // The session ended: go on in a new one.
                            load.ended += 1;
                            let seed = 1_000_000 + c as u64 * 10_000 + fresh;
                            fresh += 1;
                            let start = json!({"pack": pack, "seed": seed}).to_string();
                            match try_call(
                                "POST",
                                &ws.url("/sessions"),
                                Some(&ws.token),
                                Some(start.as_bytes()),
                                None,
                            ) {
                                Ok(a) if a.status == 201 => {
                                    let doc = a.json();
                                    id = doc["id"].as_str().unwrap().to_string();
                                    current = doc["current"].clone();
                                }
                                Ok(a) if faults && a.status == 503 => load.unavailable += 1,
                                Ok(a) => panic!("client {c}: creating a session: {a:?}"),
                                Err(e) => assert!(faults, "client {c}: {e}"),
                            }
                        }
                        503 if faults => {
                            assert_eq!(a.content_type, "application/problem+json", "{a:?}");
                            *load.unsure.entry(id.clone()).or_default() += 1;
                            load.unavailable += 1;
                            current = Value::Null;
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        _ => panic!("client {c}: {a:?}"),
                    }
                }
                load
            })
        })
        .collect();
    let mut load = Load::default();
    for h in handles {
        load.merge(h.join().unwrap());
    }
    load
}

/// Every session the load touched is stored with each acknowledged turn
/// once (up to one more per unsure answer), and all of them pass `troupe
/// check` together.
fn verify(ws: &Ws, load: &Load, dir: &std::path::Path, what: &str) {
    let mut files = Vec::new();
    let ids: std::collections::BTreeSet<&String> =
        load.acked.keys().chain(load.unsure.keys()).collect();
    for id in ids {
        let a = ws.get(&format!("/sessions/{id}.jsonl"));
        assert_eq!(a.status, 200, "{what}: {a:?}");
        let stored = a
            .body
            .lines()
            .filter(|l| l.contains(r#""author":"player""#))
            .count();
        let acked = load.acked.get(id).copied().unwrap_or(0);
        let unsure = load.unsure.get(id).copied().unwrap_or(0);
        assert!(
            stored >= acked && stored <= acked + unsure,
            "{what}: session {id}: {acked} acknowledged (+{unsure} unsure), {stored} stored"
        );
        let file = dir.join(format!("{id}.jsonl"));
        std::fs::write(&file, &a.body).unwrap();
        files.push(file.display().to_string());
    }
    let mut args = vec!["check", package().0.to_str().unwrap()];
    args.extend(files.iter().map(String::as_str));
    let (code, out, err) = common::run(&args);
    assert_eq!(code, 0, "{what}: {out}{err}");
}

/// Turns each of the 64 clients tries (the issue's 64 × 200; about 25 s
/// in a debug build on SQLite here).
const TURNS: usize = 200;

#[test]
fn sixty_four_clients_on_one_sqlite_server() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Backend::Sqlite(tmp.path().join("load.db"));
    let server = Server::start(&db);
    let (ws, _) = workspace(&server, &db, "load64");
    let pack = upload(&ws);
    let ws = Arc::new(ws);
    let started = Instant::now();
    let plan = Plan {
        clients: 64,
        turns: TURNS,
        faults: false,
        stop: Arc::default(),
        acknowledged: Arc::default(),
    };
    let load = drive(std::slice::from_ref(&ws), &pack, &plan);
    println!(
        "64 x {} on SQLite: {} acknowledged, {} conflicts, {} ended, in {:.1} s",
        plan.turns,
        load.total(),
        load.conflicts,
        load.ended,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(
        load.total() + load.conflicts + load.ended,
        64 * plan.turns,
        "every attempt answered 200 or 409"
    );
    assert!(load.conflicts > 0, "two clients per session race: {load:?}");
    verify(&ws, &load, tmp.path(), "sqlite");
}

#[test]
fn sixty_four_clients_on_two_servers_sharing_postgresql() {
    let Some(url) = postgres("load_two_servers") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = Backend::Postgres(url);
    let one = Server::start(&db);
    let two = Server::start(&db);
    let (a, name) = workspace(&one, &db, "load2");
    let b = Ws {
        base: format!("{}/api/v1/workspaces/{name}", two.base),
        token: a.token.clone(),
    };
    let pack = upload(&a);
    let plan = Plan {
        clients: 64,
        turns: TURNS,
        faults: false,
        stop: Arc::default(),
        acknowledged: Arc::default(),
    };
    // Client c plays on server c % 2, and clients 2k and 2k+1 share a
    // session: every pair races across the two processes.
    let wss = [Arc::new(a), Arc::new(b)];
    let load = drive(&wss, &pack, &plan);
    println!(
        "64 x {} on two servers, PostgreSQL: {} acknowledged, {} conflicts, {} ended",
        plan.turns,
        load.total(),
        load.conflicts,
        load.ended
    );
    assert_eq!(load.total() + load.conflicts + load.ended, 64 * plan.turns);
    assert!(load.conflicts > 0, "{load:?}");
    verify(&wss[0], &load, tmp.path(), "postgres");
    // Both servers export the same bytes.
    for id in load.acked.keys().take(8) {
        let path = format!("/sessions/{id}.jsonl");
        assert_eq!(wss[0].get(&path).body, wss[1].get(&path).body);
    }
}

/// The SIGKILL test kills the server once this many turns were acknowledged,
/// waiting at most `KILL_WAIT` for them.
const KILL_AFTER: usize = 64;
const KILL_WAIT: Duration = Duration::from_secs(120);

#[test]
fn sigkill_mid_load_then_restart_keeps_every_acknowledged_turn() {
    let tmp = tempfile::tempdir().unwrap();
    for db in backends(tmp.path(), "load_sigkill") {
        let server = Server::start(&db);
        let (ws, name) = workspace(&server, &db, "loadkill");
        let pack = upload(&ws);
        let ws = Arc::new(ws);
        let plan = Plan {
            clients: 16,
            turns: 10_000,
            faults: true,
            stop: Arc::default(),
            acknowledged: Arc::default(),
        };
        let (stop, acknowledged) = (plan.stop.clone(), plan.acknowledged.clone());
        // The kill comes once the load is under way — KILL_AFTER turns
        // acknowledged — not after a fixed time, which a loaded machine
        // may spend creating the sessions; the wait is bounded.
        let killer = std::thread::spawn(move || {
            let deadline = Instant::now() + KILL_WAIT;
            while acknowledged.load(Ordering::SeqCst) < KILL_AFTER && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            let before = acknowledged.load(Ordering::SeqCst);
            server.kill(); // SIGKILL, turns in flight
            std::thread::sleep(Duration::from_millis(200));
            stop.store(true, Ordering::SeqCst);
            before
        });
        let load = drive(std::slice::from_ref(&ws), &pack, &plan);
        let before = killer.join().unwrap();
        assert!(
            before >= KILL_AFTER,
            "{db:?}: only {before} turns acknowledged in {KILL_WAIT:?} of load, fewer than the {KILL_AFTER} the kill waits for: the server answered too slowly to be killed mid-load"
        );
        assert!(
            load.unavailable > 0,
            "{db:?}: no client saw the kill: the load ended before it ({load:?})"
        );
        assert!(
            load.total() >= before,
            "{db:?}: {} acknowledged in all, {before} before the kill",
            load.total()
        );
        let server = Server::start(&db);
        let ws = Ws {
            base: format!("{}/api/v1/workspaces/{name}", server.base),
            token: ws.token.clone(),
        };
        println!(
            "{db:?}: {} turns acknowledged before the SIGKILL, {} answers lost",
            load.total(),
            load.unavailable
        );
        verify(&ws, &load, tmp.path(), &format!("{db:?} after SIGKILL"));
    }
}

#[test]
fn postgresql_stopped_mid_load_gives_503s_then_recovers() {
    // No other test of the binary may use PostgreSQL during the outage
    // (server_support's PG lock; the others take their share in postgres()).
    let _pg = pg_alone();
    let Some(url) = postgres("load_pg_outage") else {
        return;
    };
    let (Ok(stop_pg), Ok(start_pg)) = (
        std::env::var("TROUPE_PG_STOP"),
        std::env::var("TROUPE_PG_START"),
    ) else {
        println!(
            "load_pg_outage: did not run: the PostgreSQL at TROUPE_PG_URL is not this test's to stop (scripts/with-postgres.sh sets TROUPE_PG_STOP and TROUPE_PG_START for its own cluster)"
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = Backend::Postgres(url);
    let server = Server::start(&db);
    let (ws, _) = workspace(&server, &db, "outage");
    let pack = upload(&ws);
    let ws = Arc::new(ws);
    let plan = Plan {
        clients: 8,
        turns: 10_000,
        faults: true,
        stop: Arc::default(),
        acknowledged: Arc::default(),
    };
    let (stop, acknowledged) = (plan.stop.clone(), plan.acknowledged.clone());
    let probe = ws.clone();
    // Each wait is for what it is about (the load under way, readiness down,
    // up, turns acknowledged again), bounded, never a fixed time a loaded
    // machine may spend elsewhere; only the outage itself lasts a set time.
    let wait_for = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !done() {
            assert!(Instant::now() < deadline, "{what}: not within 120 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let fault = std::thread::spawn(move || {
        let acked = || acknowledged.load(Ordering::SeqCst);
        wait_for("8 turns acknowledged before the outage", &|| acked() >= 8);
        let st = std::process::Command::new(&stop_pg).output().unwrap();
        assert!(st.status.success(), "{st:?}");
        // While it is down: readiness says so.
        let root = probe.base.split("/api/").next().unwrap().to_string();
        let readyz = || call("GET", &format!("{root}/readyz"), None, None, None);
        let ready = std::cell::RefCell::new(None);
        wait_for("readyz 503 while the database is down", &|| {
            let r = readyz();
            let down = r.status == 503;
            *ready.borrow_mut() = Some(r);
            down
        });
        std::thread::sleep(Duration::from_millis(1000));
        let st = std::process::Command::new(&start_pg).output().unwrap();
        assert!(st.status.success(), "{st:?}");
        // Back: ready again, and turns are acknowledged again.
        wait_for("readyz 200 after the restart", &|| readyz().status == 200);
        let after = acked();
        wait_for("8 turns acknowledged after the outage", &|| {
            acked() >= after + 8
        });
        stop.store(true, Ordering::SeqCst);
        ready.into_inner().expect("a readyz answer")
    });
    let load = drive(std::slice::from_ref(&ws), &pack, &plan);
    let ready = fault.join().unwrap();
    println!(
        "outage: {} acknowledged, {} answered 503 or lost, {} conflicts",
        load.total(),
        load.unavailable,
        load.conflicts
    );
    assert_eq!(
        ready.status, 503,
        "readyz while the database is down: {ready:?}"
    );
    assert!(load.unavailable > 0, "the outage was seen: {load:?}");
    // Recovery: a new session plays after the outage, and everything
    // acknowledged before, during and after it is stored.
    let (id, doc) = create(&ws, &pack, 4242);
    let t = ws.post(
        &format!("/sessions/{id}/turns"),
        &json!({"text": "After the outage.", "expected": doc["current"]}),
    );
    assert_eq!(t.status, 200, "{t:?}");
    verify(&ws, &load, tmp.path(), "postgres outage");
}

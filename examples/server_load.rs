//! Throughput of `troupe serve` over loopback HTTP (docs/performance.md
//! "Server", docs/server.md "Sizing"): starts the given `troupe` binary
//! (build it with `cargo build --release`) on a free port against a fresh
//! database, uploads the everyday-negotiation pack,
//! and drives it with 1, 8 and 64 clients, each playing its own sessions
//! turn after turn (a new session when one ends). Prints acknowledged
//! turns per second, the p50/p99 latency of a turn as the clients saw
//! it, and the server's CPU time per acknowledged turn (`/proc`; steadier
//! than turns/s when other work shares the machine).
//!
//! ```sh
//! cargo build --release
//! cargo run --example server_load -- --bin target/release/troupe --seconds 10
//! scripts/with-postgres.sh sh -c 'cargo run --example server_load -- \
//!     --bin target/release/troupe --database "$TROUPE_PG_URL"'
//! ```
//!
//! Every run starts from an empty database, so that runs compare: a
//! SQLite `--database FILE` that exists is refused (exit 2; delete it and
//! its `-wal` and `-shm`, or name a new file); a `postgres://` URL names
//! the server, not the database: the example creates a database of its
//! own there (`CREATE DATABASE troupe_load_PID_SECS`, so the URL's role
//! needs `CREATEDB`), runs in it, and drops it at the end (`--keep`
//! leaves it, and prints its URL, for reading its size afterwards).
//!
//! Flags: `--bin PATH` (default `target/release/troupe`), `--database
//! FILE|postgres://…` (default a new SQLite file in a temporary folder;
//! a `/dev/shm/…` file measures without fsync), `--clients 1,8,64`,
//! `--seconds N` (per client count, default 10), `--servers N` (default 1:
//! N servers on the one database, PostgreSQL for more than one), `--route
//! sticky|alternate` (with several servers: each client's sessions on one
//! server, client c on server c mod N — the default; or each turn on the
//! next server, so every turn catches up with the one before it),
//! `--idempotency` (an `Idempotency-Key` on every turn, each its own),
//! `--config FILE` (given to every server: e.g. `{"pg_connections": 16}`),
//! `--turns N` (instead of `--seconds`: N acknowledged turns per client
//! count, shared out among the clients, so that two runs do the same work
//! — what an instruction count of the server under `valgrind
//! --tool=callgrind` needs; the servers are then stopped with SIGTERM and
//! waited for, so that a profiler wrapping them writes its output),
//! `--keep` (PostgreSQL: keep the run's database), `--client-threads N`
//! (default 1). On PostgreSQL each row
//! also gives the transactions committed per acknowledged turn
//! (`pg_stat_database.xact_commit` of the run's database, every kind:
//! reads, session starts and turns).
//!
//! The clients are tasks on one small tokio runtime (one thread unless
//! `--client-threads` says more), each with its own keep-alive HTTP/1.1
//! connection (hyper's client), reading a turn's last message from its
//! `troupe-current` header rather than parsing the body: the measuring
//! tool should not take half of the machine it measures (until Run AR a
//! blocking thread per client through ureq cost about as much CPU per
//! turn as the server). Each row ends with the client's own CPU time per
//! acknowledged turn (`/proc/self/stat`, every thread of this process).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

struct Opts {
    bin: String,
    database: Option<String>,
    clients: Vec<usize>,
    seconds: u64,
    servers: usize,
    alternate: bool,
    idempotency: bool,
    config: Option<String>,
    keep: bool,
    turns: Option<u64>,
    client_threads: usize,
}

fn opts() -> Opts {
    let mut o = Opts {
        bin: "target/release/troupe".into(),
        database: None,
        clients: vec![1, 8, 64],
        seconds: 10,
        servers: 1,
        alternate: false,
        idempotency: false,
        config: None,
        keep: false,
        turns: None,
        client_threads: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut v = || args.next().unwrap_or_else(|| panic!("{a} takes a value"));
        match a.as_str() {
            "--bin" => o.bin = v(),
            "--database" => o.database = Some(v()),
            "--clients" => {
                o.clients = v()
                    .split(',')
                    .map(|n| n.parse().expect("--clients 1,8,64"))
                    .collect()
            }
            "--seconds" => o.seconds = v().parse().expect("--seconds N"),
            "--servers" => o.servers = v().parse().expect("--servers N"),
            "--route" => o.alternate = v() == "alternate",
            "--idempotency" => o.idempotency = true,
            "--config" => o.config = Some(v()),
            "--keep" => o.keep = true,
            "--turns" => o.turns = Some(v().parse().expect("--turns N")),
            "--client-threads" => o.client_threads = v().parse().expect("--client-threads N"),
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => {
                eprintln!("server_load: unknown flag {a}\n{USAGE}");
                std::process::exit(2);
            }
        }
    }
    o
}

/// The flags, as `--help` prints them (the module docs say what each does).
const USAGE: &str = "usage: server_load [--bin PATH] [--database FILE|postgres://…] \
[--clients 1,8,64] [--seconds N | --turns N] [--servers N] [--route sticky|alternate] \
[--idempotency] [--config FILE] [--keep] [--client-threads N]
(examples/server_load.rs's doc comment says what each does)";

/// The servers this run started: stopped and waited for when dropped, so
/// that a run that fails (a panic in the client) leaves no `troupe serve`
/// behind.
struct Servers(Vec<std::process::Child>);

impl std::ops::Deref for Servers {
    type Target = Vec<std::process::Child>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Servers {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        for server in &mut self.0 {
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

fn put(agent: &ureq::Agent, url: &str, token: &str, body: &[u8]) -> (u16, Value) {
    let mut r = agent
        .put(url)
        .header("Authorization", &format!("Bearer {token}"))
        .send(body)
        .unwrap_or_else(|e| panic!("PUT {url}: {e}"));
    let status = r.status().as_u16();
    let text = r.body_mut().read_to_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

const LINES: &[&str] = &[
    "Hello Marco! What's your best price?",
    "That's too much. I can offer 7,000.",
    "What about the service history?",
    "Let's meet in the middle.",
    "I need to think about it.",
];

/// One HTTP/1.1 keep-alive connection to a server: hyper's own client,
/// a task on the load client's small runtime (`--client-threads`), so
/// that the client costs little CPU beside the server it measures.
struct Conn {
    send: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    host: String,
}

impl Conn {
    /// Connects to `root` (`http://HOST:PORT`).
    async fn open(root: &str) -> Conn {
        let host = root.strip_prefix("http://").unwrap_or(root).to_string();
        let stream = tokio::net::TcpStream::connect(&host)
            .await
            .unwrap_or_else(|e| panic!("connect {host}: {e}"));
        let _ = stream.set_nodelay(true);
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap_or_else(|e| panic!("HTTP/1.1 with {host}: {e}"));
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Conn { send, host }
    }

    /// `POST path` with `body`: the status, the `troupe-current` header
    /// (a turn's answer names its last message there, so the body need
    /// not be parsed) and the body's bytes.
    async fn post(
        &mut self,
        path: &str,
        token: &str,
        body: String,
        key: Option<&str>,
    ) -> (u16, Option<String>, Bytes) {
        let mut r = hyper::Request::post(path)
            .header("host", &self.host)
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json");
        if let Some(k) = key {
            r = r.header("idempotency-key", k);
        }
        let req = r.body(Full::new(Bytes::from(body))).unwrap();
        let res = self
            .send
            .send_request(req)
            .await
            .unwrap_or_else(|e| panic!("POST {path}: {e}"));
        let status = res.status().as_u16();
        let current = res
            .headers()
            .get("troupe-current")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = res
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_else(|e| panic!("POST {path}: {e}"));
        (status, current, body)
    }
}

/// One client: its own sessions, turn after turn until `stop`; the
/// latency of every acknowledged turn.
/// `roots` are the servers (`http://HOST:PORT`), `ws` the workspace's
/// path: the client's sessions start on the first, and each turn goes to
/// the next one when there are several (a connection to each).
/// With `quota`, the client stops after that many acknowledged turns
/// instead (`--turns`).
#[allow(clippy::too_many_arguments)]
async fn client(
    roots: Vec<String>,
    ws: String,
    token: String,
    pack: String,
    c: usize,
    stop: Arc<AtomicBool>,
    keys: Option<String>,
    quota: Option<u64>,
) -> Vec<f64> {
    let mut conns = Vec::with_capacity(roots.len());
    for r in &roots {
        conns.push(Conn::open(r).await);
    }
    let mut took = Vec::new();
    let mut n = 0u64;
    let done = |took: &Vec<f64>| match quota {
        Some(q) => took.len() as u64 >= q,
        None => stop.load(Ordering::Relaxed),
    };
    while !done(&took) {
        let start = json!({"pack": pack, "seed": c as u64 * 1_000_000 + n}).to_string();
        let (s, _, body) = conns[0]
            .post(&format!("{ws}/sessions"), &token, start, None)
            .await;
        let doc: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        assert_eq!(s, 201, "create: {doc}");
        let id = doc["id"].as_str().unwrap().to_string();
        let mut current = doc["current"].clone();
        let path = format!("{ws}/sessions/{id}/turns");
        while !done(&took) {
            n += 1;
            let k = n as usize % conns.len();
            let body =
                json!({"text": LINES[n as usize % LINES.len()], "expected": current}).to_string();
            let t = Instant::now();
            // Unique in the workspace: the run's prefix, the client, the turn.
            let key = keys.as_ref().map(|run| format!("{run}-{c}-{n}"));
            let (s, last, body) = conns[k].post(&path, &token, body, key.as_deref()).await;
            let dt = t.elapsed().as_secs_f64();
            match s {
                200 => {
                    took.push(dt);
                    current = Value::String(last.expect("a turn's answer names its last message"));
                }
                409 => break, // the session ended: a new one
                _ => panic!("turn: {s} {}", String::from_utf8_lossy(&body)),
            }
        }
    }
    took
}

/// The runtime the clients run on: one thread (the default) or `threads`.
fn client_runtime(threads: usize) -> tokio::runtime::Runtime {
    if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(threads);
        b
    }
    .enable_all()
    .build()
    .unwrap()
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// The CPU time (user + system, seconds) process `pid` has used, from
/// `/proc/PID/stat` (0 where there is none): the server's cost per turn,
/// steadier than turns/s on a loaded machine. Session starts count too.
fn cpu_seconds(pid: u32) -> f64 {
    let (user, system) = cpu_split(pid);
    user + system
}

/// [`cpu_seconds`] as (user, system): how much of the server's CPU is the
/// kernel's (sockets, wake-ups, writes, fsync).
fn cpu_split(pid: u32) -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return (0.0, 0.0);
    };
    // After the `(comm)` field: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit(')').next().unwrap_or_default();
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // Clock ticks per second: 100 on Linux.
    (ticks(11) / 100.0, ticks(12) / 100.0)
}

/// Runs `f` on a runtime of its own (the example's few PostgreSQL
/// statements; the clients have theirs).
fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// `url` naming the database `name` instead of its own (its query kept);
/// `url` unchanged when it is not a URL (the server then refuses it).
fn with_database(url: &str, name: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            u.set_path(&format!("/{name}"));
            u.to_string()
        }
        Err(_) => url.to_string(),
    }
}

/// Runs `sql` on `url`'s database; the first column of its first row as
/// an integer, if any.
fn pg(url: &str, sql: &str) -> Result<Option<i64>, String> {
    use sqlx::{Connection, Row};
    block(async {
        let mut c = sqlx::PgConnection::connect(url)
            .await
            .map_err(|e| format!("cannot connect to PostgreSQL: {e}"))?;
        // The simple protocol: CREATE and DROP DATABASE refuse to run in
        // a transaction block.
        let rows = sqlx::raw_sql(sql)
            .fetch_all(&mut c)
            .await
            .map_err(|e| format!("{sql}: {e}"))?;
        let _ = c.close().await;
        Ok(rows.first().and_then(|r| r.try_get::<i64, _>(0).ok()))
    })
}

/// The transactions committed in database `name` so far (`0` when
/// unknown); the statistics are flushed first, as PostgreSQL 15 keeps
/// them per backend for a while.
fn xact_commit(admin: &str, name: &str) -> i64 {
    let _ = pg(admin, "SELECT 0::BIGINT FROM pg_stat_force_next_flush()");
    pg(
        admin,
        &format!("SELECT xact_commit FROM pg_stat_database WHERE datname = '{name}'"),
    )
    .ok()
    .flatten()
    .unwrap_or(0)
}

fn main() {
    let o = opts();
    let tmp = std::env::temp_dir().join(format!("troupe-server-load-{}", std::process::id()));
    // A fresh database for every run (the module docs): an existing SQLite
    // file is refused; on PostgreSQL a database of the run's own.
    let given = o.database.clone();
    let mut pg_run: Option<(String, String)> = None; // (admin URL, database)
    let database = match &given {
        Some(url) if url.starts_with("postgres") => {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            let name = format!("troupe_load_{}_{secs}", std::process::id());
            if let Err(e) = pg(url, &format!("CREATE DATABASE {name}")) {
                eprintln!("server_load: cannot create the run's database {name}: {e}");
                std::process::exit(2);
            }
            pg_run = Some((url.clone(), name.clone()));
            with_database(url, &name)
        }
        Some(file) => {
            if std::path::Path::new(file).exists() {
                eprintln!(
                    "server_load: {file} exists; every run starts from an empty database so that runs compare: delete it (and {file}-wal, {file}-shm) or name a new file"
                );
                std::process::exit(2);
            }
            file.clone()
        }
        None => tmp.join("load.db").display().to_string(),
    };
    std::fs::create_dir_all(&tmp).unwrap();
    let ws = format!("load{}", std::process::id());
    let out = Command::new(&o.bin)
        .args([
            "serve",
            "token",
            "create",
            "--workspace",
            &ws,
            "--database",
            &database,
        ])
        .output()
        .expect("runs --bin");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let mut servers = Servers(Vec::new());
    let mut roots = Vec::new();
    for _ in 0..o.servers.max(1) {
        let mut serve = Command::new(&o.bin);
        serve.args(["serve", "--listen", "127.0.0.1:0", "--database", &database]);
        if let Some(config) = &o.config {
            serve.args(["--config", config]);
        }
        let mut server = serve
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(server.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        roots.push(
            line.trim()
                .strip_prefix("listening on ")
                .expect("serve starts")
                .to_string(),
        );
        servers.push(server);
    }
    let ws_path = format!("/api/v1/workspaces/{ws}");
    let base = format!("{}{ws_path}", roots[0]);
    let pkg = tmp.join("negotiation.troupe");
    let st = Command::new(&o.bin)
        .args(["compile", "examples/packs/everyday-negotiation", "--out"])
        .arg(&pkg)
        .status()
        .unwrap();
    assert!(st.success());
    let (s, doc) = put(
        &agent(),
        &format!("{base}/packs"),
        &token,
        &std::fs::read(&pkg).unwrap(),
    );
    assert!(s == 201 || s == 200, "{doc}");
    let pack = doc["hash"].as_str().unwrap().to_string();
    let backend = if database.starts_with("postgres") {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    let pids: Vec<u32> = servers.iter().map(|s| s.id()).collect();
    println!(
        "{} × troupe serve ({}, pid {pids:?}{}) on {backend} ({database}), {} s per run{}{}",
        servers.len(),
        o.bin,
        o.config
            .as_ref()
            .map(|c| format!(
                ", --config {c}: {}",
                std::fs::read_to_string(c).unwrap_or_default().trim()
            ))
            .unwrap_or_default(),
        o.seconds,
        match (servers.len(), o.alternate) {
            (1, _) => "",
            (_, false) => ", each client's sessions on one server",
            (_, true) => ", each turn on the next server",
        },
        if o.idempotency {
            ", an Idempotency-Key on every turn"
        } else {
            ""
        }
    );
    let cpu_all = || pids.iter().map(|&p| cpu_seconds(p)).sum::<f64>();
    let xacts = || {
        pg_run
            .as_ref()
            .map(|(admin, name)| xact_commit(admin, name))
    };
    println!("| clients | turns | turns/s | p50 ms | p99 ms | server CPU µs/turn | load | PG xact/turn | client CPU µs/turn |");
    println!("|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    let rt = client_runtime(o.client_threads);
    let me = std::process::id();
    for &n in &o.clients {
        let load = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| l.split_whitespace().next().map(str::to_string))
            .unwrap_or_default();
        let xact_before = xacts();
        let cpu_before = cpu_all();
        let client_before = cpu_seconds(me);
        let stop = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let mut all: Vec<f64> = rt.block_on(async {
            let handles: Vec<_> = (0..n)
                .map(|c| {
                    // Client c starts on server c mod N; with `alternate` it
                    // goes round all of them from there.
                    let k = roots.len();
                    let mine: Vec<String> = if o.alternate {
                        (0..k).map(|i| roots[(c + i) % k].clone()).collect()
                    } else {
                        vec![roots[c % k].clone()]
                    };
                    let (token, pack, stop) = (token.clone(), pack.clone(), stop.clone());
                    let keys = o.idempotency.then(|| format!("run{n}"));
                    // `--turns`: client c's share of them.
                    let quota = o
                        .turns
                        .map(|t| t / n as u64 + u64::from((c as u64) < t % n as u64));
                    tokio::spawn(client(
                        mine,
                        ws_path.clone(),
                        token,
                        pack,
                        c,
                        stop,
                        keys,
                        quota,
                    ))
                })
                .collect();
            if o.turns.is_none() {
                tokio::time::sleep(Duration::from_secs(o.seconds)).await;
                stop.store(true, Ordering::Relaxed);
            }
            let mut all = Vec::new();
            for h in handles {
                all.extend(h.await.unwrap());
            }
            all
        });
        let secs = started.elapsed().as_secs_f64();
        let cpu = cpu_all() - cpu_before;
        let client_cpu = cpu_seconds(me) - client_before;
        let per_turn = match (xact_before, xacts()) {
            (Some(a), Some(b)) => format!("{:.2}", (b - a) as f64 / all.len().max(1) as f64),
            _ => "–".to_string(),
        };
        all.sort_by(f64::total_cmp);
        println!(
            "| {n} | {} | {:.0} | {:.2} | {:.2} | {:.0} | {load} | {per_turn} | {:.0} |",
            all.len(),
            all.len() as f64 / secs,
            pct(&all, 0.50) * 1e3,
            pct(&all, 0.99) * 1e3,
            cpu * 1e6 / all.len().max(1) as f64,
            client_cpu * 1e6 / all.len().max(1) as f64
        );
    }
    // Memory: each server's resident set and the live sessions it holds;
    // how its live sessions were built.
    for (root, server) in roots.iter().zip(servers.iter_mut()) {
        let metrics = agent()
            .get(&format!("{root}/metrics"))
            .call()
            .ok()
            .and_then(|mut r| r.body_mut().read_to_string().ok())
            .unwrap_or_default();
        let metric = |name: &str| {
            metrics
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{name} ")).map(str::to_string))
                .unwrap_or_default()
        };
        let rss = std::fs::read_to_string(format!("/proc/{}/status", server.id()))
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("VmRSS:").map(|v| v.trim().to_string()))
            })
            .unwrap_or_default();
        // Inside the server (the handler, from the body read to the
        // commit): the share of all its turns over 25 and 50 ms.
        let count: f64 = metric("troupe_turn_seconds_count").parse().unwrap_or(0.0);
        let over = |le: &str| {
            let within: f64 = metric(&format!("troupe_turn_seconds_bucket{{le=\"{le}\"}}"))
                .parse()
                .unwrap_or(0.0);
            100.0 * (count - within) / count.max(1.0)
        };
        let (user, system) = cpu_split(server.id());
        println!(
            "server {} at the end: {} live sessions, resident {rss}; {} rebuilds, {} catch-ups, {} messages stepped for them; of its {count} turns (all runs) {:.2}% took over 25 ms and {:.2}% over 50 ms inside the server; its CPU (all runs, start-up included) {user:.2} s user, {system:.2} s system",
            server.id(),
            metric("troupe_open_sessions"),
            metric("troupe_session_rebuilds_total"),
            metric("troupe_session_catch_ups_total"),
            metric("troupe_session_messages_stepped_total"),
            over("0.025"),
            over("0.05"),
        );
        if o.turns.is_some() {
            // SIGTERM: a graceful stop, so that a profiler wrapping the
            // server (`--bin` a script that execs valgrind) writes its
            // output; SIGKILL after a minute.
            #[cfg(unix)]
            // SAFETY: kill(2) on the PID of a child not yet waited for.
            unsafe {
                libc::kill(server.id() as libc::pid_t, libc::SIGTERM);
            }
            let until = Instant::now() + Duration::from_secs(60);
            while Instant::now() < until && matches!(server.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = server.kill();
        let _ = server.wait();
    }
    let _ = std::fs::remove_dir_all(&tmp);
    if let Some((admin, name)) = pg_run {
        if o.keep {
            println!("kept the run's database: {database}");
        } else if let Err(e) = pg(&admin, &format!("DROP DATABASE {name} WITH (FORCE)")) {
            eprintln!("server_load: could not drop the run's database {name}: {e}");
        }
    }
}

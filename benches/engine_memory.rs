//! Memory of the engine per message (docs/performance.md, "Engine"): the
//! engine's own estimate of its heap ([`Engine::memory_estimate`]) and the
//! process's resident memory from /proc/self/status, for the generated
//! session streamed line by line (parse, lower, drop).
//!
//! `cargo bench --bench engine_memory`; `TROUPE_BENCH_MESSAGES` changes the size.

mod common;

use troupe::internals::compile::SessionCompiler;
use troupe::internals::engine::{Engine, DEFAULT_STRIDE};

fn status(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kb| kb * 1024)
}

fn mib(b: u64) -> f64 {
    b as f64 / 1048576.0
}

fn main() {
    let n: usize = std::env::var("TROUPE_BENCH_MESSAGES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let text = common::session_jsonl(n);
    let bundle = common::bundle();
    let mut lines = text.lines();
    let header: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let (story, ir) = troupe::internals::pipeline::compile_story_for(&bundle, Some(&header), None)
        .expect("story");
    let before = status("VmRSS:").unwrap_or(0);
    let mut c = SessionCompiler::new(&story, &ir, &header).expect("header");
    c.reserve(n);
    for l in lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        c.push(&v).expect("message");
    }
    let session = c.finish();
    let engine = Engine::new(ir, session, true, DEFAULT_STRIDE);
    let after = status("VmRSS:").unwrap_or(0);
    let est = engine.memory_estimate();
    println!(
        "messages: {n} (JSONL text: {:.1} MiB, {} bytes per line)",
        mib(text.len() as u64),
        text.len() / n
    );
    println!(
        "estimate: session {:.1} MiB, links {:.1} MiB, checkpoints {:.1} MiB ({} states, stride {})",
        mib(est.session as u64),
        mib(est.tree as u64),
        mib(est.checkpoints as u64),
        est.checkpoint_count,
        engine.stride()
    );
    let total = est.session + est.tree + est.checkpoints;
    println!("estimated engine bytes per message: {}", total / n);
    if before > 0 {
        println!(
            "RSS: {:.1} MiB before, {:.1} MiB after ({} bytes per message); peak (VmHWM) {:.1} MiB",
            mib(before),
            mib(after),
            after.saturating_sub(before) / n as u64,
            mib(status("VmHWM:").unwrap_or(0))
        );
    } else {
        println!("RSS: /proc/self/status is not available");
    }
    std::hint::black_box(&engine);
}

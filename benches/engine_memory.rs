//! Resident memory of the engine per message (docs/performance.md,
//! "Engine"): peak RSS (VmHWM) and current RSS from /proc/self/status
//! around building an engine for the generated session.
//!
//! `cargo bench --bench engine_memory` (Linux only; elsewhere it says so).

mod common;

fn status(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kb| kb * 1024)
}

fn main() {
    let n: usize = std::env::var("TROUPE_BENCH_MESSAGES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    if status("VmRSS:").is_none() {
        println!("engine_memory: /proc/self/status is not available; nothing measured");
        return;
    }
    let text = common::session_jsonl(n);
    let lines = common::parse_lines(&text);
    drop(text);
    let before = status("VmRSS:").unwrap_or(0);
    let bundle = common::bundle();
    let engine = troupe::engine::load::compile_checked(
        &bundle,
        Some((lines[0].clone(), lines[1..].to_vec())),
        None,
    )
    .expect("compiles");
    let after_build = status("VmRSS:").unwrap_or(0);
    drop(lines);
    let after_drop = status("VmRSS:").unwrap_or(0);
    let checkpoints = engine
        .session
        .messages
        .iter()
        .filter(|m| m.depth % engine.stride() == 0)
        .count();
    println!("messages: {n}");
    println!(
        "checkpoint stride: {} ({checkpoints} checkpoints)",
        engine.stride()
    );
    println!("RSS before building: {:.1} MiB", before as f64 / 1048576.0);
    println!(
        "RSS after building (parsed values still held): {:.1} MiB",
        after_build as f64 / 1048576.0
    );
    println!(
        "RSS after dropping the parsed values: {:.1} MiB",
        after_drop as f64 / 1048576.0
    );
    println!(
        "peak RSS (VmHWM): {:.1} MiB",
        status("VmHWM:").unwrap_or(0) as f64 / 1048576.0
    );
    let per = (after_build.saturating_sub(before)) as f64 / n as f64;
    println!("engine growth per message (RSS after build - before) / n: {per:.0} bytes");
    std::hint::black_box(&engine);
}

//! Engine benchmarks (docs/performance.md, "Engine"): replaying a generated
//! session of 1,000,000 messages against parsing its JSON Lines, and the
//! state at 10,000 random messages with checkpoints against full replay.
//!
//! `cargo bench --bench engine`; `TROUPE_BENCH_MESSAGES` changes the size.

mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use troupe::internals::compile::SessionCompiler;
use troupe::internals::engine::Engine;

fn size() -> usize {
    std::env::var("TROUPE_BENCH_MESSAGES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000)
}

/// The engine of a session text, with the checked story its session
/// compiler needs.
fn engine_for(text: &str) -> (Engine, troupe::internals::resolve::Story) {
    let bundle = common::bundle();
    let mut lines = text.lines();
    let header: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let (story, ir) = troupe::internals::pipeline::compile_story_for(&bundle, Some(&header), None)
        .expect("the generated story compiles");
    let mut c = SessionCompiler::new(&story, &ir, &header).unwrap();
    for l in lines {
        c.push(&serde_json::from_str(l).unwrap()).unwrap();
    }
    let session = c.finish();
    let engine = Engine::new(ir, session, true, troupe::internals::engine::DEFAULT_STRIDE);
    (engine, story)
}

/// A fixed pseudo-random sequence (SplitMix64), for repeatable picks.
fn picks(n: usize, count: usize) -> Vec<u32> {
    let mut s: u64 = 0x1234_5678;
    (0..count)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) % n as u64) as u32
        })
        .collect()
}

fn replay(c: &mut Criterion) {
    let n = size();
    let text = common::session_jsonl(n);
    let (engine, story) = engine_for(&text);
    let mut g = c.benchmark_group("replay");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(20))
        .warm_up_time(Duration::from_secs(1));
    g.bench_function("parse_jsonl_serde_json", |b| {
        b.iter(|| {
            // Each line parsed to a `Value` and dropped, as a streaming reader does.
            let mut keys = 0usize;
            for l in black_box(&text).lines() {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                keys += v.as_object().map_or(0, |o| o.len());
            }
            black_box(keys)
        })
    });
    g.bench_function("parse_compile_replay_all", |b| {
        b.iter(|| {
            let mut lines = black_box(&text).lines();
            let header: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
            let mut c = SessionCompiler::new(&story, &engine.ir, &header).unwrap();
            for l in lines {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                c.push(&v).unwrap();
            }
            let s = c.finish();
            let mut sum = 0i64;
            troupe::internals::engine::replay_all(
                &engine.ir,
                &s,
                &troupe::internals::engine::Tree::new(&s),
                engine.initial(),
                |_, st| sum += st.turn,
            );
            black_box(sum)
        })
    });
    g.bench_function("replay_all_compiled", |b| {
        b.iter(|| {
            let mut sum = 0i64;
            engine.replay_all(|_, st| sum += st.turn);
            black_box(sum)
        })
    });
    g.finish();
}

fn queries(c: &mut Criterion) {
    let n = size();
    let text = common::session_jsonl(n);
    let (engine, _) = engine_for(&text);
    let at = picks(n, 10_000);
    let mut g = c.benchmark_group("state_at_10000_random");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(10))
        .warm_up_time(Duration::from_secs(1));
    g.bench_function("checkpoints", |b| {
        b.iter(|| {
            let mut sum = 0i64;
            for &m in &at {
                sum += engine.state_at(m).turn;
            }
            black_box(sum)
        })
    });
    g.bench_function("replay_from_root", |b| {
        b.iter(|| {
            let mut sum = 0i64;
            for &m in &at {
                sum += engine.state_at_from_root(m).turn;
            }
            black_box(sum)
        })
    });
    g.finish();
}

criterion_group!(benches, replay, queries);
criterion_main!(benches);

//! The runtime benchmarks of `benches/runtime.rs` with the allocator of the
//! `troupe` binary (mimalloc, src/main.rs): what `troupe compile`, `run` and
//! `play` cost, beside what the library costs an embedder on the system
//! allocator (docs/performance.md, Run I). Needs the `cli` feature (on by
//! default).
//!
//! `cargo bench --bench binary`; `TROUPE_BENCH_SCENARIOS` changes the size.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "runtime/cases.rs"]
mod cases;
#[path = "runtime/generated_pack.rs"]
mod generated_pack;

/// The prefix of every group's name.
const PREFIX: &str = "binary";

criterion::criterion_main!(cases::benches);

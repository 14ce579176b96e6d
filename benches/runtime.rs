//! Runtime benchmarks (docs/performance.md, "Runtime") with the system
//! allocator, as a library embedded without an allocator of its own runs:
//! turns per second of the rules runtime on the example packs; `check` +
//! `compile` of a generated pack of 1,000 scenarios; opening the compiled
//! package against opening the source pack. `benches/binary.rs` runs the
//! same cases with the `troupe` binary's allocator.
//!
//! `cargo bench --bench runtime`; `TROUPE_BENCH_SCENARIOS` changes the size.

#[path = "runtime/cases.rs"]
mod cases;
#[path = "runtime/generated_pack.rs"]
mod generated_pack;

/// The prefix of every group's name.
const PREFIX: &str = "runtime";

criterion::criterion_main!(cases::benches);

//! Exploration benchmark (docs/performance.md, "Exploration"): distinct
//! states the search of Format 20.5 visits per second on the example packs,
//! each turn a rules-runtime turn from a forked session. Criterion's
//! throughput is the states one search visits (its `search.states`).
//!
//! `cargo bench --bench explore`.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use troupe::tools::{explore, ExploreMode, ExploreSettings};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn search(c: &mut Criterion) {
    let mut g = c.benchmark_group("explore/search");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(5));
    for (pack, depth, states) in [
        ("examples/packs/everyday-negotiation", 12, 2_000),
        ("examples/packs/harbor-lights", 12, 2_000),
    ] {
        let p = troupe::Pack::open(root().join(pack)).expect("opens");
        // One thread, then every core (`--jobs`, Format 20.5): the same
        // states either way, side by side.
        for jobs in [1, troupe::tools::explore_default_jobs()] {
            let settings = {
                let mut o = ExploreSettings::default();
                o.mode = ExploreMode::Search { states };
                o.depth = depth;
                o.jobs = jobs;
                o
            };
            let visited = explore(&p, None, &settings, &mut |_| {})
                .expect("explores")
                .search
                .expect("a search")
                .states;
            let name = pack.rsplit('/').next().unwrap_or(pack);
            g.throughput(Throughput::Elements(visited));
            g.bench_function(
                format!("{name} ({visited} states, depth ≤ {depth}, jobs {jobs})"),
                |b| {
                    b.iter(|| {
                        black_box(explore(&p, None, &settings, &mut |_| {}).expect("explores"))
                    })
                },
            );
        }
    }
    g.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);

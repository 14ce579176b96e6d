//! The runtime benchmarks' cases (docs/performance.md, "Runtime"), built
//! twice: `benches/runtime.rs` with the system allocator (what an embedder
//! gets by default) and `benches/binary.rs` with the `troupe` binary's
//! allocator (mimalloc, src/main.rs). Each group is named after its binary.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, BatchSize, Criterion, Throughput};
use troupe::internals::open::open;
use troupe::internals::runtime::{Options, Session};

fn scenarios() -> usize {
    std::env::var("TROUPE_BENCH_SCENARIOS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn script(name: &str) -> Vec<String> {
    troupe::files::read_script(root().join("examples/scripts").join(name)).expect("script")
}

use crate::generated_pack::generate;

/// A pack of one heavy scenario (issue 11): ten variables, `events`
/// condition events and `rules` keyword rules (every rule with its own
/// keyword, so a turn tries them in order until one matches).
fn generate_heavy(dir: &Path, rules: usize, events: usize) {
    generate(dir, 0);
    let mut text = String::from(
        "schema_version: \"0.1\"\nscenario_id: heavy\ntitle: Heavy\nnpc: {ref: npcs/vendor.yaml}\nopening: {npc_says: \"Hello, {{user}}!\"}\nstate:\n  variables:\n",
    );
    for v in 0..10 {
        text.push_str(&format!(
            "    v{v}: {{type: int, default: 0, min: 0, max: 100000}}\n"
        ));
    }
    text.push_str("events:\n");
    for e in 0..events {
        text.push_str(&format!(
            "  - {{id: e{e}, when: \"state.v{} > {} && turn >= 1\", changes: [{{add: {{v{}: 1}}}}]}}\n",
            e % 10,
            e + 3,
            (e + 1) % 10
        ));
    }
    text.push_str("ending_conditions:\n  done: \"state.v0 > 99000\"\nrules:\n");
    for r in 0..rules {
        text.push_str(&format!(
            "  - {{id: r{r}, keywords: [word{r}], priority: {}, changes: [{{add: {{v{}: 2}}}}], replies: [\"Reply {r}, {{{{user}}}}.\"]}}\n",
            r % 7,
            r % 10
        ));
    }
    text.push_str("  - {id: any, replies: [\"So?\"]}\n");
    std::fs::write(dir.join("scenarios/s0000.yaml"), text).unwrap();
}

/// What `troupe run PACK --script` does, minus printing: open, start a
/// session with default settings, play every input.
fn run_equivalent(path: &Path, inputs: &[String]) -> usize {
    let o = open(path).expect("opens");
    let mut s = Session::start(&o, &Options::default()).expect("starts");
    for i in inputs {
        if s.is_over() {
            break;
        }
        black_box(s.turn(i).expect("turn"));
    }
    s.session_text().len()
}

fn heavy(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("heavy");
    generate_heavy(&src, 1_500, 800);
    let pkg = dir.path().join("heavy.troupe");
    let opened = open(&src).expect("the heavy pack checks");
    std::fs::write(
        &pkg,
        troupe::internals::compile::write_package(&opened.bundle, &opened.sessions).unwrap(),
    )
    .unwrap();
    assert!(open(&pkg).unwrap().from_ir);
    let inputs: Vec<String> = (0..10)
        .map(|i| format!("I say word{} and more", i * 149))
        .collect();
    assert_eq!(run_equivalent(&src, &inputs), run_equivalent(&pkg, &inputs));
    let mut g = c.benchmark_group(format!("{}/heavy", crate::PREFIX));
    g.sample_size(10);
    g.bench_function("run source pack (1500 rules, 800 events)", |b| {
        b.iter(|| run_equivalent(&src, &inputs))
    });
    g.bench_function("run compiled package (1500 rules, 800 events)", |b| {
        b.iter(|| run_equivalent(&pkg, &inputs))
    });
    g.finish();
}

fn turns(c: &mut Criterion) {
    let mut g = c.benchmark_group(format!("{}/turns", crate::PREFIX));
    g.measurement_time(Duration::from_secs(5));
    for (pack, name, difficulty) in [
        (
            "examples/packs/everyday-negotiation",
            "used-car-fatigue.yaml",
            Some("hard"),
        ),
        ("examples/packs/harbor-lights", "harbor-adrift.txt", None),
    ] {
        let p = open(&root().join(pack)).expect("opens");
        let inputs = script(name);
        let options = Options {
            difficulty: difficulty.map(str::to_string),
            ..Options::default()
        };
        // The turns a run plays: up to the end of the story (under `hard`
        // the fatigue script ends at its third turn, Format 19.5).
        let played = {
            let mut s = Session::start(&p, &options).expect("starts");
            inputs
                .iter()
                .take_while(|i| !s.is_over() && s.turn(i).is_ok())
                .count()
        };
        let inputs = &inputs[..played];
        g.throughput(Throughput::Elements(played as u64));
        g.bench_function(format!("{name} ({played} turns)"), |b| {
            b.iter_batched(
                || Session::start(&p, &options).expect("starts"),
                |mut s| {
                    for i in inputs {
                        black_box(s.turn(i).expect("turn"));
                    }
                    s
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

fn packs(c: &mut Criterion) {
    let n = scenarios();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("pack");
    generate(&src, n);
    let pkg = dir.path().join("pack.troupe");
    let opened = open(&src).expect("the generated pack checks");
    let bytes =
        troupe::internals::compile::write_package(&opened.bundle, &opened.sessions).unwrap();
    std::fs::write(&pkg, bytes).unwrap();
    assert!(open(&pkg).unwrap().from_ir);

    let mut g = c.benchmark_group(format!("{}/packs", crate::PREFIX));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    // What `troupe compile` does: open (read and check) and compile.
    g.bench_function(format!("check+compile {n} scenarios"), |b| {
        b.iter(|| black_box(troupe::Pack::open(&src).expect("checks").compile().unwrap()))
    });
    g.bench_function(format!("open source pack {n}"), |b| {
        b.iter(|| black_box(open(&src).expect("opens")))
    });
    g.bench_function(format!("open compiled package {n}"), |b| {
        b.iter(|| black_box(open(&pkg).expect("opens")))
    });
    g.finish();

    let mut g = c.benchmark_group(format!("{}/example", crate::PREFIX));
    g.sample_size(20);
    let ex = root().join("examples/packs/everyday-negotiation");
    let epkg = dir.path().join("ex.troupe");
    let o = open(&ex).unwrap();
    std::fs::write(
        &epkg,
        troupe::internals::compile::write_package(&o.bundle, &o.sessions).unwrap(),
    )
    .unwrap();
    // The same package without `ir.compact`: `ir.json` read and hashed
    // instead, as packages were before it (Format 14.4).
    let jpkg = dir.path().join("ex-json.troupe");
    std::fs::write(
        &jpkg,
        without_entry(&std::fs::read(&epkg).unwrap(), "ir.compact"),
    )
    .unwrap();
    g.bench_function("open source pack", |b| {
        b.iter(|| black_box(open(&ex).unwrap()))
    });
    g.bench_function("open compiled package", |b| {
        b.iter(|| black_box(open(&epkg).unwrap()))
    });
    g.bench_function("open source pack + start session", |b| {
        b.iter(|| {
            let o = open(&ex).unwrap();
            black_box(Session::start(&o, &Options::default()).unwrap())
        })
    });
    g.bench_function("open compiled package + start session", |b| {
        b.iter(|| {
            let o = open(&epkg).unwrap();
            black_box(Session::start(&o, &Options::default()).unwrap())
        })
    });
    g.bench_function(
        "open compiled package (ir.json only) + start session",
        |b| {
            b.iter(|| {
                let o = open(&jpkg).unwrap();
                black_box(Session::start(&o, &Options::default()).unwrap())
            })
        },
    );
    // A service opens a pack once and starts a session per player
    // (issue 41 item 4): a start alone, from each form of the pack.
    let opened_src = open(&ex).unwrap();
    let opened_pkg = open(&epkg).unwrap();
    g.bench_function("start session (opened source pack)", |b| {
        b.iter(|| black_box(Session::start(&opened_src, &Options::default()).unwrap()))
    });
    g.bench_function("start session (opened compiled package)", |b| {
        b.iter(|| black_box(Session::start(&opened_pkg, &Options::default()).unwrap()))
    });
    g.finish();
}

/// The Python bench's loop in Rust alone (`bindings/python/bench.py`,
/// `_bench_turns`): sessions of the source negotiation pack, each with its
/// own seed, played on `used-car-good-deal.txt`, the start included; beside
/// it the same turns with the start outside the timing.
fn sessions(c: &mut Criterion) {
    let pack = troupe::Pack::open(root().join("examples/packs/everyday-negotiation")).unwrap();
    let inputs = script("used-car-good-deal.txt");
    let start = |seed: u64| {
        pack.start(troupe::SessionOptions::default().seed(seed))
            .unwrap()
    };
    let play = |mut s: troupe::Session| {
        let mut turns = 0u64;
        for i in &inputs {
            if s.ended() {
                break;
            }
            black_box(s.turn(i).unwrap());
            turns += 1;
        }
        (s, turns)
    };
    let turns = play(start(0)).1;
    let mut g = c.benchmark_group(format!("{}/sessions", crate::PREFIX));
    g.throughput(Throughput::Elements(turns));
    let mut seed = 0u64;
    g.bench_function("good-deal, start included", |b| {
        b.iter(|| {
            seed += 1;
            play(start(seed))
        })
    });
    g.bench_function("good-deal, turns only", |b| {
        b.iter_batched(
            || {
                seed += 1;
                start(seed)
            },
            play,
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

/// The ensemble bundle of `examples/perf_probe.rs` (`turn:single`,
/// `turn:all`): three characters, all present, one rule every speaker uses
/// (a change and a rendered reply) and one repeating event, under the
/// default turn order (one reply a turn) or `all` (three, Format 18.9).
pub fn ensemble_bundle(all: bool) -> serde_json::Value {
    let character = |id: &str, name: &str| serde_json::json!({"id": id, "name": name, "fictional": true, "age_band": "adult"});
    let mut scenario = serde_json::json!({
        "id": "meeting",
        "name": "A meeting",
        "cast": [
            {"character": "ana"},
            {"character": "ben"},
            {"character": "cy"},
            {"seat": "player", "player": true}
        ],
        "variables": [{"id": "count", "type": "int", "default": 0}],
        "events": [{"id": "busy", "when": "state.count > 1000000", "repeat": true}],
        "rules": [{
            "id": "any",
            "changes": [{"add": {"count": 1}}],
            "replies": ["{{char}} answers, {{user}}."]
        }]
    });
    if all {
        scenario["turn_order"] = serde_json::json!({"strategy": "all"});
    }
    serde_json::json!({
        "troupe": "0.1",
        "kind": "bundle",
        "characters": [character("ana", "Ana"), character("ben", "Ben"), character("cy", "Cy")],
        "scenarios": [scenario]
    })
}

/// Issue 37: a turn of the `all` strategy with three replies against a turn
/// of one reply, the same rule and state (target: at most 3.5×). One
/// iteration is one turn of a session started outside the timing.
fn ensemble(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut g = c.benchmark_group(format!("{}/ensemble", crate::PREFIX));
    g.measurement_time(Duration::from_secs(5));
    for (all, name) in [
        (false, "one reply (first_present)"),
        (true, "all, 3 replies"),
    ] {
        let path = dir.path().join(format!("ensemble-{all}.json"));
        std::fs::write(&path, ensemble_bundle(all).to_string()).unwrap();
        let p = open(&path).expect("the ensemble bundle opens");
        let replies = Session::start(&p, &Options::default())
            .unwrap()
            .turn("hello")
            .unwrap()
            .replies
            .len();
        assert_eq!(replies, if all { 3 } else { 1 });
        g.bench_function(name, |b| {
            b.iter_batched(
                || Session::start(&p, &Options::default()).expect("starts"),
                |mut s| {
                    black_box(s.turn("hello").expect("turn"));
                    s
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, turns, packs, heavy, sessions, ensemble);

/// The package `bytes` written again without its entry `name` (stored,
/// in order).
fn without_entry(bytes: &[u8], name: &str) -> Vec<u8> {
    use std::io::Write;
    let kept = troupe::internals::load::screen_package("p", bytes)
        .value
        .unwrap()
        .kept;
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .last_modified_time(zip::DateTime::default());
    for (n, data) in kept.iter().filter(|(n, _)| n != name) {
        out.start_file(n.as_str(), options).unwrap();
        out.write_all(data).unwrap();
    }
    out.finish().unwrap().into_inner()
}

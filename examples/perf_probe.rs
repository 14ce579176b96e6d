//! Repeats one benchmarked operation N times, for instruction counts
//! under callgrind (docs/performance.md, "Run J"): the count of a run with
//! N = 1,001 minus that with N = 1, divided by 1,000, is the operation's
//! cost without the setup, whatever the machine's load.
//!
//! ```text
//! cargo build --release --example perf_probe
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/perf_probe cel:keyed_read_ternary 1001
//! ```
//!
//! Operations: `cel:<case>` (the cases of `benches/cel.rs`, Troupe's
//! evaluator), `celcrate:<case>` (the same with the `cel` crate),
//! `start:source` and `start:package` (a session started from
//! an already opened pack), `open+start:package` (open the compiled
//! example package and start a session; `open+start:package-json` the same
//! package without `ir.compact`, as packages were before it), `turn:single` and `turn:all`
//! (N turns of one session of the ensemble bundle of
//! `benches/runtime/cases.rs`: one reply a turn, or three under the `all`
//! strategy; issue 37), `turn:script:<pack>:<script>[:<preset>]` (N
//! sessions each playing an example script, as `runtime/turns` does; the
//! start is counted too, so compare it with `start:source` N times),
//! `check+compile:<scenarios>[:<jobs>]` (N times what `troupe compile` does,
//! `Pack::open(…)?.compile()`, on the generated pack of
//! `runtime/packs`; docs/performance.md, "Run N"; `jobs` threads, default
//! the cores available, "Run AU"), `read-ir:json`,
//! `read-ir:bin`, `read-ir:hash-json`, `read-ir:hash-bin` (N reads, or
//! hashes, of the example package's IR in either encoding; "Run S"),
//! `open-hashes:package` (N times the two SHA-256 an open of the example
//! package computes, `bundle.json`'s and `ir.compact`'s; "Run AB"),
//! `write-pack:<scenarios>:<folder>` (writes the generated pack into
//! `folder`, to compare two builds' `troupe compile` of it; N unused).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use troupe::internals::cel::{self as tcel, Activation, Env, NoHost, ObjectType, Type, Value};
use troupe::internals::open::open;
use troupe::internals::runtime::{Options, Session};

fn cel_case(name: &str) -> &'static str {
    match name {
        "simple_condition" => "trust > 60 && turn >= 3",
        "keyed_read_ternary" => "state.trust[char] > 50.0 ? 'warm' : 'cold'",
        "comprehension_100" => "xs.all(x, x >= 0)",
        "matches" => "text.matches('^h[a-z]+o w')",
        other => panic!("no CEL case `{other}`"),
    }
}

/// The environment and values of `benches/cel.rs`.
fn cel_env() -> (Env, Activation) {
    let mut env = Env::new();
    env.declare("trust", Type::Int).declare("turn", Type::Int);
    env.declare(
        "state",
        ObjectType::new("state")
            .field("trust", Type::map(Type::String, Type::Double))
            .into_type(),
    );
    env.declare("char", Type::String);
    env.declare("xs", Type::list(Type::Int));
    env.declare("text", Type::String);
    let mut act = Activation::new(&env);
    let set = |act: &mut Activation, n: &str, v: Value| assert!(act.set_by_name(&env, n, v));
    set(&mut act, "trust", Value::Int(61));
    set(&mut act, "turn", Value::Int(3));
    let trust = serde_json::json!({"kai": 55.5, "mia": 20.0, "zed": 70.0});
    set(&mut act, "state.trust", Value::from_json(&trust).unwrap());
    set(&mut act, "char", Value::string("kai"));
    set(
        &mut act,
        "xs",
        Value::List(Arc::new((0..100).map(Value::Int).collect())),
    );
    set(&mut act, "text", Value::string("hello world"));
    (env, act)
}

/// The `cel` crate's context of `benches/cel.rs`.
fn cel_crate_context() -> cel::Context<'static, 'static> {
    let mut ctx = cel::Context::default();
    ctx.add_variable("trust", 61i64).unwrap();
    ctx.add_variable("turn", 3i64).unwrap();
    let trust: std::collections::HashMap<String, f64> =
        [("kai", 55.5), ("mia", 20.0), ("zed", 70.0)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
    let state: std::collections::HashMap<String, cel::Value> =
        [("trust".to_string(), cel::Value::from(trust))]
            .into_iter()
            .collect();
    ctx.add_variable("state", cel::Value::from(state)).unwrap();
    ctx.add_variable("char", "kai").unwrap();
    ctx.add_variable("xs", (0..100i64).collect::<Vec<i64>>())
        .unwrap();
    ctx.add_variable("text", "hello world").unwrap();
    ctx
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/packs/everyday-negotiation")
}

/// The example pack compiled into a package in a temporary folder, as
/// `troupe compile` writes it (with `ir.compact`).
fn package(dir: &Path) -> PathBuf {
    let o = open(&example()).expect("the example opens");
    let path = dir.join("ex.troupe");
    let bytes = troupe::internals::compile::write_package(&o.bundle, &o.sessions).unwrap();
    std::fs::write(&path, bytes).unwrap();
    path
}

/// [`package`] without its `ir.compact` (`ir.json` the only compiled
/// entry, as packages were before it; Format 14.4).
fn package_json_only(dir: &Path) -> PathBuf {
    use std::io::Write;
    let bytes = std::fs::read(package(dir)).unwrap();
    let kept = troupe::internals::load::screen_package("p", &bytes)
        .value
        .unwrap()
        .kept;
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .last_modified_time(zip::DateTime::default());
    for (n, data) in kept.iter().filter(|(n, _)| n != "ir.compact") {
        out.start_file(n.as_str(), options).unwrap();
        out.write_all(data).unwrap();
    }
    let path = dir.join("ex-json.troupe");
    std::fs::write(&path, out.finish().unwrap().into_inner()).unwrap();
    path
}

/// The entries of the example package ([`package`]) as an open screens
/// them: a lookup of an entry's bytes by name.
fn package_entries(dir: &Path) -> impl Fn(&str) -> Vec<u8> {
    let bytes = std::fs::read(package(dir)).unwrap();
    let kept = troupe::internals::load::screen_package("p", &bytes)
        .value
        .unwrap()
        .kept;
    move |n: &str| kept.iter().find(|(k, _)| k == n).unwrap().1.clone()
}

/// The ensemble bundle of `benches/runtime/cases.rs` (the same text).
fn ensemble_bundle(all: bool) -> serde_json::Value {
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

/// The generated pack of the runtime benchmarks, the same file.
#[path = "../benches/runtime/generated_pack.rs"]
mod generated_pack;
use generated_pack::generate;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let op = args.get(1).map_or("cel:keyed_read_ternary", String::as_str);
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let dir = tempfile::tempdir().unwrap();
    match op.split_once(':') {
        Some(("cel", case)) => {
            let (env, act) = cel_env();
            let program = tcel::compile(cel_case(case), &env).expect("compiles");
            for _ in 0..n {
                black_box(program.eval(black_box(&act), &mut NoHost)).ok();
            }
        }
        Some(("celcrate", case)) => {
            let ctx = cel_crate_context();
            let program = cel::Program::compile(cel_case(case)).expect("compiles");
            for _ in 0..n {
                black_box(program.execute(black_box(&ctx))).ok();
            }
        }
        Some(("start", form)) => {
            let opened = match form {
                "source" => open(&example()).unwrap(),
                "package" => open(&package(dir.path())).unwrap(),
                other => panic!("no pack form `{other}`"),
            };
            for _ in 0..n {
                black_box(Session::start(&opened, &Options::default()).unwrap());
            }
        }
        Some(("turn", "single" | "all")) => {
            let path = dir.path().join("ensemble.json");
            std::fs::write(&path, ensemble_bundle(op == "turn:all").to_string()).unwrap();
            let opened = open(&path).unwrap();
            let mut s = Session::start(&opened, &Options::default()).unwrap();
            for _ in 0..n {
                black_box(s.turn("hello").unwrap());
            }
        }
        Some(("turn", rest)) if rest.starts_with("script:") => {
            let mut parts = rest.split(':').skip(1);
            let (pack, script) = (parts.next().unwrap(), parts.next().unwrap());
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            let opened = open(&root.join("examples/packs").join(pack)).unwrap();
            let inputs =
                troupe::files::read_script(root.join("examples/scripts").join(script)).unwrap();
            let options = Options {
                difficulty: parts.next().map(str::to_string),
                ..Options::default()
            };
            for _ in 0..n {
                let mut s = Session::start(&opened, &options).unwrap();
                for i in &inputs {
                    if s.is_over() {
                        break;
                    }
                    black_box(s.turn(i).unwrap());
                }
            }
        }
        Some(("open+start", form @ ("package" | "package-json"))) => {
            let path = if form == "package" {
                package(dir.path())
            } else {
                package_json_only(dir.path())
            };
            for _ in 0..n {
                let o = open(&path).unwrap();
                black_box(Session::start(&o, &Options::default()).unwrap());
            }
        }
        Some(("open-hashes", "package")) => {
            // The two SHA-256 an open of the example package computes
            // (`bundle.json`'s for `content_hash`, `ir.compact`'s IR after
            // its record for the record's own hash), alone: natively their
            // share of an open (Run AB).
            use troupe::internals::load::{content_hash, COMPACT_RECORD_LEN};
            let get = package_entries(dir.path());
            let (bundle, compact) = (get("bundle.json"), get("ir.compact"));
            for _ in 0..n {
                black_box(content_hash(black_box(&bundle)));
                black_box(content_hash(black_box(&compact[COMPACT_RECORD_LEN..])));
            }
        }
        Some(("read-ir", form)) => {
            // Reading the example package's IR alone, from `ir.json` or
            // from its binary form, and hashing either (issue 41 item 3).
            use troupe::internals::compile::{read_ir, read_ir_bin, to_ir_bin};
            use troupe::internals::load::content_hash;
            let get = package_entries(dir.path());
            let json = get("ir.json");
            let m: serde_json::Value = serde_json::from_slice(&get("manifest.json")).unwrap();
            let hash = m["content_hash"].as_str().unwrap().to_string();
            let bin = to_ir_bin(&read_ir(&json, &hash).unwrap());
            for _ in 0..n {
                match form {
                    "json" => drop(black_box(read_ir(&json, &hash).unwrap())),
                    "bin" => drop(black_box(read_ir_bin(&bin, &hash).unwrap())),
                    "hash-json" => drop(black_box(content_hash(&json))),
                    "hash-bin" => drop(black_box(content_hash(&bin))),
                    other => panic!("no form `{other}`"),
                }
            }
        }
        Some(("write-pack", spec)) => {
            let (scenarios, folder) = spec.split_once(':').expect("<scenarios>:<folder>");
            generate(
                Path::new(folder),
                scenarios.parse().expect("a number of scenarios"),
            );
        }
        Some(("check+compile", spec)) => {
            // `<scenarios>` or `<scenarios>:<jobs>` (OpenOptions::jobs;
            // default the cores available; Run AU).
            let (scenarios, jobs) = spec.split_once(':').unwrap_or((spec, "0"));
            let src = dir.path().join("pack");
            generate(&src, scenarios.parse().expect("a number of scenarios"));
            let options = troupe::OpenOptions::default().jobs(jobs.parse().expect("jobs"));
            for _ in 0..n {
                black_box(
                    troupe::Pack::open_with(&src, options)
                        .unwrap()
                        .compile()
                        .unwrap(),
                );
            }
        }
        _ => panic!("unknown operation `{op}`"),
    }
}

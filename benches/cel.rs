//! Troupe's CEL evaluator next to the `cel` crate's interpreter on the same
//! expressions and values (docs/performance.md, "Conditions (CEL)"), and
//! Troupe's parser next to the `cel` crate's (group `parse`, Run P).
//! Run: `cargo bench --bench cel`.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use troupe::internals::cel::{self as tcel, Activation, Env, NoHost, ObjectType, Type, Value};

struct Case {
    name: &'static str,
    troupe_src: &'static str,
    cel_src: &'static str,
}

const CASES: [Case; 4] = [
    Case {
        name: "simple_condition",
        troupe_src: "trust > 60 && turn >= 3",
        cel_src: "trust > 60 && turn >= 3",
    },
    Case {
        name: "keyed_read_ternary",
        troupe_src: "state.trust[char] > 50.0 ? 'warm' : 'cold'",
        cel_src: "state.trust[char] > 50.0 ? 'warm' : 'cold'",
    },
    Case {
        name: "comprehension_100",
        troupe_src: "xs.all(x, x >= 0)",
        cel_src: "xs.all(x, x >= 0)",
    },
    Case {
        name: "matches",
        troupe_src: "text.matches('^h[a-z]+o w')",
        cel_src: "text.matches('^h[a-z]+o w')",
    },
];

fn troupe_env() -> (Env, Activation) {
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

fn cel_context() -> cel::Context<'static, 'static> {
    let mut ctx = cel::Context::default();
    ctx.add_variable("trust", 61i64).unwrap();
    ctx.add_variable("turn", 3i64).unwrap();
    let trust: HashMap<String, f64> = [("kai", 55.5), ("mia", 20.0), ("zed", 70.0)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let state: HashMap<String, cel::Value> = [("trust".to_string(), cel::Value::from(trust))]
        .into_iter()
        .collect();
    ctx.add_variable("state", cel::Value::from(state)).unwrap();
    ctx.add_variable("char", "kai").unwrap();
    ctx.add_variable("xs", (0..100i64).collect::<Vec<i64>>())
        .unwrap();
    ctx.add_variable("text", "hello world").unwrap();
    ctx
}

fn bench(c: &mut Criterion) {
    let (env, act) = troupe_env();
    let ctx = cel_context();
    for case in &CASES {
        let ours = tcel::compile(case.troupe_src, &env).expect("troupe compiles");
        let theirs = cel::Program::compile(case.cel_src).expect("cel compiles");
        // Both must agree before they are timed.
        let a = ours.eval(&act, &mut NoHost).expect("troupe evaluates");
        let b = theirs.execute(&ctx).expect("cel evaluates");
        assert_eq!(
            format!("{a}").trim_matches('"'),
            format!("{b:?}")
                .split(['(', ')'])
                .nth(1)
                .unwrap_or("")
                .trim_matches('"'),
            "{}",
            case.name
        );
        let mut g = c.benchmark_group(case.name);
        g.bench_function("troupe", |bn| {
            bn.iter(|| black_box(ours.eval(black_box(&act), &mut NoHost)))
        });
        g.bench_function("cel_crate", |bn| {
            bn.iter(|| black_box(theirs.execute(black_box(&ctx))))
        });
        g.finish();
    }
}

/// Texts of the shapes packs use: a keyed ternary, a condition with `in`
/// and `has`, chained macros.
const PARSE_SOURCES: [&str; 3] = [
    "state.trust[char] > 50.0 ? 'warm' : 'cold'",
    "state.gold >= 10 && 'kai' in scene.present && !has(state.flag) || turn > 3",
    "xs.filter(x, x % 2 == 0).map(x, x * 2).exists(y, y > 10 && y < 100)",
];

/// Parsing alone (issue 41 item 2): the three texts, by Troupe's parser
/// and by the `cel` crate's (ANTLR) parser, which Troupe used before.
fn bench_parse(c: &mut Criterion) {
    for src in PARSE_SOURCES {
        assert!(tcel::parse(src).is_ok(), "{src}");
        assert!(cel::parser::Parser::new().parse(src).is_ok(), "{src}");
    }
    let mut g = c.benchmark_group("parse");
    g.bench_function("troupe", |bn| {
        bn.iter(|| {
            for src in PARSE_SOURCES {
                black_box(tcel::parse(black_box(src)).is_ok());
            }
        })
    });
    g.bench_function("cel_crate", |bn| {
        bn.iter(|| {
            for src in PARSE_SOURCES {
                black_box(cel::parser::Parser::new().parse(black_box(src)).is_ok());
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench, bench_parse);
criterion_main!(benches);

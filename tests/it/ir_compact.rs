//! The compiled IR's nesting bound and its hostile entries (issue 41
//! items 3 and 4, Format 14.4 and 16).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use troupe::compile::package::{PackageIr, IR_MAX_NESTING};
use troupe::open::open;
use troupe::runtime::{Options, Session};

use crate::common::packages::{compiled, get, mismatches, with_ir};

/// The tiny bundle with its event's condition replaced by `when`.
fn tiny_with_condition(dir: &Path, when: &str) -> PathBuf {
    let mut b: Value = serde_json::from_str(
        &std::fs::read_to_string("examples/bundles/tiny.bundle.json").unwrap(),
    )
    .unwrap();
    b["scenarios"][0]["events"][0]["when"] = when.into();
    let p = dir.join("deep.bundle.json");
    std::fs::write(&p, b.to_string()).unwrap();
    p
}

/// Conditions of every nesting shape, each `n` deep.
fn shapes() -> Vec<(&'static str, fn(usize) -> String)> {
    vec![
        ("sum chain", |n| {
            format!("{} >= 3", vec!["state.cups"; n].join(" + "))
        }),
        ("and chain", |n| vec!["state.cups >= 3"; n].join(" && ")),
        ("nested all", |n| {
            format!("{}true{}", "[1].all(x, ".repeat(n), ")".repeat(n))
        }),
        ("nested lists", |n| {
            format!("size({}1{}) > 0", "[".repeat(n), "]".repeat(n))
        }),
        ("nested maps", |n| {
            format!("size({}1{}) > 0", "{1: ".repeat(n), "}".repeat(n))
        }),
        ("nested size", |n| {
            format!("{}[1]{} > 0", "size(".repeat(n), ")".repeat(n))
        }),
        ("nested not", |n| {
            format!("{}(state.cups >= 3)", "!".repeat(n))
        }),
        ("nested neg", |n| {
            format!("{}state.cups >= 3", "-".repeat(n))
        }),
        ("ternaries", |n| {
            format!(
                "{}false{}",
                "state.cups > 1 ? true : (".repeat(n),
                ")".repeat(n)
            )
        }),
        ("ternaries bare", |n| {
            format!("{}false", "state.cups > 1 ? true : ".repeat(n))
        }),
        ("nested parens", |n| {
            format!("{}state.cups{} >= 3", "(".repeat(n), " + 1)".repeat(n))
        }),
        ("in chain", |n| {
            format!("{}[true]", "state.cups > 1 in [".repeat(n)) + &"]".repeat(n)
        }),
    ]
}

/// The largest `n` up to 1,000 for which `f(n)` checks.
fn deepest(dir: &Path, f: fn(usize) -> String) -> Option<usize> {
    let ok = |n: usize| {
        let b = tiny_with_condition(dir, &f(n));
        open(&b).is_ok_and(|o| o.warnings.is_empty())
    };
    if !ok(1) {
        return None;
    }
    let (mut lo, mut hi) = (1usize, 1000usize);
    if ok(hi) {
        return Some(hi);
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if ok(mid) {
            lo = mid
        } else {
            hi = mid
        }
    }
    Some(lo)
}

/// How deep `ir` nests, in levels of serde's data model (what
/// [`IR_MAX_NESTING`] bounds), read without a bound.
fn nesting_of(ir: &[u8]) -> usize {
    let mut de = serde_json::Deserializer::from_slice(ir);
    de.disable_recursion_limit();
    let nest = troupe::wire::Nesting::new(usize::MAX);
    PackageIr::deserialize(nest.wrap(&mut de)).unwrap();
    nest.peak()
}

/// Runs `f` on a thread with the stack a test thread or a tokio worker
/// has by default (2 MiB), or `TROUPE_IR_STACK` bytes: set it smaller to
/// measure what reading, checking, running and dropping the deepest IR
/// takes (a stack overflow aborts the process).
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    let size = std::env::var("TROUPE_IR_STACK")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2 << 20);
    std::thread::Builder::new()
        .stack_size(size)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

/// Format 14.4: the IR that compile writes for every expression the
/// checks accept reads back. Each nesting shape is taken as deep as the
/// parser allows (11.1, 16: a tree 200 high, 96 levels of parentheses,
/// calls, lists and maps); the deepest are the operator chain (two
/// levels of the IR per operator: the variant and its operands) and
/// nested comprehensions (three: the variant, its fields, the optional
/// predicate), all well within [`IR_MAX_NESTING`].
#[test]
fn the_deepest_expressions_the_checks_accept_run_from_their_ir() {
    let dir = tempfile::tempdir().unwrap();
    let mut deepest_ir = 0;
    for (name, f) in shapes() {
        let Some(n) = deepest(dir.path(), f) else {
            continue;
        };
        let b = tiny_with_condition(dir.path(), &f(n));
        let e = compiled(b.to_str().unwrap());
        let nest = nesting_of(get(&e, "ir.json"));
        assert!(nest <= IR_MAX_NESTING, "{name} ({n}): {nest}");
        deepest_ir = deepest_ir.max(nest);
        let p = crate::common::packages::write(dir.path(), "deep.troupe", &e);
        on_small_stack(move || {
            let o = open(&p).unwrap();
            assert_eq!(mismatches(&o.warnings), Vec::<String>::new(), "{name}");
            assert!(o.from_ir, "{name} ({n})");
            let mut s = Session::start(&o, &Options::default()).unwrap();
            let _ = s.turn("Hello");
        });
    }
    // The sum chain of 199 terms: 2 × 199 levels and the IR's own 9.
    assert!((400..=IR_MAX_NESTING).contains(&deepest_ir), "{deepest_ir}");
}

/// The tiny package's `ir.json` with its event's condition replaced by
/// `root` (JSON text of a program node), hashes fixed up.
fn tiny_with_root(dir: &Path, root: &str) -> PathBuf {
    let e = compiled("examples/bundles/tiny.bundle.json");
    let mut ir: Value = serde_json::from_slice(get(&e, "ir.json")).unwrap();
    ir["scenarios"][0]["story"]["events"][0]["when"]["root"] = "@ROOT@".into();
    let text = ir.to_string().replace("\"@ROOT@\"", root) + "\n";
    with_ir(dir, &e, text.into_bytes())
}

/// `depth` levels of `!` around the tiny story's condition, as IR text
/// (one level of the IR each).
fn nots(depth: usize) -> String {
    format!(
        "{}{}{}",
        "{\"Not\":".repeat(depth),
        r#"{"CmpSlotInt":["Ge",0,3]}"#,
        "}".repeat(depth)
    )
}

/// Format 14.4, 16: an IR nested past the reader's bound is refused as a
/// whole (IR_MISMATCH at `""`, `bundle.json` runs), never a stack
/// overflow — also far past it (serde_json's own limit is off, the
/// bound is the reader's).
#[test]
fn an_ir_nested_past_the_bound_falls_back_to_bundle_json() {
    let dir = tempfile::tempdir().unwrap();
    for depth in [IR_MAX_NESTING, 100_000] {
        let p = tiny_with_root(dir.path(), &nots(depth));
        on_small_stack(move || {
            let o = open(&p).unwrap();
            assert!(!o.from_ir);
            assert_eq!(mismatches(&o.warnings), [""]);
            let m = &o.warnings[0].message;
            assert!(
                m.contains(&format!("nested more than {IR_MAX_NESTING} levels deep")),
                "{m}"
            );
        });
    }
}

/// Format 14.4, 16: the deepest IR the reader accepts — a chain of `!`
/// almost [`IR_MAX_NESTING`] high, five times what any expression
/// compiles to — is read, checked, run and dropped on a 2 MiB stack in a
/// debug build, never a stack overflow.
#[test]
fn the_deepest_ir_the_reader_accepts_runs_on_a_small_stack() {
    let dir = tempfile::tempdir().unwrap();
    let plain = nesting_of(get(
        &compiled("examples/bundles/tiny.bundle.json"),
        "ir.json",
    ));
    // The condition's own level is in `plain`; an even count keeps its value.
    let depth = (IR_MAX_NESTING - plain) & !1;
    let p = tiny_with_root(dir.path(), &nots(depth));
    on_small_stack(move || {
        let o = open(&p).unwrap();
        assert_eq!(mismatches(&o.warnings), Vec::<String>::new());
        assert!(o.from_ir);
        let mut s = Session::start(&o, &Options::default()).unwrap();
        let _ = s.turn("Hello");
    });
}

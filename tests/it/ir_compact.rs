//! The compiled IR's nesting bound and its hostile entries (issue 41
//! items 3 and 4, Format 14.4 and 16).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use troupe::internals::compile::{PackageIr, IR_MAX_NESTING};
use troupe::{Pack, SessionOptions};

use crate::common::packages::{compiled, get, mismatches, tiny_with_condition, with_ir, Entries};

/// A nesting shape: its name and the condition `n` deep.
type Shape = (&'static str, fn(usize) -> String);

/// Conditions of every nesting shape, each `n` deep.
fn shapes() -> Vec<Shape> {
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
        Pack::open(&b).is_ok_and(|o| o.warnings().is_empty())
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
    let nest = troupe::internals::wire::Nesting::new(usize::MAX);
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
            let o = Pack::open(&p).unwrap();
            assert_eq!(mismatches(o.warnings()), Vec::<String>::new(), "{name}");
            assert!(o.from_ir(), "{name} ({n})");
            let mut s = o.start(SessionOptions::default()).unwrap();
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
            let o = Pack::open(&p).unwrap();
            assert!(!o.from_ir());
            assert_eq!(mismatches(o.warnings()), [""]);
            let m = &o.warnings()[0].message;
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
        let o = Pack::open(&p).unwrap();
        assert_eq!(mismatches(o.warnings()), Vec::<String>::new());
        assert!(o.from_ir());
        let mut s = o.start(SessionOptions::default()).unwrap();
        let _ = s.turn("Hello");
    });
}

/// Every example, compiled.
fn examples() -> Vec<(String, Entries)> {
    let mut out = Vec::new();
    for dir in ["examples/packs", "examples/bundles"] {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir() || p.to_string_lossy().ends_with(".bundle.json"))
            .filter(|p| !p.ends_with("sessions"))
            .collect();
        paths.sort();
        for p in paths {
            let name = p.display().to_string();
            out.push((name.clone(), compiled(&name)));
        }
    }
    out
}

/// Format 14.4: `ir.bin` is the IR of `ir.json` in another encoding:
/// for every example, the IR read from the binary form writes the same
/// `ir.json` bytes, and the binary form is smaller.
#[test]
fn every_examples_binary_ir_reads_back_to_the_same_ir_json() {
    use troupe::internals::compile::{read_ir, read_ir_bin, to_ir_bin, to_ir_json_bytes};
    for (name, e) in examples() {
        let json = get(&e, "ir.json");
        let hash: Value = serde_json::from_slice(get(&e, "manifest.json")).unwrap();
        let hash = hash["content_hash"].as_str().unwrap();
        let ir = read_ir(json, hash).unwrap();
        let bin = to_ir_bin(&ir);
        let back = read_ir_bin(&bin, hash).unwrap_or_else(|f| panic!("{name}: {f:?}"));
        assert_eq!(
            String::from_utf8(to_ir_json_bytes(&back)).unwrap(),
            String::from_utf8(json.to_vec()).unwrap(),
            "{name}"
        );
        assert!(
            bin.len() < json.len(),
            "{name}: {} ≥ {}",
            bin.len(),
            json.len()
        );
        eprintln!("{name}: ir.json {} bytes, ir.bin {}", json.len(), bin.len());
    }
}

/// The tiny example's IR in both encodings and its bundle hash.
fn tiny_ir() -> (Vec<u8>, Vec<u8>, String) {
    let e = compiled("examples/bundles/tiny.bundle.json");
    let json = get(&e, "ir.json").to_vec();
    let m: Value = serde_json::from_slice(get(&e, "manifest.json")).unwrap();
    let hash = m["content_hash"].as_str().unwrap().to_string();
    let ir = troupe::internals::compile::read_ir(&json, &hash).unwrap();
    (json, troupe::internals::compile::to_ir_bin(&ir), hash)
}

/// Format 14.4, 16: a truncated `ir.bin` (every prefix), one with any
/// byte changed, one with trailing bytes and one announcing huge lengths
/// is refused or read, never a panic, and memory stays bounded by its size.
#[test]
fn truncated_edited_and_huge_binary_irs_are_refused_never_a_panic() {
    use troupe::internals::compile::read_ir_bin;
    let (_, bin, hash) = tiny_ir();
    assert!(read_ir_bin(&bin, &hash).is_ok());
    for n in 0..bin.len() {
        let f = read_ir_bin(&bin[..n], &hash).unwrap_err();
        assert_eq!(f.pointer, "", "{n}");
        assert!(
            f.message.starts_with("ir.compact cannot be read"),
            "{n}: {}",
            f.message
        );
    }
    for i in 0..bin.len() {
        for x in [0x01u8, 0x80, 0xff] {
            let mut b = bin.clone();
            b[i] ^= x;
            let _ = read_ir_bin(&b, &hash);
        }
    }
    let mut longer = bin.clone();
    longer.push(0);
    let m = read_ir_bin(&longer, &hash).unwrap_err().message;
    assert!(m.contains("1 bytes after the IR"), "{m}");
    // Lengths of 2^32 - 1 and 2^63 (varints): refused before any
    // allocation of that size.
    for huge in [
        vec![0xff, 0xff, 0xff, 0xff, 0x0f],
        vec![0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01],
    ] {
        assert!(read_ir_bin(&huge, &hash).is_err());
        // The same as the first scenario list's length.
        let mut b = bin.clone();
        let version_end = 1 + bin[0] as usize;
        b.splice(version_end..version_end, huge.iter().copied());
        assert!(read_ir_bin(&b, &hash).is_err());
    }
    // Another version's IR, another bundle's hash.
    assert_eq!(
        read_ir_bin(&bin, "sha256:00").unwrap_err().pointer,
        "/bundle_hash"
    );
}

/// Format 14.4, 16: postcard has no nesting limit of its own; an `ir.bin`
/// nested 100,000 deep (a chain of `!` tags) is refused by the reader's
/// bound on a 2 MiB stack, never a stack overflow.
#[test]
fn a_binary_ir_nested_past_the_bound_is_refused_on_a_small_stack() {
    use troupe::internals::compile::{read_ir, read_ir_bin, to_ir_bin};
    let dir = tempfile::tempdir().unwrap();
    let (_, _, hash) = tiny_ir();
    // The tiny IR with a chain of 500 `!` in its condition (accepted),
    // in the binary form: a run of 500 bytes of `Not`'s tag.
    let p = tiny_with_root(dir.path(), &nots(500));
    let e = crate::common::packages::entries(&std::fs::read(p).unwrap());
    let ir = read_ir(get(&e, "ir.json"), &hash).unwrap();
    let bin = to_ir_bin(&ir);
    assert!(read_ir_bin(&bin, &hash).is_ok());
    let run = bin
        .windows(500)
        .position(|w| w.iter().all(|&b| b == w[0]))
        .unwrap();
    let tag = bin[run];
    for extra in [IR_MAX_NESTING, 100_000] {
        let mut deep = bin.clone();
        deep.splice(run..run, std::iter::repeat_n(tag, extra));
        let hash = hash.clone();
        on_small_stack(move || {
            let f = read_ir_bin(&deep, &hash).unwrap_err();
            assert!(
                f.message
                    .contains(&format!("nested more than {IR_MAX_NESTING} levels deep")),
                "{}",
                f.message
            );
        });
    }
}

/// Format 14.4 ("This implementation's `ir.compact`"): a rule's lowered
/// changes are not written in `ir.compact`; its reader lowers the changes
/// as written, so the two agree by construction, and changes as written
/// that do not lower are refused where `ir.json`'s check refuses them.
#[test]
fn a_binary_irs_rule_changes_are_lowered_from_the_changes_as_written() {
    use std::sync::Arc;
    use troupe::internals::compile::{read_ir, read_ir_bin, to_ir_bin};
    let e = compiled("examples/packs/everyday-negotiation");
    let json = get(&e, "ir.json");
    let m: Value = serde_json::from_slice(get(&e, "manifest.json")).unwrap();
    let hash = m["content_hash"].as_str().unwrap();
    let mut ir = read_ir(json, hash).unwrap();
    let i = ir.scenarios[0]
        .runtime
        .rules
        .iter()
        .position(|r| !r.changes.is_empty())
        .expect("a rule with changes");
    let bin = to_ir_bin(&ir);
    let back = read_ir_bin(&bin, hash).unwrap();
    assert_eq!(
        back.scenarios[0].runtime.rules[i].changes,
        ir.scenarios[0].runtime.rules[i].changes
    );
    // The lowered changes are left out: emptied, the same bytes.
    let rt = Arc::get_mut(&mut Arc::get_mut(&mut ir.scenarios[0]).unwrap().runtime).unwrap();
    let kept = std::mem::replace(&mut rt.rules[i].changes, Arc::from(Vec::new()));
    assert_eq!(to_ir_bin(&ir), bin);
    // Changes as written naming no variable: refused at the rule.
    let rt = Arc::get_mut(&mut Arc::get_mut(&mut ir.scenarios[0]).unwrap().runtime).unwrap();
    rt.rules[i].changes = kept;
    rt.rules[i].changes_json =
        serde_json::value::RawValue::from_string(r#"[{"add":{"no_such_variable":1}}]"#.into())
            .unwrap()
            .into();
    let f = read_ir_bin(&to_ir_bin(&ir), hash).unwrap_err();
    assert_eq!(
        f.pointer,
        format!("/scenarios/0/runtime/rules/{i}/changes_json")
    );
    assert!(f.message.contains("do not lower"), "{}", f.message);
}

/// Format 14.4 ("This implementation's `ir.compact`"): an `ir.compact` of
/// another encoding — the previous one, `troupe-compact-2`, wrote a rule's
/// changes as written as JSON text, not tokens — is not read (the loader
/// goes on to `ir.json`); and the rules' changes as written read back from
/// the tokens as the values `ir.json`'s text reads as.
#[test]
fn a_binary_ir_of_the_previous_encoding_is_not_read() {
    use troupe::internals::compile::{read_ir, read_ir_bin, to_ir_bin};
    let e = compiled("examples/packs/everyday-negotiation");
    let json = get(&e, "ir.json");
    let m: Value = serde_json::from_slice(get(&e, "manifest.json")).unwrap();
    let hash = m["content_hash"].as_str().unwrap();
    let ir = read_ir(json, hash).unwrap();
    let bin = to_ir_bin(&ir);
    let back = read_ir_bin(&bin, hash).unwrap();
    for (a, b) in ir.scenarios[0]
        .runtime
        .rules
        .iter()
        .zip(&back.scenarios[0].runtime.rules)
    {
        assert_eq!(a.written_changes(), b.written_changes(), "{}", a.id);
        assert_eq!(a.changes_json.text(), b.changes_json.text(), "{}", a.id);
    }
    // The name is written first, as a postcard string (its length, then
    // its bytes): the previous name has the same length.
    let name = b"troupe-compact-3";
    assert_eq!(&bin[1..1 + name.len()], name);
    let mut old = bin.clone();
    old[1..1 + name.len()].copy_from_slice(b"troupe-compact-2");
    let f = read_ir_bin(&old, hash).unwrap_err();
    assert_eq!(f.pointer, "");
    assert!(
        f.message.contains("not in the encoding `troupe-compact-3`"),
        "{}",
        f.message
    );
}

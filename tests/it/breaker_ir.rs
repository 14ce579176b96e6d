//! Breaker: hostile text kept as JSON text in a compiled package's
//! `ir.json` (issue 41 item 3, Format 14.4 and 16).
//!
//! `JsonText` promises that a text it accepts always builds its value
//! later ("building the value later cannot fail"). serde_json's raw-value
//! reader skips a string's `\u` escapes without pairing surrogates, while
//! building a `serde_json::Value` refuses a lone surrogate: a schema text
//! `"\ud800"` was accepted when read and then silently became `null` when
//! its value was first asked for (the model runtime's answer schema).
//! Expected (Format 14.4): such an IR cannot be read as the IR, IR_MISMATCH
//! at `ir.json` `""`, and `bundle.json` runs.

use std::path::Path;

use serde_json::Value;
use troupe::{Pack, SessionOptions};

use crate::common::packages::{compiled, edited, get, mismatches, tiny_with_condition, with_ir};
use troupe::internals::wire::JsonText;

const NEGOTIATION: &str = "examples/packs/everyday-negotiation";

#[test]
fn a_json_text_with_a_lone_surrogate_is_refused_when_read() {
    for text in [
        r#""\ud800""#,
        r#"{"a":"\uDFFF"}"#,
        r#"["x\ud83d"]"#,
        r#"{"\udc00":1}"#,
        r#""\ud83d\u0041""#,
    ] {
        // The value cannot be built...
        assert!(serde_json::from_str::<Value>(text).is_err(), "{text}");
        // ...so the text is refused, not kept to become `null` later.
        let read = serde_json::from_str::<JsonText>(text);
        assert!(
            read.is_err(),
            "{text}: accepted, value {:?}",
            read.map(|t| t.value().clone())
        );
    }
    // A surrogate pair, escaped backslashes and other escapes still read.
    for (text, want) in [
        (r#""\ud83d\ude00""#, Value::from("\u{1F600}")),
        (r#""\\ud800""#, Value::from("\\ud800")),
        (r#"{"a":"\u00e9\n"}"#, serde_json::json!({"a": "é\n"})),
    ] {
        let t: JsonText = serde_json::from_str(text).unwrap();
        assert_eq!(*t, want, "{text}");
        assert_eq!(t.text(), text);
    }
}

#[test]
fn an_ir_whose_schema_holds_a_lone_surrogate_falls_back_to_bundle_json() {
    let dir = tempfile::tempdir().unwrap();
    let e = compiled(NEGOTIATION);
    let ir = String::from_utf8(get(&e, "ir.json").to_vec()).unwrap();
    let at = ir.find("\"schema\":").unwrap() + "\"schema\":".len();
    // The schema's text replaced by a string holding a lone surrogate.
    let end = {
        let v: Box<serde_json::value::RawValue> = serde_json::Deserializer::from_str(&ir[at..])
            .into_iter::<Box<serde_json::value::RawValue>>()
            .next()
            .unwrap()
            .unwrap();
        at + v.get().len()
    };
    let bad = format!("{}{}{}", &ir[..at], r#""\ud800""#, &ir[end..]);
    let p = with_ir(dir.path(), &e, bad.into_bytes());
    let o = Pack::open(&p).unwrap();
    assert!(
        !o.from_ir(),
        "the IR was used: its schema holds a lone surrogate"
    );
    assert_eq!(mismatches(o.warnings()), [""]);
}

/// A condition the parser accepts (a tree at most 200 high, Format 11.1)
/// is lowered to a tree the IR writes as nested JSON, two levels per
/// node: a left-deep chain of about 60 operators (`state.cups + … >= 3`)
/// already nests ir.json deeper than serde_json's recursion limit (128),
/// so `troupe compile` of a conforming pack writes an ir.json that no
/// loader can read. Every open of that package then warns IR_MISMATCH
/// ("recursion limit exceeded") and compiles `bundle.json` afresh, while
/// `troupe check` of the same package reports nothing (it compares
/// ir.json's bytes with a fresh compile, which agree, and never reads the
/// IR). Expected (Format 14.4): compiling a conforming pack gives a
/// package whose IR is used, or one the compile leaves the scenario out
/// of (no warning either way).
///
/// Reproduce: a tiny bundle whose event reads `state.cups + state.cups +
/// …` (70 terms) `>= 3`; `troupe compile b.json -o p.troupe` (exit 0);
/// `troupe check p.troupe` (valid, 0 warnings); `troupe run --script
/// in.txt p.troupe` warns IR_MISMATCH "ir.json cannot be read as this
/// Troupe's IR (recursion limit exceeded …)".
#[test]
fn a_long_operator_chain_compiles_to_an_ir_that_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    for when in [
        format!("{} >= 3", vec!["state.cups"; 70].join(" + ")),
        format!("{}true{}", "[1].all(x, ".repeat(60), ")".repeat(60)),
    ] {
        let bundle = tiny_with_condition(dir.path(), &when);
        let o = Pack::open(&bundle).unwrap();
        assert!(o.warnings().is_empty(), "{:?}", o.warnings());
        let bytes = o.compile().unwrap();
        let p = dir.path().join("deep.troupe");
        std::fs::write(&p, bytes).unwrap();
        let o = Pack::open(&p).unwrap();
        assert_eq!(
            mismatches(o.warnings()),
            Vec::<String>::new(),
            "{:?}",
            o.warnings()
        );
        assert!(o.from_ir(), "{when}");
    }
}

/// Plays `used-car-safety.txt` and a few plain inputs on `o`.
fn play(o: &Pack) {
    let mut inputs =
        troupe::files::read_script(Path::new("examples/scripts/used-car-safety.txt")).unwrap();
    inputs.extend(["Hello!", "I can offer 7,000.", "Deal."].map(String::from));
    let Ok(mut s) = o.start(SessionOptions::default()) else {
        return;
    };
    for i in &inputs {
        if s.ended() {
            break;
        }
        let _ = s.turn(i);
    }
}

/// An edit of an IR scenario.
type Edit<'a> = Box<dyn Fn(&mut Value) + 'a>;

/// Hand-edited IRs (hashes fixed up, as whoever edits an IR can): lowered
/// conditions of the wrong type, out-of-range locals, wrong arities, odd
/// numbers and shapes where the policy and schema are kept as text.
/// Expected (Format 14.4, 16): refused (IR_MISMATCH, `bundle.json` runs)
/// or run with a diagnostic; never a panic.
#[test]
fn hostile_ir_edits_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let e = compiled(NEGOTIATION);
    let when =
        |root: Value| move |s: &mut Value| s["story"]["events"][0]["when"]["root"] = root.clone();
    let j = |t: &str| -> Value { serde_json::from_str(t).unwrap() };
    let mut edits: Vec<(String, Edit<'_>)> = Vec::new();
    for root in [
        r#"{"Not": {"Const": {"Int": 5}}}"#,
        r#"{"Neg": {"Const": {"String": "x"}}}"#,
        r#"{"Arith": ["Add", {"Const": {"Bool": true}}, {"Const": {"String": "x"}}]}"#,
        r#"{"Arith": ["Div", {"Const": {"Int": 1}}, {"Const": {"Int": 0}}]}"#,
        r#"{"Arith": ["Mul", {"Const": {"Int": 9223372036854775807}}, {"Const": {"Int": 2}}]}"#,
        r#"{"Index": [{"Const": {"Int": 1}}, {"Const": {"Int": 1}}]}"#,
        r#"{"Local": 4000000000}"#,
        r#"{"Local": 0}"#,
        r#"{"SlotBound": 0}"#,
        r#"{"Slot": 0}"#,
        r#"{"CmpSlotInt": ["Gt", 0, 1]}"#,
        r#"{"Call": ["Size", []]}"#,
        r#"{"Call": ["Contains", [{"Const": {"Int": 1}}]]}"#,
        r#"{"Call": ["Roll", [{"Const": {"String": "999999d999999"}}]]}"#,
        r#"{"Call": ["Hit", []]}"#,
        r#"{"Call": ["Matches", [{"Const": {"String": "a"}}, {"Const": {"String": "("}}]]}"#,
        r#"{"Comp": {"kind": "All", "range": {"Const": {"Int": 3}}, "pred": null, "transform": null}}"#,
        r#"{"Comp": {"kind": "Map", "range": {"List": []}, "pred": null, "transform": null}}"#,
        r#"{"Cond": [{"Const": {"Int": 1}}, {"Const": {"Bool": true}}, {"Const": {"Bool": false}}, 0]}"#,
        r#"{"And": [{"Const": {"Bool": true}}, {"Const": {"Bool": true}}, 4000000000]}"#,
        r#"{"Select": [{"Const": {"Int": 1}}, "x", true]}"#,
        r#"{"Map": [[{"Const": {"List": []}}, {"Const": {"Int": 1}}]]}"#,
        r#"{"In": [{"Const": {"Int": 1}}, {"Const": {"Int": 1}}]}"#,
        r#"{"Const": {"Double": 1e400}}"#,
        r#"{"Const": {"Int": 1}}"#,
    ] {
        edits.push((root.to_string(), Box::new(when(j(root)))));
    }
    for (name, v) in [
        ("slot_count huge", j("1e400")),
        ("slot_count negative", j("-1")),
        ("slot_count u64 max + 1", j("18446744073709551616")),
    ] {
        edits.push((
            name.into(),
            Box::new(move |s: &mut Value| s["story"]["slot_count"] = v.clone()),
        ));
    }
    for (name, v) in [
        ("policy a number", j("1e99999")),
        ("policy a string", j(r#""\u0000""#)),
        ("policy categories a map", j(r#"{"categories": {"a": 1}}"#)),
        (
            "policy huge term",
            serde_json::json!({"categories": [{"id": "x", "action": "stop", "terms": ["a".repeat(1 << 20)]}]}),
        ),
        (
            "policy bad pattern",
            j(
                r#"{"categories": [{"id": "x", "action": "stop", "patterns": ["(", "/a/zz", "(?<"]}]}"#,
            ),
        ),
        (
            "policy unknown action",
            j(r#"{"categories": [{"id": "x", "action": "explode", "terms": ["hi"]}]}"#),
        ),
    ] {
        edits.push((
            name.into(),
            Box::new(move |s: &mut Value| s["runtime"]["safety"] = v.clone()),
        ));
    }
    edits.push((
        "schema a huge number".into(),
        Box::new(|s: &mut Value| {
            s["story"]["model"]["schema"] = j("123456789012345678901234567890e99999")
        }),
    ));
    for (name, edit) in &edits {
        let ir = edited(&e, |s| edit(s));
        let p = with_ir(dir.path(), &e, ir);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let o = Pack::open(&p).unwrap();
            play(&o);
            o.from_ir()
        }));
        assert!(r.is_ok(), "{name}: panicked");
    }
}

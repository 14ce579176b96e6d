//! Reading a compiled package's `ir.json` cheaply (issue 41 item 3): the
//! model's answer schema and the safety policy are kept as their JSON
//! text, and read as untrusted input like the rest of the IR (Format
//! 14.4, 16).
//!
//! Expected outcomes derived by hand from Format 14.4: an IR whose hashes
//! match is used when it can be read as the IR and is sound; otherwise
//! the loader warns IR_MISMATCH at `ir.json` (pointer `""` when it cannot
//! be read as the IR at all) and runs `bundle.json`, never panicking. The
//! script `used-car-safety.txt` is redirected at its first line (a card
//! number) and stopped at its second by the negotiation pack's `threats`
//! category (Format 19.4), as `package_integrity` derives.

use serde_json::{json, Value};
use troupe::internals::compile::read_ir;
use troupe::internals::load::content_hash;
use troupe::internals::open::open;
use troupe::Pack;
use troupe::SafetyStatus as Status;

use crate::common::packages::{compiled, edited, get, mismatches, play_safety, with_ir};

const NEGOTIATION: &str = "examples/packs/everyday-negotiation";

/// `depth` arrays nested in one another.
fn nested(depth: usize) -> Value {
    let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    // Built from text: serde_json reads up to its own limit (128).
    serde_json::from_str(&text).unwrap()
}

#[test]
fn every_examples_ir_reads_back_to_the_same_bytes() {
    // What is kept as text (schema, safety policy) and what is built in
    // one allocation (strings) is written as it was read: reading an IR
    // and writing it again gives ir.json byte for byte.
    for pack in [
        "examples/packs/everyday-negotiation",
        "examples/packs/harbor-lights",
        "examples/packs/job-interview",
        "examples/packs/tenants-meeting",
        "examples/bundles/harbor-lights.bundle.json",
        "examples/bundles/tiny.bundle.json",
    ] {
        let e = compiled(pack);
        let ir = get(&e, "ir.json");
        let read = read_ir(ir, &content_hash(get(&e, "bundle.json"))).unwrap();
        let mut again = serde_json::to_vec(&read).unwrap();
        again.push(b'\n');
        assert!(
            again == ir,
            "{pack}: ir.json read and written again differs"
        );
        assert!(!read.scenarios.is_empty(), "{pack}");
    }
}

#[test]
fn a_schema_or_policy_nested_too_deep_is_refused_and_bundle_json_runs() {
    let dir = tempfile::tempdir().unwrap();
    let e = compiled(NEGOTIATION);
    // At the bound (100 levels, well under serde_json's 128): used, and
    // the schema reads back as written.
    let p = with_ir(
        dir.path(),
        &e,
        edited(&e, |s| s["story"]["model"]["schema"] = nested(100)),
    );
    // The internal open: the IR read back is not on the API's `Pack`.
    let o = open(&p).unwrap();
    assert!(o.from_ir, "{:?}", o.warnings);
    let ir = o.ir.as_ref().unwrap();
    assert_eq!(*ir.scenarios[0].story.model.schema, nested(100));
    // One level deeper: the IR cannot be read as the IR (pointer ""), and
    // bundle.json runs, its safety policy stopping the script.
    for edit in [
        (|s: &mut Value| s["story"]["model"]["schema"] = nested(101)) as fn(&mut Value),
        |s: &mut Value| s["runtime"]["safety"]["x-deep"] = nested(101),
    ] {
        let p = with_ir(dir.path(), &e, edited(&e, edit));
        let o = Pack::open(&p).unwrap();
        assert!(!o.from_ir());
        assert_eq!(mismatches(o.warnings()), [""]);
        assert_eq!(play_safety(&o), [Status::Redirect, Status::Stop]);
    }
}

#[test]
fn a_policy_of_odd_shapes_reads_as_its_json_value_did() {
    // Format 14.4 keeps the policy as written; its reader skips what is
    // not of its shape as reading the JSON value did: a non-string term,
    // an unknown field, a category that is not an object.
    let dir = tempfile::tempdir().unwrap();
    let e = compiled(NEGOTIATION);
    let ir = edited(&e, |s| {
        let safety = &mut s["runtime"]["safety"];
        let cats = safety["categories"].as_array_mut().unwrap();
        for c in cats.iter_mut() {
            if let Some(t) = c.get_mut("terms").and_then(Value::as_array_mut) {
                t.push(json!(5));
            }
            c["x-note"] = json!({"a": [1, {"b": null}]});
        }
        cats.push(json!("not a category"));
    });
    let p = with_ir(dir.path(), &e, ir);
    let o = Pack::open(&p).unwrap();
    assert!(o.from_ir(), "{:?}", o.warnings());
    assert_eq!(play_safety(&o), [Status::Redirect, Status::Stop]);
}

#[test]
fn a_truncated_or_garbled_ir_with_its_hash_fixed_up_falls_back() {
    let dir = tempfile::tempdir().unwrap();
    let e = compiled(NEGOTIATION);
    let ir = get(&e, "ir.json").to_vec();
    let schema_at = String::from_utf8_lossy(&ir).find("\"schema\":").unwrap();
    for bad in [
        ir[..ir.len() / 2].to_vec(),
        // Cut inside the schema kept as text.
        ir[..schema_at + 20].to_vec(),
        // The schema replaced by something that is not JSON.
        [
            &ir[..schema_at + 9],
            b"{\"type\":\"object\",]".as_slice(),
            &ir[schema_at + 9..],
        ]
        .concat(),
        // A string whose length runs to the end of the file.
        [&ir[..schema_at + 9], b"\"".as_slice(), &vec![b'x'; 1 << 20]].concat(),
    ] {
        let p = with_ir(dir.path(), &e, bad);
        let o = Pack::open(&p).unwrap();
        assert!(!o.from_ir());
        assert_eq!(mismatches(o.warnings()), [""]);
        assert_eq!(play_safety(&o), [Status::Redirect, Status::Stop]);
    }
}

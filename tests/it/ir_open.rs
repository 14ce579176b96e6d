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

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use troupe::compile::package::{content_hash, read_ir, write_package};
use troupe::diag::{Code, Diagnostic};
use troupe::files::read_script;
use troupe::open::open;
use troupe::runtime::safety::Status;
use troupe::runtime::{Options, Session};

const NEGOTIATION: &str = "examples/packs/everyday-negotiation";

/// The compiled package of `pack`, as its entries.
fn compiled(pack: &str) -> Vec<(String, Vec<u8>)> {
    let o = open(Path::new(pack)).unwrap();
    let bytes = write_package(&o.bundle, &o.sessions).unwrap();
    troupe::load::screen_package("p", &bytes)
        .value
        .unwrap()
        .kept
}

fn get<'a>(e: &'a [(String, Vec<u8>)], name: &str) -> &'a [u8] {
    &e.iter().find(|(n, _)| n == name).unwrap().1
}

fn set(e: &mut [(String, Vec<u8>)], name: &str, data: Vec<u8>) {
    e.iter_mut().find(|(n, _)| n == name).unwrap().1 = data;
}

/// The package with `ir.json` replaced by `ir` and `ir_hash` fixed up (so
/// only reading the IR can tell), written to `dir`.
fn with_ir(dir: &Path, e: &[(String, Vec<u8>)], ir: Vec<u8>) -> PathBuf {
    let mut e = e.to_vec();
    let mut m: Value = serde_json::from_slice(get(&e, "manifest.json")).unwrap();
    m["ir_hash"] = content_hash(&ir).into();
    set(&mut e, "ir.json", ir);
    set(&mut e, "manifest.json", format!("{m}\n").into_bytes());
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, data) in &e {
        z.start_file(name.as_str(), opts).unwrap();
        z.write_all(data).unwrap();
    }
    let p = dir.join("p.troupe");
    std::fs::write(&p, z.finish().unwrap().into_inner()).unwrap();
    p
}

/// ir.json with `edit` applied to its first scenario.
fn edited(e: &[(String, Vec<u8>)], edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut ir: Value = serde_json::from_slice(get(e, "ir.json")).unwrap();
    edit(&mut ir["scenarios"][0]);
    format!("{ir}\n").into_bytes()
}

/// The IR_MISMATCH warnings' pointers.
fn mismatches(d: &[Diagnostic]) -> Vec<String> {
    d.iter()
        .filter(|d| d.code == Code::IrMismatch)
        .map(|d| d.location.pointer.clone().unwrap_or_default())
        .collect()
}

/// Plays `used-car-safety.txt`; the safety status of each turn played.
fn play_safety(o: &troupe::runtime::Opened) -> Vec<Status> {
    let inputs = read_script(Path::new("examples/scripts/used-car-safety.txt")).unwrap();
    let mut s = Session::start(o, &Options::default()).unwrap();
    let mut out = Vec::new();
    for i in &inputs {
        if s.is_over() {
            break;
        }
        out.push(s.turn(i).unwrap().safety_status);
    }
    out
}

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
        let o = open(&p).unwrap();
        assert!(!o.from_ir);
        assert_eq!(mismatches(&o.warnings), [""]);
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
    let o = open(&p).unwrap();
    assert!(o.from_ir, "{:?}", o.warnings);
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
        let o = open(&p).unwrap();
        assert!(!o.from_ir);
        assert_eq!(mismatches(&o.warnings), [""]);
        assert_eq!(play_safety(&o), [Status::Redirect, Status::Stop]);
    }
}

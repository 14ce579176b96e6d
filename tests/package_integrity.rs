//! The integrity of a compiled package (Format 14.4): `ir.json` is bound to
//! `bundle.json` by hashes (manifest `content_hash` and `ir_hash`, ir.json
//! `bundle_hash`), which detect corruption and partial edits; only
//! recompiling `bundle.json` (`troupe check`, `--verify-ir`) proves that
//! `ir.json` is its compilation. The example negotiation package is edited
//! three ways: (a) ir.json alone, (b) ir.json with the manifest's `ir_hash`
//! fixed up, (c) bundle.json alone.
//!
//! Expected outcomes derived from Format 14.4 and 19 by hand: the script
//! `used-car-safety.txt` is stopped at its second line by the `threats`
//! category (`I know where you live`, action `stop`).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;
use troupe::check::run::check_paths;
use troupe::cli::run::read_script;
use troupe::compile::package::{content_hash, write_package};
use troupe::diag::{Code, Severity};
use troupe::runtime::safety::Status;
use troupe::runtime::{open, open_with, OpenOptions, Options, Session};

const NEGOTIATION: &str = "examples/packs/everyday-negotiation";

/// The entries of a package, in archive order.
fn entries(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    troupe::load::screen_package("p", bytes).value.unwrap().kept
}

fn zip(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, data) in entries {
        z.start_file(name.as_str(), opts).unwrap();
        z.write_all(data).unwrap();
    }
    z.finish().unwrap().into_inner()
}

fn get<'a>(e: &'a [(String, Vec<u8>)], name: &str) -> &'a [u8] {
    &e.iter().find(|(n, _)| n == name).unwrap().1
}

fn set(e: &mut [(String, Vec<u8>)], name: &str, data: Vec<u8>) {
    e.iter_mut().find(|(n, _)| n == name).unwrap().1 = data;
}

/// The example package and its entries.
fn compiled() -> Vec<(String, Vec<u8>)> {
    let o = open(Path::new(NEGOTIATION)).unwrap();
    entries(&write_package(&o.bundle, &o.sessions).unwrap())
}

/// The three unsafe edits of issue 11 applied to a bundle value: the safety
/// categories removed, the character made `fictional: false`, a reply
/// rewritten.
fn edit_bundle(bundle: &mut Value) {
    let sc = &mut bundle["scenarios"][0];
    sc["safety"]["categories"] = Value::Array(Vec::new());
    sc["rules"][0]["replies"] = serde_json::json!(["Rewritten."]);
    bundle["characters"][0]["fictional"] = Value::Bool(false);
}

/// ir.json with its bundle edited (its own `bundle_hash` left as it was).
fn edited_ir(e: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut ir: Value = serde_json::from_slice(get(e, "ir.json")).unwrap();
    edit_bundle(&mut ir["bundle"]);
    let mut s = ir.to_string();
    s.push('\n');
    s.into_bytes()
}

fn fix_ir_hash(e: &mut [(String, Vec<u8>)]) {
    let mut m: Value = serde_json::from_slice(get(e, "manifest.json")).unwrap();
    m["ir_hash"] = content_hash(get(e, "ir.json")).into();
    set(e, "manifest.json", format!("{m}\n").into_bytes());
}

fn write(dir: &Path, name: &str, e: &[(String, Vec<u8>)]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, zip(e)).unwrap();
    p
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

fn ir_mismatch(d: &[troupe::diag::Diagnostic], severity: Severity) -> Vec<(String, String)> {
    d.iter()
        .filter(|d| d.code == Code::IrMismatch && d.severity == severity)
        .map(|d| {
            (
                d.location.file.clone().unwrap_or_default(),
                d.location.pointer.clone().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn the_compiled_example_package_uses_its_ir_and_checks_clean() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "ok.troupe", &compiled());
    let o = open(&p).unwrap();
    assert!(o.from_ir && o.warnings.is_empty());
    let v = open_with(
        &p,
        OpenOptions {
            verify_ir: true,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    assert!(v.from_ir && v.warnings.is_empty());
    assert!(check_paths(&[p]).diagnostics.is_empty());
}

#[test]
fn a_naive_edit_of_ir_json_falls_back_and_still_stops_at_the_unsafe_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = compiled();
    let ir = edited_ir(&e);
    set(&mut e, "ir.json", ir);
    let p = write(dir.path(), "a.troupe", &e);
    let o = open(&p).unwrap();
    assert!(!o.from_ir, "the edited IR is not used");
    let file = format!("{}!manifest.json", p.display());
    assert_eq!(
        ir_mismatch(&o.warnings, Severity::Warning),
        [(file, "/ir_hash".to_string())]
    );
    // The story run is bundle.json's: line 2 is stopped by `threats`.
    assert_eq!(play_safety(&o), [Status::Redirect, Status::Stop]);
    // Compiling the edited package writes a package that checks clean.
    let again = open_with(
        &p,
        OpenOptions {
            use_ir: false,
            verify_ir: false,
        },
    )
    .unwrap();
    let q = dir.path().join("again.troupe");
    std::fs::write(&q, write_package(&again.bundle, &again.sessions).unwrap()).unwrap();
    assert!(check_paths(&[q]).is_valid(true));
}

#[test]
fn an_edit_with_its_hash_fixed_up_fails_check_and_verify_ir_falls_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = compiled();
    let ir = edited_ir(&e);
    set(&mut e, "ir.json", ir);
    fix_ir_hash(&mut e);
    let p = write(dir.path(), "b.troupe", &e);
    // Every hash agrees, so only recompiling tells: `check` is an error.
    let checked = check_paths(std::slice::from_ref(&p));
    assert!(!checked.is_valid(false));
    let file = format!("{}!ir.json", p.display());
    assert_eq!(
        ir_mismatch(&checked.diagnostics, Severity::Error),
        [(file.clone(), String::new())]
    );
    // `--verify-ir` recompiles at open: a warning, and bundle.json runs.
    let o = open_with(
        &p,
        OpenOptions {
            verify_ir: true,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    assert!(!o.from_ir);
    assert_eq!(
        ir_mismatch(&o.warnings, Severity::Warning),
        [(file, String::new())]
    );
    assert_eq!(play_safety(&o), [Status::Redirect, Status::Stop]);
    // `troupe compile` never takes the IR: what it writes checks clean.
    let c = open_with(
        &p,
        OpenOptions {
            use_ir: false,
            verify_ir: false,
        },
    )
    .unwrap();
    let q = dir.path().join("again.troupe");
    std::fs::write(&q, write_package(&c.bundle, &c.sessions).unwrap()).unwrap();
    assert!(check_paths(&[q]).is_valid(true));
}

#[test]
fn an_edit_of_bundle_json_alone_fails_check_on_the_bundle_itself() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = compiled();
    let mut bundle: Value = serde_json::from_slice(get(&e, "bundle.json")).unwrap();
    edit_bundle(&mut bundle);
    set(&mut e, "bundle.json", format!("{bundle}\n").into_bytes());
    let p = write(dir.path(), "c.troupe", &e);
    let checked = check_paths(std::slice::from_ref(&p));
    assert!(!checked.is_valid(false));
    // The bundle's own diagnostic: `fictional` must be true (Format 4).
    assert!(checked.diagnostics.iter().any(|d| d.is_error()
        && d.code == Code::Schema
        && d.location.pointer.as_deref() == Some("/characters/0/fictional")));
    // The stale IR is a warning; the edited bundle does not run.
    let file = format!("{}!manifest.json", p.display());
    assert_eq!(
        ir_mismatch(&checked.diagnostics, Severity::Warning),
        [(file, "/content_hash".to_string())]
    );
    assert!(open(&p).is_err());
}

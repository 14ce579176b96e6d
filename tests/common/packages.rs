//! Compiled packages taken apart and put back together (Format 14.4): the
//! tests that edit a package's entries (`ir.json`, `manifest.json`) write
//! it again with its hashes fixed up, as whoever edits a package can.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;
use troupe::SafetyStatus as Status;
use troupe::{Code, Diagnostic, Pack, SessionOptions};

/// A package's entries (name, bytes), in archive order.
pub type Entries = Vec<(String, Vec<u8>)>;

/// The entries of the package `bytes`.
pub fn entries(bytes: &[u8]) -> Entries {
    troupe::internals::load::screen_package("p", bytes)
        .value
        .unwrap()
        .kept
}

/// The compiled package of the pack at `pack` as `troupe compile` writes
/// it (with `ir.compact`), as its entries.
pub fn compiled_full(pack: &str) -> Entries {
    entries(&Pack::open(pack).unwrap().compile().unwrap())
}

/// The compiled package of the pack at `pack` with `ir.json` its only
/// compiled entry (`ir.compact` left out), as its entries: the tests of
/// what is read from `ir.json` edit it, and a package without
/// `ir.compact` loads as it did before that entry existed (Format 14.4).
/// [`compiled_full`] for the package as written.
pub fn compiled(pack: &str) -> Entries {
    let mut e = compiled_full(pack);
    e.retain(|(n, _)| n != "ir.compact");
    e
}

/// The bytes of entry `name`.
pub fn get<'a>(e: &'a [(String, Vec<u8>)], name: &str) -> &'a [u8] {
    &e.iter().find(|(n, _)| n == name).unwrap().1
}

/// Replaces the bytes of entry `name`.
pub fn set(e: &mut [(String, Vec<u8>)], name: &str, data: Vec<u8>) {
    e.iter_mut().find(|(n, _)| n == name).unwrap().1 = data;
}

/// The entries as a zip archive (stored, in order).
pub fn zip(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, data) in entries {
        z.start_file(name.as_str(), opts).unwrap();
        z.write_all(data).unwrap();
    }
    z.finish().unwrap().into_inner()
}

/// Writes the entries as the package `dir/name`.
pub fn write(dir: &Path, name: &str, e: &[(String, Vec<u8>)]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, zip(e)).unwrap();
    p
}

/// Sets the manifest's `ir_hash` to the hash of the entries' `ir.json`.
pub fn fix_ir_hash(e: &mut [(String, Vec<u8>)]) {
    let mut m: Value = serde_json::from_slice(get(e, "manifest.json")).unwrap();
    m["ir_hash"] = troupe::internals::load::content_hash(get(e, "ir.json")).into();
    set(e, "manifest.json", format!("{m}\n").into_bytes());
}

/// The package with `ir.json` replaced by `ir` and `ir_hash` fixed up (so
/// only reading the IR can tell), written as `dir/p.troupe`.
pub fn with_ir(dir: &Path, e: &[(String, Vec<u8>)], ir: Vec<u8>) -> PathBuf {
    let mut e = e.to_vec();
    set(&mut e, "ir.json", ir);
    fix_ir_hash(&mut e);
    write(dir, "p.troupe", &e)
}

/// `ir.json` of the entries with `edit` applied to its first scenario.
pub fn edited(e: &[(String, Vec<u8>)], edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut ir: Value = serde_json::from_slice(get(e, "ir.json")).unwrap();
    edit(&mut ir["scenarios"][0]);
    format!("{ir}\n").into_bytes()
}

/// The pointers of the IR_MISMATCH diagnostics.
pub fn mismatches(d: &[Diagnostic]) -> Vec<String> {
    d.iter()
        .filter(|d| d.code == Code::IrMismatch)
        .map(|d| d.location.pointer.clone().unwrap_or_default())
        .collect()
}

/// Plays `examples/scripts/used-car-safety.txt`: the safety status of each
/// turn played.
pub fn play_safety(pack: &Pack) -> Vec<Status> {
    let inputs =
        troupe::files::read_script(Path::new("examples/scripts/used-car-safety.txt")).unwrap();
    let mut s = pack.start(SessionOptions::default()).unwrap();
    let mut out = Vec::new();
    for i in &inputs {
        if s.ended() {
            break;
        }
        out.push(s.turn(i).unwrap().safety_status);
    }
    out
}

/// The tiny bundle (`examples/bundles/tiny.bundle.json`) with its event's
/// condition replaced by `when`, written into `dir`.
pub fn tiny_with_condition(dir: &std::path::Path, when: &str) -> std::path::PathBuf {
    let mut b: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string("examples/bundles/tiny.bundle.json").unwrap(),
    )
    .unwrap();
    b["scenarios"][0]["events"][0]["when"] = when.into();
    let p = dir.join("deep.bundle.json");
    std::fs::write(&p, b.to_string()).unwrap();
    p
}

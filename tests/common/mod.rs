//! Helpers shared by the integration tests: the shared data folder, and
//! copies of the example packs to break in a temporary folder.
#![allow(dead_code)]

pub mod loopback;
pub mod measured;
pub mod packages;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Runs the `troupe` binary with `args` in the repository, stdin closed.
pub fn troupe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Runs the `troupe` binary as [`troupe`] does: its exit code (-1 when a
/// signal ended it), standard output and standard error as text.
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = troupe(args);
    (
        out.status.code().unwrap_or(-1),
        stdout(&out),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A command's standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `<shared>/<rel>` where `<shared>` is `$TROUPE_SHARED_DIR`, else
/// `../shared` beside the repository. When it is missing the test prints
/// one line saying it did not run and why and gets `None`; with
/// `TROUPE_REQUIRE_SHARED=1` (as `.ci/run` sets) a missing folder fails the
/// test instead.
pub fn shared(rel: &str, test: &str) -> Option<PathBuf> {
    let base = std::env::var_os("TROUPE_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let path = base.join(rel);
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var("TROUPE_REQUIRE_SHARED").as_deref() != Ok("1"),
        "{test}: shared data is required (TROUPE_REQUIRE_SHARED=1) but {} is missing",
        path.display()
    );
    println!(
        "{test}: did not run: {} not found (set TROUPE_SHARED_DIR)",
        path.display()
    );
    None
}

/// Copies a folder recursively.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// A copy of the example pack `name` in a temporary folder (kept alive by
/// the returned guard).
pub fn pack(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(name);
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/packs")
            .join(name),
        &root,
    );
    (dir, root)
}

/// Replaces the first `from` with `to` in a pack file, which must hold it.
pub fn edit(root: &Path, rel: &str, from: &str, to: &str) {
    let p = root.join(rel);
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(from), "{rel} has no {from:?}");
    std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
}

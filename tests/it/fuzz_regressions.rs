//! The fuzz corpora as regression tests (issue 12, Format 16): every input
//! of `fuzz/regressions/<target>/` (the corpus that fuzzing grew, minimized
//! to the inputs that reach new coverage, and any crash reproducer) runs
//! through the target's own body (`fuzz/targets.rs`) on every `cargo test`.
//! An input that panics fails the test with its file name; the fuzzing
//! commands are in docs/performance.md, "Fuzzing".

use std::path::{Path, PathBuf};

#[path = "../../fuzz/targets.rs"]
mod targets;

fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a readable entry").path())
        .collect();
    files.sort();
    files
}

/// Replays `target`'s corpus; returns the inputs that panicked.
fn replay(target: &str, body: fn(&[u8])) -> Vec<String> {
    let files = corpus(target);
    assert!(
        files.len() >= 4,
        "fuzz/regressions/{target}/ holds {} inputs: the corpus is missing",
        files.len()
    );
    let mut failed = Vec::new();
    for f in files {
        let data = std::fs::read(&f).expect("a readable corpus file");
        if std::panic::catch_unwind(|| body(&data)).is_err() {
            failed.push(f.display().to_string());
        }
    }
    failed
}

/// Set in the child process that [`every_corpus_input_runs_without_a_panic`]
/// replays the corpora in.
const REPLAY_CHILD: &str = "TROUPE_FUZZ_REPLAY_CHILD";

#[test]
fn every_corpus_input_runs_without_a_panic() {
    // The replay changes what is process-wide: the `mcp` target enters its
    // root folder (the working directory every other test's relative paths
    // start from) and the panic hook is silenced. The test binary holds
    // every integration test, so the replay runs in a process of its own:
    // this binary again, running this one test.
    if std::env::var_os(REPLAY_CHILD).is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "fuzz_regressions::every_corpus_input_runs_without_a_panic",
                "--test-threads=1",
                "--nocapture",
            ])
            .env(REPLAY_CHILD, "1")
            .output()
            .expect("the test binary runs the replay");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "the replay failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    // Quiet: a panicking input is named below, not printed 1,000 times.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut failed = Vec::new();
    for (name, body) in targets::TARGETS {
        failed.extend(replay(name, *body));
    }
    std::panic::set_hook(hook);
    assert!(failed.is_empty(), "inputs that panic: {failed:#?}");
}

#[test]
fn every_fuzz_target_has_a_committed_corpus() {
    let dirs: Vec<String> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets"))
            .expect("fuzz/fuzz_targets")
            .filter_map(|e| {
                let p = e.ok()?.path();
                Some(p.file_stem()?.to_str()?.to_string())
            })
            .collect();
    for d in &dirs {
        assert!(
            targets::TARGETS.iter().any(|(n, _)| n == d),
            "fuzz target `{d}` is not replayed by this test (add it to fuzz/targets.rs TARGETS)"
        );
    }
    assert_eq!(dirs.len(), targets::TARGETS.len());
}

/// Each fuzz target's program is the one-line shape every target has: it
/// includes `fuzz/targets.rs` and hands libFuzzer's input to the function
/// of its own name, and `fuzz/Cargo.toml` builds it as a binary of that
/// name. With the bodies compiled here (the `targets` module above) and
/// `.ci/run` checking that `fuzz/Cargo.lock` is current (`cargo metadata
/// --locked`), this is what the fuzz workspace's own check compiled besides
/// (docs/performance.md, Run AM: that check, 97–116 s of `.ci/run`, is gone).
#[test]
fn every_fuzz_target_is_its_body_and_a_binary_of_its_name() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("fuzz/Cargo.toml");
    for (name, _) in targets::TARGETS {
        let file = root.join(format!("fuzz_targets/{name}.rs"));
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        let code: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("//"))
            .collect();
        let call = format!("libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::{name}(data));");
        assert_eq!(
            code,
            [
                "#![no_main]",
                "#[path = \"../targets.rs\"]",
                "mod targets;",
                call.as_str()
            ],
            "{file:?}"
        );
        let bin = format!("[[bin]]\nname = \"{name}\"\npath = \"fuzz_targets/{name}.rs\"\n");
        assert!(
            manifest.contains(&bin),
            "fuzz/Cargo.toml does not build {name}:\n{bin}"
        );
    }
}

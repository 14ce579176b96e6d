//! Hostile input, part two (issue 12), through the `troupe` binary: files
//! are never lost (Format 16.5), output is safe for a terminal (17.4), and
//! codes and messages are the documented ones. Inputs are generated in a
//! tempdir. Its bounds on time and peak memory (compared between two input
//! sizes, never against a clock) are in `tests/bounds/hostile_cli.rs`.

#![cfg(unix)]

use crate::common;
use common::measured::{troupe_in, Run};

use std::path::{Path, PathBuf};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn troupe(dir: &Path, args: &[&str]) -> Run {
    troupe_in(dir, args, None)
}

fn negotiation() -> String {
    repo("examples/packs/everyday-negotiation")
        .display()
        .to_string()
}

fn script() -> String {
    repo("examples/scripts/used-car-good-deal.txt")
        .display()
        .to_string()
}

fn tiny_bundle() -> String {
    repo("examples/bundles/tiny.bundle.json")
        .display()
        .to_string()
}

// ---- files are never lost (Format 16.5) ------------------------------

#[test]
fn a_refused_run_leaves_out_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.jsonl");
    for bad in [
        ["--scenario", "nope"],
        ["--difficulty", "nope"],
        ["--opening", "nope"],
    ] {
        std::fs::write(&out, "{\"keep\": \"me\"}\n").unwrap();
        let r = troupe(
            dir.path(),
            &[
                "run",
                &negotiation(),
                "--script",
                &script(),
                "--out",
                "s.jsonl",
                bad[0],
                bad[1],
            ],
        );
        assert_eq!(r.code, 1, "{bad:?}: {}", r.stderr);
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "{\"keep\": \"me\"}\n",
            "{bad:?}"
        );
        assert!(!dir.path().join(".s.jsonl.troupe-partial").exists());
    }
    // A run that succeeds replaces it with a session `check` accepts.
    let r = troupe(
        dir.path(),
        &[
            "run",
            &negotiation(),
            "--script",
            &script(),
            "--out",
            "s.jsonl",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = troupe(dir.path(), &["check", &negotiation(), "s.jsonl"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
}

#[test]
fn an_output_that_is_an_input_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pack = d.join("pack");
    copy_dir(&repo("examples/packs/everyday-negotiation"), &pack);
    std::fs::copy(script(), d.join("script.txt")).unwrap();
    std::fs::copy(tiny_bundle(), d.join("b.json")).unwrap();
    std::fs::copy(
        repo("examples/bundles/tiny.bundle.json"),
        d.join("card.json"),
    )
    .unwrap();
    std::os::unix::fs::symlink(d.join("script.txt"), d.join("link.txt")).unwrap();
    std::fs::hard_link(d.join("b.json"), d.join("hard.json")).unwrap();
    let before = snapshot(d);
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "run",
            "pack",
            "--script",
            "script.txt",
            "--out",
            "script.txt",
        ],
        vec!["run", "pack", "--script", "script.txt", "--out", "link.txt"],
        vec![
            "run",
            "pack",
            "--script",
            "script.txt",
            "--out",
            "pack/manifest.yaml",
        ],
        vec!["compile", "b.json", "-o", "b.json"],
        vec!["compile", "b.json", "-o", "hard.json"],
        vec!["compile", "pack", "-o", "pack/manifest.yaml"],
        vec![
            "export",
            "card",
            "b.json",
            "--character",
            "pip",
            "-o",
            "b.json",
        ],
        vec!["import", "card", "card.json", "-o", "card.json"],
        vec!["import", "lorebook", "card.json", "-o", "card.json"],
        vec!["import", "chat", "script.txt", "-o", "script.txt"],
        vec![
            "import",
            "chat",
            "script.txt",
            "-o",
            "x.jsonl",
            "--bundle",
            "x.jsonl",
        ],
        vec!["test", "pack", "--junit", "pack/manifest.yaml"],
        vec!["play", "pack", "--out", "pack/manifest.yaml"],
    ];
    for args in cases {
        let r = troupe(d, &args);
        assert_eq!(r.code, 2, "{args:?}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("is an input") || r.stderr.contains("two outputs"),
            "{args:?}: {}",
            r.stderr
        );
        assert_eq!(snapshot(d), before, "{args:?} changed a file");
    }
}

#[test]
fn a_second_writer_of_a_session_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("s.jsonl"), "{\"keep\": 1}\n").unwrap();
    // Another writer holds the lock on the partial file.
    let held = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(d.join(".s.jsonl.troupe-partial"))
        .unwrap();
    fs4::FileExt::try_lock(&held).unwrap();
    let r = troupe(
        d,
        &[
            "run",
            &negotiation(),
            "--script",
            &script(),
            "--out",
            "s.jsonl",
        ],
    );
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("being written by another troupe process"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(d.join("s.jsonl")).unwrap(),
        "{\"keep\": 1}\n"
    );
    drop(held);
    // A stale partial file (a killed writer) is taken over.
    let r = troupe(
        d,
        &[
            "run",
            &negotiation(),
            "--script",
            &script(),
            "--out",
            "s.jsonl",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!d.join(".s.jsonl.troupe-partial").exists());
}

#[test]
fn run_does_not_commit_a_session_check_rejects() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // One input line over the 16 MiB session line bound (Format 16.1); the
    // turn is refused before it makes the line (an input over 1 MiB, 16.2),
    // and the refused run leaves `s.jsonl` as it was (16.3).
    let mut line = "a".repeat(17 * 1024 * 1024);
    line.push('\n');
    std::fs::write(d.join("long.txt"), line).unwrap();
    std::fs::write(d.join("s.jsonl"), "{\"keep\": 1}\n").unwrap();
    let r = troupe(
        d,
        &[
            "run",
            &negotiation(),
            "--script",
            "long.txt",
            "--out",
            "s.jsonl",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("LIMIT"), "{}", r.stderr);
    assert!(r.stderr.contains("was not written"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(d.join("s.jsonl")).unwrap(),
        "{\"keep\": 1}\n"
    );
}

#[test]
fn an_import_check_rejects_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let card = serde_json::json!({"spec": "chara_card_v2", "spec_version": "2.0",
        "data": {"name": "N".repeat(100), "first_mes": "hi"}});
    std::fs::write(d.join("card.json"), card.to_string()).unwrap();
    std::fs::write(d.join("out.json"), "keep").unwrap();
    let r = troupe(d, &["import", "card", "card.json", "-o", "out.json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("nothing was written"), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(d.join("out.json")).unwrap(), "keep");
    let r = troupe(d, &["import", "card", "card.json", "--pack", "-o", "pack"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(!d.join("pack").exists());
    assert!(!d.join(".pack.troupe-partial").exists());
}

// ---- terminal-safe human output (Format 17.4) ------------------------

#[test]
fn control_characters_from_inputs_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("b.json"),
        "{\"troupe\":\"0.1\",\"kind\":\"bundle\",\"x\\u001b[2J\\u0007\\r✓ valid\":1}",
    )
    .unwrap();
    let r = troupe(d, &["check", "b.json"]);
    assert_eq!(r.code, 1);
    let all = format!("{}{}", r.stdout, r.stderr);
    for c in ['\u{1b}', '\u{7}', '\r'] {
        assert!(!all.contains(c), "raw {c:?} in {all:?}");
    }
    assert!(all.contains("\\u{1b}[2J"), "{all}");
}

#[test]
fn snippets_of_a_long_line_are_clipped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 20 unknown fields on one 2 MB line: 20 short snippets, not 20 copies.
    let mut text = String::from("{\"troupe\":\"0.1\",\"kind\":\"bundle\"");
    for i in 0..20 {
        text.push_str(&format!(",\"u{i}\":\"{}\"", "v".repeat(100_000)));
    }
    text.push('}');
    std::fs::write(d.join("b.json"), &text).unwrap();
    let r = troupe(d, &["check", "b.json"]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stdout.matches("UNKNOWN_FIELD").count(),
        20,
        "{}",
        &r.stdout[..2000.min(r.stdout.len())]
    );
    assert!(
        r.stdout.len() < 20 * 1024,
        "{} bytes of output",
        r.stdout.len()
    );
}

// ---- codes and messages ----------------------------------------------

#[test]
fn documented_codes_for_odd_paths_and_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("bundle.json")).unwrap();
    let r = troupe(d, &["check", "bundle.json"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("FORBIDDEN_FILE"), "{}", r.stdout);

    // A pack file whose name is not UTF-8.
    let pack = d.join("pack");
    copy_dir(&repo("examples/packs/everyday-negotiation"), &pack);
    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"npcs/\xff.yaml");
    std::fs::write(pack.join(bad), "x: 1\n").unwrap();
    let r = troupe(d, &["check", "pack"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("ENCODING"), "{}", r.stdout);
    assert!(!r.stdout.contains("no such file"), "{}", r.stdout);

    // CEL nested past the parser's bound: CEL_SYNTAX in plain words.
    let deep = format!("{}1{}", "(".repeat(300), ")".repeat(300));
    let r = troupe(d, &["cel", "check", &deep]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("CEL_SYNTAX"), "{}", r.stderr);
    assert!(r.stderr.contains("nests too deeply"), "{}", r.stderr);
    for debug in ["Error(", "ParseError", "Context"] {
        assert!(!r.stderr.contains(debug), "{}", r.stderr);
    }
    assert!(r.stderr.len() < 2_000, "{}", r.stderr);
}

#[test]
fn a_png_card_with_a_bad_crc_is_damaged_not_cardless() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let r = troupe(
        d,
        &[
            "export",
            "card",
            &tiny_bundle(),
            "--character",
            "pip",
            "-o",
            "c.png",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut png = std::fs::read(d.join("c.png")).unwrap();
    // Flip a byte inside the tEXt chunk's data.
    let at = png.windows(4).position(|w| w == b"tEXt").unwrap() + 10;
    png[at] ^= 0x20;
    std::fs::write(d.join("bad.png"), &png).unwrap();
    let r = troupe(d, &["import", "card", "bad.png", "-o", "out.json"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("PARSE") && r.stderr.contains("CRC"),
        "{}",
        r.stderr
    );
    assert!(!d.join("out.json").exists());
}

#[test]
fn play_refuses_a_line_that_is_not_utf8_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let r = troupe_in(
        dir.path(),
        &["play", &negotiation()],
        Some(b"hello \xff there\nIs it still for sale?\n/quit\n"),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("not valid UTF-8"), "{}", r.stdout);
    assert!(r.stdout.contains("Turn 1"), "{}", r.stdout);
}

// ---- the conformance runner ------------------------------------------

#[test]
fn conformance_fails_bad_cases_and_follows_no_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("suite/cases")).unwrap();
    std::fs::write(d.join("suite/cases/bad.json"), "{\"tests\": [").unwrap();
    let r = troupe(d, &["conformance", "suite"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("0 passed, 1 failed"), "{}", r.stdout);
    std::fs::create_dir_all(d.join("linked")).unwrap();
    std::os::unix::fs::symlink(repo("conformance/cases"), d.join("linked/cases")).unwrap();
    let r = troupe(d, &["conformance", "linked"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("symbolic link"), "{}", r.stdout);
}
// ---- helpers -----------------------------------------------------------

fn copy_dir(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(from).unwrap();
        let target = to.join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v: Vec<_> = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().to_path_buf(), std::fs::read(e.path()).unwrap()))
        .collect();
    v.sort();
    v
}

/// Whole-word regular-expression keys are matched in one linear pass per
/// text (issue 12; the matcher itself is issue 11's, helper `core`): a rule

#[test]
fn a_session_written_into_its_own_pack_is_checked_without_its_partial_file() {
    // Format 13 / 16.3: `run PACK --out PACK/sessions/s.jsonl` checks what it
    // wrote with the pack, while its partial file is in `sessions/`; that
    // file (and one a killed writer left) is not part of the pack.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    copy_dir(
        &repo("examples/packs/everyday-negotiation"),
        &d.join("pack"),
    );
    std::fs::create_dir_all(d.join("pack/sessions")).unwrap();
    std::fs::write(d.join("script.txt"), "Hello\nHow much?\n").unwrap();
    let r = troupe(
        d,
        &[
            "run",
            "pack",
            "--script",
            "script.txt",
            "--out",
            "pack/sessions/s.jsonl",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !r.stderr.contains("ADVISORY") && !r.stdout.contains("ADVISORY"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    assert!(d.join("pack/sessions/s.jsonl").is_file());
    assert!(!d.join("pack/sessions/.s.jsonl.troupe-partial").exists());
    // A partial file left behind is skipped by check; another hidden file is not.
    std::fs::write(d.join("pack/sessions/.t.jsonl.troupe-partial"), "{\"half").unwrap();
    let r = troupe(d, &["check", "pack"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("ADVISORY"), "{}", r.stdout);
    std::fs::write(d.join("pack/sessions/.notes.troupe-partial.txt"), "x").unwrap();
    let r = troupe(d, &["check", "pack"]);
    assert!(r.stdout.contains("ADVISORY"), "{}", r.stdout);
}

#[test]
fn a_script_that_is_not_one_is_bad_input_and_an_unreadable_one_a_system_error() {
    // Format 20: exit 1 for input that does not conform, 3 for a system error.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("map.yaml"), "a: 1\n").unwrap();
    std::fs::write(d.join("bytes.txt"), b"\xff\xfe\n").unwrap();
    let pack = repo("examples/packs/everyday-negotiation");
    let pack = pack.to_str().unwrap();
    for (script, code, says) in [
        ("map.yaml", 1, "a YAML script is a list of strings"),
        ("bytes.txt", 1, "the script is not UTF-8"),
        ("missing.txt", 3, "cannot read missing.txt"),
        // Only a regular file is read (Format 16): `/dev/zero` never ends.
        ("/dev/zero", 1, "is a device, not a regular file"),
    ] {
        let r = troupe(d, &["run", pack, "--script", script]);
        assert_eq!(r.code, code, "{script}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{script}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{script}: {}", r.stdout);
    }
}

#[test]
fn knows_without_part_or_summary_names_both() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = repo("examples/bundles/tiny.bundle.json");
    let session = repo("examples/bundles/tiny.session.jsonl");
    let (b, s) = (bundle.to_str().unwrap(), session.to_str().unwrap());
    let r = troupe(dir.path(), &["knows", b, s, "--message", "m1"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("<--part <PART>|--summary>"),
        "{}",
        r.stderr
    );
}

/// A part or summary that is not there says which of the two was asked and
/// what the message has (Format 7.4, 12.5): `inn.jsonl`'s `m2` has one part
/// and no summary (read from the file by hand).
#[test]
fn knows_of_a_missing_part_or_summary_says_what_the_message_has() {
    let dir = tempfile::tempdir().unwrap();
    let pack = repo("examples/packs/harbor-lights");
    let p = pack.to_str().unwrap();
    for (ask, says) in [
        (
            &["--part", "7"][..],
            "message `m2` has no part 7: its one part is 0",
        ),
        (
            &["--summary"][..],
            "message `m2` has no summary (Format 12.5",
        ),
    ] {
        let mut args = vec!["knows", p, "inn.jsonl", "--at", "m2"];
        args.extend_from_slice(ask);
        let r = troupe(dir.path(), &args);
        assert_eq!(r.code, 1, "{ask:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{ask:?}: {}", r.stderr);
    }
}

/// Issue 43, items 1 and 2: Format 16.3's output rules hold for a cassette
/// written with `--record` (an output like `--out`, checked against the
/// inputs by the same function) and for an existing file of another kind
/// or a folder; every case is exit 2 before anything runs (the endpoint is
/// never called: nothing listens on it), and no file changes.
#[test]
fn every_output_is_checked_by_16_3_cassettes_and_kinds_included() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    copy_dir(
        &repo("examples/packs/everyday-negotiation"),
        &d.join("pack"),
    );
    std::fs::copy(script(), d.join("script.txt")).unwrap();
    std::fs::write(d.join("notes.md"), "# my notes\n").unwrap();
    std::fs::write(d.join("old.jsonl"), "").unwrap();
    let before = snapshot(d);
    let model = ["--runtime", "model", "--endpoint", "http://127.0.0.1:9/v1"];
    let run = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["run", "pack", "--script", "script.txt"];
        v.extend_from_slice(&model);
        v.extend_from_slice(extra);
        v
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        // The cassette over the script, a scenario file of the pack, and
        // the session being written.
        (
            run(&["--cassette", "script.txt", "--record"]),
            "is an input",
        ),
        (
            run(&[
                "--cassette",
                "pack/scenarios/used_car_negotiation.yaml",
                "--record",
            ]),
            "is an input",
        ),
        (
            run(&["--out", "old.jsonl", "--cassette", "old.jsonl", "--record"]),
            "two outputs",
        ),
        // A replayed cassette is an input.
        (
            run(&[
                "--out",
                "pack/cassettes/model_buyer.json",
                "--cassette",
                "pack/cassettes/model_buyer.json",
            ]),
            "is an input",
        ),
        (
            vec![
                "playtest",
                "pack",
                "--runtime",
                "model",
                "--endpoint",
                "http://127.0.0.1:9/v1",
                "--cassette",
                "pack/manifest.yaml",
                "--record",
            ],
            "is an input",
        ),
        (
            vec![
                "test",
                "pack",
                "--runtime",
                "model",
                "--endpoint",
                "http://127.0.0.1:9/v1",
                "--cassette",
                "pack/manifest.yaml",
                "--record",
            ],
            "is an input",
        ),
        // An existing file of another kind, a folder.
        (
            vec!["compile", "pack", "-o", "notes.md"],
            "is not a package",
        ),
        (vec!["compile", "pack", "-o", "."], "is a folder"),
        (
            vec!["run", "pack", "--script", "script.txt", "--out", "notes.md"],
            "is not a JSON document",
        ),
        (
            run(&["--cassette", "notes.md", "--record"]),
            "is not a JSON document",
        ),
    ];
    for (args, why) in cases {
        let r = troupe(d, &args);
        assert_eq!(r.code, 2, "{args:?}: {}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(why), "{args:?}: {}", r.stderr);
        assert_eq!(snapshot(d), before, "{args:?} changed a file");
    }
    // An empty file and a package are replaced by a package.
    let r = troupe(d, &["compile", "pack", "-o", "old.jsonl"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = troupe(d, &["compile", "pack", "-o", "old.jsonl"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// Issue 43, item 11: `troupe conformance DIR` reads no case input outside
/// DIR — a `bundleFile` through `..` or through a linked folder is a suite
/// error naming PATH_TRAVERSAL (exit 1), and the same file inside DIR is
/// read (the case passes).
#[test]
fn conformance_case_inputs_stay_inside_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("suite/cases/x")).unwrap();
    std::fs::create_dir_all(d.join("secret")).unwrap();
    let bundle = std::fs::read(tiny_bundle()).unwrap();
    std::fs::write(d.join("secret/b.json"), &bundle).unwrap();
    std::fs::write(d.join("suite/cases/b.json"), &bundle).unwrap();
    // A linked folder beside `cases/` (the scan of `cases/` does not see it).
    std::fs::create_dir_all(d.join("suite/data")).unwrap();
    std::os::unix::fs::symlink(d.join("secret"), d.join("suite/data/linked")).unwrap();
    let case = |file: &str| {
        serde_json::json!({
            "description": "reads its bundle from a file",
            "bundleFile": file,
            "tests": [{"type": "check", "expect": {"codes": []}}]
        })
        .to_string()
    };
    for bad in ["../../../secret/b.json", "../../data/linked/b.json"] {
        std::fs::write(d.join("suite/cases/x/case.json"), case(bad)).unwrap();
        let r = troupe(d, &["conformance", "suite"]);
        assert_eq!(r.code, 1, "{bad}: {}{}", r.stdout, r.stderr);
        assert!(r.stdout.contains("PATH_TRAVERSAL"), "{bad}: {}", r.stdout);
        assert!(
            r.stdout.contains("0 passed, 1 failed"),
            "{bad}: {}",
            r.stdout
        );
    }
    // Through `..` but inside the suite: read.
    std::fs::write(d.join("suite/cases/x/case.json"), case("../b.json")).unwrap();
    let r = troupe(d, &["conformance", "suite"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("1 passed, 0 failed"), "{}", r.stdout);
}

//! `troupe run`, `play`, `compile` and the commands that accept a package,
//! through the binary (Format 14.4, 18, 20).

use std::io::Write;
use std::process::{Command, Stdio};

fn troupe(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const PACK: &str = "examples/packs/everyday-negotiation";
const SCRIPT: &str = "examples/scripts/used-car-good-deal.txt";

#[test]
fn run_prints_the_transcript_and_writes_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.jsonl");
    let (code, stdout, _) = troupe(&[
        "run",
        PACK,
        "--script",
        SCRIPT,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert!(stdout.contains("outcome: success (at m11)"), "{stdout}");
    assert!(stdout.contains("Score: 0.8186"), "{stdout}");
    // The session it wrote conforms with its pack.
    let (code, stdout, _) = troupe(&["check", PACK, out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}");
}

#[test]
fn run_json_has_every_field_of_the_turn_result() {
    let (code, stdout, _) = troupe(&["run", PACK, "--script", SCRIPT, "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let turns = v["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 5);
    let fields: Vec<&str> = turns[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        fields,
        [
            "turn",
            "messages",
            "rule",
            "reply",
            "state_delta",
            "firings",
            "session_control",
            "safety_status",
            "npc_emotion",
            "ended",
            "outcome",
            "score",
            "replies",
            "diagnostics"
        ]
    );
    assert_eq!(turns[0]["diagnostics"], serde_json::json!([]));
    assert_eq!(v["score"]["total"], 0.8186);
}

#[test]
fn usage_errors_and_refusals() {
    let (code, _, _) = troupe(&[
        "run",
        PACK,
        "--script",
        SCRIPT,
        "--runtime",
        "fake",
        "--out",
        "x.jsonl",
    ]);
    assert_eq!(code, 2, "fake writes no session");
    let (code, _, err) = troupe(&["run", PACK, "--script", SCRIPT, "--scenario", "nope"]);
    assert_eq!(code, 1);
    assert!(err.contains("UNKNOWN_REF"), "{err}");
    let (code, _, err) = troupe(&["run", PACK, "--script", SCRIPT, "--difficulty", "nightmare"]);
    assert_eq!(code, 1, "{err}");
    let (code, _, _) = troupe(&["run", PACK, "--script", "no/such/script.txt"]);
    assert_eq!(code, 3);
    let (code, stdout, _) = troupe(&["run", PACK, "--script", SCRIPT, "--runtime", "fake"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("Turn 5"));
}

#[test]
fn compile_output_is_accepted_by_check_run_and_state() {
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("h.troupe");
    let pkg = pkg.to_str().unwrap();
    let (code, _, err) = troupe(&["compile", "examples/packs/harbor-lights", "-o", pkg]);
    assert_eq!(code, 0, "{err}");
    let first = std::fs::read(pkg).unwrap();
    troupe(&["compile", "examples/packs/harbor-lights", "-o", pkg]);
    assert_eq!(first, std::fs::read(pkg).unwrap(), "same bytes");
    let (code, stdout, _) = troupe(&["check", pkg]);
    assert_eq!(code, 0, "{stdout}");
    let (code, stdout, err) = troupe(&[
        "run",
        pkg,
        "--script",
        "examples/scripts/harbor-relight.txt",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("event: lamp_relit (at m17)"), "{stdout}");
    // The package's recorded session, by name: the hand-derived state at m13.
    let (code, stdout, err) = troupe(&["state", pkg, "walkthrough.jsonl", "--at", "m13", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["state"]["clues"], 3);
    assert_eq!(v["state"]["avg_trust"], 60);
    // A compiled package compiles again to the same bytes.
    let again = dir.path().join("again.troupe");
    let (code, _, _) = troupe(&["compile", pkg, "-o", again.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(first, std::fs::read(&again).unwrap());
}

#[test]
fn play_reads_a_pipe_and_undo_branches() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(["play", PACK, "--out", out.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"lovely car\n/state\n/undo\nI can offer 8,500.\n/quit\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("at m3: deal_progress = 0, impression = 62, patience = 60"),
        "{stdout}"
    );
    assert!(stdout.contains("Undone. Back at m1"));
    assert!(
        !stdout.contains("internal_counter"),
        "hidden variables are not shown"
    );
    let session = std::fs::read_to_string(&out).unwrap();
    // m2/m3 are kept; m4 is a sibling of m2 (both children of m1).
    assert!(session.contains(r#"{"id":"m2","parent":"m1""#));
    assert!(session.contains(r#"{"id":"m4","parent":"m1""#));
    assert_eq!(session.lines().count(), 6);
}

#[test]
fn play_reports_unknown_commands_and_says_double_slash_lines() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(["play", PACK])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"/foo\n//shrug\n/quit\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("unknown command `/foo`"), "{stdout}");
    assert!(!stdout.contains("Player: /foo"), "{stdout}");
    assert!(stdout.contains("Player: /shrug"), "{stdout}");
}

/// Issue 42 (Format 20): `compile -o X.json` writes the checked bundle (a
/// pack lowered, 13.10), never a ZIP under a JSON name; a YAML name is a
/// usage error with nothing written; and `export card` reads a pack
/// directory, a package and that bundle alike, to the same card.
#[test]
fn compile_writes_a_bundle_by_extension_and_export_reads_every_form() {
    let dir = tempfile::tempdir().unwrap();
    let pack = "examples/packs/job-interview";
    let bundle = dir.path().join("ji.bundle.json");
    let b = bundle.display().to_string();
    let (code, _, err) = troupe(&["compile", pack, "-o", &b]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&bundle).unwrap();
    assert!(text.starts_with('{'), "a JSON bundle, not a ZIP");
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["kind"], "bundle");
    let (code, _, err) = troupe(&["check", &b]);
    assert_eq!(code, 0, "the bundle written conforms: {err}");
    let yaml = dir.path().join("ji.yaml");
    let (code, out, err) = troupe(&["compile", pack, "-o", &yaml.display().to_string()]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("a bundle as JSON (.json)"), "{err}");
    assert!(!yaml.exists());
    let package = dir.path().join("ji.troupe").display().to_string();
    assert_eq!(troupe(&["compile", pack, "-o", &package]).0, 0);
    let mut cards = Vec::new();
    for (i, from) in [pack, package.as_str(), b.as_str()].into_iter().enumerate() {
        let card = dir.path().join(format!("card{i}.json"));
        let c = card.display().to_string();
        let (code, _, err) = troupe(&["export", "card", from, "--character", "dana", "-o", &c]);
        assert_eq!(code, 0, "{from}: {err}");
        cards.push(std::fs::read_to_string(&card).unwrap());
    }
    assert_eq!(cards[0], cards[1]);
    assert_eq!(cards[0], cards[2]);
    let (code, _, err) = troupe(&["export", "card", pack, "--character", "dna", "-o", "x.json"]);
    assert_eq!(code, 1);
    assert!(err.contains("did you mean `dana`?"), "{err}");
}

/// `--to ID` (Format 18.9, 20): the host names the responder of every turn;
/// a character who cannot answer (absent) refuses the turn, exit 1, and
/// nothing of it is written.
#[test]
fn run_to_names_the_responder() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.txt");
    std::fs::write(&script, "Hello there\n").unwrap();
    let bundle = "examples/bundles/harbor-lights.bundle.json";
    let script = script.to_str().unwrap();
    let (code, stdout, _) = troupe(&["run", bundle, "--script", script, "--to", "ines", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let reply = &v["turns"][0]["replies"][0];
    assert_eq!(reply["author"], "ines");
    assert_eq!(reply["chosen"], serde_json::json!({"why": "host"}));
    // Tobias is not in the opening scene: refused, nothing written.
    let out = dir.path().join("s.jsonl");
    let (code, _, stderr) = troupe(&[
        "run",
        bundle,
        "--script",
        script,
        "--to",
        "tobias",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("`tobias` cannot reply now"), "{stderr}");
    let written = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(!written.contains(r#""author":"investigator""#), "{written}");
    // `--to` takes an ID (Format 18.9): a character's name is refused with
    // the ID to give, anything else with the IDs there are.
    let (code, _, stderr) = troupe(&["run", bundle, "--script", script, "--to", "Inés"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("`Inés` is a name of `ines`: name the responder by its ID, `ines`"),
        "{stderr}"
    );
    let (code, _, stderr) = troupe(&["run", bundle, "--script", script, "--to", "dave"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("the cast's characters are `"), "{stderr}");
    assert!(stderr.contains("`ines`"), "{stderr}");
}

/// `--resume SESSION [--at ID]` (Format 18.10, 20): a run cut after two
/// inputs and resumed with the rest writes the bytes of the whole run; an
/// unknown `--at` is exit 1, a setting given with `--resume` exit 2, the
/// session itself as `--out` exit 2; `play --resume --at` goes on from
/// there as a branch.
#[test]
fn run_and_play_resume_a_saved_session() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let pack = "examples/packs/everyday-negotiation";
    let lines: Vec<&str> = include_str!("../../examples/scripts/used-car-good-deal.txt")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    std::fs::write(p("all.txt"), lines.join("\n")).unwrap();
    std::fs::write(p("a.txt"), lines[..2].join("\n")).unwrap();
    std::fs::write(p("b.txt"), lines[2..].join("\n")).unwrap();
    let run = |args: &[&str]| troupe(args);
    let (code, _, err) = run(&[
        "run",
        pack,
        "--seed",
        "4",
        "--script",
        &p("all.txt"),
        "--out",
        &p("whole.jsonl"),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(&[
        "run",
        pack,
        "--seed",
        "4",
        "--script",
        &p("a.txt"),
        "--out",
        &p("a.jsonl"),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&[
        "run",
        pack,
        "--resume",
        &p("a.jsonl"),
        "--script",
        &p("b.txt"),
        "--out",
        &p("b.jsonl"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Resumed at [m5] Marco:"), "{out}");
    assert_eq!(
        std::fs::read_to_string(p("b.jsonl")).unwrap(),
        std::fs::read_to_string(p("whole.jsonl")).unwrap()
    );
    let (code, _, err) = run(&[
        "run",
        pack,
        "--resume",
        &p("a.jsonl"),
        "--at",
        "m9",
        "--script",
        &p("b.txt"),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("UNKNOWN_REF") && err.contains("`m9`"), "{err}");
    let (code, _, _) = run(&[
        "run",
        pack,
        "--resume",
        &p("a.jsonl"),
        "--seed",
        "3",
        "--script",
        &p("b.txt"),
    ]);
    assert_eq!(code, 2);
    let (code, _, _) = run(&[
        "run",
        pack,
        "--resume",
        &p("a.jsonl"),
        "--script",
        &p("b.txt"),
        "--out",
        &p("a.jsonl"),
    ]);
    assert_eq!(code, 2);
    let mut child = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args([
            "play",
            pack,
            "--resume",
            &p("a.jsonl"),
            "--at",
            "m3",
            "--out",
            &p("c.jsonl"),
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"Hello\n/quit\n").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Resumed at [m3] Marco:"), "{stdout}");
    assert!(stdout.contains("[m6] Player: Hello"), "{stdout}");
    let c = std::fs::read_to_string(p("c.jsonl")).unwrap();
    let a = std::fs::read_to_string(p("a.jsonl")).unwrap();
    assert!(c.starts_with(&a));
    assert!(
        c[a.len()..].starts_with(r#"{"id":"m6","parent":"m3""#),
        "{c}"
    );
}

/// `troupe transcript` (Format 20): the path of `--at`, each part rendered
/// at its message (the opening's `{{user}}` is the player's name, Player),
/// in the three forms; an unknown `--at` is exit 1. Expected texts are the
/// recorded session's lines with the macros resolved by hand.
#[test]
fn transcript_renders_every_message_of_the_path() {
    let pack = "examples/packs/harbor-lights";
    let session = "examples/packs/harbor-lights/sessions/inn.jsonl";
    let (code, out, err) = troupe(&["transcript", pack, session, "--at", "m2"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "[m1] Inés: You'll be the mapmaker. Sit down, Player, the stew's hot, and the harbor has been strange all week.\n[m2] Player: Thank you. Is the stew as good as they say?\n"
    );
    let (code, out, _) = troupe(&[
        "transcript",
        pack,
        session,
        "--at",
        "m2",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["at"], "m2");
    assert_eq!(v["messages"][1]["author"], "investigator");
    assert_eq!(v["messages"][1]["name"], "Player");
    assert!(v["messages"][1].get("hidden").is_none());
    assert!(v["messages"][1]["parts"][0].get("audience").is_none());
    let (code, out, _) = troupe(&[
        "transcript",
        pack,
        session,
        "--at",
        "m2",
        "--format",
        "markdown",
    ]);
    assert_eq!(code, 0);
    assert!(out.starts_with("**Inés:** You'll be"), "{out}");
    assert!(
        out.ends_with("\n\n**Player:** Thank you. Is the stew as good as they say?\n"),
        "{out}"
    );
    // A whisper (7.2 `audience`) and a hidden message, from walkthrough.jsonl's
    // m7 (two parts, the second to ada) and m8 (hidden, by the narrator).
    let walk = "examples/packs/harbor-lights/sessions/walkthrough.jsonl";
    let (code, out, _) = troupe(&["transcript", pack, walk, "--at", "m8"]);
    assert_eq!(code, 0);
    assert!(out.contains("  (to ada) Come to the net sheds after dark. Not here.\n[m8] Narrator (hidden): Mara saw"), "{out}");
    let (_, out, _) = troupe(&["transcript", pack, walk, "--at", "m8", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let m = v["messages"].as_array().unwrap();
    assert_eq!(
        m[m.len() - 2]["parts"][1]["audience"],
        serde_json::json!(["ada"])
    );
    assert_eq!(m[m.len() - 1]["hidden"], true);
    let (code, _, err) = troupe(&["transcript", pack, session, "--at", "m99"]);
    assert_eq!(code, 1);
    assert!(err.contains("`m99`"), "{err}");
}

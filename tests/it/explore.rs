//! `troupe explore` (Format 20.5) on the example packs and the test pack
//! `tests/packs/unreachable-deal`: witnesses that `troupe run --script`
//! replays to their item, "unreachable" only when the space is exhausted,
//! "not reached" under a small bound, deterministic bytes, random counts
//! per seed, the exploration stage of `troupe test`, hostile flags.
//!
//! Expected values derived by hand from the packs:
//! - everyday-negotiation, preset `standard` (patience 60): `walk away`
//!   is `walk_away_threat` (volatility 30 < 50), −20 patience a turn, so
//!   patience 0 < 10 after 3 turns; but on `hard` (volatility 55 ≥ 50) it
//!   is `temper_flare`, −30 of 33 = 3 < 10: `failure` in 1 turn, and `hard`
//!   is the first root in preset order where one turn suffices.
//!   `8000` is `real_offer` (+25 deal_progress); after two, 50 ≥ 50 lets
//!   `shake` be `close_deal` (+40): 90 > 80, `success` in 3 turns (no
//!   line adds more than 25 before that, so 2 turns cannot), first on
//!   `warm`, the first root.
//! - unreachable-deal: `offer` +40 → `deal` (> 79) after 2 offers;
//!   `closing_time` at turn 4; `impossible_deal` needs 150 > max 100.

use crate::common;

use std::path::Path;

use serde_json::Value;

/// `troupe ARGS`: exit code, standard output, standard error.
fn troupe(args: &[&str]) -> (i32, String, String) {
    let out = common::troupe(args);
    (
        out.status.code().unwrap_or(-1),
        common::stdout(&out),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn example(name: &str) -> String {
    format!("{}/examples/packs/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn test_pack() -> String {
    format!(
        "{}/tests/packs/unreachable-deal",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn explore_json(args: &[&str]) -> Value {
    let mut all = vec!["explore"];
    all.extend_from_slice(args);
    all.push("--json");
    let (code, out, err) = troupe(&all);
    assert_eq!(code, 0, "{err}");
    // Piped: no progress bar (no carriage return, no escape), only the
    // check's warnings (the test pack's impossible outcome is DEAD_LOGIC).
    assert!(
        !err.contains('\r') && !err.contains('\u{1b}'),
        "no progress bar when piped: {err}"
    );
    assert!(err.is_empty() || err.starts_with("warning["), "{err}");
    serde_json::from_str(&out).expect("one JSON document")
}

fn item<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["item"] == name)
        .unwrap_or_else(|| panic!("no item {name}"))
}

/// Replays a witness with `troupe run --script` and returns the run's
/// `--json` document.
pub(crate) fn replay(pack: &str, doc: &Value, w: &Value, dir: &Path, name: &str) -> Value {
    let script = dir.join(format!("{name}.txt"));
    let text: String = w["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| format!("{}\n", i.as_str().unwrap()))
        .collect();
    std::fs::write(&script, text).unwrap();
    let seed = doc["seed"].to_string();
    let scenario = doc["scenario"].as_str().unwrap();
    let mut args = vec![
        "run",
        pack,
        "--scenario",
        scenario,
        "--seed",
        &seed,
        "--json",
        "--script",
    ];
    let script_s = script.display().to_string();
    args.push(&script_s);
    let opening = w["opening"].as_str().map(str::to_string);
    let difficulty = w["difficulty"].as_str().map(str::to_string);
    if let Some(o) = &opening {
        args.extend(["--opening", o]);
    }
    if let Some(d) = &difficulty {
        args.extend(["--difficulty", d]);
    }
    let (code, out, err) = troupe(&args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn negotiation_witnesses_for_success_and_failure_replay() {
    let pack = example("everyday-negotiation");
    let doc = explore_json(&[&pack, "--states", "3000"]);
    assert_eq!(doc["mode"], "search");
    let dir = tempfile::tempdir().unwrap();
    for (outcome, turns) in [("success", 3), ("failure", 1)] {
        let it = item(&doc, &format!("outcome {outcome}"));
        assert_eq!(it["status"], "reached", "{it}");
        let w = &it["witness"];
        assert_eq!(w["inputs"].as_array().unwrap().len(), turns, "{w}");
        let run = replay(&pack, &doc, w, dir.path(), outcome);
        let last = run["turns"].as_array().unwrap().last().unwrap();
        assert_eq!(last["outcome"], outcome, "{run}");
        assert_eq!(last["ended"], true);
        assert_eq!(run["unplayed"], 0);
    }
    // Shortest: `failure` in one turn on `hard` (temper_flare, 33 − 30).
    let w = &item(&doc, "outcome failure")["witness"];
    assert_eq!(w["difficulty"], "hard");
    assert_eq!(w["inputs"][0], "walk away");
    let w = &item(&doc, "outcome success")["witness"];
    assert_eq!(w["difficulty"], "warm");
    assert_eq!(w["inputs"], serde_json::json!(["8000", "8000", "shake"]));
    // The alphabet: a canonical line per rule, probes, the other line.
    let lines: Vec<&str> = doc["alphabet"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["text"].as_str().unwrap())
        .collect();
    for l in [
        "walk away",
        "shake",
        "5000",
        "8000",
        "service",
        "problems",
        "lovely",
    ] {
        assert!(lines.contains(&l), "{lines:?}");
    }
    assert!(lines.contains(&"I will hurt you"));
    assert!(lines.contains(&"hmm"));
    assert_eq!(doc["alphabet"]["roots"].as_array().unwrap().len(), 4);
}

#[test]
fn every_reached_witness_replays_in_both_example_packs() {
    for name in ["everyday-negotiation", "job-interview"] {
        let pack = example(name);
        let doc = explore_json(&[&pack, "--depth", "6", "--states", "3000"]);
        let dir = tempfile::tempdir().unwrap();
        for it in doc["items"].as_array().unwrap() {
            if it["status"] != "reached" || it["witness"]["inputs"].as_array().unwrap().is_empty() {
                continue;
            }
            let label = it["item"].as_str().unwrap();
            let (kind, id) = label.split_once(' ').unwrap();
            let run = replay(
                &pack,
                &doc,
                &it["witness"],
                dir.path(),
                &label.replace(' ', "-"),
            );
            let last = run["turns"].as_array().unwrap().last().unwrap().clone();
            let hit = match kind {
                "rule" => last["rule"] == id,
                "speaker" => last["replies"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r["author"] == id),
                _ => last["firings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f[kind] == id),
            };
            assert!(hit, "{name}: {label} not reached by its witness: {last}");
        }
    }
}

#[test]
fn an_impossible_outcome_is_unreachable_when_the_space_is_exhausted() {
    // `check` says so too, statically (Format 17.6).
    let (code, out, err) = troupe(&["check", &test_pack()]);
    assert_eq!(code, 0, "{err}");
    let both = format!("{out}{err}");
    assert!(
        both.contains("DEAD_LOGIC") && both.contains("impossible_deal"),
        "{both}"
    );
    let doc = explore_json(&[&test_pack()]);
    assert_eq!(doc["search"]["exhausted"], true, "{}", doc["search"]);
    assert_eq!(doc["search"]["stopped_by"], Value::Null);
    assert_eq!(
        item(&doc, "outcome impossible_deal")["status"],
        "unreachable"
    );
    assert_eq!(item(&doc, "outcome odd_deal")["status"], "unreachable");
    assert_eq!(item(&doc, "outcome odd_deal")["proof"], Value::Null);
    assert_eq!(item(&doc, "outcome deal")["status"], "reached");
    assert_eq!(
        item(&doc, "outcome deal")["witness"]["inputs"],
        serde_json::json!(["offer", "offer"])
    );
    assert_eq!(item(&doc, "outcome closing_time")["status"], "reached");
    assert_eq!(
        item(&doc, "rule chat")["witness"]["inputs"],
        serde_json::json!(["hmm"])
    );
    // The text report says so too.
    let (code, out, _) = troupe(&["explore", &test_pack()]);
    assert_eq!(code, 0);
    assert!(
        out.contains("outcome odd_deal: unreachable (the search exhausted the space"),
        "{out}"
    );
    assert!(
        out.contains(
            "outcome impossible_deal: unreachable (proved by the check: outcome \
             `impossible_deal` can never happen: it needs `state.deal_progress >= 150`"
        ),
        "{out}"
    );
}

/// Issue 42: what the check proves can never happen (Format 17.4, 17.6)
/// is reported unreachable with its proof whatever the bounds, without the
/// search exhausting the space (20.5).
#[test]
fn a_proved_outcome_is_unreachable_whatever_the_bound() {
    for bound in [["--depth", "1"], ["--states", "1"]] {
        let doc = explore_json(&[&test_pack(), bound[0], bound[1]]);
        assert_eq!(doc["search"]["exhausted"], false);
        let it = item(&doc, "outcome impossible_deal");
        assert_eq!(it["status"], "unreachable", "{bound:?}");
        let proof = it["proof"].as_str().unwrap();
        assert!(
            proof.contains("deal_progress stays within 0…100 (its max)"),
            "{proof}"
        );
        assert_eq!(item(&doc, "outcome odd_deal")["status"], "not_reached");
    }
    // A Threshold past its variable's bounds (the 17.4 lint) too.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("pack");
    common::copy_dir(Path::new(&test_pack()), &copy);
    let scenario = copy.join("scenarios/stall.yaml");
    let text = std::fs::read_to_string(&scenario).unwrap().replace(
        "  odd_deal: \"state.deal_progress == 50\"\n",
        "  odd_deal: {type: variable_above, variable: deal_progress, threshold: 100}\n",
    );
    std::fs::write(&scenario, text).unwrap();
    let doc = explore_json(&[&copy.display().to_string(), "--depth", "1"]);
    let it = item(&doc, "outcome odd_deal");
    assert_eq!(it["status"], "unreachable");
    assert!(
        it["proof"]
            .as_str()
            .unwrap()
            .contains("never goes above 100: its max is 100"),
        "{it}"
    );
}

#[test]
fn a_small_bound_reports_not_reached_with_the_bound() {
    let doc = explore_json(&[&test_pack(), "--depth", "1"]);
    assert_eq!(doc["search"]["exhausted"], false);
    assert_eq!(doc["search"]["stopped_by"], "depth");
    assert_eq!(item(&doc, "outcome deal")["status"], "not_reached");
    assert_eq!(item(&doc, "outcome odd_deal")["status"], "not_reached");
    let doc = explore_json(&[&test_pack(), "--states", "2"]);
    assert_eq!(doc["search"]["stopped_by"], "states");
    assert_eq!(doc["search"]["states"], 2);
    assert_eq!(item(&doc, "outcome odd_deal")["status"], "not_reached");
    let (_, out, _) = troupe(&["explore", &test_pack(), "--depth", "1"]);
    assert!(
        out.contains("outcome deal: not reached within depth 1 / 10000 states (stopped by depth)"),
        "{out}"
    );
}

#[test]
fn a_state_bound_equal_to_the_space_is_not_exhaustion() {
    // Format 20.5: the search stops when `--states` keys were visited, and
    // the space counts as exhausted only with fewer keys than that. The
    // test pack's space has N keys (the unbounded search exhausts it):
    // `--states N` stops by states, `--states N+1` exhausts it.
    let doc = explore_json(&[&test_pack()]);
    assert_eq!(doc["search"]["exhausted"], true);
    let n = doc["search"]["states"].as_u64().unwrap();
    let at = explore_json(&[&test_pack(), "--states", &n.to_string()]);
    assert_eq!(at["search"]["states"], n);
    assert_eq!(at["search"]["exhausted"], false, "{}", at["search"]);
    assert_eq!(at["search"]["stopped_by"], "states");
    assert_eq!(item(&at, "outcome odd_deal")["status"], "not_reached");
    let above = explore_json(&[&test_pack(), "--states", &(n + 1).to_string()]);
    assert_eq!(above["search"]["exhausted"], true);
    assert_eq!(item(&above, "outcome odd_deal")["status"], "unreachable");
}

#[test]
fn the_same_flags_give_the_same_bytes() {
    let pack = example("everyday-negotiation");
    let flags = ["--depth", "5", "--states", "1500"];
    let a = troupe(&[&["explore", &pack, "--json"][..], &flags].concat());
    let b = troupe(&[&["explore", &pack, "--json"][..], &flags].concat());
    assert_eq!(a.0, 0);
    assert_eq!(a.1, b.1);
    let a = troupe(&[&["explore", &pack][..], &flags].concat());
    let b = troupe(&[&["explore", &pack][..], &flags].concat());
    assert_eq!(a.1, b.1);
}

/// Format 20.5: `--jobs` changes how fast, never what: the same states,
/// witnesses and order whatever the number of threads — also where the
/// search stops on its state bound in the middle of a level, and on the
/// harbor-lights map-valued state (whose equal maps may differ in shape).
#[test]
fn the_result_does_not_depend_on_jobs() {
    for (pack, states) in [
        ("everyday-negotiation", "2500"),
        ("harbor-lights", "3000"),
        ("tenants-meeting", "1000"),
    ] {
        let pack = example(pack);
        let run = |jobs: &str| {
            troupe(&[
                "explore", &pack, "--json", "--depth", "8", "--states", states, "--jobs", jobs,
            ])
        };
        let one = run("1");
        assert_eq!(one.0, 0, "{}", one.2);
        for jobs in ["2", "3"] {
            let many = run(jobs);
            assert_eq!(many.0, 0, "{}", many.2);
            assert!(
                one.1 == many.1,
                "{pack}: --jobs {jobs} differs from --jobs 1"
            );
        }
    }
    let (code, _, err) = troupe(&["explore", &example("everyday-negotiation"), "--jobs", "0"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn random_counts_are_deterministic_per_seed() {
    let pack = example("everyday-negotiation");
    let a = explore_json(&[&pack, "--runs", "50", "--seed", "7"]);
    let b = explore_json(&[&pack, "--runs", "50", "--seed", "7"]);
    assert_eq!(a, b);
    assert_eq!(a["mode"], "random");
    assert_eq!(a["counts"]["runs"], 50);
    let kinds = &a["counts"]["kinds"];
    for k in [
        "events", "outcomes", "rules", "entries", "openings", "branches",
    ] {
        assert!(kinds[k].is_object(), "{k}");
    }
    // Every run has the one opening.
    let openings = kinds["openings"].as_object().unwrap();
    assert!(openings.values().all(|n| n == 50), "{openings:?}");
    // Some run ends each way (a `walk away` on `hard` fails in one turn;
    // two `8000` and a `shake` succeed), and no count exceeds the runs.
    let outcomes = kinds["outcomes"].as_object().unwrap();
    for o in ["outcome success", "outcome failure"] {
        assert!(outcomes[o].as_u64().unwrap() > 0, "{o}: {outcomes:?}");
    }
    for v in kinds.as_object().unwrap().values() {
        for n in v.as_object().unwrap().values() {
            assert!(n.as_u64().unwrap() <= 50);
        }
    }
    // Branch labels name the pack file, as `troupe test` coverage does.
    let branches = kinds["branches"].as_object().unwrap();
    assert!(
        branches
            .keys()
            .any(|k| k.starts_with("branch scenarios/used_car_negotiation.yaml ")),
        "{branches:?}"
    );
    // Another seed makes other choices (18.3): other counts.
    let c = explore_json(&[&pack, "--runs", "50", "--seed", "8"]);
    assert_eq!(c["seed"], 8);
    assert_ne!(a["counts"], c["counts"]);
}

#[test]
fn witness_files_replay_and_are_not_written_into_the_pack() {
    let pack = test_pack();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w");
    let out_s = out.display().to_string();
    let doc = explore_json(&[&pack, "--witness", &out_s]);
    let script = out.join("outcome-deal.yaml");
    // Format 20.5: the root (scenario `stall`, seed 0, the opening that
    // 13.10 makes of `opening.npc_says`, `opening`; no difficulty) and the
    // inputs, strings as JSON strings.
    assert_eq!(
        std::fs::read_to_string(&script).unwrap(),
        "# The witness of outcome deal (troupe explore, Format 20.5).\n\
         # Replay: troupe run PACK --script THIS_FILE\n\
         scenario: \"stall\"\nseed: 0\nopening: \"opening\"\ninputs:\n  - \"offer\"\n  - \"offer\"\n"
    );
    assert_eq!(
        item(&doc, "outcome deal")["witness"]["script"],
        script.display().to_string()
    );
    assert!(!out.join("outcome-impossible_deal.yaml").exists());
    let (code, run, err) = troupe(&[
        "run",
        &pack,
        "--script",
        &script.display().to_string(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let run: Value = serde_json::from_str(&run).unwrap();
    assert_eq!(run["turns"][1]["outcome"], "deal");
    // The text output prints the command that replays each written witness.
    let (code, text, err) = troupe(&["explore", &pack, "--witness", &out_s]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains(&format!(
            "outcome deal: reached in 2 turns (opening): offer / offer\n  replay: troupe run {pack} --script {}\n",
            script.display()
        )),
        "{text}"
    );
    // Inside the pack: a usage error, nothing written.
    let inside = format!("{pack}/witnesses");
    let (code, _, err) = troupe(&["explore", &pack, "--witness", &inside]);
    assert_eq!(code, 2, "{err}");
    assert!(!Path::new(&inside).exists());
    let dotted = format!("{pack}/../unreachable-deal/w2");
    let (code, _, err) = troupe(&["explore", &pack, "--witness", &dotted]);
    assert_eq!(code, 2, "{err}");
    assert!(!Path::new(&dotted).exists());
}

/// Issue 42: every witness file of both example packs replays to its item
/// with `troupe run PACK --script FILE` and nothing else given (Format 20,
/// 20.5: the script carries its root); `failure` of everyday-negotiation
/// needs the preset `hard`, which only the script says.
#[test]
fn every_witness_file_replays_alone_in_both_example_packs() {
    for name in ["everyday-negotiation", "job-interview"] {
        let pack = example(name);
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path().display().to_string();
        let doc = explore_json(&[&pack, "--depth", "6", "--states", "3000", "--witness", &w]);
        let mut replayed = 0;
        for it in doc["items"].as_array().unwrap() {
            if it["status"] != "reached" {
                continue;
            }
            let label = it["item"].as_str().unwrap();
            let (kind, id) = label.split_once(' ').unwrap();
            let script = it["witness"]["script"].as_str().unwrap();
            let (code, out, err) = troupe(&["run", &pack, "--script", script, "--json"]);
            assert_eq!(code, 0, "{name} {label}: {err}");
            let run: Value = serde_json::from_str(&out).unwrap();
            let hit = match run["turns"].as_array().unwrap().last() {
                // A speaker at the root authors the opening, which the run
                // document does not name; explore replays it itself (exit
                // 3 otherwise) and tests/it/explore_speakers.rs checks one.
                None if kind == "speaker" => run["opening"]["message"] == "m1",
                None => run["opening"]["firings"]
                    .as_array()
                    .is_some_and(|f| f.iter().any(|f| f[kind] == id)),
                Some(last) if kind == "rule" => last["rule"] == id,
                Some(last) if kind == "speaker" => last["replies"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r["author"] == id),
                Some(last) => last["firings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f[kind] == id),
            };
            assert!(hit, "{name}: {label} not reached by {script}: {out}");
            replayed += 1;
        }
        assert!(replayed >= 3, "{name}: {replayed} witnesses");
    }
    // The failure witness of everyday-negotiation is on `hard`: a flag that
    // contradicts the script is a usage error that runs nothing.
    let pack = example("everyday-negotiation");
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().display().to_string();
    explore_json(&[&pack, "--depth", "2", "--witness", &w]);
    let failure = dir.path().join("outcome-failure.yaml");
    let text = std::fs::read_to_string(&failure).unwrap();
    assert!(text.contains("difficulty: \"hard\"\n"), "{text}");
    let f = failure.display().to_string();
    let (code, out, err) = troupe(&["run", &pack, "--script", &f, "--difficulty", "warm"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("--difficulty warm contradicts the script's difficulty `hard`"),
        "{err}"
    );
    let (code, _, err) = troupe(&["run", &pack, "--script", &f, "--difficulty", "hard"]);
    assert_eq!(code, 0, "the same value is allowed: {err}");
}

/// Format 20: a YAML script with an unknown key, or a root value of the
/// wrong shape, is not a script (exit 1), with a suggestion.
#[test]
fn a_script_with_a_bad_root_is_not_a_script() {
    let pack = example("everyday-negotiation");
    let dir = tempfile::tempdir().unwrap();
    for (text, says) in [
        (
            "scenaro: used_car\ninputs: [hi]\n",
            "did you mean `scenario`",
        ),
        (
            "seed: -1\ninputs: [hi]\n",
            "`seed` of a script is an integer",
        ),
        (
            "difficulty: 3\ninputs: [hi]\n",
            "`difficulty` of a script is an ID",
        ),
        ("seed: 1\n", "`inputs` of a script is a list of strings"),
    ] {
        let f = dir.path().join("s.yaml");
        std::fs::write(&f, text).unwrap();
        let (code, out, err) = troupe(&["run", &pack, "--script", &f.display().to_string()]);
        assert_eq!(code, 1, "{text}: {err}");
        assert!(out.is_empty(), "{out}");
        assert!(err.contains(says), "{text}: {err}");
    }
}

#[test]
fn hostile_flags_are_refused_or_bounded() {
    let pack = test_pack();
    for args in [
        vec!["--states", "0"],
        vec!["--depth", "0"],
        vec!["--depth", "100000000"],
        vec!["--runs", "0"],
        vec!["--states", "-1"],
    ] {
        let mut all = vec!["explore", pack.as_str()];
        all.extend(args.iter().copied());
        let (code, out, err) = troupe(&all);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty());
        assert!(!err.is_empty());
    }
    // The largest depth is bounded work: the states bound stops it.
    let doc = explore_json(&[
        &example("everyday-negotiation"),
        "--depth",
        "1000",
        "--states",
        "500",
    ]);
    assert_eq!(doc["search"]["states"], 500);
    assert_eq!(doc["search"]["stopped_by"], "states");
    let (code, _, err) = troupe(&["explore", &pack, "--scenario", "stal"]);
    assert_eq!(code, 1);
    assert!(err.contains("stall"), "{err}");
}

/// The `explore` stage of a `troupe test --json` document.
fn explore_stage(doc: &Value) -> Value {
    doc["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == "explore")
        .unwrap()
        .clone()
}

#[test]
fn the_exploration_stage_of_troupe_test_passes_and_fails_as_configured() {
    let (code, out, err) = troupe(&["test", &test_pack(), "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let stage = explore_stage(&doc);
    assert_eq!(stage["status"], "PASS", "{stage}");
    assert_eq!(stage["tests"][0]["name"], "explore stall");

    // A copy whose manifest asks for every outcome, the impossible one too.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("pack");
    common::copy_dir(Path::new(&test_pack()), &copy);
    let manifest = copy.join("manifest.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap().replace(
        "  unreachable: [outcome impossible_deal, outcome odd_deal]\n",
        "",
    );
    std::fs::write(&manifest, text).unwrap();
    let (code, out, _) = troupe(&["test", &copy.display().to_string(), "--json"]);
    assert_eq!(code, 1, "{out}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let stage = explore_stage(&doc);
    assert_eq!(stage["status"], "FAIL");
    let failures = &stage["tests"][0]["failures"];
    assert!(
        failures[0]["message"].as_str().unwrap().starts_with(
            "outcome impossible_deal is unreachable (proved by the check: outcome `impossible_deal` can never happen"
        ),
        "{failures}"
    );
    assert_eq!(
        failures[1]["message"],
        "outcome odd_deal is unreachable (the search exhausted the space)"
    );

    // A pack without `explore`: SKIP with the reason.
    let (_, out, _) = troupe(&["test", &example("job-interview"), "--json"]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    let stage = doc["stages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(stage["stage"], "explore");
    assert_eq!(stage["status"], "SKIP");
    assert_eq!(stage["reason"], "the manifest has no explore settings");
}

#[test]
fn the_json_document_matches_its_schema() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/schemas/output/explore.schema.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    for doc in [
        explore_json(&[&test_pack()]),
        explore_json(&[&test_pack(), "--runs", "5"]),
        explore_json(&[&example("everyday-negotiation"), "--depth", "3"]),
    ] {
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
    }
}

//! `troupe graph` (Format 20.2) on the example packs. The DOT output must
//! parse structurally (balanced braces, every edge's endpoints declared),
//! the Mermaid output must start with `flowchart` and hold the same edges,
//! and the edges below are derived by hand from the packs' scenario files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

fn troupe(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn pack(name: &str) -> String {
    format!("{}/examples/packs/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn graph(name: &str, format: &str) -> String {
    let (code, out, err) = troupe(&["graph", &pack(name), "--format", format]);
    assert_eq!(code, 0, "{err}");
    out
}

/// An edge as (source label, edge label, target label).
type Edges = BTreeSet<(String, String, String)>;

/// A label's value in a DOT attribute list: `label="…"` (escapes undone).
fn dot_label(attrs: &str) -> String {
    let start = attrs.find("label=\"").expect("a label") + 7;
    let mut out = String::new();
    let mut chars = attrs[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            '"' => break,
            c => out.push(c),
        }
    }
    out
}

/// Parses the DOT text structurally and returns its edges by node label.
fn parse_dot(dot: &str) -> Edges {
    assert!(dot.starts_with("digraph "), "{dot}");
    // Braces balance outside quoted strings and never go below zero.
    let (mut depth, mut quoted, mut escaped) = (0i32, false, false);
    for c in dot.chars() {
        match (quoted, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (_, false, '"') => quoted = !quoted,
            (false, _, '{') => depth += 1,
            (false, _, '}') => {
                depth -= 1;
                assert!(depth >= 0, "unbalanced: {dot}");
            }
            _ => {}
        }
    }
    assert_eq!((depth, quoted), (0, false), "{dot}");
    let mut nodes = BTreeMap::new();
    let mut raw = Vec::new();
    for line in dot.lines().map(str::trim) {
        if let Some((lhs, attrs)) = line.split_once(" [") {
            if let Some((a, b)) = lhs.split_once(" -> ") {
                raw.push((a.to_string(), dot_label(attrs), b.to_string()));
            } else if lhs != "node" && lhs != "edge" {
                let id = lhs.to_string();
                assert!(
                    id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                    "{id}"
                );
                assert!(nodes.insert(id, dot_label(attrs)).is_none(), "{line}");
            }
        }
    }
    raw.into_iter()
        .map(|(a, l, b)| {
            let a = nodes.get(&a).unwrap_or_else(|| panic!("undeclared {a}"));
            let b = nodes.get(&b).unwrap_or_else(|| panic!("undeclared {b}"));
            (a.clone(), l, b.clone())
        })
        .collect()
}

/// The Mermaid flowchart's edges by node label.
fn parse_mermaid(text: &str) -> Edges {
    assert!(text.starts_with("flowchart "), "{text}");
    let mut nodes = BTreeMap::new();
    let mut raw = Vec::new();
    for line in text.lines().map(str::trim) {
        let mut words = line.split(' ');
        let first = words.next().unwrap_or("");
        if let (Some(arrow), Some(to)) = (words.next(), words.next()) {
            if let Some(rest) = arrow
                .strip_prefix("-->|")
                .or_else(|| arrow.strip_prefix("-.->|"))
                .or_else(|| arrow.strip_prefix("==>|"))
            {
                let label = rest.trim_end_matches('|').to_string();
                raw.push((first.to_string(), label, to.to_string()));
                continue;
            }
        }
        // A node line: ID then a shape holding one quoted label.
        if let Some(q) = line.find('"') {
            let id = &line[..line
                .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .unwrap_or(0)];
            let end = line.rfind('"').unwrap_or(q);
            if !id.is_empty() && end > q && id != "subgraph" {
                let label = line[q + 1..end].replace("#quot;", "\"");
                nodes.insert(id.to_string(), label);
            }
        }
    }
    raw.into_iter()
        .map(|(a, l, b)| {
            let a = nodes.get(&a).unwrap_or_else(|| panic!("undeclared {a}"));
            let b = nodes.get(&b).unwrap_or_else(|| panic!("undeclared {b}"));
            (a.clone(), l, b.clone())
        })
        .collect()
}

fn edge(a: &str, l: &str, b: &str) -> (String, String, String) {
    (a.to_string(), l.to_string(), b.to_string())
}

fn check_pack(name: &str, want: &[(&str, &str, &str)], not: &[(&str, &str, &str)]) {
    let dot = graph(name, "dot");
    let mermaid = graph(name, "mermaid");
    let edges = parse_dot(&dot);
    assert_eq!(parse_mermaid(&mermaid), edges, "{name}: the same edges");
    for (a, l, b) in want {
        assert!(
            edges.contains(&edge(a, l, b)),
            "{name}: {a} -{l}-> {b} in\n{dot}"
        );
    }
    for (a, l, b) in not {
        assert!(!edges.contains(&edge(a, l, b)), "{name}: no {a} -{l}-> {b}");
    }
    // Same pack, same bytes.
    assert_eq!(graph(name, "dot"), dot);
    assert_eq!(graph(name, "mermaid"), mermaid);
}

#[test]
fn everyday_negotiation_wiring() {
    // From scenarios/used_car_negotiation.yaml.
    check_pack(
        "everyday-negotiation",
        &[
            ("rule close_deal", "add", "deal_progress"),
            ("deal_progress", "reads", "rule close_deal"),
            ("rule real_offer", "add", "deal_progress"),
            ("rule evidence", "add", "deal_progress"),
            ("event dealer_warms_up", "add", "deal_progress"),
            ("impression", "reads", "event dealer_warms_up"),
            ("event dealer_warms_up", "raises", "signal warmed_up"),
            ("event counter_offer", "raises", "signal counter_offered"),
            ("deal_progress", "reads", "event counter_offer"),
            ("event haggle_fatigue", "add", "patience"),
            ("deal_progress", "reads", "outcome success"),
            ("patience", "reads", "outcome failure"),
            ("outcome success", "ends", "END"),
            ("outcome failure", "ends", "END"),
            ("difficulty.time_pressure", "reads", "rule stalling"),
            ("rule small_talk", "add", "patience"),
        ],
        &[
            // No event ends the story; no rule sets (only adds).
            ("event patience_warning", "ends", "END"),
            ("rule close_deal", "set", "deal_progress"),
            ("deal_progress", "reads", "outcome failure"),
        ],
    );
}

#[test]
fn job_interview_wiring() {
    // From scenarios/interview.yaml.
    check_pack(
        "job-interview",
        &[
            ("rule rude", "add", "rapport"),
            ("rule rude", "add", "patience"),
            ("rule example", "add", "answers"),
            ("rule ramble", "add", "answers"),
            ("rapport", "reads", "event dana_impressed"),
            ("event dana_impressed", "raises", "signal impressed"),
            ("event dana_impressed", "add", "confidence"),
            ("answers", "reads", "event second_answer"),
            ("rapport", "reads", "outcome offer"),
            ("patience", "reads", "outcome rejection"),
            ("outcome offer", "ends", "END"),
            ("outcome rejection", "ends", "END"),
        ],
        &[("event clock_watching", "ends", "END")],
    );
}

#[test]
fn harbor_lights_wiring() {
    // From scenarios/harbor_lights.yaml: an ending event, a derived
    // variable, `turn`, keyed and owned variables, scene changes.
    check_pack(
        "harbor-lights",
        &[
            ("ending event lamp_relit", "ends", "END"),
            ("ending event lamp_relit", "raises", "signal lights_back"),
            ("light_on", "reads", "ending event lamp_relit"),
            ("ready_to_confront", "reads", "ending event lamp_relit"),
            ("trust", "reads", "event tobias_opens_up"),
            ("event tobias_opens_up", "set", "rumors"),
            ("event tobias_opens_up", "add", "tobias.guilt"),
            ("ines.ledger_shown", "reads", "event ledger_clue"),
            ("event ledger_clue", "add", "clues"),
            ("turn", "reads", "event fog_rolls_in"),
            ("saltmere.fog", "reads", "event fog_rolls_in"),
            ("event fog_rolls_in", "set", "saltmere.fog"),
            ("clues", "reads", "outcome truth_told"),
            ("avg_trust", "reads", "outcome truth_told"),
            ("turn", "reads", "outcome left_in_the_dark"),
            ("outcome truth_told", "ends", "END"),
            ("outcome left_in_the_dark", "ends", "END"),
            ("opening arrival", "set", "scene.location"),
        ],
        &[],
    );
}

#[test]
fn negotiation_snapshots() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots/graph"));
    settings.set_prepend_module_to_snapshot(false);
    let dot = graph("everyday-negotiation", "dot");
    let mermaid = graph("everyday-negotiation", "mermaid");
    settings.bind(|| {
        insta::assert_snapshot!("everyday-negotiation-dot", dot);
        insta::assert_snapshot!("everyday-negotiation-mermaid", mermaid);
    });
}

#[test]
fn out_file_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g.mmd");
    let o = out.to_str().unwrap();
    let p = pack("job-interview");
    let (code, stdout, err) = troupe(&["graph", &p, "--format", "mermaid", "-o", o]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(stdout, format!("graph of interview → {o}\n"));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        graph("job-interview", "mermaid")
    );
    // No temporary file is left beside it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    // The output path may not be the pack.
    // Format 16.3: exit 2, like every output that is an input; a file of
    // the pack too.
    let (code, _, err) = troupe(&["graph", &p, "-o", &p]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("refusing"), "{err}");
    let manifest = Path::new(&p).join("manifest.yaml");
    let before = std::fs::read(&manifest).unwrap();
    let (code, _, err) = troupe(&["graph", &p, "-o", manifest.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(std::fs::read(&manifest).unwrap(), before);
    assert!(err.contains("refusing"), "{err}");
    assert!(Path::new(&p).join("manifest.yaml").is_file());

    // An unknown scenario names the ones there are.
    let (code, _, err) = troupe(&["graph", &p, "--scenario", "intervew"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("`interview`"), "{err}");

    // SVG is offered now (Format 20.2 "SVG"; tests/it/pictures.rs renders it);
    // an unknown format is still a usage error.
    let (code, out, _) = troupe(&["graph", &p, "--format", "svg"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("<?xml"), "{out}");
    let (code, _, _) = troupe(&["graph", &p, "--format", "png"]);
    assert_eq!(code, 2);
}

//! The readable report (Format 21.2): a line per stage, a line per test,
//! failures indented under their test, snapshot diffs, the coverage and a
//! summary line.

use std::fmt::Write;

use crate::testing::model::{StageResult, Status};
use crate::testing::stages::Run;

fn counts<'a>(statuses: impl Iterator<Item = Status> + 'a) -> Vec<String> {
    let all: Vec<Status> = statuses.collect();
    [Status::Pass, Status::Fail, Status::Skip, Status::Err]
        .iter()
        .filter_map(|s| {
            let n = all.iter().filter(|x| *x == s).count();
            (n > 0).then(|| format!("{n} {}", s.as_str()))
        })
        .collect()
}

/// The summary line: `troupe test: 2 stages PASS, 1 FAIL, 2 SKIP; 14 tests, 13 PASS, 1 FAIL`.
pub fn summary(stages: &[StageResult]) -> String {
    let sc = counts(stages.iter().map(|s| s.status));
    let tests: Vec<Status> = stages
        .iter()
        .flat_map(|s| s.tests.iter().map(|t| t.status))
        .collect();
    let n = tests.len();
    let tc = counts(tests.into_iter());
    format!(
        "troupe test: {}; {} test{}{}{}",
        stage_words(&sc),
        n,
        if n == 1 { "" } else { "s" },
        if tc.is_empty() { "" } else { ", " },
        tc.join(", ")
    )
}

/// `2 stages PASS, 1 FAIL, 2 SKIP`.
fn stage_words(sc: &[String]) -> String {
    let mut out = Vec::new();
    for (i, c) in sc.iter().enumerate() {
        if i == 0 {
            let (n, word) = c.split_once(' ').unwrap_or((c.as_str(), ""));
            out.push(format!(
                "{n} stage{} {word}",
                if n == "1" { "" } else { "s" }
            ));
        } else {
            out.push(c.clone());
        }
    }
    out.join(", ")
}

/// The text report of a run.
pub fn to_text(run: &Run) -> String {
    let mut s = String::new();
    for stage in &run.stages {
        let _ = write!(s, "{:<4} {}", stage.status.as_str(), stage.stage.as_str());
        if let Some(r) = &stage.reason {
            let _ = write!(s, ": {r}");
        }
        s.push('\n');
        for t in &stage.tests {
            let _ = write!(s, "  {:<4} {}", t.status.as_str(), t.name);
            if let Some(f) = &t.file
                && f != &t.name
                && !f.ends_with(&format!("/{}", t.name))
            {
                let _ = write!(s, " ({f})");
            }
            if let Some(r) = &t.reason {
                let _ = write!(s, ": {r}");
            }
            s.push('\n');
            for f in &t.failures {
                let _ = write!(s, "         {}", f.message);
                if let Some(file) = &f.file {
                    let _ = write!(s, " [{file}");
                    if let (Some(l), Some(c)) = (f.line, f.column) {
                        let _ = write!(s, ":{l}:{c}");
                    } else if let Some(p) = f.pointer.as_deref().filter(|p| !p.is_empty()) {
                        let _ = write!(s, " {p}");
                    }
                    s.push(']');
                }
                s.push('\n');
            }
            if let Some(d) = &t.diff {
                for line in d.lines() {
                    let _ = writeln!(s, "         {line}");
                }
            }
        }
    }
    let c = &run.coverage;
    let scope = if c.scope == "all" {
        "coverage".to_string()
    } else {
        format!("coverage of {} only", c.scope)
    };
    let _ = writeln!(s, "{scope}:");
    if c.scenarios.is_empty() {
        let _ = writeln!(s, "  no scenario was run");
    }
    for sc in &c.scenarios {
        let kinds: Vec<String> = sc
            .kinds
            .iter()
            .map(|(k, v)| format!("{k} {}/{}", v.reached, v.total))
            .collect();
        let _ = writeln!(
            s,
            "  {} {:.1}%: {}",
            sc.scenario,
            sc.percent,
            kinds.join(", ")
        );
        let missing: Vec<&String> = sc
            .kinds
            .values()
            .flat_map(|v| v.not_reached.iter())
            .collect();
        if !missing.is_empty() {
            let _ = writeln!(s, "    not reached:");
            for m in missing {
                let _ = writeln!(s, "      {m}");
            }
        }
    }
    if !c.without_tests.is_empty() {
        let _ = writeln!(s, "  without tests: {}", c.without_tests.join(", "));
    }
    let _ = writeln!(s, "{}", summary(&run.stages));
    s
}

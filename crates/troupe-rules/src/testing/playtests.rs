//! Stage 5 of `troupe test` (Format 21.1, 22.6): one test per playtest,
//! PASS when the playtest passes; each unmet required goal and each
//! requirement that does not hold is a failure, with its evidence; a
//! NOT RUN playtest (a model-driven persona with no backend) is SKIP.

use serde_json::Value;

use super::model::{Failure, StageName, StageResult, Status, TestResult};
use crate::load::PackFiles;
use crate::playtest::persona::ModelSource;
use crate::playtest::{run_playtest, PackPlaytests, PlaytestReport, RunSettings, Verdict};
use crate::runtime::Opened;

/// Runs every playtest of `pack` against its lowered `bundle`; `model` is
/// the backend of `--runtime model` (Format 22.3).
pub fn playtest_stage(
    pack: &PackFiles,
    bundle: &Value,
    model: Option<&ModelSource>,
) -> StageResult {
    let files = PackPlaytests::read(pack);
    if files.playtests.is_empty() {
        return StageResult::whole(
            StageName::Playtests,
            Status::Skip,
            "the pack has no playtest",
        );
    }
    let opened = Opened::from_checked(pack.root.display().to_string(), bundle.clone());
    let mut tests: Vec<TestResult> = files
        .errors
        .iter()
        .map(|(file, e)| {
            TestResult::new(file.clone(), Some(file.clone()), Status::Err)
                .because(format!("cannot read the playtest: {e}"))
        })
        .collect();
    for (file, pt) in &files.playtests {
        let settings = RunSettings {
            difficulty: None,
            model: model.cloned(),
        };
        let report = run_playtest(&opened, &files, file, pt, &settings);
        let mut t = test_of(&report, pt, file);
        // Its run, each session as `troupe transcript` prints it (Format
        // 20), headed by the file it would be written to (22.5).
        t.transcript = report
            .sessions
            .iter()
            .filter_map(|(name, text)| {
                let tr = super::replays::transcript_of(bundle, text)?;
                Some(format!("{name}:\n{tr}"))
            })
            .collect();
        tests.push(t);
    }
    StageResult::from_tests(StageName::Playtests, tests)
}

fn test_of(report: &PlaytestReport, pt: &crate::playtest::Playtest, file: &str) -> TestResult {
    if report.status == Verdict::NotRun {
        return TestResult::new(report.name.clone(), Some(file.to_string()), Status::Skip).because(
            format!("NOT RUN: {}", report.reason.as_deref().unwrap_or_default()),
        );
    }
    let mut failures: Vec<Failure> = report
        .requirements
        .iter()
        .map(|r| Failure {
            file: Some(file.to_string()),
            pointer: Some("/requires".into()),
            ..Failure::new(r.clone())
        })
        .collect();
    for g in report.goals.iter().filter(|g| g.required && !g.met) {
        let pointer = match &g.agent {
            Some(a) => pt.roster.iter().position(|x| &x.id == a).and_then(|i| {
                let j = pt.roster[i].goals.iter().position(|x| x.id == g.goal)?;
                Some(format!("/roster/{i}/goals/{j}/verify"))
            }),
            None => pt
                .group_goals
                .iter()
                .position(|x| x.id == g.goal)
                .map(|j| format!("/group_goals/{j}/verify")),
        };
        let who = g.agent.as_deref().unwrap_or("group");
        failures.push(Failure {
            file: Some(file.to_string()),
            pointer,
            actual: Some(g.evidence.clone()),
            ..Failure::new(format!("goal {who}/{} not met", g.goal))
        });
    }
    TestResult::from_failures(report.name.clone(), Some(file.to_string()), failures)
}

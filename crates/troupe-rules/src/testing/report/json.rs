//! `troupe test --json` (Format 21.2): one document, members in order,
//! every field present.

use serde::Serialize;

use crate::testing::coverage;
use crate::testing::model::StageResult;
use crate::testing::stages::Run;

/// The JSON document of a run.
#[derive(Debug, Serialize)]
pub struct JsonReport<'a> {
    /// The pack as given.
    pub pack: &'a str,
    /// `PASS` exactly when the exit code is 0; `ERR` when it is 3; else `FAIL`.
    pub status: &'static str,
    /// The exit code.
    pub exit_code: i32,
    /// The stages in order.
    pub stages: &'a [StageResult],
    /// The coverage (21.6).
    pub coverage: &'a coverage::Report,
}

/// The run's status word: PASS (exit 0), ERR (exit 3) or FAIL.
pub fn status_word(exit: i32) -> &'static str {
    match exit {
        0 => "PASS",
        3 => "ERR",
        _ => "FAIL",
    }
}

/// The report as pretty JSON text, ending with a newline.
pub fn to_json(run: &Run) -> String {
    let r = JsonReport {
        pack: &run.pack,
        status: status_word(run.exit_code),
        exit_code: run.exit_code,
        stages: &run.stages,
        coverage: &run.coverage,
    };
    let mut s =
        serde_json::to_string_pretty(&r).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

//! `troupe test PACK [--test NAME] [--json] [--junit FILE] [--review |
//! --accept]` (alias `test-pack`): the test pyramid (Format 21).
//!
//! `--runtime model` and the model flags give stage 5's model-driven
//! personas their backend (Format 21.1).
//!
//! Exit codes: 0 every stage PASS or SKIP; 1 a failure; 2 a usage error
//! (an unknown `--test`, `--review` without a terminal); 3 any stage ERR or
//! a system error.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use troupe::tools::{
    run_tests_with, ChangeKind, Decision, Progress, Quiet, SnapshotChange, Snapshots, StageName,
    TestResult,
};

/// Arguments of `troupe test`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The pack directory.
    pub pack: PathBuf,
    /// Run one fixture, by fixture_id, file name or file stem.
    #[arg(long = "test", value_name = "NAME")]
    pub test: Option<String>,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write a JUnit XML report to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write one self-contained HTML page of the run to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Walk through new, changed and stale snapshots and accept or reject each.
    #[arg(long, conflicts_with = "accept")]
    pub review: bool,
    /// Accept every new or changed snapshot and delete stale ones.
    #[arg(long)]
    pub accept: bool,
    /// Stage 5's model-driven personas (Format 21.1 "Model flags").
    #[command(flatten)]
    pub persona: super::playtest::PersonaModelArgs,
    /// Run the tests on a `troupe serve` deployment instead (docs/server.md):
    /// the pack is sent, nothing is stored, the same reports and exit code
    /// come back. The bearer token is read from TROUPE_TOKEN.
    #[arg(long, value_name = "URL", requires = "workspace", conflicts_with_all = ["review", "accept", "html"])]
    pub server: Option<String>,
    /// The deployment's workspace (with --server).
    #[arg(long, value_name = "ID", requires = "server")]
    pub workspace: Option<String>,
}

/// `--server URL --workspace ID`: the run on the deployment, printed as a
/// local run prints (text or `--json`, `--junit FILE`), with its exit code.
fn run_remote(args: &Args, server: &str, workspace: &str) -> i32 {
    if args.persona.model.any_given()
        || !matches!(args.persona.runtime, super::playtest::PersonaRuntime::Rules)
    {
        eprintln!("troupe test: --server runs the tests with the deployment's settings; the model flags are not sent");
        return 2;
    }
    let token = match std::env::var("TROUPE_TOKEN") {
        Ok(t) if !t.trim().is_empty() => t,
        _ => {
            eprintln!("troupe test: --server needs the workspace's bearer token in TROUPE_TOKEN (`troupe serve token create`)");
            return 2;
        }
    };
    let run = match troupe_server::client::run_remote(
        &args.pack,
        server,
        workspace,
        token.trim(),
        args.test.as_deref(),
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("troupe test: {}", troupe::escape_controls(&e));
            return 3;
        }
    };
    if let Some(path) = &args.junit {
        if let Err(e) = troupe::files::write_atomic(path, run.junit.as_bytes()) {
            eprintln!("troupe test: {e}");
            return 3;
        }
    }
    let text = if args.json {
        run.json
    } else {
        troupe::escape_controls(&run.text).into_owned()
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("troupe test: cannot write the report: {e}");
            3
        }
        _ => run.exit_code,
    }
}

/// A one-line progress display on a terminal, cleared before the report.
struct Terminal {
    done: usize,
    shown: bool,
}

impl Progress for Terminal {
    fn stage(&mut self, stage: StageName) {
        self.show(&format!("{} …", stage.as_str()));
    }
    fn test(&mut self, stage: StageName, test: &TestResult) {
        self.done += 1;
        self.show(&format!(
            "{} [{}] {} {}",
            stage.as_str(),
            self.done,
            test.status.as_str(),
            test.name
        ));
    }
}

impl Terminal {
    fn show(&mut self, line: &str) {
        let line: String = troupe::escape_controls(line).chars().take(70).collect();
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "\r\x1b[2K{line}");
        let _ = out.flush();
        self.shown = true;
    }
    fn clear(&mut self) {
        if self.shown {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "\r\x1b[2K");
            let _ = out.flush();
        }
    }
}

fn review(change: &SnapshotChange) -> Decision {
    let what = match change.kind {
        ChangeKind::New => "new",
        ChangeKind::Changed => "changed",
        ChangeKind::Stale => "stale",
        _ => "changed",
    };
    println!("\n{what} snapshot {}", change.path);
    if change.kind == ChangeKind::Stale {
        println!("(no session has it; accepting deletes it)");
    } else {
        print!("{}", troupe::escape_controls(&change.diff));
    }
    loop {
        print!("[a]ccept, [r]eject, [s]kip? ");
        let _ = std::io::stdout().flush();
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => return Decision::Skip,
            Ok(_) => {}
        }
        match line.trim() {
            "a" | "accept" => return Decision::Accept,
            "r" | "reject" => return Decision::Reject,
            "s" | "skip" => return Decision::Skip,
            _ => {}
        }
    }
}

/// Runs the tests; returns the exit code.
pub fn run(args: Args) -> i32 {
    if let (Some(server), Some(workspace)) = (&args.server, &args.workspace) {
        return run_remote(&args, server, workspace);
    }
    // Format 16.3: the reports and a cassette recorded with `--record`.
    let (cassette_out, cassette_in) = args.persona.model.cassette_paths();
    let mut outputs: Vec<(&std::path::Path, troupe::files::OutputKind)> = args
        .junit
        .iter()
        .chain(args.html.iter())
        .map(|p| (p.as_path(), troupe::files::OutputKind::Any))
        .collect();
    outputs.extend(cassette_out);
    let mut inputs = vec![args.pack.as_path()];
    inputs.extend(cassette_in);
    if let Err(msg) = troupe::files::check_outputs(&outputs, &inputs) {
        eprintln!("troupe test: {msg}");
        return 2;
    }
    let model = match args.persona.source("test") {
        Ok(m) => m,
        Err(code) => return code,
    };
    let terminal = std::io::stdout().is_terminal();
    if args.review && !(terminal && std::io::stdin().is_terminal()) {
        eprintln!("troupe test: --review needs a terminal (use --accept to accept every change)");
        return 2;
    }
    let mut reviewer = review;
    let snapshots = if args.review {
        Snapshots::Review(&mut reviewer)
    } else if args.accept {
        Snapshots::AcceptAll
    } else {
        Snapshots::Check
    };
    let mut term = Terminal {
        done: 0,
        shown: false,
    };
    let mut quiet = Quiet;
    let progress: &mut dyn Progress = if terminal && !args.json && !args.review {
        &mut term
    } else {
        &mut quiet
    };
    let result = run_tests_with(&args.pack, args.test.as_deref(), snapshots, progress, model);
    term.clear();
    let run = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("troupe test: {e}");
            return 2;
        }
    };
    if let Some(path) = &args.junit {
        if let Err(e) = troupe::files::write_atomic(path, run.to_junit().as_bytes()) {
            eprintln!("troupe test: {e}");
            return 3;
        }
    }
    if let Some(path) = &args.html {
        if let Err(e) = troupe::files::write_atomic(path, run.to_html().as_bytes()) {
            eprintln!("troupe test: {e}");
            return 3;
        }
    }
    let text = if args.json {
        run.to_json()
    } else {
        troupe::escape_controls(&run.to_text()).into_owned()
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("troupe test: cannot write the report: {e}");
            3
        }
        _ => run.exit_code(),
    }
}

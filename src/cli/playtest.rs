//! `troupe playtest PACK [NAME] [--json] [--difficulty PRESET] [--runtime
//! model …]` (Format 22.6): runs a pack's playtests and reports each goal
//! met or not met with its evidence.
//!
//! Exit codes: 0 every playtest PASS; 1 one FAILs (or the pack does not
//! conform); 6 none FAILs and one is NOT RUN (a model-driven persona with
//! no model backend, Format 22.3); 2 an unknown NAME or a usage error; 3 a
//! system error (or a cassette that cannot be read).

use std::path::PathBuf;

use troupe::tools::{run_playtests_with, PlaytestOptions, Verdict};
use troupe::ErrorKind;

use super::run::ModelArgs;

/// The exit code of a run with a NOT RUN playtest and no FAIL (Format 22.6).
pub const NOT_RUN_EXIT: i32 = 6;

/// Who gives model-driven personas their lines (Format 22.5).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum PersonaRuntime {
    /// Each persona's `answers`, else the playtest's `cassette` (the default).
    Rules,
    /// The backend of the model flags (Format 24.1).
    Model,
}

/// The model flags of `troupe playtest` and `troupe test` (Format 22.5).
#[derive(Debug, clap::Args)]
pub struct PersonaModelArgs {
    /// `model`: model-driven personas call the backend the model flags
    /// describe; the characters are still played by the rules runtime.
    #[arg(long, value_enum, default_value = "rules")]
    pub runtime: PersonaRuntime,
    #[command(flatten)]
    pub model: ModelArgs,
}

impl PersonaModelArgs {
    /// The settings and backend for the run, `None` without `--runtime
    /// model`; `Err` is the exit code (2: model flags without `--runtime
    /// model`, or a usage error; 3: an unreadable cassette).
    pub(crate) fn source(
        &self,
        command: &str,
    ) -> Result<
        Option<(
            troupe::model_runtime::Settings,
            troupe::model_runtime::Backend,
        )>,
        i32,
    > {
        match self.runtime {
            PersonaRuntime::Rules if self.model.any_given() => {
                eprintln!("troupe {command}: --endpoint, --api-key-env, --cassette and --record need --runtime model");
                Err(2)
            }
            PersonaRuntime::Rules => Ok(None),
            PersonaRuntime::Model => {
                Ok(Some((self.model.settings(), self.model.backend(command)?)))
            }
        }
    }
}

/// Arguments of `troupe playtest`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The pack directory.
    pub pack: PathBuf,
    /// Run one playtest, by name, file name or file stem.
    pub name: Option<String>,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// The difficulty preset (default: the scenario's default).
    #[arg(long, value_name = "PRESET")]
    pub difficulty: Option<String>,
    #[command(flatten)]
    pub persona: PersonaModelArgs,
}

/// Runs `troupe playtest`; returns the exit code.
pub fn run(args: Args) -> i32 {
    if !args.pack.is_dir() {
        eprintln!("troupe: {} is not a pack directory", args.pack.display());
        return 2;
    }
    // Format 16.3: a cassette recorded with `--record` is an output.
    let (cassette_out, _) = args.persona.model.cassette_paths();
    if let Err(msg) = troupe::files::check_outputs(&cassette_out, &[&args.pack]) {
        eprintln!("troupe playtest: {msg}");
        return 2;
    }
    let pack = match super::open_pack_api(&args.pack, troupe::OpenOptions::default()) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let model = match args.persona.source("playtest") {
        Ok(m) => m,
        Err(code) => return code,
    };
    let options = {
        let mut o = PlaytestOptions::default();
        o.difficulty = args.difficulty.clone();
        o.model = model;
        o
    };
    let reports = match run_playtests_with(&pack, &args.pack, args.name.as_deref(), options) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("troupe: {e}");
            return if e.kind() == ErrorKind::NotFound {
                2
            } else {
                3
            };
        }
    };
    if args.json {
        let doc = serde_json::json!({ "playtests": reports });
        match serde_json::to_string_pretty(&doc) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("troupe: {e}");
                return 3;
            }
        }
    } else {
        if reports.is_empty() {
            println!("the pack has no playtest");
        }
        for r in &reports {
            print!("{}", troupe::escape_controls(&r.to_text()));
        }
    }
    if reports.iter().any(|r| r.status == Verdict::Fail) {
        1
    } else if reports.iter().any(|r| r.status == Verdict::NotRun) {
        NOT_RUN_EXIT
    } else {
        0
    }
}

//! `troupe cel check|eval|run` (Format 11).

use std::path::PathBuf;

use troupe::conditions::{self, CelValue, Declarations};
use troupe::ErrorKind;

/// The `troupe cel` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Parse and type-check an expression; prints its type.
    Check {
        /// The CEL expression.
        expr: String,
        /// Declare a variable: NAME=TYPE (e.g. `trust=map(string, double)`).
        #[arg(long = "decl", value_name = "NAME=TYPE")]
        decls: Vec<String>,
        #[command(flatten)]
        story: StoryArgs,
    },
    /// Check and evaluate an expression; prints its value.
    Eval {
        /// The CEL expression.
        expr: String,
        #[command(flatten)]
        story: StoryArgs,
        /// Bind a variable: NAME=JSON. Undeclared names get the JSON value's
        /// type (integers int, other numbers double, objects map(string, T)).
        #[arg(long = "var", value_name = "NAME=JSON")]
        vars: Vec<String>,
        /// Declare a variable: NAME=TYPE.
        #[arg(long = "decl", value_name = "NAME=TYPE")]
        decls: Vec<String>,
    },
    /// Run CEL test lines (`data/cel/FORMAT.md`); ends with `N passed, M failed`.
    Run {
        /// A JSON Lines file of tests.
        file: PathBuf,
    },
}

/// A story to check and evaluate against (Format 11.2, 11.3): a pack's
/// (or bundle's) scenario with its declarations, and a session's state.
#[derive(Debug, Clone, clap::Args)]
pub struct StoryArgs {
    /// Check against this pack's (or bundle's, or package's) declarations
    /// (`state.rapport`, `difficulty.patience`, …).
    #[arg(long)]
    pub pack: Option<PathBuf>,
    /// The scenario (default: the session's, else the first).
    #[arg(long, requires = "pack")]
    pub scenario: Option<String>,
    /// Evaluate at a message of this session (its scenario is the story).
    #[arg(long, requires = "pack")]
    pub session: Option<PathBuf>,
    /// The message (default: the session's last in file order; without a
    /// session, the initial state).
    #[arg(long, requires = "session")]
    pub at: Option<String>,
}

/// Opens the story `--pack` names: a session's, else the initial state of
/// `--scenario`; `Err` is the exit code.
fn story(a: &StoryArgs, pack: &std::path::Path) -> Result<troupe::History, i32> {
    if let Some(s) = &a.session {
        return super::open_history(pack, Some(s));
    }
    let opened = super::open_pack_api(pack, troupe::OpenOptions::default())?;
    opened.initial(a.scenario.as_deref()).map_err(|e| {
        eprint!("{}", e.render());
        1
    })
}

/// `check`/`eval` against a story: the scenario's environment, and for
/// `eval` the state at `--at` (or the last message, or the initial state).
fn run_in_story(expr: &str, a: &StoryArgs, pack: &std::path::Path, eval: bool) -> i32 {
    let history = match story(a, pack) {
        Ok(h) => h,
        Err(c) => return c,
    };
    let ty = match history.check_condition(expr) {
        Ok(ty) => ty,
        Err(e) => {
            eprintln!("(checked against scenario `{}`)", history.scenario());
            return report(expr, &e);
        }
    };
    if !eval {
        println!("{ty}");
        return 0;
    }
    let at = match &a.at {
        Some(id) => Some(id.as_str()),
        None if a.session.is_some() => history.last_id(),
        None => None,
    };
    match history.eval_condition(expr, at) {
        Ok(v) => {
            println!("{v}");
            0
        }
        Err(e) if e.kind() == ErrorKind::Invalid => report(expr, &e),
        Err(e) => {
            eprintln!("{e}");
            1
        }
    }
}

/// Runs a `troupe cel` subcommand; returns the exit code.
pub fn run(cmd: Command) -> i32 {
    match cmd {
        Command::Check { expr, story, .. } if story.pack.is_some() => {
            let pack = story.pack.clone().unwrap_or_default();
            run_in_story(&expr, &story, &pack, false)
        }
        Command::Eval { expr, story, .. } if story.pack.is_some() => {
            let pack = story.pack.clone().unwrap_or_default();
            run_in_story(&expr, &story, &pack, true)
        }
        Command::Check { expr, decls, .. } => {
            let decls = match declare(&decls) {
                Ok(d) => d,
                Err(e) => return usage(&e),
            };
            match conditions::check(&expr, &decls) {
                Ok(ty) => {
                    println!("{ty}");
                    0
                }
                Err(e) => report(&expr, &e),
            }
        }
        Command::Eval {
            expr, vars, decls, ..
        } => {
            let decls = match declare(&decls) {
                Ok(d) => d,
                Err(e) => return usage(&e),
            };
            let mut values = Vec::new();
            for v in &vars {
                let Some((name, json)) = v.split_once('=') else {
                    return usage(&format!("--var `{v}` is not NAME=JSON"));
                };
                let value = match serde_json::from_str::<serde_json::Value>(json)
                    .map_err(|e| e.to_string())
                    .and_then(|j| CelValue::from_json(&j).map_err(|e| e.to_string()))
                {
                    Ok(value) => value,
                    Err(e) => return usage(&format!("--var `{name}`: {e}")),
                };
                values.push((name, value));
            }
            match conditions::eval(&expr, &decls, &values) {
                Ok(v) => {
                    println!("{v}");
                    0
                }
                Err(e) if e.kind() == ErrorKind::Invalid && e.diagnostics().is_empty() => {
                    usage(&format!("--var {e}"))
                }
                Err(e) if e.kind() == ErrorKind::Invalid => report(&expr, &e),
                Err(e) => {
                    eprintln!("{e}");
                    1
                }
            }
        }
        Command::Run { file } => {
            // The load stage's reader: a regular file only (never a FIFO or
            // device), at most 64 MiB.
            let name = file.display().to_string();
            let text = match troupe::files::read_input(&file).map(String::from_utf8) {
                Ok(Ok(t)) => t,
                Ok(Err(_)) => {
                    eprintln!("troupe cel run: {name} is not UTF-8 text");
                    return 3;
                }
                Err(e) => {
                    eprintln!("troupe cel run: cannot read {name}: {e}");
                    return 3;
                }
            };
            let result = conditions::run_suite(&text);
            for (line, name, why) in &result.failed {
                println!("{}:{line}: {name}: {why}", file.display());
            }
            println!("{} passed, {} failed", result.passed, result.failed.len());
            i32::from(!result.failed.is_empty())
        }
    }
}

fn usage(msg: &str) -> i32 {
    eprintln!("troupe cel: {msg}");
    2
}

fn declare(decls: &[String]) -> Result<Declarations, String> {
    let mut out = Declarations::new();
    for d in decls {
        let (name, ty) = d
            .split_once('=')
            .ok_or_else(|| format!("--decl `{d}` is not NAME=TYPE"))?;
        out.declare(name.trim(), ty).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// Prints the CEL errors of `e` (`CODE: line:column: message` and the
/// quoted part of the line with a caret); returns exit code 1.
fn report(expr: &str, e: &troupe::Error) -> i32 {
    for d in e.diagnostics() {
        let (line, column) = (d.location.line.unwrap_or(1), d.location.column.unwrap_or(1));
        let message = troupe::escape_controls(&d.message);
        eprintln!("{}: {line}:{column}: {message}", d.code);
        if let Some(text) = expr.lines().nth(line.saturating_sub(1) as usize) {
            let (text, caret) = troupe::excerpt(text, column);
            eprintln!("  | {text}");
            eprintln!("  | {}^", " ".repeat(caret));
        }
    }
    1
}

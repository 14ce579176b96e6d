//! `troupe cel check|eval|run` (Format 11).

use std::path::PathBuf;

use crate::cel::{self, Activation, CelError, Env, NoHost, Type, Value};

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

/// Opens the story `--pack` names; `Err` is the exit code.
fn story_engine(a: &StoryArgs, pack: &std::path::Path) -> Result<crate::engine::Engine, i32> {
    if let Some(s) = &a.session {
        return super::open_engine(pack, Some(s));
    }
    let opened = super::run::open_pack(pack)?;
    crate::engine::load::compile_checked(&opened.bundle, None, a.scenario.as_deref()).map_err(|d| {
        eprint!(
            "{}",
            crate::diag::render::render_human(&d, &crate::diag::render::Sources::new())
        );
        1
    })
}

/// `check`/`eval` against a story: the scenario's environment, and for
/// `eval` the state at `--at` (or the last message, or the initial state).
fn run_in_story(expr: &str, a: &StoryArgs, pack: &std::path::Path, eval: bool) -> i32 {
    let engine = match story_engine(a, pack) {
        Ok(e) => e,
        Err(c) => return c,
    };
    let cond = match engine.compile_condition(expr, None, false) {
        Ok(c) => c,
        Err(errs) => {
            eprintln!("(checked against scenario `{}`)", engine.ir.scenario);
            return report(expr, &errs);
        }
    };
    if !eval {
        println!("{}", cond.program.result_type());
        return 0;
    }
    let state = match (&a.at, engine.last_message()) {
        (Some(id), _) => match super::message_index(&engine, id) {
            Ok(m) => engine.state_at(m),
            Err(c) => return c,
        },
        (None, Some(m)) if a.session.is_some() => engine.state_at(m),
        _ => engine.initial().clone(),
    };
    match engine.eval_condition(&cond, &state, "") {
        Ok(v) => {
            println!("{v}");
            0
        }
        Err(e) => {
            eprintln!("evaluation error: {e}");
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
            let env = match declare(&decls) {
                Ok(env) => env,
                Err(e) => return usage(&e),
            };
            match cel::compile(&expr, &env) {
                Ok(p) => {
                    println!("{}", p.result_type());
                    0
                }
                Err(errs) => report(&expr, &errs),
            }
        }
        Command::Eval {
            expr, vars, decls, ..
        } => {
            let mut env = match declare(&decls) {
                Ok(env) => env,
                Err(e) => return usage(&e),
            };
            let mut values = Vec::new();
            for v in &vars {
                let Some((name, json)) = v.split_once('=') else {
                    return usage(&format!("--var `{v}` is not NAME=JSON"));
                };
                let value = match serde_json::from_str::<serde_json::Value>(json)
                    .map_err(|e| e.to_string())
                    .and_then(|j| Value::from_json(&j))
                {
                    Ok(value) => value,
                    Err(e) => return usage(&format!("--var `{name}`: {e}")),
                };
                if env.lookup(name).is_none() {
                    env.declare(name, value.bound_type());
                }
                values.push((name.to_string(), value));
            }
            let program = match cel::compile(&expr, &env) {
                Ok(p) => p,
                Err(errs) => return report(&expr, &errs),
            };
            let mut act = Activation::new(&env);
            for (name, value) in values {
                if !act.set_by_name(&env, &name, value) {
                    return usage(&format!("--var `{name}` names an object: bind its fields"));
                }
            }
            match program.eval(&act, &mut NoHost) {
                Ok(v) => {
                    println!("{v}");
                    0
                }
                Err(e) => {
                    eprintln!("evaluation error: {e}");
                    1
                }
            }
        }
        Command::Run { file } => {
            // The load stage's reader: a regular file only (never a FIFO or
            // device), at most 64 MiB.
            let name = file.display().to_string();
            let text = match crate::load::text::read_bounded(&name, &file).map(String::from_utf8) {
                Ok(Ok(t)) => t,
                Ok(Err(_)) => {
                    eprintln!("troupe cel run: {name} is not UTF-8 text");
                    return 3;
                }
                Err(d) => {
                    eprintln!("troupe cel run: cannot read {name}: {}", d.message);
                    return 3;
                }
            };
            let (passed, failed) = cel::suite::run_text(&text);
            for (line, name, why) in &failed {
                println!("{}:{line}: {name}: {why}", file.display());
            }
            println!("{passed} passed, {} failed", failed.len());
            i32::from(!failed.is_empty())
        }
    }
}

fn usage(msg: &str) -> i32 {
    eprintln!("troupe cel: {msg}");
    2
}

fn declare(decls: &[String]) -> Result<Env, String> {
    let mut env = Env::new();
    for d in decls {
        let (name, ty) = d
            .split_once('=')
            .ok_or_else(|| format!("--decl `{d}` is not NAME=TYPE"))?;
        let ty = Type::parse(ty).map_err(|e| e.to_string())?;
        env.declare(name.trim(), ty);
    }
    Ok(env)
}

fn report(expr: &str, errs: &[CelError]) -> i32 {
    for e in errs {
        let message = crate::diag::render::escape_controls(&e.message);
        eprintln!("{}: {}:{}: {message}", e.code(), e.line, e.column);
        if let Some(line) = expr.lines().nth(e.line.saturating_sub(1) as usize) {
            let (text, caret) = crate::diag::render::window(line, e.column);
            eprintln!("  | {text}");
            eprintln!("  | {}^", " ".repeat(caret));
        }
    }
    1
}

//! `troupe run PACK --script FILE …` (Format 18, 20): plays a script's
//! inputs as the first player, one turn each, printing a transcript (or
//! one JSON document) and writing the session file with `--out`.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use troupe::model_runtime::{self, Backend, ModelRuntime, Settings, Structured};
use troupe::{transcript, ErrorKind, OpenOptions, Pack, RuntimeChoice, Session, SessionOptions};

/// The session settings `run` and `play` share (Format 18.4).
#[derive(Debug, Clone, clap::Args)]
pub struct SessionArgs {
    /// A pack directory, a bundle or a package (.troupe).
    pub pack: PathBuf,
    /// The scenario (default: the first).
    #[arg(long)]
    pub scenario: Option<String>,
    /// The difficulty preset (default: the scenario's).
    #[arg(long)]
    pub difficulty: Option<String>,
    /// The generator seed (default 0, or the script's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// The opening (default: the first offered).
    #[arg(long)]
    pub opening: Option<String>,
    /// Write the session file here (Format 18.8).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The player's name, as macros show it (`{{user}}`; default `Player`).
    #[arg(long, value_name = "NAME")]
    pub player_name: Option<String>,
    /// Use a package's compiled form (ir.compact, else ir.json) only when it
    /// is exactly what its bundle.json compiles to (Format 14.4); otherwise
    /// warn (IR_MISMATCH) and compile bundle.json afresh.
    #[arg(long)]
    pub verify_ir: bool,
    /// Go on with this saved session instead of starting one (Format
    /// 18.10): its header gives the scenario, difficulty, seed and players,
    /// its messages the state; new lines follow its lines (in `--out`).
    #[arg(long, value_name = "SESSION.jsonl", conflicts_with_all = ["scenario", "difficulty", "seed", "opening", "player_name"])]
    pub resume: Option<PathBuf>,
    /// With `--resume`: the message to go on from (default: the last in
    /// file order); an earlier one starts a branch there.
    #[arg(long, value_name = "ID", requires = "resume")]
    pub at: Option<String>,
}

impl SessionArgs {
    /// How PACK is opened (`--verify-ir`).
    pub(crate) fn open_options(&self) -> OpenOptions {
        OpenOptions::default().verify_ir(self.verify_ir)
    }
}

/// The runtime `run` uses.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum RuntimeArg {
    /// Declarative rules (the default).
    Rules,
    /// The seed's structural test double.
    Fake,
    /// A language model behind an OpenAI-compatible endpoint (Format 24).
    Model,
}

/// How `--structured` asks for the answer's shape (Format 24.4).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum StructuredArg {
    /// `response_format` `json_schema` with the answer's schema.
    #[value(name = "json_schema")]
    JsonSchema,
    /// `response_format` `json_object`; the schema in the prompt.
    #[value(name = "json_object")]
    JsonObject,
    /// No `response_format`; the schema in the prompt.
    None,
}

/// The settings of `--runtime model` (Format 24.1), shared by `run`,
/// `play` and `prompt`.
#[derive(Debug, Clone, clap::Args)]
pub struct ModelArgs {
    /// The OpenAI-compatible base URL (`http://127.0.0.1:8080/v1`).
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// The model name sent in each request.
    #[arg(long, value_name = "NAME", default_value = "local")]
    pub model: String,
    /// The environment variable that holds the API key (never written
    /// anywhere).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// The sampling temperature (not sent when absent).
    #[arg(long, value_parser = super::parse_temperature)]
    pub temperature: Option<f64>,
    /// The most tokens an answer may have.
    #[arg(long, default_value_t = model_runtime::DEFAULT_MAX_TOKENS, value_parser = super::parse_max_tokens)]
    pub max_tokens: u32,
    /// Seconds one request may take.
    #[arg(long, value_name = "SECS", default_value_t = model_runtime::DEFAULT_TIMEOUT_SECS)]
    pub timeout: u64,
    /// How the answer's shape is asked for.
    #[arg(long, value_enum, default_value = "json_schema")]
    pub structured: StructuredArg,
    /// A cassette: replayed (no model needed), or written with --record.
    #[arg(long, value_name = "FILE")]
    pub cassette: Option<PathBuf>,
    /// Call the endpoint and record every interaction to --cassette.
    #[arg(long, requires = "cassette")]
    pub record: bool,
}

impl ModelArgs {
    /// The request settings.
    pub(crate) fn settings(&self) -> Settings {
        {
            let mut o = Settings::default();
            o.model = self.model.clone();
            o.temperature = self.temperature;
            o.max_tokens = self.max_tokens;
            o.structured = self.structured.into();
            o
        }
    }

    /// The backend these flags describe (Format 24.1, 24.5), built by the
    /// library's [`Backend::connect`]; `Err` is the exit code (2: usage, 3:
    /// a cassette that cannot be read), with the reason printed. Shared by
    /// `run`, `play`, `playtest` and `test`.
    pub(crate) fn backend(&self, command: &str) -> Result<Backend, i32> {
        let api_key = match &self.api_key_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(k) if !k.is_empty() => Some(k),
                _ => {
                    eprintln!(
                        "troupe {command}: the variable {var} named by --api-key-env is not set"
                    );
                    return Err(2);
                }
            },
        };
        let connection = model_runtime::Connection {
            endpoint: self.endpoint.clone(),
            api_key,
            timeout_secs: self.timeout,
            cassette: self.cassette.clone(),
            record: self.record,
        };
        Backend::connect(&connection).map_err(|e| {
            if e.kind() == ErrorKind::Io {
                eprintln!("troupe {command}: MODEL_CASSETTE: {e}");
                3
            } else {
                eprintln!("troupe {command}: {e}");
                2
            }
        })
    }

    /// The model runtime these flags describe; `Err` is the exit code, as
    /// [`ModelArgs::backend`].
    pub(crate) fn runtime(&self, command: &str) -> Result<ModelRuntime, i32> {
        Ok(ModelRuntime::new(self.settings(), self.backend(command)?))
    }

    /// The cassette as Format 16.3 sees it: `(outputs, inputs)` — written
    /// with `--record` (an existing file there must be JSON), else read.
    pub(crate) fn cassette_paths(&self) -> (Vec<(&Path, troupe::files::OutputKind)>, Vec<&Path>) {
        match (&self.cassette, self.record) {
            (Some(c), true) => (vec![(c.as_path(), troupe::files::OutputKind::Json)], vec![]),
            (Some(c), false) => (vec![], vec![c.as_path()]),
            (None, _) => (vec![], vec![]),
        }
    }

    /// Whether a flag that only `--runtime model` uses was given
    /// (`--endpoint`, `--api-key-env`, `--cassette`, `--record`).
    pub(crate) fn any_given(&self) -> bool {
        self.endpoint.is_some()
            || self.api_key_env.is_some()
            || self.cassette.is_some()
            || self.record
    }
}

impl From<StructuredArg> for Structured {
    fn from(s: StructuredArg) -> Structured {
        match s {
            StructuredArg::JsonSchema => Structured::JsonSchema,
            StructuredArg::JsonObject => Structured::JsonObject,
            StructuredArg::None => Structured::None,
        }
    }
}

/// Arguments of `troupe run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub session: SessionArgs,
    /// The runtime.
    #[arg(long, value_enum, default_value = "rules")]
    pub runtime: RuntimeArg,
    /// One player input per line, or a YAML list (.yaml/.yml), or a YAML
    /// script with its root (scenario, seed, opening, difficulty: what
    /// `troupe explore --witness` writes).
    #[arg(long)]
    pub script: PathBuf,
    /// The host names this character as the responder of every turn
    /// (Format 18.9, the `manual` turn order); a turn it cannot answer
    /// (absent, muted) is refused.
    #[arg(long, value_name = "ID")]
    pub to: Option<String>,
    /// Print one JSON document `{"turns": [...], "score": ...}`.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// Prepares the outputs before anything runs (Format 16.3): `--out` and a
/// cassette recorded with `--record` are checked together against the
/// inputs (PACK, `inputs`, a cassette replayed) by the shared
/// [`troupe::files::check_outputs`] — an output that is an input, two
/// outputs that are one file, or an existing file that is not JSON is a
/// usage error (exit 2); then `--out`'s partial file is created and locked
/// (another writer of it: exit 3). `Ok(None)` without `--out`.
pub(crate) fn prepare_out(
    args: &SessionArgs,
    model: &ModelArgs,
    inputs: &[&Path],
) -> Result<Option<troupe::files::OutputFile>, i32> {
    use troupe::files::OutputKind;
    let mut all = vec![args.pack.as_path()];
    all.extend_from_slice(inputs);
    all.extend(args.resume.as_deref());
    let (cassette_out, cassette_in) = model.cassette_paths();
    all.extend(cassette_in);
    let mut outputs: Vec<(&Path, OutputKind)> = Vec::new();
    if let Some(out) = &args.out {
        outputs.push((out.as_path(), OutputKind::Json));
    }
    outputs.extend(cassette_out);
    if let Err(msg) = troupe::files::check_outputs(&outputs, &all) {
        eprintln!("troupe: {msg}");
        return Err(2);
    }
    let Some(out) = &args.out else {
        return Ok(None);
    };
    troupe::files::OutputFile::create(out)
        .map(Some)
        .map_err(|e| {
            eprintln!("troupe: {e}");
            3
        })
}

/// Commits the session file of a finished run (Format 16.3, 18.8): the
/// session written is checked against the pack as `troupe check` would;
/// one that does not conform is exit 1 with its diagnostics and the target
/// is left untouched. `code` is the run's exit code so far. The session
/// is dropped first (only its text is kept): the check then never holds
/// its own reading of the file beside the live session (Format 16.2).
pub(crate) fn commit_out(
    pack: &Pack,
    session: Session,
    out: Option<troupe::files::OutputFile>,
    code: i32,
) -> i32 {
    let Some(out) = out else { return code };
    let jsonl = session.jsonl().to_owned();
    drop(session);
    let name = out.target().display().to_string();
    let mut diags = pack.check_session(&name, &jsonl);
    if diags.iter().any(troupe::Diagnostic::is_error) {
        diags.retain(troupe::Diagnostic::is_error);
        diags.truncate(20);
        eprint!("{}", troupe::render_diagnostics(&diags));
        eprintln!("the session does not conform (Format 17.1); {name} was not written");
        return 1;
    }
    match out.commit() {
        Ok(()) => code,
        Err(e) => {
            eprintln!("troupe: {e}");
            3
        }
    }
}

/// Starts the session the settings describe, writing to `out`'s partial
/// file when given, with an adapter's runtime when given (`--runtime
/// model`); `Err` is the exit code.
pub(crate) fn start_with(
    pack: &Pack,
    args: &SessionArgs,
    runtime: RuntimeChoice,
    out: Option<&troupe::files::OutputFile>,
) -> Result<Session, i32> {
    if let Some(path) = &args.resume {
        return resume_with(pack, args, path, runtime, out);
    }
    let options = {
        let mut o = SessionOptions::default();
        o.scenario = args.scenario.clone();
        o.difficulty = args.difficulty.clone();
        o.seed = args.seed.unwrap_or(0);
        o.opening = args.opening.clone();
        o.player_name = args.player_name.clone();
        o.runtime = runtime;
        o.out = out.map(|o| o.partial().to_path_buf());
        o
    };
    pack.start(options).map_err(|e| {
        if e.kind() == ErrorKind::Io {
            eprintln!("troupe: {e}");
            3
        } else {
            eprint!("{}", troupe::render_diagnostics(e.diagnostics()));
            eprintln!("the session cannot start");
            1
        }
    })
}

/// Resumes the saved session at `path` (`--resume`, Format 18.10) at
/// `--at` or its last message; `Err` is the exit code: 2 when settings
/// are given too (a script's root), 3 when the file cannot be read, 1 when
/// it does not conform or cannot be resumed.
fn resume_with(
    pack: &Pack,
    args: &SessionArgs,
    path: &Path,
    runtime: RuntimeChoice,
    out: Option<&troupe::files::OutputFile>,
) -> Result<Session, i32> {
    if args.scenario.is_some()
        || args.difficulty.is_some()
        || args.seed.is_some()
        || args.opening.is_some()
        || args.player_name.is_some()
    {
        eprintln!("troupe: --resume takes the scenario, difficulty, seed, opening and players from the session's header; they cannot be given too (a script with its root included)");
        return Err(2);
    }
    if matches!(runtime, RuntimeChoice::Fake) {
        eprintln!(
            "troupe: --runtime fake writes no session, so it cannot go on with one (--resume)"
        );
        return Err(2);
    }
    let name = path.display().to_string();
    let bytes = troupe::files::read_input(path).map_err(|e| {
        eprintln!("troupe: {name}: {e}");
        3
    })?;
    let Ok(text) = String::from_utf8(bytes) else {
        eprintln!("troupe: {name}: the session is not UTF-8 (Format 12.1)");
        return Err(1);
    };
    let options = {
        let mut o = troupe::ResumeOptions::default();
        o.at = args.at.clone();
        o.runtime = runtime;
        o.out = out.map(|o| o.partial().to_path_buf());
        o
    };
    pack.resume_with(&text, options).map_err(|e| {
        if e.kind() == ErrorKind::Io {
            eprintln!("troupe: {e}");
            return 3;
        }
        if e.diagnostics().is_empty() {
            eprintln!("troupe: {e}");
        } else {
            eprint!("{}", troupe::render_diagnostics(e.diagnostics()));
        }
        eprintln!("{name} cannot be resumed (Format 18.10)");
        1
    })
}

/// Takes the root a script gives (Format 20: a YAML script with its root)
/// into the settings: a setting the command line leaves out is the
/// script's; one it gives with another value is a usage error (`Err`, the
/// message).
fn take_root(
    settings: &mut SessionArgs,
    script: &troupe::files::Script,
    path: &std::path::Path,
) -> Result<(), String> {
    fn take<T: PartialEq + Clone + std::fmt::Display>(
        flag: &str,
        given: &mut Option<T>,
        written: &Option<T>,
        path: &std::path::Path,
    ) -> Result<(), String> {
        match (given.as_ref(), written) {
            (Some(g), Some(w)) if g != w => Err(format!(
                "--{flag} {g} contradicts the script's {flag} `{w}` ({}); leave the flag out \
                 to replay the script as written",
                path.display()
            )),
            (None, Some(w)) => {
                *given = Some(w.clone());
                Ok(())
            }
            _ => Ok(()),
        }
    }
    take("scenario", &mut settings.scenario, &script.scenario, path)?;
    take("seed", &mut settings.seed, &script.seed, path)?;
    take("opening", &mut settings.opening, &script.opening, path)?;
    take(
        "difficulty",
        &mut settings.difficulty,
        &script.difficulty,
        path,
    )
}

/// Runs `troupe run`; returns the exit code.
pub fn run(args: Args) -> i32 {
    if matches!(args.runtime, RuntimeArg::Fake) && args.session.out.is_some() {
        eprintln!("troupe run: --runtime fake writes no session; --out cannot be used with it");
        return 2;
    }
    let out = match prepare_out(&args.session, &args.model, &[&args.script]) {
        Ok(o) => o,
        Err(c) => return c,
    };
    let script = match troupe::files::read_script_with_root(&args.script) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("troupe run: {e}");
            // Format 20: an unreadable file is a system error, a script
            // that is not one is input that does not conform.
            return if e.kind() == troupe::ErrorKind::Io {
                3
            } else {
                1
            };
        }
    };
    let mut args = args;
    if let Err(msg) = take_root(&mut args.session, &script, &args.script) {
        eprintln!("troupe run: {msg}");
        return 2;
    }
    let script = script.inputs;
    let pack = match super::open_pack_api(&args.session.pack, args.session.open_options()) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let (runtime, log) = match args.runtime {
        RuntimeArg::Rules => (RuntimeChoice::Rules, None),
        RuntimeArg::Fake => (RuntimeChoice::Fake, None),
        RuntimeArg::Model => match args.model.runtime("run") {
            Ok(r) => {
                let log = r.log();
                (r.adapter(), Some(log))
            }
            Err(c) => return c,
        },
    };
    let mut session = match start_with(&pack, &args.session, runtime, out.as_ref()) {
        Ok(s) => s,
        Err(c) => return c,
    };
    // A turn's record sums the calls of its replies (Format 24.7).
    let record_of = |log: &Option<model_runtime::Log>, messages: &[String]| {
        log.as_ref().and_then(|l| {
            l.lock()
                .ok()
                .and_then(|l| model_runtime::turn_record(&l, messages))
        })
    };
    let mut stdout = std::io::stdout().lock();
    if !args.json {
        let _ = write!(
            stdout,
            "{}",
            troupe::escape_controls(&if args.session.resume.is_some() {
                transcript::resumed(&session, true)
            } else {
                transcript::start(&session, true)
            })
        );
    }
    let mut doc = args
        .json
        .then(|| JsonStream::begin(&mut stdout, &session.opening()));
    let mut code = 0;
    // A refusal that stops the run before its session is written.
    let mut refused = None;
    let mut played = 0;
    for input in &script {
        if session.ended() {
            break;
        }
        let before = session.state();
        let turn = match &args.to {
            Some(c) => session.turn_to(c, input),
            None => session.turn(input),
        };
        match turn {
            Ok(r) => {
                played += 1;
                let rec = record_of(&log, &r.messages);
                if !args.json {
                    let mut text = transcript::turn(&session, input, &before, &r, true);
                    if log.is_some() || !r.diagnostics.is_empty() {
                        text.push_str(&transcript::model(&r, rec.as_ref()));
                    }
                    let _ = write!(stdout, "{}", troupe::escape_controls(&text));
                    let _ = stdout.flush();
                    // The turn was printed: nothing of it is kept (issue
                    // 43, item 10: every turn's JSON was kept, about 2 KB
                    // a turn, for a document only `--json` prints).
                    continue;
                }
                let mut v = serde_json::to_value(&r).unwrap_or(Value::Null);
                if let (Some(obj), Some(rec)) = (v.as_object_mut(), &rec) {
                    let mut m = serde_json::to_value(rec).unwrap_or(Value::Null);
                    if let Some(m) = m.as_object_mut() {
                        m.remove("input");
                    }
                    obj.insert("model".into(), m);
                }
                // Written as it is played, not kept (issue 43, item 10).
                if let Some(doc) = doc.as_mut() {
                    doc.turn(&mut stdout, &v);
                }
            }
            Err(e) if e.kind() == ErrorKind::Ended => {
                code = 1;
                break;
            }
            // A bound of Format 16 (a reply rendering past 16.2's budget):
            // exit 1 with the diagnostic, nothing written.
            Err(e) if e.kind() == ErrorKind::Limit => {
                eprintln!("error[LIMIT]: {}", e.diagnostics()[0].message);
                refused = Some(1);
                break;
            }
            Err(e) if e.kind() == ErrorKind::Runtime => {
                // The failed turn left nothing behind (Format 24.6): the
                // turns before it are kept.
                let d = &e.diagnostics()[0];
                eprintln!("troupe run: {}: {}", d.code, d.message);
                code = model_runtime::exit_code(d.code);
                break;
            }
            // `--to` a character who cannot answer this turn (Format
            // 18.9): nothing of it was written; the run stops, exit 1.
            Err(e) if e.kind() == ErrorKind::Refused => {
                eprintln!("troupe run: {e}");
                refused = Some(1);
                break;
            }
            Err(e) => {
                eprintln!("troupe run: {e}");
                refused = Some(3);
                break;
            }
        }
    }
    let unplayed = script.len() - played;
    if unplayed > 0 && code == 0 && refused.is_none() && !args.json {
        let first = played + 1;
        let _ = write!(
            stdout,
            "\n{unplayed} line{} of the script {} not played (from line {first}): the session had ended\n",
            if unplayed == 1 { "" } else { "s" },
            if unplayed == 1 { "was" } else { "were" },
        );
    }
    let score = session.score();
    let totals = log
        .as_ref()
        .and_then(|l| l.lock().ok().map(|l| transcript::model_totals(&l)));
    if let Some(doc) = doc {
        let mut rest = vec![("unplayed", json!(unplayed)), ("score", json!(score))];
        if let Some(t) = totals {
            rest.push(("model", t));
        }
        doc.end(&mut stdout, &rest);
    } else if refused.is_none() {
        let _ = write!(
            stdout,
            "{}",
            troupe::escape_controls(&transcript::score(&score))
        );
        if let Some(t) = totals {
            let _ = writeln!(
                stdout,
                "Model: {} request{} · {} tokens ({} prompt, {} completion)",
                t["requests"],
                if t["requests"] == 1 { "" } else { "s" },
                t["usage"]["total_tokens"],
                t["usage"]["prompt_tokens"],
                t["usage"]["completion_tokens"]
            );
        }
    }
    if let Some(c) = refused {
        // A refused command leaves its target as it was (Format 16.3).
        if let Some(out) = &out {
            eprintln!(
                "the run stopped at a refused turn; {} was not written",
                out.target().display()
            );
        }
        return c;
    }
    commit_out(&pack, session, out, code)
}

/// The `--json` document of `troupe run` (Format 20.1) written as the run
/// goes: the opening first, each turn when it is played, the rest at the
/// end — byte for byte what `serde_json::to_string_pretty` gives the
/// whole document, with no turn kept (issue 43, item 10: a run's memory
/// does not grow with its length beyond the session it writes, 16.2).
struct JsonStream {
    turns: usize,
}

/// `v` pretty-printed, every line after the first indented by `by` spaces
/// (a JSON string holds no raw line feed, so lines are the printer's).
fn pretty_at(v: &impl serde::Serialize, by: usize) -> String {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    let pad = format!("\n{}", " ".repeat(by));
    text.replace('\n', &pad)
}

impl JsonStream {
    fn begin(out: &mut impl Write, opening: &impl serde::Serialize) -> JsonStream {
        let _ = write!(
            out,
            "{{\n  \"opening\": {},\n  \"turns\": [",
            pretty_at(opening, 2)
        );
        JsonStream { turns: 0 }
    }

    fn turn(&mut self, out: &mut impl Write, turn: &Value) {
        let sep = if self.turns == 0 { "" } else { "," };
        let _ = write!(out, "{sep}\n    {}", pretty_at(turn, 4));
        let _ = out.flush();
        self.turns += 1;
    }

    fn end(self, out: &mut impl Write, rest: &[(&str, Value)]) {
        let _ = write!(out, "{}", if self.turns == 0 { "]" } else { "\n  ]" });
        for (k, v) in rest {
            let _ = write!(out, ",\n  {}: {}", Value::from(*k), pretty_at(v, 2));
        }
        let _ = writeln!(out, "\n}}");
        let _ = out.flush();
    }
}

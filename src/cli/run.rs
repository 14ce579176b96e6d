//! `troupe run PACK --script FILE …` (Format 18, 20): plays a script's
//! inputs as the first player, one turn each, printing a transcript (or
//! one JSON document) and writing the session file with `--out`.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::diag::render::render_human;
use crate::runtime::{
    open_with, OpenOptions, Opened, Options, RuntimeKind, Session, StartError, TurnResult,
};

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
    /// The generator seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The opening (default: the first offered).
    #[arg(long)]
    pub opening: Option<String>,
    /// Write the session file here (Format 18.8).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The player's name, as macros show it (`{{user}}`; default `Player`).
    #[arg(long, value_name = "NAME")]
    pub player_name: Option<String>,
    /// Use a package's ir.json only when it is exactly what its bundle.json
    /// compiles to (Format 14.4); otherwise warn (IR_MISMATCH) and compile
    /// bundle.json afresh.
    #[arg(long)]
    pub verify_ir: bool,
}

impl SessionArgs {
    /// How PACK is opened (`--verify-ir`).
    pub(crate) fn open_options(&self) -> OpenOptions {
        OpenOptions {
            verify_ir: self.verify_ir,
            ..OpenOptions::default()
        }
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
    #[arg(long)]
    pub temperature: Option<f64>,
    /// The most tokens an answer may have.
    #[arg(long, default_value_t = crate::runtime::chat::DEFAULT_MAX_TOKENS)]
    pub max_tokens: u32,
    /// Seconds one request may take.
    #[arg(long, value_name = "SECS", default_value_t = crate::runtime::chat::DEFAULT_TIMEOUT_SECS)]
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
    pub(crate) fn settings(&self) -> crate::runtime::chat::Settings {
        use crate::runtime::chat::Structured;
        crate::runtime::chat::Settings {
            model: self.model.clone(),
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            structured: match self.structured {
                StructuredArg::JsonSchema => Structured::JsonSchema,
                StructuredArg::JsonObject => Structured::JsonObject,
                StructuredArg::None => Structured::None,
            },
        }
    }

    /// The model runtime these settings describe; `Err` is the exit code
    /// (2: usage, 3: a cassette that cannot be read), with the reason
    /// printed.
    pub(crate) fn runtime(
        &self,
        pack: &Opened,
        command: &str,
    ) -> Result<crate::runtime::chat::ModelRuntime, i32> {
        use crate::runtime::chat::{Backend, Cassette, ModelRuntime};
        let backend = match (&self.cassette, self.record) {
            (Some(c), false) => Backend::Replay(Cassette::read(c).map_err(|e| {
                eprintln!("troupe {command}: MODEL_CASSETTE: {e}");
                3
            })?),
            _ => {
                let Some(endpoint) = &self.endpoint else {
                    eprintln!("troupe {command}: --runtime model needs --endpoint URL (or --cassette FILE to replay a recording)");
                    return Err(2);
                };
                let key = match &self.api_key_env {
                    None => None,
                    Some(var) => match std::env::var(var) {
                        Ok(k) if !k.is_empty() => Some(k),
                        _ => {
                            eprintln!("troupe {command}: the variable {var} named by --api-key-env is not set");
                            return Err(2);
                        }
                    },
                };
                self.http_backend(endpoint, key, command)?
            }
        };
        Ok(ModelRuntime::new(
            pack.bundle.clone(),
            self.settings(),
            backend,
        ))
    }

    #[cfg(feature = "model")]
    fn http_backend(
        &self,
        endpoint: &str,
        key: Option<String>,
        _command: &str,
    ) -> Result<crate::runtime::chat::Backend, i32> {
        use crate::runtime::chat::Backend;
        let timeout = std::time::Duration::from_secs(self.timeout.max(1));
        Ok(match (&self.cassette, self.record) {
            (Some(c), true) => Backend::record(endpoint, key, timeout, c.clone()),
            _ => Backend::http(endpoint, key, timeout),
        })
    }

    #[cfg(not(feature = "model"))]
    fn http_backend(
        &self,
        _endpoint: &str,
        _key: Option<String>,
        command: &str,
    ) -> Result<crate::runtime::chat::Backend, i32> {
        eprintln!("troupe {command}: this build has no HTTP client (cargo feature `model`); only --cassette replay works");
        Err(2)
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
    /// One player input per line, or a YAML list (.yaml/.yml).
    #[arg(long)]
    pub script: PathBuf,
    /// Print one JSON document `{"turns": [...], "score": ...}`.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// Opens PACK, printing diagnostics on failure; `Err` is the exit code.
pub(crate) fn open_pack(path: &Path) -> Result<Opened, i32> {
    open_pack_with(path, OpenOptions::default())
}

/// [`open_pack`] with `options` (Format 14.4).
pub(crate) fn open_pack_with(path: &Path, options: OpenOptions) -> Result<Opened, i32> {
    if !path.exists() {
        eprintln!("troupe: no such file or folder: {}", path.display());
        return Err(3);
    }
    match open_with(path, options) {
        Ok(o) => {
            if !o.warnings.is_empty() {
                eprint!("{}", troupe::render_diagnostics(&o.warnings));
            }
            Ok(o)
        }
        Err(e) => {
            eprint!("{}", render_human(&e.diagnostics, &e.sources));
            eprintln!("the input does not conform (Format 17.1); nothing was run");
            Err(1)
        }
    }
}

/// Prepares `--out` before anything runs (Format 16.5): an output that is
/// an input is a usage error (exit 2); the target's partial file is
/// created and locked (another writer of it: exit 3). `Ok(None)` without
/// `--out`.
pub(crate) fn prepare_out(
    args: &SessionArgs,
    inputs: &[&Path],
) -> Result<Option<troupe::files::OutputFile>, i32> {
    let Some(out) = &args.out else {
        return Ok(None);
    };
    let mut all = vec![args.pack.as_path()];
    all.extend_from_slice(inputs);
    if let Err(msg) = troupe::files::refuse_inputs(&[out], &all) {
        eprintln!("troupe: {msg}");
        return Err(2);
    }
    troupe::files::OutputFile::create(out)
        .map(Some)
        .map_err(|e| {
            eprintln!("troupe: {e}");
            3
        })
}

/// Commits the session file of a finished run (Format 16.5, 18.8): the
/// session written is checked against the pack as `troupe check` would;
/// one that does not conform is exit 1 with its diagnostics and the target
/// is left untouched. `code` is the run's exit code so far.
pub(crate) fn commit_out(
    pack: &Opened,
    session: &Session,
    out: Option<troupe::files::OutputFile>,
    code: i32,
) -> i32 {
    let Some(out) = out else { return code };
    let name = out.target().display().to_string();
    let loaded = crate::load::parse_session(&name, session.session_text().as_bytes());
    let mut diags = loaded.diagnostics;
    if let Some(doc) = &loaded.value {
        diags.extend(crate::check::run::check_session_document(&pack.bundle, doc));
    }
    if diags.iter().any(crate::diag::Diagnostic::is_error) {
        diags.retain(crate::diag::Diagnostic::is_error);
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
    pack: &Opened,
    args: &SessionArgs,
    kind: RuntimeKind,
    out: Option<&troupe::files::OutputFile>,
    runtime: Option<Box<dyn crate::runtime::Runtime>>,
) -> Result<Session, i32> {
    let options = Options {
        scenario: args.scenario.clone(),
        difficulty: args.difficulty.clone(),
        seed: args.seed,
        opening: args.opening.clone(),
        runtime: kind,
        header_players: None,
        player_name: args.player_name.clone(),
    };
    let started = match (runtime, out) {
        (Some(r), o) => Session::start_with(pack, &options, r, o.map(|o| o.partial())),
        (None, Some(o)) => Session::start_to_file(pack, &options, o.partial()),
        (None, None) => Session::start(pack, &options),
    };
    started.map_err(|e| match e {
        StartError::Refused(d) => {
            eprint!("{}", troupe::render_diagnostics(&d));
            eprintln!("the session cannot start");
            1
        }
        StartError::Io(e) => {
            eprintln!("troupe: cannot write the session file: {e}");
            3
        }
    })
}

/// Reads a script (Format 20): one input per line (`\r\n` accepted, empty
/// lines skipped) or a YAML list of strings.
pub fn read_script(path: &Path) -> Result<Vec<String>, String> {
    // A script is untrusted input: bounded like a session file (Format 16).
    const MAX_SCRIPT_BYTES: u64 = 64 << 20;
    let len = std::fs::metadata(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .len();
    if len > MAX_SCRIPT_BYTES {
        return Err(format!(
            "{} is {len} bytes; a script may have at most {MAX_SCRIPT_BYTES}",
            path.display()
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let yaml = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    );
    if yaml {
        // The YAML reader takes mappings: read the list as the value of a key.
        let text = String::from_utf8(bytes).map_err(|_| "the script is not UTF-8".to_string())?;
        let mut wrapped = String::from("script:\n");
        for line in text.lines() {
            wrapped.push_str("  ");
            wrapped.push_str(line);
            wrapped.push('\n');
        }
        let l = crate::load::parse_yaml(&path.display().to_string(), wrapped.as_bytes());
        let Some(doc) = l.value else {
            return Err(l
                .diagnostics
                .first()
                .map_or("the script is not YAML".into(), |d| d.message.to_string()));
        };
        return doc
            .value
            .get("script")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_string)).collect())
            .ok_or_else(|| "a YAML script is a list of strings".to_string());
    }
    let text = String::from_utf8(bytes).map_err(|_| "the script is not UTF-8".to_string())?;
    Ok(text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

fn display_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(display_value).collect::<Vec<_>>().join(", ")
        ),
        Value::Null => "(absent)".into(),
        other => other.to_string(),
    }
}

/// The lines of the firings of one message (`  event: id (at m3) · signal s`).
fn firing_lines(firings: &[crate::runtime::FiringRecord]) -> String {
    let mut out = String::new();
    for f in firings {
        match (&f.event, &f.outcome) {
            (Some(e), _) => {
                out.push_str(&format!("  event: {e} (at {})", f.message));
                if let Some(s) = &f.signal {
                    out.push_str(&format!(" · signal {s}"));
                }
                out.push('\n');
            }
            (_, Some(o)) => out.push_str(&format!("  outcome: {o} (at {})\n", f.message)),
            _ => {}
        }
    }
    out
}

/// The transcript lines of the session start: settings, the root and what
/// fired at it (Format 18.4), and the state. `all` shows hidden variables
/// too (the author's `run`; `play` shows the player only visible ones).
pub fn transcript_start(session: &Session, all: bool) -> String {
    let h = session.header();
    let mut out = format!(
        "Scenario {} · seed {}",
        h.get("scenario").and_then(Value::as_str).unwrap_or(""),
        h.get("seed")
            .and_then(crate::model::integer_u64)
            .unwrap_or(0)
    );
    if let Some(d) = h.get("difficulty").and_then(Value::as_str) {
        out.push_str(&format!(" · difficulty {d}"));
    }
    out.push('\n');
    if let Some((id, who, text)) = session.root_text() {
        out.push_str(&format!("[{id}] {who}: {text}\n"));
    }
    if let Some(o) = session.opening_result() {
        out.push_str(&firing_lines(&o.firings));
        if o.ended {
            match &o.outcome {
                Some(x) => out.push_str(&format!(
                    "  The story has ended at the opening: outcome {x}.\n"
                )),
                None => out.push_str("  The story has ended at the opening.\n"),
            }
        }
    }
    out.push_str("State: ");
    out.push_str(&state_line(&if all {
        session.flattened()
    } else {
        session.visible_state()
    }));
    out.push('\n');
    out
}

/// `name = value, …` of a state map.
pub fn state_line(state: &Map<String, Value>) -> String {
    state
        .iter()
        .filter(|(k, _)| !k.starts_with("scene."))
        .map(|(k, v)| format!("{k} = {}", display_value(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The transcript of one turn. `debug` shows the turn's rule (the
/// author's view; a player of `troupe play` sees it only with `--debug`).
pub fn transcript_turn(
    session: &Session,
    input: &str,
    before: &Map<String, Value>,
    r: &TurnResult,
    debug: bool,
) -> String {
    let mut out = String::new();
    let player = session.player_name();
    let m_in = r.messages.first().map_or("-", String::as_str);
    out.push_str(&format!(
        "\nTurn {}\n  [{m_in}] {player}: {input}\n",
        r.turn
    ));
    match (&r.reply, r.messages.get(1)) {
        (Some(text), Some(id)) => {
            out.push_str(&format!("  [{id}] {}: {text}\n", session.author_name(id)))
        }
        (None, Some(id)) => out.push_str(&format!(
            "  [{id}] {} (no words)\n",
            session.author_name(id)
        )),
        _ => out.push_str("  (no reply)\n"),
    }
    if let Some(rule) = r.rule.as_ref().filter(|_| debug) {
        out.push_str(&format!("  rule: {rule}\n"));
    }
    if !r.state_delta.is_empty() {
        let changes: Vec<String> = r
            .state_delta
            .iter()
            .map(|(k, v)| match before.get(k) {
                Some(old) => format!("{k} {} → {}", display_value(old), display_value(v)),
                None => format!("{k} → {}", display_value(v)),
            })
            .collect();
        out.push_str(&format!("  state: {}\n", changes.join(", ")));
    }
    out.push_str(&firing_lines(&r.firings));
    out.push_str(&format!("  safety: {}", r.safety_status.as_str()));
    if let Some(e) = &r.npc_emotion {
        out.push_str(&format!(" · emotion: {e}"));
    }
    out.push('\n');
    if r.ended {
        match &r.outcome {
            Some(o) => out.push_str(&format!("  The story has ended: outcome {o}.\n")),
            None => out.push_str("  The story has ended.\n"),
        }
    } else if r.safety_status == crate::runtime::safety::Status::Stop {
        out.push_str("  The session was stopped by the safety policy.\n");
    }
    out
}

/// The score lines at the end of a run.
pub fn transcript_score(score: &Option<crate::runtime::Score>) -> String {
    match score {
        None => "\nScore: no rubric\n".into(),
        Some(s) => {
            let parts: Vec<String> = s
                .criteria
                .iter()
                .map(|(k, v)| match v {
                    Some(x) => format!("{k} {x}"),
                    None => format!("{k} (ungraded)"),
                })
                .collect();
            let total = s.total.map_or("none".into(), |t| t.to_string());
            format!("\nScore: {total} ({})\n", parts.join(", "))
        }
    }
}

/// The transcript lines of what the model runtime did at a turn
/// (Format 24.7): requests and tokens, clamped values, a dropped proposal.
pub fn transcript_model(r: &TurnResult, rec: Option<&crate::runtime::chat::TurnRecord>) -> String {
    let mut out = String::new();
    for d in &r.diagnostics {
        out.push_str(&format!("  refused: {} {}\n", d.code, d.message));
    }
    if let Some(rec) = rec {
        if !rec.clamped.is_empty() {
            out.push_str(&format!(
                "  clamped to the step limit: {}\n",
                rec.clamped.join(", ")
            ));
        }
        if let Some(r) = &rec.repaired {
            out.push_str(&format!("  repaired after one repair request: {r}\n"));
        }
        if let Some(e) = &rec.emotion {
            out.push_str(&format!("  model emotion: {e}\n"));
        }
        out.push_str(&format!(
            "  model: {} request{} · {} tokens ({} prompt, {} completion)\n",
            rec.requests,
            if rec.requests == 1 { "" } else { "s" },
            rec.usage.total_tokens,
            rec.usage.prompt_tokens,
            rec.usage.completion_tokens
        ));
    }
    out
}

/// The totals of a model-backed run (Format 24.7): requests and tokens.
pub fn model_totals(log: &[crate::runtime::chat::TurnRecord]) -> Value {
    let mut requests = 0u64;
    let (mut p, mut c, mut t) = (0u64, 0u64, 0u64);
    for r in log {
        requests += u64::from(r.requests);
        p += r.usage.prompt_tokens;
        c += r.usage.completion_tokens;
        t += r.usage.total_tokens;
    }
    json!({"requests": requests, "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": t}})
}

/// Runs `troupe run`; returns the exit code.
pub fn run(args: Args) -> i32 {
    let kind = match args.runtime {
        RuntimeArg::Rules | RuntimeArg::Model => RuntimeKind::Rules,
        RuntimeArg::Fake => RuntimeKind::Fake,
    };
    if matches!(kind, RuntimeKind::Fake) && args.session.out.is_some() {
        eprintln!("troupe run: --runtime fake writes no session; --out cannot be used with it");
        return 2;
    }
    let out = match prepare_out(&args.session, &[&args.script]) {
        Ok(o) => o,
        Err(c) => return c,
    };
    let script = match read_script(&args.script) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("troupe run: {e}");
            return 3;
        }
    };
    let pack = match open_pack_with(&args.session.pack, args.session.open_options()) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let (runtime, log): (Option<Box<dyn crate::runtime::Runtime>>, _) =
        if matches!(args.runtime, RuntimeArg::Model) {
            match args.model.runtime(&pack, "run") {
                Ok(r) => {
                    let log = r.log();
                    (Some(Box::new(r)), Some(log))
                }
                Err(c) => return c,
            }
        } else {
            (None, None)
        };
    let mut session = match start_with(&pack, &args.session, kind, out.as_ref(), runtime) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let record_of = |log: &Option<crate::runtime::chat::Log>, input: &str| {
        log.as_ref().and_then(|l| {
            l.lock()
                .ok()
                .and_then(|l| l.iter().rev().find(|r| r.input == input).cloned())
        })
    };
    let mut stdout = std::io::stdout().lock();
    if !args.json {
        let _ = write!(
            stdout,
            "{}",
            troupe::escape_controls(&transcript_start(&session, true))
        );
    }
    let mut results = Vec::new();
    let mut code = 0;
    let mut played = 0;
    for input in &script {
        if session.is_over() {
            break;
        }
        let before = session.flattened();
        match session.turn(input) {
            Ok(r) => {
                played += 1;
                let rec = r.messages.first().and_then(|m| record_of(&log, m));
                if !args.json {
                    let mut text = transcript_turn(&session, input, &before, &r, true);
                    if log.is_some() || !r.diagnostics.is_empty() {
                        text.push_str(&transcript_model(&r, rec.as_ref()));
                    }
                    let _ = write!(stdout, "{}", troupe::escape_controls(&text));
                    let _ = stdout.flush();
                }
                let mut v = serde_json::to_value(&r).unwrap_or(Value::Null);
                if let (Some(obj), Some(rec)) = (v.as_object_mut(), &rec) {
                    let mut m = serde_json::to_value(rec).unwrap_or(Value::Null);
                    if let Some(m) = m.as_object_mut() {
                        m.remove("input");
                    }
                    obj.insert("model".into(), m);
                }
                results.push(v);
            }
            Err(crate::runtime::TurnError::Ended) => {
                code = 1;
                break;
            }
            // A bound of Format 16 (a reply rendering past 16.2's budget):
            // exit 1 with the diagnostic, nothing written.
            Err(crate::runtime::TurnError::Limit(m)) => {
                eprintln!("error[LIMIT]: {m}");
                return 1;
            }
            Err(crate::runtime::TurnError::Runtime(d)) => {
                // The failed turn left nothing behind (Format 24.6): the
                // turns before it are kept.
                eprintln!("troupe run: {}: {}", d.code, d.message);
                code = crate::runtime::chat::exit_code(d.code);
                break;
            }
            Err(e) => {
                eprintln!("troupe run: {e}");
                return 3;
            }
        }
    }
    let unplayed = script.len() - played;
    if unplayed > 0 && code == 0 && !args.json {
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
        .and_then(|l| l.lock().ok().map(|l| model_totals(&l)));
    if args.json {
        let mut doc = json!({"opening": session.opening_result(), "turns": results, "unplayed": unplayed, "score": score});
        if let (Some(t), Some(obj)) = (totals, doc.as_object_mut()) {
            obj.insert("model".into(), t);
        }
        let _ = writeln!(
            stdout,
            "{}",
            serde_json::to_string_pretty(&doc).unwrap_or_default()
        );
    } else {
        let _ = write!(
            stdout,
            "{}",
            troupe::escape_controls(&transcript_score(&score))
        );
        if let Some(t) = totals {
            let _ = writeln!(
                stdout,
                "Model: {} requests · {} tokens ({} prompt, {} completion)",
                t["requests"],
                t["usage"]["total_tokens"],
                t["usage"]["prompt_tokens"],
                t["usage"]["completion_tokens"]
            );
        }
    }
    commit_out(&pack, &session, out, code)
}

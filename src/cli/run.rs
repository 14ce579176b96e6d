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
                eprint!(
                    "{}",
                    render_human(&o.warnings, &crate::diag::render::Sources::new())
                );
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
) -> Result<Option<crate::output::OutputFile>, i32> {
    let Some(out) = &args.out else {
        return Ok(None);
    };
    let mut all = vec![args.pack.as_path()];
    all.extend_from_slice(inputs);
    if let Err(msg) = crate::output::refuse_inputs(&[out], &all) {
        eprintln!("troupe: {msg}");
        return Err(2);
    }
    crate::output::OutputFile::create(out)
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
    out: Option<crate::output::OutputFile>,
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
        eprint!(
            "{}",
            render_human(&diags, &crate::diag::render::Sources::new())
        );
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
/// file when given; `Err` is the exit code.
pub(crate) fn start(
    pack: &Opened,
    args: &SessionArgs,
    kind: RuntimeKind,
    out: Option<&crate::output::OutputFile>,
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
    let started = match out {
        Some(o) => Session::start_to_file(pack, &options, o.partial()),
        None => Session::start(pack, &options),
    };
    started.map_err(|e| match e {
        StartError::Refused(d) => {
            eprint!("{}", render_human(&d, &crate::diag::render::Sources::new()));
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

/// Runs `troupe run`; returns the exit code.
pub fn run(args: Args) -> i32 {
    let kind = match args.runtime {
        RuntimeArg::Rules => RuntimeKind::Rules,
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
    let mut session = match start(&pack, &args.session, kind, out.as_ref()) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let mut stdout = std::io::stdout().lock();
    if !args.json {
        let _ = write!(
            stdout,
            "{}",
            crate::diag::render::escape_controls(&transcript_start(&session, true))
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
                if !args.json {
                    let _ = write!(
                        stdout,
                        "{}",
                        crate::diag::render::escape_controls(&transcript_turn(
                            &session, input, &before, &r, true
                        ))
                    );
                    let _ = stdout.flush();
                }
                results.push(r);
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
    if args.json {
        let doc = json!({"opening": session.opening_result(), "turns": results, "unplayed": unplayed, "score": score});
        let _ = writeln!(
            stdout,
            "{}",
            serde_json::to_string_pretty(&doc).unwrap_or_default()
        );
    } else {
        let _ = write!(
            stdout,
            "{}",
            crate::diag::render::escape_controls(&transcript_score(&score))
        );
    }
    commit_out(&pack, &session, out, code)
}

//! The tools of `troupe mcp` (docs/mcp.md): each one's input and output
//! schema, and its call through the library's public API (`troupe::…`
//! only). A tool's result is the `--json` document of the command it
//! mirrors (Format 20.1) as `structuredContent`, with a short text; a
//! failure is a result with `isError` and the diagnostics. Arguments that
//! do not fit the input schema are the caller's protocol error.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Deserialize;

use serde_json::{json, Map, Value};

use super::root::{PathError, Root};

/// What a tool call returns.
#[derive(Debug)]
pub struct Outcome {
    /// The `structuredContent`: the tool's document, or on failure
    /// `{"error", "message", "diagnostics"}`.
    pub structured: Value,
    /// A short summary for people and models.
    pub text: String,
    /// True for a failure (`isError`).
    pub is_error: bool,
}

impl Outcome {
    fn ok(structured: Value, text: String) -> Outcome {
        Outcome {
            structured,
            text,
            is_error: false,
        }
    }
}

/// A tool's description for `tools/list`.
#[derive(Debug, Clone)]
pub struct ToolDef {
    /// The tool's name.
    pub name: &'static str,
    /// A human-readable title.
    pub title: &'static str,
    /// What it does.
    pub description: &'static str,
    /// The JSON Schema of its arguments.
    pub input: Value,
    /// The JSON Schema of its `structuredContent` on success.
    pub output: Value,
    /// True when it writes nothing.
    pub read_only: bool,
}

const PACK: &str = "A pack directory, a bundle (.json/.yaml) or a package (.troupe), relative to the server's root";
const SESSION: &str = "A session file (.jsonl) relative to the server's root, or the name of a recorded session the pack carries (`inn.jsonl`, `sessions/inn.jsonl`)";

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// An output schema of Format 20.1 (`schemas/output/<name>.schema.json`).
fn output_schema(name: &str) -> Value {
    troupe::output_schemas()
        .iter()
        .find(|(n, _)| *n == name)
        .and_then(|(_, text)| serde_json::from_str(text).ok())
        .unwrap_or_else(|| json!({"type": "object"}))
}

/// A document that is not an object (a list, a string) as the one member
/// of an object: `structuredContent` is always an object.
fn wrapped(member: &str, name: &str) -> Value {
    let mut inner = output_schema(name);
    if let Some(o) = inner.as_object_mut() {
        o.remove("$schema");
        o.remove("$id");
    }
    json!({
        "type": "object",
        "properties": {member: inner},
        "required": [member],
        "additionalProperties": false,
    })
}

fn nullable(t: &str) -> Value {
    json!({"type": [t, "null"]})
}

/// The diagnostic of Format 17.2 as the documents write it.
fn diagnostic_schema() -> Value {
    json!({
        "type": "object",
        "required": ["code", "severity", "file", "pointer", "line", "column", "message"],
        "properties": {
            "code": {"type": "string"},
            "severity": {"enum": ["error", "warning"]},
            "file": nullable("string"),
            "pointer": nullable("string"),
            "line": nullable("integer"),
            "column": nullable("integer"),
            "message": {"type": "string"},
            "help": {"type": "string"}
        }
    })
}

fn test_schema() -> Value {
    let status = json!({"enum": ["PASS", "FAIL", "SKIP", "ERR"]});
    json!({
        "type": "object",
        "description": "The document `troupe test --json` prints (Format 21.2).",
        "required": ["pack", "status", "exit_code", "stages", "coverage"],
        "properties": {
            "pack": {"type": "string"},
            "status": {"enum": ["PASS", "FAIL", "ERR"]},
            "exit_code": {"type": "integer"},
            "stages": {"type": "array", "items": {
                "type": "object",
                "required": ["stage", "status", "reason", "diagnostics", "tests"],
                "properties": {
                    "stage": {"type": "string"},
                    "status": status,
                    "reason": nullable("string"),
                    "diagnostics": {"type": "array", "items": diagnostic_schema()},
                    "tests": {"type": "array", "items": {
                        "type": "object",
                        "required": ["name", "file", "status", "reason", "failures"],
                        "properties": {
                            "name": {"type": "string"},
                            "file": nullable("string"),
                            "status": status,
                            "reason": nullable("string"),
                            "failures": {"type": "array", "items": {
                                "type": "object",
                                "required": ["message", "file", "pointer", "line", "column", "expected", "actual"]
                            }}
                        }
                    }}
                }
            }},
            "coverage": {"description": "Format 21.6"}
        }
    })
}

/// Every tool, in the order `tools/list` gives them.
pub fn definitions() -> Vec<ToolDef> {
    let pack = || string(PACK);
    let session = || string(SESSION);
    vec![
        ToolDef {
            name: "check",
            title: "Check packs, bundles, packages or sessions",
            description: "Checks inputs as `troupe check --json` does (Format 17): directories as packs, .troupe files as packages, .jsonl files as sessions of a bundle or pack given with them. Returns the check document (valid, errors, warnings, diagnostics); isError when the input does not conform.",
            input: object(
                json!({
                    "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                              "description": "Paths relative to the server's root"},
                    "strict": {"type": "boolean", "description": "Warnings fail the check too"}
                }),
                &["paths"],
            ),
            output: output_schema("check"),
            read_only: true,
        },
        ToolDef {
            name: "test",
            title: "Run a pack's tests",
            description: "Runs the test pyramid of a pack directory as `troupe test --json` does (Format 21): check, static assertions, turn fixtures, recorded sessions and snapshots (compared, never written), playtests, coverage. isError when the run does not pass.",
            input: object(
                json!({
                    "pack": string("A pack directory, relative to the server's root"),
                    "test": string("Run only the fixture with this name")
                }),
                &["pack"],
            ),
            output: test_schema(),
            read_only: true,
        },
        ToolDef {
            name: "compile",
            title: "Compile a package",
            description: "Checks a pack and compiles it to a package (Format 14.4), as `troupe compile` does; with `out`, writes the package there (inside the root, atomically). Returns its size and SHA-256.",
            input: object(
                json!({
                    "pack": pack(),
                    "out": string("Where to write the package (.troupe), relative to the server's root; without it nothing is written")
                }),
                &["pack"],
            ),
            output: json!({
                "type": "object",
                "required": ["pack", "out", "bytes", "sha256", "warnings"],
                "properties": {
                    "pack": {"type": "string"},
                    "out": nullable("string"),
                    "bytes": {"type": "integer", "minimum": 0},
                    "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                    "warnings": {"type": "array", "items": diagnostic_schema()}
                },
                "additionalProperties": false
            }),
            read_only: false,
        },
        ToolDef {
            name: "state",
            title: "State at a message",
            description: "The flattened state at a message of a session, with turn, round and ending (Format 8.6), as `troupe state --json`: at `at`, by default the session's last message in file order; with `initial: true`, or without a session, the initial state.",
            input: object(
                json!({
                    "pack": pack(),
                    "session": session(),
                    "at": string("The message ID (default: the session's last message in file order)"),
                    "initial": {"type": "boolean", "description": "The initial state, before any message (not with `at`)"}
                }),
                &["pack"],
            ),
            output: output_schema("state"),
            read_only: true,
        },
        ToolDef {
            name: "knows",
            title: "Who knows a part or a summary",
            description: "Who knows part N or the summary of a message (Format 7.4, 12.5), as `troupe knows --json`: character IDs in code point order, as `{\"knows\": [...]}`. Give exactly one of `part` and `summary: true`.",
            input: object(
                json!({
                    "pack": pack(),
                    "session": session(),
                    "message": string("The message ID"),
                    "part": {"type": "integer", "minimum": 0, "description": "The index of one of its parts"},
                    "summary": {"type": "boolean", "description": "Ask about the message's summary"}
                }),
                &["pack", "session", "message"],
            ),
            output: wrapped("knows", "knows"),
            read_only: true,
        },
        ToolDef {
            name: "ended",
            title: "Has the story ended",
            description: "Whether the story has ended at a message, and by what (Format 9.3), as `troupe ended --json`.",
            input: object(
                json!({
                    "pack": pack(),
                    "session": session(),
                    "at": string("The message ID (default: the session's last message in file order)")
                }),
                &["pack", "session"],
            ),
            output: output_schema("ended"),
            read_only: true,
        },
        ToolDef {
            name: "explain",
            title: "Which lore is active, and why",
            description: "Which lore entries are active at a message and why (Format 5.3), as `troupe explain --json`.",
            input: object(
                json!({
                    "pack": pack(),
                    "session": session(),
                    "at": string("The message ID (default: the session's last message in file order)")
                }),
                &["pack", "session"],
            ),
            output: output_schema("explain"),
            read_only: true,
        },
        ToolDef {
            name: "render",
            title: "Render a template",
            description: "Renders a template (Format 10) at a message's state (or the initial state), as `troupe render --json`, as `{\"text\": ...}`.",
            input: object(
                json!({
                    "pack": pack(),
                    "text": string("The template text"),
                    "session": session(),
                    "at": string("The message whose state the macros read (default: the initial state)"),
                    "char": string("The character {{char}} means"),
                    "owner": string("The owner `own` means (a character, a world or the scenario)"),
                    "narrator": {"type": "boolean", "description": "The text is for a narrator message"},
                    "per_chat": {"type": "boolean", "description": "Render the text as a description or entry content, as the prompt does: {{pick}} stable per chat (Format 10.6)"}
                }),
                &["pack", "text"],
            ),
            output: wrapped("text", "render"),
            read_only: true,
        },
        ToolDef {
            name: "cel_check",
            title: "Type-check a CEL condition",
            description: "Parses and type-checks a CEL expression (Format 11) as `troupe cel check` does: against a pack's scenario declarations (state.…, difficulty.…, turn, …) when `pack` is given, else against `decls`. Returns its type; isError with CEL_SYNTAX/CEL_TYPE diagnostics when it does not check.",
            input: object(
                json!({
                    "expr": string("The CEL expression"),
                    "pack": pack(),
                    "scenario": string("The scenario (default: the pack's first)"),
                    "decls": {"type": "object", "additionalProperties": {"type": "string"},
                              "description": "Without a pack: names and their types (`{\"trust\": \"map(string, double)\"}`)"}
                }),
                &["expr"],
            ),
            output: json!({
                "type": "object",
                "required": ["type", "scenario"],
                "properties": {"type": {"type": "string"}, "scenario": nullable("string")},
                "additionalProperties": false
            }),
            read_only: true,
        },
        ToolDef {
            name: "run",
            title: "Play lines through a pack",
            description: "Plays the player's lines one turn each (Format 18.5) until they run out or the session ends, as `troupe run --verify-ir --json` (a package runs its compiled form, ir.compact or ir.json, only when it is what its bundle.json compiles to; else IR_MISMATCH in the text and bundle.json runs): the transcript document (opening, turns, unplayed, score). Writes nothing; runs the rules or fake runtime only.",
            input: object(
                json!({
                    "pack": pack(),
                    "lines": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_RUN_LINES, "description": "The first player's inputs, one per turn (at most 10,000: a longer script is `troupe run --script`'s)"},
                    "seed": {"type": "integer", "minimum": 0, "maximum": 18446744073709551615_u64, "description": "The generator seed (default 0)"},
                    "difficulty": string("The difficulty preset (default: the scenario's)"),
                    "scenario": string("The scenario (default: the first)"),
                    "opening": string("The opening (default: the first offered)"),
                    "player_name": string("The player's name, as macros show it (default Player)"),
                    "runtime": {"enum": ["rules", "fake"], "description": "The runtime (default rules)"}
                }),
                &["pack", "lines"],
            ),
            output: output_schema("run"),
            read_only: true,
        },
    ]
}

/// Why arguments were refused before the tool ran: the JSON-RPC error
/// `invalid params`.
#[derive(Debug)]
pub struct BadCall(pub String);

/// The most lines one `run` call plays (docs/mcp.md): its answer holds
/// every turn, so its size is bounded by the request's, not by a script
/// of any length (issue 43, item 10).
pub const MAX_RUN_LINES: usize = 10_000;

/// Calls tool `name` with `args` (already checked against its input
/// schema by the caller). `cancelled` is set when the client cancels the
/// call (`notifications/cancelled`): `run` stops before its next turn.
pub fn call(
    root: &Root,
    name: &str,
    args: Value,
    cancelled: &AtomicBool,
) -> Result<Outcome, BadCall> {
    fn parse<T: for<'de> Deserialize<'de>>(args: Value) -> Result<T, BadCall> {
        serde_json::from_value(args).map_err(|e| BadCall(format!("invalid arguments: {e}")))
    }
    let outcome = match name {
        "check" => check(root, parse(args)?),
        "test" => test(root, parse(args)?),
        "compile" => compile(root, parse(args)?),
        "state" => state(root, parse(args)?),
        "knows" => knows(root, parse(args)?),
        "ended" => ended_or_explain(root, parse(args)?, false),
        "explain" => ended_or_explain(root, parse(args)?, true),
        "render" => render(root, parse(args)?),
        "cel_check" => cel_check(root, parse(args)?),
        "run" => run(root, parse(args)?, cancelled),
        other => return Err(BadCall(format!("no tool `{other}`"))),
    };
    Ok(outcome.unwrap_or_else(|failed| failed))
}

/// A failure of the library as a tool result.
fn failure(e: &troupe::Error) -> Outcome {
    Outcome {
        structured: json!({
            "error": e.kind().as_str(),
            "message": e.to_string(),
            "diagnostics": e.diagnostics(),
        }),
        text: e.render(),
        is_error: true,
    }
}

/// A path that was refused as a tool result: PATH_TRAVERSAL outside the
/// root, MISSING_FILE when nothing is there.
fn path_failure(e: &PathError) -> Outcome {
    let (kind, code) = match e {
        PathError::Outside(_) => ("refused", troupe::Code::PathTraversal),
        PathError::Missing(_) => ("not_found", troupe::Code::MissingFile),
        PathError::Unusable(_) => ("refused", troupe::Code::Io),
    };
    let diagnostic = troupe::Diagnostic::error(code, e.message());
    Outcome {
        structured: json!({"error": kind, "message": e.message(), "diagnostics": [diagnostic]}),
        text: format!("{}: {}\n", code.as_str(), e.message()),
        is_error: true,
    }
}

/// A failure without diagnostics (a usage the library refused).
fn plain_failure(kind: &str, message: String) -> Outcome {
    Outcome {
        structured: json!({"error": kind, "message": message, "diagnostics": []}),
        text: format!("{message}\n"),
        is_error: true,
    }
}

type Step<T> = Result<T, Outcome>;

fn existing(root: &Root, arg: &str) -> Step<PathBuf> {
    root.existing(arg).map_err(|e| path_failure(&e))
}

/// Opens a pack the way `troupe run --verify-ir` does (Format 14.4): a
/// package's compiled form (`ir.compact`, else `ir.json`) is used only when
/// it is byte for byte what its `bundle.json` compiles to, else IR_MISMATCH (a warning, kept in the
/// pack's warnings) and `bundle.json` runs. A server's packs come from an
/// agent, so an IR whose hashes were fixed up after an edit never runs.
fn open(root: &Root, arg: &str) -> Step<troupe::Pack> {
    let path = existing(root, arg)?;
    let options = troupe::OpenOptions::default().use_ir(true).verify_ir(true);
    troupe::Pack::open_with(&path, options).map_err(|e| failure(&e))
}

/// The pack's warnings as lines of a tool's text (IR_MISMATCH from
/// [`open`]); empty without any.
fn warning_lines(pack: &troupe::Pack) -> String {
    pack.warnings()
        .iter()
        .map(|d| {
            let at = d.location.file.as_deref().unwrap_or("");
            format!("warning[{}] {at}: {}\n", d.code, d.message)
        })
        .collect()
}

/// A session inside the root, else a recorded session of the pack.
fn history(root: &Root, pack: &troupe::Pack, session: &str) -> Step<troupe::History> {
    match root.existing(session) {
        Ok(path) if path.is_file() => pack.history_file(&path).map_err(|e| failure(&e)),
        Err(e @ PathError::Outside(_)) => Err(path_failure(&e)),
        _ => {
            let name = session.strip_prefix("sessions/").unwrap_or(session);
            if pack.recorded().contains(&name) {
                pack.recorded_history(name).map_err(|e| failure(&e))
            } else {
                Err(path_failure(&PathError::Missing(format!(
                    "no session file `{session}` inside the root, and the pack carries no recorded session of that name"
                ))))
            }
        }
    }
}

/// The session `session` names, or without one the initial state (then
/// `at` may not be given).
fn session_or_initial(
    root: &Root,
    pack: &troupe::Pack,
    session: Option<&str>,
    at: Option<&str>,
) -> Step<troupe::History> {
    match session {
        Some(s) => history(root, pack, s),
        None if at.is_some() => Err(plain_failure(
            "not_found",
            "`at` names a message of a session: give `session` too".into(),
        )),
        None => pack.initial(None).map_err(|e| failure(&e)),
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The first diagnostics of a document, one line each.
fn diagnostic_lines(diags: &Value, limit: usize) -> String {
    let mut out = String::new();
    let list = diags.as_array().map_or(&[][..], Vec::as_slice);
    for d in list.iter().take(limit) {
        let at = match (d["file"].as_str(), d["line"].as_u64()) {
            (Some(f), Some(l)) => format!(" {f}:{l}"),
            (Some(f), None) => format!(" {f}"),
            _ => String::new(),
        };
        out.push_str(&format!(
            "{}[{}]{at}: {}\n",
            d["severity"].as_str().unwrap_or(""),
            d["code"].as_str().unwrap_or(""),
            d["message"].as_str().unwrap_or("")
        ));
    }
    if list.len() > limit {
        out.push_str(&format!("… and {} more\n", list.len() - limit));
    }
    out
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckArgs {
    paths: Vec<String>,
    #[serde(default)]
    strict: bool,
}

fn check(root: &Root, a: CheckArgs) -> Step<Outcome> {
    let paths = a
        .paths
        .iter()
        .map(|p| {
            root.existing(p).or_else(|e| match e {
                // A missing path is the check's own diagnostic (MISSING_FILE).
                PathError::Missing(_) => Ok(PathBuf::from(p)),
                e => Err(path_failure(&e)),
            })
        })
        .collect::<Step<Vec<PathBuf>>>()?;
    // A path given again (as written or another way to the same file) is
    // checked once: `paths` is resolved inside the root, so equal paths
    // are the same file (issue 43: 100,000 copies of one path took 7 s).
    let mut seen = std::collections::HashSet::new();
    let paths: Vec<PathBuf> = paths
        .into_iter()
        .filter(|p| seen.insert(p.clone()))
        .collect();
    let report = troupe::check(&paths);
    let doc = report.to_json(a.strict);
    let valid = report.is_valid(a.strict);
    let text = format!(
        "{}: {} error(s), {} warning(s)\n{}",
        if valid { "valid" } else { "invalid" },
        report.errors(),
        report.warnings(),
        diagnostic_lines(&doc["diagnostics"], 20)
    );
    Ok(Outcome {
        structured: doc,
        text,
        is_error: !valid,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TestArgs {
    pack: String,
    test: Option<String>,
}

fn test(root: &Root, a: TestArgs) -> Step<Outcome> {
    let path = existing(root, &a.pack)?;
    if !path.is_dir() {
        return Err(plain_failure(
            "refused",
            format!(
                "`{}` is not a pack directory; the test runner needs one (Format 21)",
                a.pack
            ),
        ));
    }
    let mut doc = troupe::test_report(&path, a.test.as_deref()).map_err(|e| failure(&e))?;
    doc["pack"] = Value::String(a.pack.clone());
    let mut text = format!(
        "{} (exit code {})\n",
        doc["status"].as_str().unwrap_or("?"),
        doc["exit_code"]
    );
    for stage in doc["stages"].as_array().map_or(&[][..], Vec::as_slice) {
        let tests = stage["tests"].as_array().map_or(&[][..], Vec::as_slice);
        let failed = tests.iter().filter(|t| t["status"] != "PASS").count();
        text.push_str(&format!(
            "{} {}: {} test(s), {failed} not passed{}\n",
            stage["status"].as_str().unwrap_or("?"),
            stage["stage"].as_str().unwrap_or("?"),
            tests.len(),
            stage["reason"]
                .as_str()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ));
        text.push_str(&diagnostic_lines(&stage["diagnostics"], 10));
    }
    let is_error = doc["exit_code"] != 0;
    Ok(Outcome {
        structured: doc,
        text,
        is_error,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompileArgs {
    pack: String,
    out: Option<String>,
}

fn compile(root: &Root, a: CompileArgs) -> Step<Outcome> {
    use sha2::{Digest, Sha256};
    let input = existing(root, &a.pack)?;
    let out = match &a.out {
        Some(o) => Some(root.writable(o).map_err(|e| path_failure(&e))?),
        None => None,
    };
    // Format 16.3, as `troupe compile`: not the pack or a file in it, not
    // an existing file other than a package.
    if let Some(target) = &out {
        let outputs = [(target.as_path(), troupe::files::OutputKind::Package)];
        if let Err(msg) = troupe::files::check_outputs(&outputs, &[&input]) {
            return Err(plain_failure(
                "refused",
                format!("{msg}; nothing was written"),
            ));
        }
    }
    let options = troupe::OpenOptions::default()
        .use_ir(false)
        .verify_ir(false);
    let pack = troupe::Pack::open_with(&input, options).map_err(|e| failure(&e))?;
    let bytes = pack.compile().map_err(|e| failure(&e))?;
    if let Some(target) = &out {
        troupe::files::write_atomic(target, &bytes)
            .map_err(|e| plain_failure("io", e.to_string()))?;
    }
    let sha: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let text = match &a.out {
        Some(o) => format!("compiled {} → {o} ({} bytes)\n", a.pack, bytes.len()),
        None => format!(
            "{} compiles: {} bytes (nothing written without `out`)\n",
            a.pack,
            bytes.len()
        ),
    };
    let warnings = to_json(&pack.warnings());
    Ok(Outcome::ok(
        json!({"pack": a.pack, "out": a.out, "bytes": bytes.len(), "sha256": sha, "warnings": warnings}),
        text,
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StateArgs {
    pack: String,
    session: Option<String>,
    at: Option<String>,
    #[serde(default)]
    initial: bool,
}

fn state(root: &Root, a: StateArgs) -> Step<Outcome> {
    if a.initial && a.at.is_some() {
        return Err(plain_failure(
            "refused",
            "give `at` or `initial: true`, not both".into(),
        ));
    }
    let pack = open(root, &a.pack)?;
    let history = session_or_initial(root, &pack, a.session.as_deref(), a.at.as_deref())?;
    // As `troupe state`: by default the last message in file order.
    let at = match (&a.at, a.initial) {
        (Some(id), _) => Some(id.clone()),
        (None, true) => None,
        (None, false) => history.last_id().map(str::to_string),
    };
    let view = history.state(at.as_deref()).map_err(|e| failure(&e))?;
    let mut text = match &view.at {
        Some(id) => format!(
            "state at message {id}: turn {}, round {}",
            view.turn, view.round
        ),
        None => "initial state".to_string(),
    };
    match (&view.outcome, view.ended) {
        (Some(o), _) => text.push_str(&format!("; ended: outcome {o}")),
        (None, true) => text.push_str("; ended"),
        _ => {}
    }
    text.push('\n');
    for (k, v) in &view.state {
        text.push_str(&format!("  {k} = {v}\n"));
    }
    Ok(Outcome::ok(to_json(&view), text))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KnowsArgs {
    pack: String,
    session: String,
    message: String,
    part: Option<usize>,
    #[serde(default)]
    summary: bool,
}

fn knows(root: &Root, a: KnowsArgs) -> Step<Outcome> {
    let what = match (a.part, a.summary) {
        (Some(p), false) => troupe::Knowable::Part(p),
        (None, true) => troupe::Knowable::Summary,
        _ => {
            return Err(plain_failure(
                "refused",
                "give exactly one of `part` and `summary: true`".into(),
            ))
        }
    };
    let pack = open(root, &a.pack)?;
    let history = history(root, &pack, &a.session)?;
    let who = history.knows(&a.message, what).map_err(|e| failure(&e))?;
    let text = if who.is_empty() {
        "nobody\n".to_string()
    } else {
        format!("{}\n", who.join(", "))
    };
    Ok(Outcome::ok(json!({ "knows": who }), text))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AtArgs {
    pack: String,
    session: String,
    at: Option<String>,
}

fn ended_or_explain(root: &Root, a: AtArgs, explain: bool) -> Step<Outcome> {
    let pack = open(root, &a.pack)?;
    let history = history(root, &pack, &a.session)?;
    let at = match a.at.as_deref().or(history.last_id()) {
        Some(id) => id.to_string(),
        None => {
            return Err(plain_failure(
                "not_found",
                "the session has no message to ask about".into(),
            ))
        }
    };
    if explain {
        let x = history.explain(&at).map_err(|e| failure(&e))?;
        let active: Vec<String> = x
            .entries
            .iter()
            .filter(|e| e.active)
            .map(|e| e.id.clone())
            .collect();
        let text = format!(
            "{} of {} lore entries active at {at} (scenario {}){}\n",
            x.active,
            x.entries.len(),
            x.scenario,
            if active.is_empty() {
                String::new()
            } else {
                format!(": {}", active.join(", "))
            }
        );
        return Ok(Outcome::ok(to_json(&x), text));
    }
    let view = history.ended_at(&at).map_err(|e| failure(&e))?;
    let text = match &view.ending {
        Some(e) => format!(
            "ended at {at}: {} `{}` (recorded at message {})\n",
            e.kind, e.id, e.message
        ),
        None => format!("not ended at {at}\n"),
    };
    Ok(Outcome::ok(to_json(&view), text))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RenderArgs {
    pack: String,
    text: String,
    session: Option<String>,
    at: Option<String>,
    #[serde(rename = "char")]
    char_id: Option<String>,
    owner: Option<String>,
    #[serde(default)]
    narrator: bool,
    #[serde(default)]
    per_chat: bool,
}

fn render(root: &Root, a: RenderArgs) -> Step<Outcome> {
    let pack = open(root, &a.pack)?;
    let history = session_or_initial(root, &pack, a.session.as_deref(), a.at.as_deref())?;
    let who = {
        let mut o = troupe::RenderOptions::default();
        o.char = a.char_id;
        o.owner = a.owner;
        o.narrator = a.narrator;
        o.per_chat = a.per_chat;
        o
    };
    let out = history
        .render(&a.text, a.at.as_deref(), &who)
        .map_err(|e| failure(&e))?;
    Ok(Outcome::ok(json!({ "text": out }), format!("{out}\n")))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CelArgs {
    expr: String,
    pack: Option<String>,
    scenario: Option<String>,
    #[serde(default)]
    decls: Map<String, Value>,
}

fn cel_check(root: &Root, a: CelArgs) -> Step<Outcome> {
    let pack = match &a.pack {
        Some(p) => Some(open(root, p)?),
        None => None,
    };
    let decls: Vec<(&str, &str)> = a
        .decls
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
        .collect();
    let checked = troupe::cel_check(&a.expr, pack.as_ref(), a.scenario.as_deref(), &decls)
        .map_err(|e| failure(&e))?;
    let text = match &checked.scenario {
        Some(s) => format!("{} (checked against scenario `{s}`)\n", checked.result_type),
        None => format!("{}\n", checked.result_type),
    };
    Ok(Outcome::ok(to_json(&checked), text))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    pack: String,
    lines: Vec<String>,
    #[serde(default)]
    seed: u64,
    difficulty: Option<String>,
    scenario: Option<String>,
    opening: Option<String>,
    player_name: Option<String>,
    runtime: Option<String>,
}

fn run(root: &Root, a: RunArgs, cancelled: &AtomicBool) -> Step<Outcome> {
    let pack = open(root, &a.pack)?;
    let options = {
        let mut o = troupe::SessionOptions::default();
        o.scenario = a.scenario;
        o.seed = a.seed;
        o.difficulty = a.difficulty;
        o.opening = a.opening;
        o.player_name = a.player_name;
        o.runtime = match a.runtime.as_deref() {
            Some("fake") => troupe::RuntimeChoice::Fake,
            _ => troupe::RuntimeChoice::Rules,
        };
        o
    };
    // The turns one at a time, so a cancelled call stops between two.
    let mut session = pack.start(options).map_err(|e| failure(&e))?;
    let mut played = Vec::with_capacity(a.lines.len().min(MAX_RUN_LINES));
    for line in &a.lines {
        if session.ended() || cancelled.load(Ordering::Relaxed) {
            break;
        }
        let result = session.turn(line).map_err(|e| failure(&e))?;
        played.push(serde_json::to_value(&result).unwrap_or(Value::Null));
    }
    let unplayed = a.lines.len() - played.len();
    let doc = json!({
        "opening": session.opening(),
        "turns": played,
        "unplayed": unplayed,
        "score": session.score(),
    });
    drop(session);
    let turns = doc["turns"].as_array().map_or(&[][..], Vec::as_slice);
    let mut text = warning_lines(&pack);
    text.push_str(&format!(
        "{} turn(s) played, {} line(s) unplayed\n",
        turns.len(),
        doc["unplayed"]
    ));
    for t in turns {
        let reply = t["reply"].as_str().unwrap_or("(no reply)");
        text.push_str(&format!("turn {}: {reply}\n", t["turn"]));
    }
    if let Some(last) = turns.last() {
        if last["ended"] == true {
            match last["outcome"].as_str() {
                Some(o) => text.push_str(&format!("the story has ended: outcome {o}\n")),
                None => text.push_str("the story has ended\n"),
            }
        }
    }
    if !doc["score"].is_null() {
        text.push_str(&format!("score: {}\n", doc["score"]["total"]));
    }
    Ok(Outcome::ok(doc, text))
}

//! One case file (conformance README 1–3): its inputs and its tests, each
//! run on the same (immutable) inputs and compared as README 3 says.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::OnceLock;

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::compare::{json_eq, subset_diff};
use super::{Outcome, TestResult};
use crate::check::{SchemaKind, Schemas};
use crate::diag::Diagnostic;
use crate::engine::macros::RenderFor;
use crate::engine::Engine;
use crate::load::{check_version, parse_json, parse_session, Document, SessionDoc};
use crate::pipeline::{bare_document, check_all};

/// The spec version the runner sets as `troupe` (README 1).
pub const SPEC_VERSION: &str = "0.1";

/// The test types and the fields each may have (README 3).
const FIELDS: &[(&str, &[&str])] = &[
    ("state", &["at", "absent"]),
    ("ended", &["at"]),
    (
        "macro",
        &["text", "part", "at", "char", "owner", "narrator"],
    ),
    ("cel", &["expr", "kind", "at", "char", "self"]),
    ("check", &[]),
    ("knows", &["message", "part", "summary"]),
    ("lore", &["at"]),
    ("parse", &["kind", "text", "base64"]),
    (
        "run",
        &["inputs", "seed", "difficulty", "opening", "model", "resume"],
    ),
    ("safety", &["text", "reply"]),
    ("replay", &[]),
];

/// The inputs of a case, read once.
struct Inputs {
    bundle: Document,
    session: Option<SessionDoc>,
    /// Diagnostics of reading a `sessionFile`.
    read_diags: Vec<Diagnostic>,
    /// The session's file text: a `sessionFile`'s bytes, or an inline
    /// session's header and messages as Troupe JSON lines (Format 18.8,
    /// members in the order written), which a `run` test's `resume` reads.
    session_text: Option<String>,
    engine: OnceLock<Result<Engine, Vec<Diagnostic>>>,
}

fn with_version(mut v: Value) -> Value {
    if let Value::Object(m) = &mut v
        && !m.contains_key("troupe")
    {
        let mut out = Map::new();
        out.insert("troupe".into(), json!(SPEC_VERSION));
        out.extend(std::mem::take(m));
        *m = out;
    }
    v
}

/// Reads an input file a case names: a path relative to the case's folder
/// (never absolute), not a symbolic link, at most
/// [`super::MAX_CASE_BYTES`].
/// The bytes of a case's input file `f` (relative to the case's folder
/// `dir`), confined to the suite's folder `suite` (Format 23): an absolute
/// path, a symbolic link, and a path that leads outside `suite` — through
/// `..` or a linked folder, after resolving both — are refused
/// (PATH_TRAVERSAL), so a suite's results never depend on files outside it.
fn read_input(dir: &Path, suite: &Path, f: &str) -> Result<Vec<u8>, String> {
    let rel = Path::new(f);
    if rel.is_absolute() {
        return Err(format!(
            "`{f}` is an absolute path; give it relative to the case"
        ));
    }
    let path = dir.join(rel);
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(format!("`{f}` is a symbolic link; links are not followed"));
    }
    // Resolved as far as it exists (a missing file is reported by the read).
    let resolved = std::fs::canonicalize(&path).or_else(|_| {
        let parent = path.parent().unwrap_or(Path::new("."));
        std::fs::canonicalize(parent).map(|p| p.join(path.file_name().unwrap_or_default()))
    });
    let suite = if suite.as_os_str().is_empty() {
        Path::new(".")
    } else {
        suite
    };
    let inside = match (resolved, std::fs::canonicalize(suite)) {
        (Ok(r), Ok(s)) => r.starts_with(&s),
        _ => false,
    };
    if !inside {
        return Err(format!(
            "`{f}`: PATH_TRAVERSAL: the file is outside the suite's folder {}; a case reads only files inside it",
            suite.display()
        ));
    }
    crate::load::text::read_at_most(f, &path, super::MAX_CASE_BYTES)
        .map_err(|d| format!("`{f}`: {}", d.message))
}

fn read_inputs(case: &Value, dir: &Path, suite: &Path) -> Result<Inputs, String> {
    let bundle = match (case.get("bundle"), case.get("bundleFile")) {
        (Some(b), _) => bare_document("bundle", &with_version(b.clone())),
        (None, Some(Value::String(f))) => {
            let bytes = read_input(dir, suite, f).map_err(|e| format!("bundleFile {e}"))?;
            let l = parse_json(f, &bytes);
            l.value
                .ok_or_else(|| format!("bundleFile `{f}` does not parse"))?
        }
        _ => bare_document("bundle", &json!({"troupe": SPEC_VERSION, "kind": "bundle"})),
    };
    let mut read_diags = Vec::new();
    let mut session_text = None;
    let session = match (case.get("session"), case.get("sessionFile")) {
        (Some(s), _) => {
            let header = with_version(s.get("header").cloned().unwrap_or(json!({})));
            let mut text = crate::runtime::session_writer::troupe_json(&header);
            text.push('\n');
            for m in s
                .get("messages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                text.push_str(&crate::runtime::session_writer::troupe_json(m));
                text.push('\n');
            }
            session_text = Some(text);
            let messages = s
                .get("messages")
                .and_then(Value::as_array)
                .map(|ms| {
                    // `messages[i]` is line i + 2 of the session, as in a
                    // file (Format 23): `line:<n>` locations agree with
                    // `troupe check`.
                    ms.iter()
                        .enumerate()
                        .map(|(i, m)| {
                            let mut doc = bare_document("session", m);
                            doc.first_line = u32::try_from(i + 2).unwrap_or(u32::MAX);
                            doc
                        })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            Some(SessionDoc::from_documents(
                "session",
                Some(bare_document("session", &header)),
                messages,
            ))
        }
        (None, Some(Value::String(f))) => {
            let bytes = read_input(dir, suite, f).map_err(|e| format!("sessionFile {e}"))?;
            session_text = Some(String::from_utf8_lossy(&bytes).into_owned());
            let l = parse_session(f, &bytes);
            read_diags = l.diagnostics;
            let s = l
                .value
                .ok_or_else(|| format!("sessionFile `{f}` does not parse"))?;
            if s.header.is_none() {
                return Err(format!("sessionFile `{f}` has no header"));
            }
            Some(s)
        }
        _ => None,
    };
    Ok(Inputs {
        bundle,
        session,
        read_diags,
        session_text,
        engine: OnceLock::new(),
    })
}

impl Inputs {
    fn diagnostics(&self) -> Vec<Diagnostic> {
        let mut d = self.read_diags.clone();
        d.extend(check_all(&self.bundle, self.session.as_ref()));
        d
    }

    fn engine(&self) -> Result<&Engine, String> {
        let e = self.engine.get_or_init(|| {
            crate::pipeline::load_documents(&self.bundle, self.session.as_ref(), None)
        });
        e.as_ref().map_err(|d| {
            let codes: BTreeSet<&str> = d.iter().map(|d| d.code.as_str()).collect();
            format!(
                "the inputs do not conform, so this test has no meaning (codes: {})",
                codes.into_iter().collect::<Vec<_>>().join(", ")
            )
        })
    }

    fn message(&self, e: &Engine, id: &str) -> Result<u32, String> {
        e.session
            .find(id)
            .ok_or_else(|| format!("no message `{id}` in the session"))
    }

    fn state(&self, e: &Engine, at: Option<&str>) -> Result<crate::engine::State, String> {
        match at {
            None => Ok(e.initial().clone()),
            Some(id) => Ok(e.state_at(self.message(e, id)?)),
        }
    }
}

/// Runs every test of the case file at `path`, a case of the suite in the
/// folder `suite`: its `bundleFile` and `sessionFile` are read only inside
/// `suite` (Format 23).
pub fn run_case_in(path: &Path, display: &str, suite: &Path) -> Vec<TestResult> {
    let result = |name: String, outcome: Outcome| TestResult {
        file: display.to_string(),
        test: name,
        outcome,
    };
    let text = match crate::load::text::read_at_most(display, path, super::MAX_CASE_BYTES) {
        Ok(t) => t,
        Err(d) => {
            return vec![result(
                "(case)".into(),
                Outcome::SuiteError(d.message.to_string()),
            )]
        }
    };
    let case: Value = match serde_json::from_slice(&text) {
        Ok(v) => v,
        Err(e) => {
            return vec![result(
                "(case)".into(),
                Outcome::SuiteError(format!("not JSON: {e}")),
            )]
        }
    };
    if let Ok(s) = Schemas::try_get() {
        let doc = bare_document(display, &case);
        let errs = s.validate(SchemaKind::ConformanceCase, &doc, "");
        if !errs.is_empty() {
            let why: Vec<String> = errs
                .iter()
                .map(|d| {
                    format!(
                        "{} at {}: {}",
                        d.code,
                        d.location.pointer.as_deref().unwrap_or(""),
                        d.message
                    )
                })
                .collect();
            return vec![result(
                "(case)".into(),
                Outcome::SuiteError(format!(
                    "the case breaks case.schema.json: {}",
                    why.join("; ")
                )),
            )];
        }
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let tests = case
        .get("tests")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let inputs = match read_inputs(&case, dir, suite) {
        Ok(i) => i,
        Err(e) => return vec![result("(case)".into(), Outcome::SuiteError(e))],
    };
    let conforming_confirmed = tests.iter().any(|t| {
        t.get("type").and_then(Value::as_str) == Some("check")
            && t.pointer("/expect/codes")
                .and_then(Value::as_array)
                .is_some_and(|codes| codes.iter().all(is_warning_code))
    });
    tests
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let ty = t.get("type").and_then(Value::as_str).unwrap_or("?");
            let name = match t.get("name").and_then(Value::as_str) {
                Some(n) => format!("#{i} {ty}: {n}"),
                None => format!("#{i} {ty}"),
            };
            let outcome = run_test(t, ty, &inputs, conforming_confirmed);
            result(name, outcome)
        })
        .collect()
}

/// True for a code whose diagnostics are warnings: such a file still
/// conforms (Format 17.1), so it may carry engine tests.
fn is_warning_code(code: &Value) -> bool {
    code.as_str()
        .and_then(|c| crate::diag::Code::ALL.iter().find(|x| x.as_str() == c))
        .is_some_and(|c| c.default_severity() == crate::diag::Severity::Warning)
}

fn run_test(t: &Value, ty: &str, inputs: &Inputs, conforming: bool) -> Outcome {
    let Some((_, fields)) = FIELDS.iter().find(|(n, _)| *n == ty) else {
        return Outcome::SuiteError(format!("unknown test type `{ty}`"));
    };
    if let Some(obj) = t.as_object() {
        for k in obj.keys() {
            if !["type", "name", "note", "expect"].contains(&k.as_str())
                && !fields.contains(&k.as_str())
            {
                return Outcome::SuiteError(format!("a {ty} test has no field `{k}`"));
            }
        }
    }
    let Some(expect) = t.get("expect") else {
        return Outcome::SuiteError("the test has no `expect`".into());
    };
    let engine_test = matches!(
        ty,
        "state" | "ended" | "macro" | "cel" | "knows" | "lore" | "run" | "safety" | "replay"
    );
    if engine_test && !conforming {
        return Outcome::SuiteError(
            "a case with state, ended, macro, cel, knows, lore, run, safety or replay tests needs a check test expecting no error codes (README 2)".into(),
        );
    }
    let r = match ty {
        "check" => check_test(expect, inputs),
        "parse" => parse_test(t, expect),
        "run" => inputs.engine().map_err(Failure::Fail).and_then(|e| {
            let header = inputs
                .session
                .as_ref()
                .and_then(|s| s.header.as_ref())
                .map(|h| &h.value);
            let resume = t
                .get("resume")
                .map(|r| (r.as_str(), inputs.session_text.as_deref()));
            super::runtime::run_test(t, expect, &inputs.bundle.value, header, resume, e).map_err(
                |(suite, m)| {
                    if suite {
                        Failure::Suite(m)
                    } else {
                        Failure::Fail(m)
                    }
                },
            )
        }),
        "safety" => inputs.engine().map_err(Failure::Fail).and_then(|e| {
            super::runtime::safety_test(t, expect, &inputs.bundle.value, e).map_err(|(suite, m)| {
                if suite {
                    Failure::Suite(m)
                } else {
                    Failure::Fail(m)
                }
            })
        }),
        // Format 23 `replay`: the replay runtime's diagnostics (18.7) on
        // the case's session, compared as a check test's.
        "replay" => inputs.engine().map_err(Failure::Fail).and_then(|e| {
            expect_fields(expect, &["codes", "includes"])?;
            compare_diags(expect, &crate::runtime::replay::replay(e).diagnostics)
        }),
        "cel" if expect.is_object() => expect_fields(expect, &["checkError"]).and_then(|()| {
            inputs
                .engine()
                .and_then(|e| engine_test_run(t, ty, expect, inputs, e))
                .map_err(Failure::Fail)
        }),
        _ => inputs
            .engine()
            .and_then(|e| engine_test_run(t, ty, expect, inputs, e))
            .map_err(Failure::Fail),
    };
    match r {
        Ok(()) => Outcome::Pass,
        Err(Failure::Fail(m)) => Outcome::Fail(m),
        Err(Failure::Suite(m)) => Outcome::SuiteError(m),
    }
}

enum Failure {
    Fail(String),
    Suite(String),
}

fn expect_fields(expect: &Value, allowed: &[&str]) -> Result<(), Failure> {
    if let Some(o) = expect.as_object() {
        for k in o.keys() {
            if !allowed.contains(&k.as_str()) {
                return Err(Failure::Suite(format!("unknown `expect` field `{k}`")));
            }
        }
    }
    Ok(())
}

fn codes_of(diags: &[Diagnostic]) -> Vec<String> {
    let set: BTreeSet<&str> = diags.iter().map(|d| d.code.as_str()).collect();
    set.into_iter().map(str::to_string).collect()
}

fn compare_codes(expect: &Value, diags: &[Diagnostic]) -> Result<(), Failure> {
    let want: Vec<String> = expect
        .get("codes")
        .and_then(Value::as_array)
        .ok_or_else(|| Failure::Suite("`expect.codes` is missing".into()))?
        .iter()
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect();
    let got = codes_of(diags);
    if want != got {
        let detail: Vec<String> = diags
            .iter()
            .map(|d| {
                format!(
                    "{} at {}",
                    d.code,
                    d.location.pointer.as_deref().unwrap_or("")
                )
            })
            .collect();
        return Err(Failure::Fail(format!(
            "expected codes {want:?}, got {got:?} ({})",
            detail.join("; ")
        )));
    }
    Ok(())
}

fn check_test(expect: &Value, inputs: &Inputs) -> Result<(), Failure> {
    expect_fields(expect, &["codes", "includes"])?;
    compare_diags(expect, &inputs.diagnostics())
}

/// `expect.codes` (exactly) and `expect.includes` of a check or replay
/// test against `diags` (Format 23).
fn compare_diags(expect: &Value, diags: &[Diagnostic]) -> Result<(), Failure> {
    compare_codes(expect, diags)?;
    for inc in expect
        .get("includes")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
    {
        let code = inc.get("code").and_then(Value::as_str).unwrap_or("");
        let at = inc.get("at").and_then(Value::as_str).unwrap_or("");
        let found = diags
            .iter()
            .any(|d| d.code.as_str() == code && d.location.pointer.as_deref().unwrap_or("") == at);
        if !found {
            let same: Vec<String> = diags
                .iter()
                .filter(|d| d.code.as_str() == code)
                .map(|d| d.location.pointer.clone().unwrap_or_default())
                .collect();
            return Err(Failure::Fail(format!(
                "expected {code} at `{at}`; {code} was reported at {same:?}"
            )));
        }
    }
    Ok(())
}

fn parse_test(t: &Value, expect: &Value) -> Result<(), Failure> {
    expect_fields(expect, &["codes"])?;
    let bytes = match (t.get("text"), t.get("base64")) {
        (Some(Value::String(s)), _) => s.clone().into_bytes(),
        (None, Some(Value::String(b))) => base64::engine::general_purpose::STANDARD
            .decode(b)
            .map_err(|e| Failure::Suite(format!("bad base64: {e}")))?,
        _ => {
            return Err(Failure::Suite(
                "a parse test needs `text` or `base64`".into(),
            ))
        }
    };
    let kind = t.get("kind").and_then(Value::as_str).unwrap_or("");
    let diags = match kind {
        "bundle" => parse_bundle(&bytes),
        "session" => parse_session_bytes(&bytes),
        "package" => parse_package_bytes(&bytes),
        other => return Err(Failure::Suite(format!("unknown parse kind `{other}`"))),
    };
    compare_codes(expect, &diags)
}

/// Parses bundle bytes, checks the version and validates the schema
/// (README 3.7).
pub fn parse_bundle(bytes: &[u8]) -> Vec<Diagnostic> {
    let l = parse_json("input.troupe.json", bytes);
    let mut diags = l.diagnostics;
    if let Some(doc) = l.value {
        if let Some(d) = check_version(&doc, "troupe", "") {
            diags.push(d);
        } else if let Ok(s) = Schemas::try_get() {
            diags.extend(s.validate(SchemaKind::Bundle, &doc, ""));
        }
    }
    diags
}

/// Reads package bytes (the archive's rules, Format 14), then checks the
/// version and schema of `bundle.json` and of every session in it; other
/// entries are ADVISORY (README 3.7: no semantic checks).
pub fn parse_package_bytes(bytes: &[u8]) -> Vec<Diagnostic> {
    let l = crate::load::parse_package("input.troupe", bytes);
    let mut diags = l.diagnostics;
    if let Some(pkg) = l.value {
        if let Some(b) = &pkg.bundle {
            if let Some(d) = check_version(b, "troupe", "") {
                diags.push(d);
            } else if let Ok(s) = Schemas::try_get() {
                diags.extend(s.validate(SchemaKind::Bundle, b, ""));
            }
        }
        for s in pkg.sessions.values() {
            diags.extend(session_schema(s));
        }
        if let Some(m) = &pkg.manifest {
            diags.extend(crate::check::run::check_package_manifest(m));
        }
        for other in &pkg.other {
            diags.push(
                Diagnostic::error(
                    crate::diag::Code::Advisory,
                    format!("package entry `{other}` is not part of the format"),
                )
                .with_severity(crate::diag::Severity::Warning)
                .at(other.as_str()),
            );
        }
    }
    diags
}

fn session_schema(s: &crate::load::SessionDoc) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    if let Some(h) = &s.header {
        if let Some(d) = check_version(h, "troupe", "header") {
            diags.push(d);
            return diags;
        }
        if let Ok(sc) = Schemas::try_get() {
            diags.extend(sc.validate(SchemaKind::SessionHeader, h, "header"));
        }
    }
    if let Ok(sc) = Schemas::try_get() {
        for m in s.messages() {
            diags.extend(sc.validate(
                SchemaKind::Message,
                &m,
                &crate::check::run::message_prefix(&m),
            ));
        }
    }
    diags
}

/// Parses session bytes line by line, checks the header's version and
/// validates every line's schema (README 3.7).
pub fn parse_session_bytes(bytes: &[u8]) -> Vec<Diagnostic> {
    let l = parse_session("input.jsonl", bytes);
    let mut diags = l.diagnostics;
    if let Some(s) = l.value {
        diags.extend(session_schema(&s));
    }
    diags
}

fn engine_test_run(
    t: &Value,
    ty: &str,
    expect: &Value,
    inputs: &Inputs,
    e: &Engine,
) -> Result<(), String> {
    let at = t.get("at").and_then(Value::as_str);
    match ty {
        "state" => {
            let state = inputs.state(e, at)?;
            let flat = e.flatten(&state);
            let want = expect.as_object().ok_or("`expect` must be an object")?;
            let mut problems = subset_diff(want, &flat);
            for a in t
                .get("absent")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice)
            {
                let a = a.as_str().unwrap_or("");
                if let Some(v) = flat.get(a) {
                    problems.push(format!("`{a}` should be absent, got {v}"));
                }
            }
            if problems.is_empty() {
                Ok(())
            } else {
                Err(problems.join("; "))
            }
        }
        "ended" => {
            let state = inputs.state(e, at)?;
            let got = state.ending.is_some();
            if Some(got) == expect.as_bool() {
                Ok(())
            } else {
                Err(format!("expected ended {expect}, got {got}"))
            }
        }
        "macro" => {
            let got = match t.get("part") {
                Some(p) => {
                    let m = inputs
                        .message(e, p.get("message").and_then(Value::as_str).unwrap_or(""))?;
                    let i = p.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
                    e.render_part(m, i)
                        .ok_or_else(|| format!("message has no part {i}"))?
                }
                None => {
                    let state = inputs.state(e, at)?;
                    let text = t.get("text").and_then(Value::as_str).unwrap_or("");
                    let who = RenderFor {
                        char: t.get("char").and_then(Value::as_str),
                        owner: t.get("owner").and_then(Value::as_str),
                        narrator: t.get("narrator").and_then(Value::as_bool).unwrap_or(false),
                    };
                    e.render(text, &state, who)
                }
            };
            if Some(got.as_str()) == expect.as_str() {
                Ok(())
            } else {
                Err(format!("expected {expect}, got {:?}", got))
            }
        }
        "cel" => {
            let expr = t.get("expr").and_then(Value::as_str).unwrap_or("");
            let hit = t.get("kind").and_then(Value::as_str) == Some("entry");
            let owner = t.get("self").and_then(Value::as_str);
            let compiled = e.compile_condition(expr, owner, hit);
            if let Some(want) = expect.get("checkError").and_then(Value::as_bool) {
                let got = compiled.is_err();
                return if got == want {
                    Ok(())
                } else {
                    Err(match compiled {
                        Err(errs) => format!(
                            "expected it to check, but: {}",
                            errs.iter()
                                .map(|x| x.to_string())
                                .collect::<Vec<_>>()
                                .join("; ")
                        ),
                        Ok(p) => format!(
                            "expected a check error; it checked as {}",
                            p.program.result_type()
                        ),
                    })
                };
            }
            let want = expect
                .as_bool()
                .ok_or("`expect` must be a bool or {checkError}")?;
            let cond = compiled.map_err(|errs| {
                format!(
                    "does not check: {}",
                    errs.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            })?;
            let state = inputs.state(e, at)?;
            let char = t.get("char").and_then(Value::as_str).unwrap_or("");
            let got = match e.eval_condition(&cond, &state, char) {
                Ok(crate::cel::Value::Bool(b)) => b,
                Ok(other) => return Err(format!("the value is {other}, not a bool")),
                Err(_) => false,
            };
            if got == want {
                Ok(())
            } else {
                Err(format!("expected {want}, got {got}"))
            }
        }
        "knows" => {
            let m = inputs.message(e, t.get("message").and_then(Value::as_str).unwrap_or(""))?;
            let got = if t.get("summary").is_some() {
                e.knows_summary(m).ok_or("the message has no summary")?
            } else {
                let i = t.get("part").and_then(Value::as_u64).unwrap_or(0) as usize;
                e.knows_part(m, i)
                    .ok_or_else(|| format!("the message has no part {i}"))?
            };
            let got = Value::from(got);
            if json_eq(&got, expect) {
                Ok(())
            } else {
                Err(format!("expected {expect}, got {got}"))
            }
        }
        "lore" => {
            let m = inputs.message(e, at.unwrap_or(""))?;
            let got: Vec<Value> = e
                .entries_at(m)
                .into_iter()
                .filter(|a| a.active)
                .map(|a| Value::from(a.id))
                .collect();
            let got = Value::Array(got);
            if json_eq(&got, expect) {
                Ok(())
            } else {
                Err(format!("expected {expect}, got {got}"))
            }
        }
        _ => Err(format!("unknown test type `{ty}`")),
    }
}

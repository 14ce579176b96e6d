//! The runtime test types of the conformance suite (Format 23): `run` (a
//! new session under the rules runtime, its turn results and session text)
//! and `safety` (the verdict on a text, 19.4).

use serde_json::Value;

use super::compare::json_eq;
use crate::engine::Engine;
use crate::runtime::safety::Safety;
use crate::runtime::{Opened, Options, Session};

/// An error: `(true, _)` is a suite error, `(false, _)` a failure.
pub type Error = (bool, String);

fn suite(m: impl Into<String>) -> Error {
    (true, m.into())
}

fn fail(m: impl Into<String>) -> Error {
    (false, m.into())
}

/// What the host says of a `run` test's turn (Format 23): nothing, the
/// character who answers (`to`, 18.9), or the player who says the input
/// (`as`, 18.4).
enum Host {
    None,
    To(String),
    As(String),
}

/// Runs a `run` test. `resume` is given when the test has `resume`: the
/// resume point (`None` for `true`: the last message) and the case
/// session's file text, which the session resumes (Format 18.10, 23)
/// instead of starting anew.
pub fn run_test(
    t: &Value,
    expect: &Value,
    bundle: &Value,
    header: Option<&Value>,
    resume: Option<(Option<&str>, Option<&str>)>,
    engine: &Engine,
) -> Result<(), Error> {
    if let Some(o) = expect.as_object()
        && let Some(k) = o.keys().find(|k| *k != "turns" && *k != "session")
    {
        return Err(suite(format!("unknown `expect` field `{k}`")));
    }
    // Each input is a turn's text (with the host's responder, Format
    // 18.9, or the player who says it, 18.4) or a settings step (8.9).
    let inputs: Vec<Result<(Host, String), Value>> = t
        .get("inputs")
        .and_then(Value::as_array)
        .ok_or_else(|| suite("a run test needs `inputs`"))?
        .iter()
        .map(|v| match (v.as_str(), v.get("settings")) {
            (Some(s), _) => Some(Ok((Host::None, s.to_string()))),
            (None, Some(set)) => Some(Err(set.clone())),
            _ => {
                let text = v.get("text").and_then(Value::as_str)?.to_string();
                match (
                    v.get("to").and_then(Value::as_str),
                    v.get("as").and_then(Value::as_str),
                ) {
                    (Some(to), None) => Some(Ok((Host::To(to.to_string()), text))),
                    (None, Some(by)) => Some(Ok((Host::As(by.to_string()), text))),
                    _ => None,
                }
            }
        })
        .collect::<Option<_>>()
        .ok_or_else(|| suite("`inputs` holds strings, `to` and `as` turns and settings steps"))?;
    let options = Options {
        scenario: Some(engine.ir.scenario.to_string()),
        difficulty: t
            .get("difficulty")
            .and_then(Value::as_str)
            .map(str::to_string),
        seed: t.get("seed").and_then(Value::as_u64).unwrap_or(0),
        opening: t.get("opening").and_then(Value::as_str).map(str::to_string),
        header_players: header.and_then(|h| {
            h.get("players")
                .cloned()
                .map(|p| (p, h.get("characters").cloned()))
        }),
        ..Options::default()
    };
    let opened = Opened::from_checked("case", bundle.clone());
    // `model`: the model runtime's answers in call order (Format 23, 24.8).
    let mut log = None;
    let mut session = match (t.get("model"), resume) {
        (Some(_), Some(_)) => return Err(suite("a run test has `model` or `resume`, not both")),
        (None, Some((at, text))) => {
            let (Some(text), Some(header)) = (text, header) else {
                return Err(suite(
                    "`resume` needs the case's `session` or `sessionFile`",
                ));
            };
            if t.get("resume")
                .is_some_and(|r| r != &Value::Bool(true) && !r.is_string())
            {
                return Err(suite("`resume` is true or a message ID"));
            }
            Session::resume(
                &opened,
                engine.fork(),
                header.clone(),
                text.to_string(),
                at,
                None,
                None,
            )
        }
        (None, None) => Session::start(&opened, &options),
        (Some(Value::Array(answers)), None) => {
            use crate::runtime::chat::{Backend, ModelRuntime, Settings};
            let rt = ModelRuntime::new(
                Settings::default(),
                Backend::Mocks(answers.iter().cloned().collect()),
            );
            log = Some(rt.log());
            Session::start_with(&opened, &options, Box::new(rt), None)
        }
        (Some(_), None) => return Err(suite("`model` is a list of answers")),
    }
    .map_err(|e| fail(e.to_string()))?;
    let mut results = Vec::new();
    for input in &inputs {
        let (to, input) = match input {
            Ok((to, text)) => (to, text),
            Err(settings) => {
                results.push(match session.change_settings(settings) {
                    Ok(r) => serde_json::to_value(&r).unwrap_or(Value::Null),
                    Err(e) => Value::String(format!("refused: {e}")),
                });
                continue;
            }
        };
        let turn = match to {
            Host::To(c) => session.turn_to(c, input),
            Host::As(p) => session.turn_as(p, input),
            Host::None => session.turn(input),
        };
        match turn {
            Ok(r) => {
                let mut v = serde_json::to_value(&r).unwrap_or(Value::Null);
                let rec = log.as_ref().and_then(|l| {
                    l.lock()
                        .ok()
                        .and_then(|l| crate::runtime::chat::turn_record(&l, &r.messages))
                });
                // A turn that called no model (a refused or redirected
                // input) made 0 requests and dropped nothing (24.8).
                if let (Some(o), Some(_)) = (v.as_object_mut(), &log) {
                    let (requests, dropped) =
                        rec.map_or((0, false), |r| (r.requests, r.dropped.is_some()));
                    o.insert("requests".into(), requests.into());
                    o.insert("dropped".into(), dropped.into());
                }
                results.push(v)
            }
            Err(e) => results.push(Value::String(format!("refused: {e}"))),
        }
    }
    if let Some(turns) = expect.get("turns").and_then(Value::as_array) {
        if turns.len() != inputs.len() {
            return Err(suite("`expect.turns` has one object per input"));
        }
        for (i, (want, got)) in turns.iter().zip(&results).enumerate() {
            // `"refused"`: the turn must be refused, for any reason.
            if want.as_str() == Some("refused") {
                if !got.as_str().is_some_and(|g| g.starts_with("refused")) {
                    return Err(fail(format!(
                        "turn {}: expected a refusal, got {got}",
                        i + 1
                    )));
                }
                continue;
            }
            let Some(want) = want.as_object() else {
                return Err(suite(
                    "each `expect.turns` item is an object or \"refused\"",
                ));
            };
            for (k, v) in want {
                if got.get(k).is_none() {
                    return Err(fail(format!("turn {}: no field `{k}` ({got})", i + 1)));
                }
                let short;
                let g = match got.get(k) {
                    // Diagnostics compare by code and pointer (Format 23).
                    Some(Value::Array(ds)) if k == "diagnostics" => {
                        short = Value::Array(
                            ds.iter()
                                .map(|d| serde_json::json!({"code": d["code"], "at": d["pointer"]}))
                                .collect(),
                        );
                        &short
                    }
                    Some(g) => g,
                    None => &Value::Null,
                };
                if !json_eq(v, g) {
                    return Err(fail(format!("turn {}: `{k}` is {g}, expected {v}", i + 1)));
                }
            }
        }
    }
    if let Some(text) = expect.get("session") {
        let want = text
            .as_str()
            .ok_or_else(|| suite("`expect.session` is a string"))?;
        if session.session_text() != want {
            return Err(fail(format!(
                "the session file differs:\n--- expected\n{want}--- got\n{}",
                session.session_text()
            )));
        }
    }
    Ok(())
}

/// Runs a `safety` test.
pub fn safety_test(
    t: &Value,
    expect: &Value,
    bundle: &Value,
    engine: &Engine,
) -> Result<(), Error> {
    let text = t
        .get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| suite("a safety test needs `text`"))?;
    let reply = t.get("reply").and_then(Value::as_bool).unwrap_or(false);
    // The policy of the scenario the engine runs (Format 19.1).
    let policy = crate::model::scenario(bundle, &engine.ir.scenario).and_then(|s| s.get("safety"));
    let safety = Safety::compile(policy).map_err(fail)?;
    let v = safety.verdict(text, reply);
    let mut got = serde_json::Map::new();
    got.insert("verdict".into(), v.status.as_str().into());
    if let Some(r) = &v.redirect_text {
        got.insert("redirect_text".into(), r.clone().into());
    }
    let got = Value::Object(got);
    if !json_eq(expect, &got) {
        return Err(fail(format!("expected {expect}, got {got}")));
    }
    Ok(())
}

//! Runs CEL test lines in the format of the shared CEL test data
//! (`data/cel/FORMAT.md`): `{"expr", "declarations"?, "bindings", "expect"}`
//! with `expect` one of `{"value": V, "type"?: T}`, `{"type": T}` (check
//! only), `{"evalError": true}` or `{"checkError": true}`.

use serde_json::Value as Json;

use super::env::{Activation, Env};
use super::eval::NoHost;
use super::program::compile;
use super::types::Type;
use super::value::Value;

/// The outcome of one test line: `Ok(())` when it passes, else why not.
pub fn run_line(line: &Json) -> Result<(), String> {
    let expr = line
        .get("expr")
        .and_then(Json::as_str)
        .ok_or("the line has no `expr` string")?;
    let expect = line.get("expect").ok_or("the line has no `expect`")?;
    let wants_check_error = expect.get("checkError").and_then(Json::as_bool) == Some(true);
    let mut env = Env::new();
    if let Some(decls) = line.get("declarations").and_then(Json::as_object) {
        for (name, ty) in decls {
            let ty = ty.as_str().ok_or("a declaration's type is not a string")?;
            match Type::parse(ty) {
                Ok(ty) => {
                    env.declare(name.clone(), ty);
                }
                // A variable of a type outside the subset cannot be
                // declared, so an expression over it cannot check.
                Err(e) if wants_check_error => {
                    let _ = e;
                    return Ok(());
                }
                Err(e) => return Err(format!("declaration `{name}`: {e}")),
            }
        }
    }
    let mut act = Activation::new(&env);
    if let Some(bindings) = line.get("bindings").and_then(Json::as_object) {
        for (name, v) in bindings {
            if let Some(slot) = env.slot(name) {
                act.set(
                    slot,
                    Value::from_tagged(v).map_err(|e| format!("binding `{name}`: {e}"))?,
                );
            }
        }
    }
    let program = match compile(expr, &env) {
        Ok(p) => p,
        Err(errs) => {
            return if wants_check_error {
                Ok(())
            } else {
                let msgs: Vec<String> = errs.iter().map(ToString::to_string).collect();
                Err(format!("does not compile: {}", msgs.join("; ")))
            };
        }
    };
    if wants_check_error {
        return Err(format!(
            "compiles (type {}) but should fail to check",
            program.result_type()
        ));
    }
    if let Some(t) = expect.get("type").and_then(Json::as_str) {
        let want = Type::parse(t).map_err(|e| format!("expected type: {e}"))?;
        if *program.result_type() != want {
            return Err(format!(
                "type is {}, expected {want}",
                program.result_type()
            ));
        }
    }
    let check_only = line.get("checkOnly").and_then(Json::as_bool) == Some(true)
        || (expect.get("value").is_none()
            && expect.get("evalError").is_none()
            && expect.get("type").is_some());
    if check_only {
        return Ok(());
    }
    let result = program.eval(&act, &mut NoHost);
    if expect.get("evalError").and_then(Json::as_bool) == Some(true) {
        return match result {
            Err(_) => Ok(()),
            Ok(v) => Err(format!("evaluates to {v}, expected an error")),
        };
    }
    let want = match expect.get("value") {
        Some(v) => Value::from_tagged(v)?,
        None => Value::Bool(true),
    };
    match result {
        Ok(v) if v == want => Ok(()),
        Ok(v) => Err(format!("evaluates to {v}, expected {want}")),
        Err(e) => Err(format!("evaluation error: {e}; expected {want}")),
    }
}

/// A test line's name: `file/section/name`, or its `expr`.
pub fn line_name(line: &Json) -> String {
    let part = |k: &str| line.get(k).and_then(Json::as_str).unwrap_or("");
    if line.get("name").is_some() {
        format!("{}/{}/{}", part("file"), part("section"), part("name"))
    } else {
        part("expr").to_string()
    }
}

/// Runs every line of a JSON Lines text; returns (passed, failures as
/// `(line number, name, reason)`). Empty lines are skipped.
pub fn run_text(text: &str) -> (usize, Vec<(usize, String, String)>) {
    let mut passed = 0;
    let mut failed = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Json>(l) {
            Ok(j) => match run_line(&j) {
                Ok(()) => passed += 1,
                Err(e) => failed.push((i + 1, line_name(&j), e)),
            },
            Err(e) => failed.push((i + 1, String::new(), format!("not JSON: {e}"))),
        }
    }
    (passed, failed)
}

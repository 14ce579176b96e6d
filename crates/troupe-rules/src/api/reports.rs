//! The tools of the command line as functions returning their `--json`
//! documents: [`check_report`] (`troupe check --json`), [`test_report`]
//! (`troupe test --json`) and [`cel_eval`] (`troupe cel eval`), for
//! bindings and programs that want the answers without a process.

use std::path::Path;

use serde_json::Value as Json;

use super::error::{Error, ErrorKind, Result};
use crate::cel::{self, Activation, Env, NoHost, Value};
use crate::diag::render::Sources;
use crate::diag::Diagnostic;

/// The document `troupe check --json PATHS…` prints (Format 17,
/// `schemas/output/check.schema.json`): `valid`, `errors`, `warnings` and
/// every diagnostic in report order. With `strict`, warnings make it
/// invalid. Never fails: what cannot be read is a diagnostic (MISSING_FILE,
/// IO) in the document. The thin form of [`crate::check`]:
/// `check(paths).to_json(strict)`.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// let doc = troupe::check_report(&["examples/bundles/tiny.bundle.json"], false);
/// assert_eq!(doc["valid"], true);
/// let doc = troupe::check_report(&["examples/no-such-pack"], false);
/// assert_eq!(doc["valid"], false);
/// assert_eq!(doc["diagnostics"][0]["code"], "MISSING_FILE");
/// ```
pub fn check_report(paths: &[impl AsRef<Path>], strict: bool) -> Json {
    super::check::check(paths).to_json(strict)
}

/// The document `troupe test --json PACK [--test NAME]` prints (Format
/// 21.2): `pack`, `status`, `exit_code`, `stages` and `coverage`. Snapshots
/// are only compared, never written (no `--accept`).
///
/// Errors: [`ErrorKind::NotFound`] when `pack` is not a pack directory or
/// `test` names no fixture (the CLI's usage errors, exit 2).
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// let doc = troupe::test_report("examples/packs/everyday-negotiation", None)?;
/// assert_eq!(doc["status"], "PASS");
/// assert_eq!(doc["exit_code"], 0);
/// # Ok::<(), troupe::Error>(())
/// ```
#[cfg(feature = "testing")]
pub fn test_report(pack: impl AsRef<Path>, test: Option<&str>) -> Result<Json> {
    use super::testrun::{run_tests, Quiet, Snapshots};
    let run = run_tests(pack, test, Snapshots::Check, &mut Quiet)?;
    serde_json::from_str(&run.to_json())
        .map_err(|e| Error::new(ErrorKind::Io, format!("the test report is not JSON: {e}")))
}

/// Evaluates CEL expression `expr` (Format 11, Troupe's subset) with
/// `bindings` as its variables, as `troupe cel eval EXPR --var NAME=JSON…`
/// does: each binding's type is its value's (a list or map takes its
/// elements' common type, or `dyn`). The result as JSON (
/// ints and doubles as numbers, lists as arrays, maps as objects).
///
/// Errors: [`ErrorKind::Invalid`] with CEL_SYNTAX / CEL_TYPE diagnostics
/// when `expr` does not compile, or when a binding is not a CEL value
/// (`null`, a number out of range); [`ErrorKind::Evaluation`] when
/// evaluation fails (division by zero, a missing key, …).
///
/// ```
/// use serde_json::json;
/// let v = troupe::cel_eval("trust > 50 ? 'warm' : 'cold'", &[("trust", json!(60))])?;
/// assert_eq!(v, json!("warm"));
/// let e = troupe::cel_eval("1 / x", &[("x", json!(0))]).unwrap_err();
/// assert_eq!(e.kind(), troupe::ErrorKind::Evaluation);
/// # Ok::<(), troupe::Error>(())
/// ```
pub fn cel_eval(expr: &str, bindings: &[(&str, Json)]) -> Result<Json> {
    let mut env = Env::new();
    let mut values = Vec::with_capacity(bindings.len());
    for (name, json) in bindings {
        let value = Value::from_json(json).map_err(|e| binding_error(name, &e))?;
        if env.lookup(name).is_none() {
            env.declare(*name, value.bound_type());
        }
        values.push((*name, value));
    }
    let program =
        cel::compile(expr, &env).map_err(|errs| super::cel_check::compile_error(expr, &errs))?;
    let mut act = Activation::new(&env);
    for (name, value) in values {
        if !act.set_by_name(&env, name, value) {
            return Err(binding_error(name, "names an object: bind its fields"));
        }
    }
    program
        .eval(&act, &mut NoHost)
        .map(|v| v.to_json())
        .map_err(|e| Error::new(ErrorKind::Evaluation, format!("evaluation error: {e}")))
}

fn binding_error(name: &str, why: &str) -> Error {
    Error::with_diagnostics(
        ErrorKind::Invalid,
        "a binding is not a CEL value",
        vec![Diagnostic::error(
            crate::diag::Code::CelType,
            format!("binding `{name}`: {why}"),
        )],
        Sources::new(),
    )
}

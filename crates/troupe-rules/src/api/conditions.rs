//! CEL conditions (Format 11) on their own, as `troupe cel check|eval|run`
//! uses them: declare variables, check an expression's type, evaluate it
//! with bound values, run CEL test lines. Conditions against a story are
//! [`crate::History::check_condition`] and
//! [`crate::History::eval_condition`].
//!
//! Compile errors are [`ErrorKind::Invalid`] errors whose diagnostics are
//! CEL_SYNTAX or CEL_TYPE, each with the plain message and the 1-based
//! line and column in the expression (file `expression`); their
//! [`Diagnostic::code`] is the code to show.
//!
//! ```
//! use troupe::conditions::{check, eval, CelValue, Declarations};
//! let mut decls = Declarations::new();
//! decls.declare("trust", "map(string, double)")?;
//! assert_eq!(check("trust['mara'] > 50.0", &decls)?, "bool");
//! let value = eval("n * 2", &decls, &[("n", CelValue::from_json(&serde_json::json!(21))?)])?;
//! assert_eq!(value.to_string(), "42");
//! let err = check("1 +", &decls).unwrap_err();
//! assert_eq!(err.diagnostics()[0].code, troupe::Code::CelSyntax);
//! # Ok::<(), troupe::Error>(())
//! ```

use std::fmt;

use serde_json::Value as Json;

use super::error::{Error, ErrorKind, Result};
use crate::cel::{self, Activation, CelError, Env, NoHost, Type, Value};
use crate::diag::render::Sources;
use crate::diag::Diagnostic;

/// Variables an expression may read, each with its CEL type (Format
/// 11.2).
#[derive(Debug, Clone, Default)]
pub struct Declarations {
    env: Env,
}

impl Declarations {
    /// No variable declared.
    pub fn new() -> Declarations {
        Declarations::default()
    }

    /// Declares `name` with the type written `ty` in CEL type syntax
    /// (`bool`, `int`, `double`, `string`, `dyn`, `list(T)`, `map(K, V)`;
    /// spaces allowed around tokens); a second declaration of a name
    /// replaces the first.
    ///
    /// Errors: [`ErrorKind::Invalid`] (no diagnostics) when `ty` is not a
    /// type of the subset; the message says so.
    pub fn declare(&mut self, name: &str, ty: &str) -> Result<()> {
        let ty = Type::parse(ty).map_err(|e| Error::new(ErrorKind::Invalid, e.to_string()))?;
        self.env.declare(name, ty);
        Ok(())
    }
}

/// A CEL value (Format 11.1): the result of [`eval`], or a value to bind.
/// `Display` writes it as a CEL literal (`"text"`, `42`, `1.0`,
/// `[1, 2]`, `{"k": true}`), as `troupe cel eval` prints it.
#[derive(Debug, Clone, PartialEq)]
pub struct CelValue(pub(crate) Value);

impl CelValue {
    /// Converts plain JSON: numbers without a fraction or exponent that fit
    /// 64 bits become `int`, other numbers `double`, arrays lists, objects
    /// maps with string keys.
    ///
    /// Errors: [`ErrorKind::Invalid`] (no diagnostics) for `null` or a
    /// number out of range; the message says why.
    pub fn from_json(json: &Json) -> Result<CelValue> {
        Value::from_json(json)
            .map(CelValue)
            .map_err(|e| Error::new(ErrorKind::Invalid, e))
    }

    /// The value as plain JSON (non-finite doubles as the strings `"NaN"`,
    /// `"Infinity"`, `"-Infinity"`).
    pub fn to_json(&self) -> Json {
        self.0.to_json()
    }
}

impl fmt::Display for CelValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The error of an expression that does not compile: one diagnostic per
/// CEL error, at its line and column in the expression.
pub(crate) fn compile_error(errs: &[CelError]) -> Error {
    let diagnostics = errs
        .iter()
        .map(|e| {
            Diagnostic::error(e.code(), e.message.clone())
                .in_file("expression")
                .at_line_col(e.line, e.column)
        })
        .collect();
    Error::invalid(diagnostics, Sources::new())
}

/// The error of an evaluation that failed (Format 11.6).
pub(crate) fn eval_error(e: impl fmt::Display) -> Error {
    Error::new(ErrorKind::Evaluation, format!("evaluation error: {e}"))
}

/// Parses and type-checks `expr` against `decls`; returns its result type
/// in CEL type syntax (`bool`, `map(string, int)`, …).
///
/// Errors: [`ErrorKind::Invalid`] with the CEL_SYNTAX / CEL_TYPE
/// diagnostics (module docs).
pub fn check(expr: &str, decls: &Declarations) -> Result<String> {
    cel::compile(expr, &decls.env)
        .map(|p| p.result_type().to_string())
        .map_err(|errs| compile_error(&errs))
}

/// Checks and evaluates `expr` with `bindings` as its variables, as
/// `troupe cel eval --var NAME=JSON…` does: a binding not declared in
/// `decls` takes its value's type (a list or map its elements' common
/// type, or `dyn`), in order.
///
/// Errors: [`ErrorKind::Invalid`] with diagnostics when `expr` does not
/// compile; [`ErrorKind::Invalid`] without any when a binding names an
/// object (the message, ``"`NAME` names an object: bind its fields"``);
/// [`ErrorKind::Evaluation`] when evaluation fails (division by zero, a
/// missing key, …).
pub fn eval(expr: &str, decls: &Declarations, bindings: &[(&str, CelValue)]) -> Result<CelValue> {
    let mut env = decls.env.clone();
    for (name, value) in bindings {
        if env.lookup(name).is_none() {
            env.declare(*name, value.0.bound_type());
        }
    }
    let program = cel::compile(expr, &env).map_err(|errs| compile_error(&errs))?;
    let mut act = Activation::new(&env);
    for (name, value) in bindings {
        if !act.set_by_name(&env, name, value.0.clone()) {
            return Err(Error::new(
                ErrorKind::Invalid,
                format!("`{name}` names an object: bind its fields"),
            ));
        }
    }
    program
        .eval(&act, &mut NoHost)
        .map(CelValue)
        .map_err(eval_error)
}

/// The result of [`run_suite`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuiteResult {
    /// Tests that passed.
    pub passed: usize,
    /// Tests that failed: (1-based line, test name, why), in file order.
    pub failed: Vec<(usize, String, String)>,
}

/// Runs CEL test lines (`data/cel/FORMAT.md`, JSON Lines; empty lines
/// skipped), as `troupe cel run FILE` does.
///
/// ```
/// let r = troupe::conditions::run_suite(
///     r#"{"name": "add", "expr": "1 + 2", "bindings": {}, "expect": {"value": {"int": "3"}}}"#,
/// );
/// assert_eq!((r.passed, r.failed.len()), (1, 0), "{:?}", r.failed);
/// ```
pub fn run_suite(text: &str) -> SuiteResult {
    let (passed, failed) = cel::suite::run_text(text);
    SuiteResult { passed, failed }
}

//! [`cel_check`]: what `troupe cel check` answers (Format 11.1, 11.2) as a
//! function: an expression's type, checked against a pack's declarations
//! or against declared names.

use serde::Serialize;

use super::error::{Error, ErrorKind, Result};
use super::pack::Pack;
use crate::cel::{self, Env, Type};
use crate::diag::render::Sources;
use crate::diag::{Code, Diagnostic};

/// The answer of [`cel_check`]: the expression's static type and the
/// scenario it was checked against.
///
/// Serializes to `{"type": string, "scenario": id | null}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CelCheck {
    /// The result type as Format 11.1 writes types (`bool`, `int`,
    /// `map(string, int)`).
    #[serde(rename = "type")]
    pub result_type: String,
    /// The scenario whose declarations were used; `None` without a pack.
    pub scenario: Option<String>,
}

/// Parses and type-checks CEL expression `expr` (Format 11), as `troupe
/// cel check` does. With `pack`, against scenario `scenario`'s environment
/// (`None`: the first scenario; Format 11.3: `state.…`, `difficulty.…`,
/// `turn`, …, as a condition of the scenario); `decls` are then not used.
/// Without a pack, against `decls`: pairs of a name and a type written as
/// Format 11.1 writes types (`trust` = `map(string, double)`).
///
/// Errors: [`ErrorKind::Invalid`] with CEL_SYNTAX / CEL_TYPE diagnostics
/// (file `expression`, line and column in it) when the expression does not
/// check, or with a CEL_TYPE diagnostic for a declaration whose type is
/// not a type; [`ErrorKind::NotFound`] for an unknown scenario.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// let pack = troupe::Pack::open("examples/packs/everyday-negotiation")?;
/// let ok = troupe::cel_check("state.patience > 3", Some(&pack), None, &[])?;
/// assert_eq!(ok.result_type, "bool");
/// let e = troupe::cel_check("state.patience + 'x'", Some(&pack), None, &[]).unwrap_err();
/// assert_eq!(e.diagnostics()[0].code, troupe::Code::CelType);
/// let t = troupe::cel_check("x * 2", None, None, &[("x", "int")])?;
/// assert_eq!(t.result_type, "int");
/// # Ok::<(), troupe::Error>(())
/// ```
pub fn cel_check(
    expr: &str,
    pack: Option<&Pack>,
    scenario: Option<&str>,
    decls: &[(&str, &str)],
) -> Result<CelCheck> {
    let failed = |errs: Vec<cel::CelError>| compile_error(expr, &errs);
    let Some(pack) = pack else {
        let mut env = Env::new();
        for (name, ty) in decls {
            let ty = Type::parse(ty).map_err(|e| {
                Error::with_diagnostics(
                    ErrorKind::Invalid,
                    "a declaration is not a CEL type",
                    vec![Diagnostic::error(
                        Code::CelType,
                        format!("declaration `{name}`: {e}"),
                    )],
                    Sources::new(),
                )
            })?;
            env.declare(name.trim(), ty);
        }
        let program = cel::compile(expr, &env).map_err(failed)?;
        return Ok(CelCheck {
            result_type: program.result_type().to_string(),
            scenario: None,
        });
    };
    if let Some(id) = scenario
        && !pack.scenarios().iter().any(|s| s.id == id)
    {
        let ids: Vec<String> = pack.scenarios().into_iter().map(|s| s.id).collect();
        return Err(Error::new(
            ErrorKind::NotFound,
            format!(
                "the pack has no scenario `{id}`{}",
                crate::diag::suggest::one_of(id, ids.iter().map(String::as_str))
            ),
        ));
    }
    let engine = crate::pipeline::compile_checked(pack.bundle(), None, scenario)
        .map_err(|d| Error::invalid(d, Sources::new()))?;
    let cond = engine
        .compile_condition(expr, None, false)
        .map_err(failed)?;
    Ok(CelCheck {
        result_type: cond.program.result_type().to_string(),
        scenario: Some(engine.ir.scenario.to_string()),
    })
}

/// The error of an expression that does not compile: its CEL_SYNTAX /
/// CEL_TYPE diagnostics, in file `expression` (whose text is kept for
/// rendering).
pub(crate) fn compile_error(expr: &str, errs: &[cel::CelError]) -> Error {
    let diagnostics = errs
        .iter()
        .map(|e| e.to_diagnostic("expression", "", Some((1, 1))))
        .collect();
    let mut sources = Sources::new();
    sources.add("expression", expr.into());
    Error::invalid(diagnostics, sources)
}

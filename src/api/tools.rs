//! Tool entry points behind the `testing` feature: what `troupe
//! conformance` and `troupe graph` compute, for programs (an editor, an
//! MCP server) and for the CLI, which only wires them.

use std::path::Path;

use serde_json::Value;

use super::error::{Error, ErrorKind, Result};
use super::pack::Pack;
use crate::diag::render::Sources;

/// The results of a conformance run (Format 20): how many tests passed
/// and failed, and the report text `troupe conformance` prints.
///
/// ```
/// let report = troupe::tools::conformance("conformance/cases/macros");
/// assert!(report.passed() > 0);
/// assert_eq!(report.failed(), 0, "{}", report.to_text());
/// ```
#[derive(Debug, Clone)]
pub struct ConformanceReport {
    inner: crate::conformance::Report,
}

impl ConformanceReport {
    /// Tests that passed.
    pub fn passed(&self) -> usize {
        self.inner.passed()
    }

    /// Tests that failed, suite errors included.
    pub fn failed(&self) -> usize {
        self.inner.failed()
    }

    /// One line per failure, then `N passed, M failed`.
    pub fn to_text(&self) -> String {
        self.inner.to_text()
    }
}

/// Runs the conformance suite in `dir` (its `cases/` when it has one):
/// every `*.json` case file with a `tests` member, in path order.
pub fn conformance(dir: impl AsRef<Path>) -> ConformanceReport {
    ConformanceReport {
        inner: crate::conformance::run_dir(dir.as_ref()),
    }
}

/// The text formats of [`graph`] (Format 20.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GraphFormat {
    /// Graphviz DOT.
    #[default]
    Dot,
    /// A Mermaid flowchart.
    Mermaid,
}

/// A scenario's wiring drawn as text (Format 20.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    /// The scenario drawn.
    pub scenario: String,
    /// The DOT or Mermaid text.
    pub text: String,
}

/// The graph of scenario `scenario` (`None`: the first) of `pack`, as
/// `troupe graph` prints it.
///
/// Errors: [`ErrorKind::NotFound`] for an unknown scenario or a pack
/// without any; [`ErrorKind::Invalid`] when the story does not compile.
///
/// ```
/// use troupe::tools::{graph, GraphFormat};
/// let pack = troupe::Pack::open("examples/packs/everyday-negotiation")?;
/// let g = graph(&pack, None, GraphFormat::Dot)?;
/// assert_eq!(g.scenario, "used_car_negotiation");
/// assert!(g.text.starts_with("digraph"));
/// # Ok::<(), troupe::Error>(())
/// ```
pub fn graph(pack: &Pack, scenario: Option<&str>, format: GraphFormat) -> Result<Graph> {
    let ids: Vec<String> = pack.scenarios().into_iter().map(|s| s.id).collect();
    match scenario {
        Some(id) if !ids.iter().any(|x| x == id) => {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "the pack has no scenario `{id}`{}",
                    crate::diag::suggest::one_of(id, ids.iter().map(String::as_str))
                ),
            ))
        }
        None if ids.is_empty() => {
            return Err(Error::new(ErrorKind::NotFound, "the pack has no scenario"))
        }
        _ => {}
    }
    let bundle: &Value = pack.bundle();
    let (story, ir) = crate::engine::load::compile_story_for(bundle, None, scenario)
        .map_err(|d| Error::invalid(d, Sources::new()))?;
    let rt = crate::runtime::compiled::RuntimeIr::compile(&story, &ir, None).map_err(|e| {
        Error::new(
            ErrorKind::Invalid,
            format!("cannot compile the rules: {}", e.0),
        )
    })?;
    let g = crate::testing::graph::build(&ir, &rt);
    let text = match format {
        GraphFormat::Dot => g.to_dot(),
        GraphFormat::Mermaid => g.to_mermaid(),
    };
    Ok(Graph {
        scenario: g.scenario.to_string(),
        text,
    })
}

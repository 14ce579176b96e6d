//! Text for people, as the `troupe` command prints it: diagnostics for a
//! terminal, input text made safe to print (Format 17.5), "did you mean"
//! hints, and the JSON Schemas the checker validates with.

use crate::diag::render::{render_human, Sources};
use crate::diag::Diagnostic;

pub use crate::diag::render::escape_controls;

/// `diagnostics` rendered for a terminal, without colour (Format 17.2):
/// each as `error[CODE]: message`, its location, JSON Pointer and help,
/// inputs' text escaped ([`escape_controls`]). No source excerpts (the
/// texts are not known here; [`crate::Error::render`] and
/// [`crate::CheckReport::render`] quote them). Empty for no diagnostic.
///
/// ```
/// let d = troupe::Diagnostic::error(troupe::Code::Io, "cannot read x");
/// assert!(troupe::render_diagnostics(&[d]).starts_with("error[IO]: cannot read x"));
/// ```
pub fn render_diagnostics(diagnostics: &[Diagnostic]) -> String {
    render_human(diagnostics, &Sources::new())
}

/// For `name` that must be one of a few `choices` (a scenario, a preset,
/// a message ID): the closest choice as `"; did you mean `…`?"`, else the
/// list of choices (at most ten), else `""` when there are none. The
/// text is meant to follow an "unknown `name`" sentence.
///
/// ```
/// let hint = troupe::suggest("hrad", ["easy", "hard"]);
/// assert!(hint.contains("hard"), "{hint}");
/// assert_eq!(troupe::suggest("x", []), "");
/// ```
pub fn suggest<'a>(name: &str, choices: impl IntoIterator<Item = &'a str>) -> String {
    crate::diag::suggest::one_of(name, choices)
}

/// The part of source line `line` shown around 1-based `column` (as
/// [`render_diagnostics`] quotes a line): at most 80 characters, escaped
/// ([`escape_controls`]), tabs as spaces, clipped ends shown as `…`; and
/// the 0-based column of the caret under it in that text.
///
/// ```
/// assert_eq!(troupe::excerpt("1 + ", 4), ("1 + ".to_string(), 3));
/// ```
pub fn excerpt(line: &str, column: u32) -> (String, usize) {
    crate::diag::render::window(line, column)
}

//! Template syntax in author text (Format 10): every text that macros render
//! must parse.

use crate::diag::{Code, Diagnostic};
use crate::template;

/// Parses `text` (found at `pointer`) and reports TEMPLATE_SYNTAX with the
/// position inside the text.
pub fn check_template(text: &str, pointer: &str, out: &mut Vec<Diagnostic>) {
    if let Err(e) = template::parse(text) {
        out.push(
            Diagnostic::error(Code::TemplateSyntax, e.message)
                .at(pointer)
                .inside(e.line, e.column),
        );
    }
}

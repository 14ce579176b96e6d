//! Compile-time and run-time errors of CEL expressions (Format 11.2, 11.6).

use std::borrow::Cow;
use std::ops::Range;

use crate::diag::{Code, Diagnostic};

/// What stage rejected an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CelErrorKind {
    /// The text does not parse (diagnostic code `CEL_SYNTAX`).
    Syntax,
    /// The expression does not type-check against its environment (`CEL_TYPE`).
    Type,
}

/// An error found while compiling an expression, with its position inside
/// the expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub struct CelError {
    /// Syntax or type.
    pub kind: CelErrorKind,
    /// One plain sentence.
    pub message: String,
    /// Byte offsets in the expression's source.
    pub span: Range<usize>,
    /// 1-based line within the expression.
    pub line: u32,
    /// 1-based column within the expression, counting Unicode scalar values.
    pub column: u32,
}

impl CelError {
    /// An error at byte offset `span` of `source` (line and column computed).
    pub fn new(
        kind: CelErrorKind,
        message: impl Into<String>,
        source: &str,
        span: Range<usize>,
    ) -> Self {
        let start = floor_char_boundary(source, span.start);
        let end = floor_char_boundary(source, span.end.max(start));
        let (line, column) = line_col(source, start);
        Self {
            kind,
            message: message.into(),
            span: start..end,
            line,
            column,
        }
    }

    /// The diagnostic code: `CEL_SYNTAX` or `CEL_TYPE`.
    pub fn code(&self) -> Code {
        match self.kind {
            CelErrorKind::Syntax => Code::CelSyntax,
            CelErrorKind::Type => Code::CelType,
        }
    }

    /// A diagnostic for this error in an expression that starts at
    /// `expr_line:expr_column` (1-based) of its file: the position is that of
    /// the error inside the file when the expression is written on one line
    /// of it as is (the caller passes `None` when the expression's text was
    /// transformed by quoting, and the expression's own position is used).
    pub fn to_diagnostic(&self, file: &str, pointer: &str, at: Option<(u32, u32)>) -> Diagnostic {
        let d = Diagnostic::error(
            self.code(),
            format!(
                "{} (at {}:{} of the expression)",
                self.message, self.line, self.column
            ),
        )
        .in_file(file)
        .at(pointer);
        match at {
            Some((l, c)) => {
                if self.line == 1 {
                    d.at_line_col(l, c + self.column - 1)
                } else {
                    d.at_line_col(l + self.line - 1, self.column)
                }
            }
            None => d,
        }
    }
}

/// The kinds of evaluation errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EvalErrorKind {
    /// int64 overflow.
    Overflow,
    /// Division or modulo by zero.
    DivideByZero,
    /// A map key or list index that is not there.
    NoSuchKey,
    /// A variable (slot) with no value: an absent key or derived variable.
    Unbound,
    /// An operation applied to values it is not defined on (only with `dyn`).
    NoSuchOverload,
    /// A conversion that fails (`int('x')`, `int(1e99)`).
    Conversion,
    /// A regular expression that does not compile.
    Regex,
    /// A map literal with a repeated or invalid key.
    InvalidKey,
    /// The cost budget is spent (comprehension work).
    Budget,
    /// `roll()` failed (bad notation) or is not available.
    Roll,
}

/// An error while evaluating an expression. Under Format 11.6 a condition
/// that errors is false and a derived variable that errors is absent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct EvalError {
    /// The kind of failure.
    pub kind: EvalErrorKind,
    /// A plain message.
    pub message: Cow<'static, str>,
}

impl EvalError {
    /// An error with a static message (no allocation).
    pub const fn fixed(kind: EvalErrorKind, message: &'static str) -> Self {
        Self {
            kind,
            message: Cow::Borrowed(message),
        }
    }

    /// An error with a formatted message.
    pub fn new(kind: EvalErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: Cow::Owned(message.into()),
        }
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// 1-based line and column (in chars) of byte offset `at` in `source`.
pub fn line_col(source: &str, at: usize) -> (u32, u32) {
    let at = floor_char_boundary(source, at);
    let before = &source[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = source[line_start..at].chars().count() + 1;
    (line as u32, column as u32)
}

/// Byte offset of 1-based `line` and char `column` in `source` (clamped);
/// the `cel` crate's parser, kept for the equivalence test, reports lines
/// and columns.
#[cfg(test)]
pub fn offset_of(source: &str, line: usize, column: usize) -> usize {
    let mut offset = 0;
    for (i, l) in source.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            return offset
                + l.char_indices()
                    .nth(column.saturating_sub(1))
                    .map_or(l.len(), |(b, _)| b);
        }
        offset += l.len();
    }
    source.len()
}

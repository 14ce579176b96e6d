//! The one diagnostic type every stage reports problems with (Format 17.2).

use serde::Serialize;

use super::codes::Code;

/// How bad a diagnostic is. Errors make a file non-conforming (Format 17.1);
/// warnings do not, unless `--strict` is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Severity {
    /// The input is not conforming.
    Error,
    /// Advice; the input still conforms.
    Warning,
}

/// Where a diagnostic points.
///
/// `pointer` uses the location forms of Format 17.2: a JSON Pointer inside a
/// bundle or pack file (`/scenarios/0/events/1/when`), `header/<pointer>` in a
/// session header, `message:<id>/<pointer>` inside a session message.
/// `line` and `column` are 1-based and count Unicode scalar values; they are
/// known when the source text was kept (YAML and JSON files, JSONL lines).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Location {
    /// The file, as given on the command line or relative to the pack root.
    pub file: Option<String>,
    /// The location inside the file (see the type's doc).
    pub pointer: Option<String>,
    /// 1-based line, when known.
    pub line: Option<u32>,
    /// 1-based column, when known.
    pub column: Option<u32>,
    /// A position inside the string value at `pointer` (1-based line and
    /// column within the string), for errors inside CEL expressions and
    /// templates. When the file position is filled in from the pointer, this
    /// is added to the position of the string's opening quote.
    #[serde(skip)]
    pub inner: Option<(u32, u32)>,
}

/// One problem found in an input: a stable code, a location and a plain message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Diagnostic {
    /// The stable code (Format 17.2).
    pub code: Code,
    /// Error or warning.
    pub severity: Severity,
    /// Where the problem is.
    #[serde(flatten)]
    pub location: Location,
    /// One plain sentence saying what is wrong.
    pub message: Box<str>,
    /// Optional advice on how to fix it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<Box<str>>,
}

impl Diagnostic {
    /// An error with the given code and message, at no location yet.
    pub fn error(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            severity: code.default_severity(),
            location: Location::default(),
            message: message.into().into_boxed_str(),
            help: None,
        }
    }

    /// Sets the file.
    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        self.location.file = Some(file.into());
        self
    }

    /// Sets the pointer (one of the forms of [`Location::pointer`]).
    pub fn at(mut self, pointer: impl Into<String>) -> Self {
        self.location.pointer = Some(pointer.into());
        self
    }

    /// Sets the 1-based line and column.
    pub fn at_line_col(mut self, line: u32, column: u32) -> Self {
        self.location.line = Some(line);
        self.location.column = Some(column);
        self
    }

    /// Sets a position inside the string value at the pointer (see
    /// [`Location::inner`]).
    pub fn inside(mut self, line: u32, column: u32) -> Self {
        self.location.inner = Some((line, column));
        self
    }

    /// Sets the help text.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into().into_boxed_str());
        self
    }

    /// Overrides the severity.
    pub fn with_severity(mut self, severity: Severity) -> Self {
        self.severity = severity;
        self
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Escapes one JSON Pointer reference token (RFC 6901: `~` → `~0`, `/` → `~1`).
pub fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

//! The one error type of the embedding API.

use std::fmt;

use crate::diag::render::{render_human, Sources};
use crate::diag::Diagnostic;

/// What kind of failure an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input does not conform (Format 17.1): a pack, bundle, package or
    /// session has errors; [`Error::diagnostics`] says which.
    Invalid,
    /// The session settings do not fit the pack (an unknown scenario,
    /// preset or opening; Format 18.4); see [`Error::diagnostics`]. Also a
    /// tool that refuses to overwrite what exists (`troupe init` into a
    /// folder that is not empty).
    Refused,
    /// A turn was asked of a session that has ended (Format 18.5).
    Ended,
    /// A message ID, scenario or recorded session that does not exist.
    NotFound,
    /// Reading or writing a file failed.
    Io,
    /// The operation needs a cargo feature this build was made without
    /// (docs/embedding.md lists which feature gives what).
    Unsupported,
    /// A bound of Format 16 was reached (a rendering past the 16.2 budget):
    /// nothing was done; the diagnostic is LIMIT.
    Limit,
    /// The runtime could not propose (a model runtime's failure, Format
    /// 24.6): nothing of the turn was written; the diagnostic names why.
    Runtime,
    /// A CEL expression compiled but failed to evaluate (Format 11.6:
    /// division by zero, a missing key, …).
    Evaluation,
    /// Troupe broke a promise of its own (a search witness that does not
    /// replay, Format 20.5): a bug to report, not the input's fault; the
    /// command line exits 3.
    Internal,
}

impl ErrorKind {
    /// The kind's name in snake case (`invalid`, `refused`, …), for
    /// bindings that map kinds to exception classes.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Invalid => "invalid",
            ErrorKind::Refused => "refused",
            ErrorKind::Ended => "ended",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Io => "io",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Limit => "limit",
            ErrorKind::Runtime => "runtime",
            ErrorKind::Evaluation => "evaluation",
            ErrorKind::Internal => "internal",
        }
    }
}

/// An error of the embedding API: a kind, one plain sentence, and the
/// diagnostics (Format 17.2) when the input was at fault.
///
/// `Display` prints the sentence; [`Error::render`] prints the diagnostics
/// as `troupe check` does, quoting the source text where it was kept.
///
/// ```
/// let err = troupe::Pack::from_bundle("{\"troupe\": \"0.1\"").unwrap_err();
/// assert_eq!(err.kind(), troupe::ErrorKind::Invalid);
/// assert_eq!(err.diagnostics()[0].code, troupe::Code::Parse);
/// ```
#[derive(Debug)]
pub struct Error(Box<Repr>);

#[derive(Debug)]
struct Repr {
    kind: ErrorKind,
    message: String,
    diagnostics: Vec<Diagnostic>,
    sources: Sources,
}

impl Error {
    /// An error of `kind` with a plain message and no diagnostics (for
    /// adapters and the crates beside the core, such as `troupe-import`).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error(Box::new(Repr {
            kind,
            message: message.into(),
            diagnostics: Vec::new(),
            sources: Sources::new(),
        }))
    }

    /// An input that does not conform (Format 17.1), [`ErrorKind::Invalid`],
    /// with its diagnostics; the message quotes the first errors.
    pub fn from_diagnostics(diagnostics: Vec<Diagnostic>) -> Error {
        Error::invalid(diagnostics, Sources::new())
    }

    /// An input that does not conform, with its diagnostics.
    pub(crate) fn invalid(diagnostics: Vec<Diagnostic>, sources: Sources) -> Error {
        Error::with_diagnostics(
            ErrorKind::Invalid,
            "the input does not conform (Format 17.1)",
            diagnostics,
            sources,
        )
    }

    pub(crate) fn with_diagnostics(
        kind: ErrorKind,
        lead: &str,
        diagnostics: Vec<Diagnostic>,
        sources: Sources,
    ) -> Error {
        let first: Vec<String> = diagnostics
            .iter()
            .filter(|d| d.is_error())
            .take(3)
            .map(|d| format!("{}: {}", d.code.as_str(), d.message))
            .collect();
        let message = if first.is_empty() {
            lead.to_string()
        } else {
            format!("{lead}: {}", first.join("; "))
        };
        Error(Box::new(Repr {
            kind,
            message,
            diagnostics,
            sources,
        }))
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// The diagnostics (errors and warnings) that explain the failure;
    /// empty when it was not the input's fault (I/O, an ended session).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.0.diagnostics
    }

    /// The diagnostics rendered for people, as `troupe check` prints them
    /// (with source excerpts where the text was kept); the message when
    /// there are none.
    pub fn render(&self) -> String {
        if self.0.diagnostics.is_empty() {
            format!("{}\n", self.0.message)
        } else {
            render_human(&self.0.diagnostics, &self.0.sources)
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::new(ErrorKind::Io, e.to_string())
    }
}

impl From<crate::runtime::StartError> for Error {
    fn from(e: crate::runtime::StartError) -> Error {
        match e {
            crate::runtime::StartError::Refused(d) => Error::with_diagnostics(
                ErrorKind::Refused,
                "the session cannot start",
                d,
                Sources::new(),
            ),
            crate::runtime::StartError::Io(e) => {
                Error::new(ErrorKind::Io, format!("cannot write the session file: {e}"))
            }
        }
    }
}

impl From<crate::runtime::TurnError> for Error {
    fn from(e: crate::runtime::TurnError) -> Error {
        match e {
            crate::runtime::TurnError::Ended => {
                Error::new(ErrorKind::Ended, "the session has ended; no more turns")
            }
            e @ crate::runtime::TurnError::Io(_) => Error::new(ErrorKind::Io, e.to_string()),
            e @ (crate::runtime::TurnError::NotASpeaker(..)
            | crate::runtime::TurnError::NotAPlayer(..)) => {
                Error::new(ErrorKind::Refused, e.to_string())
            }
            crate::runtime::TurnError::Limit(m) => Error::with_diagnostics(
                ErrorKind::Limit,
                "a bound of Format 16 was reached",
                vec![Diagnostic::error(crate::diag::Code::Limit, m)],
                Sources::new(),
            ),
            crate::runtime::TurnError::Runtime(d) => Error::with_diagnostics(
                ErrorKind::Runtime,
                "the runtime could not propose",
                vec![d],
                Sources::new(),
            ),
            crate::runtime::TurnError::Settings(d) => Error::with_diagnostics(
                ErrorKind::Refused,
                "the settings do not fit the scenario's difficulty (Format 8.9)",
                d,
                Sources::new(),
            ),
        }
    }
}

/// The result type of the embedding API.
pub type Result<T, E = Error> = std::result::Result<T, E>;

//! The result type of every loader: a value when one could be read, and the
//! diagnostics found on the way (Format 17.2).

use crate::diag::Diagnostic;

/// What a loader returns: the value it could read (`None` when the input was
/// too broken to give one) and every diagnostic it found, in input order.
/// A value can come with diagnostics (a session whose broken lines were
/// skipped), and a `None` always comes with at least one error.
#[derive(Debug, Clone)]
pub struct Loaded<T> {
    /// The value read, if any.
    pub value: Option<T>,
    /// The problems found, in input order.
    pub diagnostics: Vec<Diagnostic>,
}

impl<T> Loaded<T> {
    /// A value with no diagnostics.
    pub fn ok(value: T) -> Self {
        Self {
            value: Some(value),
            diagnostics: Vec::new(),
        }
    }

    /// No value, one diagnostic.
    pub fn fail(diagnostic: Diagnostic) -> Self {
        Self {
            value: None,
            diagnostics: vec![diagnostic],
        }
    }

    /// True when any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Applies `f` to the value, keeping the diagnostics.
    #[cfg(any(test, feature = "internals"))]
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Loaded<U> {
        Loaded {
            value: self.value.map(f),
            diagnostics: self.diagnostics,
        }
    }
}

//! Opening what `PACK` names (Format 20): a pack directory, a bundle file
//! or a package. Sources are checked (17) and refused when they do not
//! conform; a package whose compiled form matches (14.4) is used without
//! parsing or checking its sources again.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::check::run::check_paths;
use crate::compile::package::verify_ir;
use crate::diag::render::Sources;
use crate::diag::{Diagnostic, Severity};
use crate::load::limits::MAX_PACKAGE_FILE_BYTES;
use crate::load::text::read_at_most;

/// A checked bundle ready for sessions.
#[derive(Debug, Clone)]
pub struct Opened {
    /// The path as given.
    pub name: String,
    /// The bundle (a pack's lowered bundle).
    pub bundle: Arc<Value>,
    /// Warnings (IR_MISMATCH, ADVISORY, …).
    pub warnings: Vec<Diagnostic>,
    /// True when a package's compiled form was used (no check ran).
    pub from_ir: bool,
    /// The recorded sessions (name → bytes), in code point order of names.
    pub sessions: Vec<(String, Vec<u8>)>,
}

/// Why `open` refused: the diagnostics, and the texts they quote.
#[derive(Debug, Default)]
pub struct OpenError {
    /// Every diagnostic.
    pub diagnostics: Vec<Diagnostic>,
    /// Source texts for human output.
    pub sources: Sources,
}

/// Opens a pack directory, a bundle or a package.
pub fn open(path: &Path) -> Result<Opened, OpenError> {
    let name = path.display().to_string();
    let mut warnings = Vec::new();
    if path.extension().and_then(|e| e.to_str()) == Some("troupe") && path.is_file() {
        let bytes = read_at_most(&name, path, MAX_PACKAGE_FILE_BYTES).map_err(|d| OpenError {
            diagnostics: vec![d],
            sources: Sources::new(),
        })?;
        let screened = crate::load::screen_package(&name, &bytes);
        let Some(s) = screened.value else {
            return Err(OpenError {
                diagnostics: screened.diagnostics,
                sources: Sources::new(),
            });
        };
        let sessions = package_sessions(&s.kept);
        match verify_ir(&name, &s.kept) {
            Ok(Some(bundle)) => {
                return Ok(Opened {
                    name,
                    bundle: Arc::new(bundle),
                    warnings,
                    from_ir: true,
                    sessions,
                })
            }
            Ok(None) => {}
            Err(d) => warnings.extend(d),
        }
    }
    let checked = check_paths(&[path.to_path_buf()]);
    if !checked.is_valid(false) {
        let mut diagnostics = warnings;
        diagnostics.extend(checked.diagnostics);
        return Err(OpenError {
            diagnostics,
            sources: checked.sources,
        });
    }
    warnings.extend(
        checked
            .diagnostics
            .into_iter()
            .filter(|d| d.severity == Severity::Warning),
    );
    let Some((_, bundle)) = checked.bundles.into_iter().next() else {
        return Err(OpenError::default());
    };
    let sessions = if path.is_dir() {
        dir_sessions(&path.join("sessions"))
    } else if path.extension().and_then(|e| e.to_str()) == Some("troupe") {
        std::fs::read(path)
            .ok()
            .and_then(|b| crate::load::screen_package(&name, &b).value)
            .map(|s| package_sessions(&s.kept))
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    Ok(Opened {
        name,
        bundle: Arc::new(bundle),
        warnings,
        from_ir: false,
        sessions,
    })
}

fn package_sessions(kept: &[(String, Vec<u8>)]) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = kept
        .iter()
        .filter_map(|(n, b)| Some((n.strip_prefix("sessions/")?.to_string(), b.clone())))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn dir_sessions(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.ends_with(".jsonl") && e.path().is_file() {
                if let Ok(b) = std::fs::read(e.path()) {
                    out.push((n, b));
                }
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

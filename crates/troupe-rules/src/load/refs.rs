//! File references inside a pack: `{ref: <pack-relative path>}` (Format 13,
//! 16). Resolution is lexical (no path is ever joined and opened blindly),
//! then checked against the files that exist.

use std::path::Path;

use crate::diag::Code;
#[cfg(any(test, feature = "internals"))]
use crate::diag::Diagnostic;

#[cfg(any(test, feature = "internals"))]
use super::document::Document;

/// Why a reference does not resolve: PATH_TRAVERSAL (absolute, NUL,
/// backslash, leaves the root, or passes through a symlink) or MISSING_FILE
/// (names no file), with a plain message (Format 13, 16).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RefError {
    /// PATH_TRAVERSAL or MISSING_FILE.
    pub code: Code,
    /// One plain sentence.
    pub message: String,
}

impl RefError {
    fn new(code: Code, message: String) -> Self {
        Self { code, message }
    }

    /// The diagnostic for this error at `pointer` (the `ref` field) in `doc`,
    /// with that field's line and column.
    #[cfg(any(test, feature = "internals"))]
    pub fn diagnostic(&self, doc: &Document, pointer: &str) -> Diagnostic {
        let mut d = Diagnostic::error(self.code, self.message.clone())
            .in_file(doc.file.clone())
            .at(pointer);
        if let Some(at) = doc.spans.locate(pointer) {
            d = d.at_line_col(at.line, at.column);
        }
        d
    }
}

/// Normalizes a pack-relative reference lexically: `.` and empty components
/// are dropped, `..` removes the previous component. PATH_TRAVERSAL for a NUL,
/// a backslash, an absolute path (`/x`, `C:x`) or a `..` past the root;
/// MISSING_FILE for a reference that names the root itself (`""`, `.`).
/// Returns the `/`-separated relative path (`npcs/./a/../b.yaml` → `npcs/b.yaml`).
pub fn normalize_ref(reference: &str) -> Result<String, RefError> {
    let traversal = |why: &str| {
        Err(RefError::new(
            Code::PathTraversal,
            format!("the reference `{}` {why}", reference.escape_debug()),
        ))
    };
    if reference.contains('\0') {
        return traversal("holds a NUL character");
    }
    if reference.contains('\\') {
        return traversal("holds a backslash; use `/` between folders");
    }
    let bytes = reference.as_bytes();
    if reference.starts_with('/') || (bytes.len() >= 2 && bytes[1] == b':') {
        return traversal("is absolute; references are relative to the pack root");
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in reference.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return traversal("leaves the pack root");
                }
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err(RefError::new(
            Code::MissingFile,
            format!("the reference `{reference}` names no file"),
        ));
    }
    Ok(parts.join("/"))
}

/// Resolves `reference` against the pack directory `root` on disk:
/// `normalize_ref`, then every component is looked at without following
/// links: a symlink anywhere on the way is PATH_TRAVERSAL, a missing
/// component or a final one that is not a regular file MISSING_FILE.
/// (A scanned pack resolves with `super::pack::PackFiles::resolve_ref`
/// instead, against the files it scanned.)
pub fn resolve_ref(root: &Path, reference: &str) -> Result<String, RefError> {
    let rel = normalize_ref(reference)?;
    let mut path = root.to_path_buf();
    let count = rel.split('/').count();
    for (i, part) in rel.split('/').enumerate() {
        path.push(part);
        let missing = || {
            RefError::new(
                Code::MissingFile,
                format!("the reference `{reference}` names no file in the pack"),
            )
        };
        let meta = std::fs::symlink_metadata(&path).map_err(|_| missing())?;
        if meta.file_type().is_symlink() {
            return Err(RefError::new(
                Code::PathTraversal,
                format!("the reference `{reference}` goes through a symbolic link"),
            ));
        }
        if i + 1 == count && !meta.is_file() {
            return Err(missing());
        }
    }
    Ok(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical() {
        assert_eq!(normalize_ref("npcs/./a/../b.yaml").unwrap(), "npcs/b.yaml");
        assert_eq!(normalize_ref("npcs//b.yaml").unwrap(), "npcs/b.yaml");
        for bad in [
            "../x",
            "../../etc/passwd",
            "a/../../x",
            "/etc/passwd",
            "C:x",
            "a\\b",
            "a\0b",
        ] {
            assert_eq!(
                normalize_ref(bad).unwrap_err().code,
                Code::PathTraversal,
                "{bad:?}"
            );
        }
        assert_eq!(normalize_ref("a/..").unwrap_err().code, Code::MissingFile);
        assert_eq!(normalize_ref("").unwrap_err().code, Code::MissingFile);
    }
}

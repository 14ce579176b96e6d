//! The root rule of `troupe mcp` (Format 20, docs/mcp.md): every path an
//! argument names is resolved inside `--root` and refused outside it —
//! after `..` and symbolic links are resolved — and nothing is written
//! outside it.

use std::path::{Component, Path, PathBuf};

/// Why a path argument was not resolved.
#[derive(Debug)]
pub enum PathError {
    /// The path leaves the root (`..`, an absolute path elsewhere, a
    /// symbolic link that points outside).
    Outside(String),
    /// Nothing is at the path (inside the root).
    Missing(String),
    /// The path cannot be used as asked (a folder as an output file, an
    /// unreadable parent).
    Unusable(String),
}

impl PathError {
    /// The sentence a tool result carries.
    pub fn message(&self) -> &str {
        match self {
            PathError::Outside(m) | PathError::Missing(m) | PathError::Unusable(m) => m,
        }
    }
}

/// The folder every path argument is resolved in (canonical: symbolic
/// links and `..` resolved).
#[derive(Debug, Clone)]
pub struct Root {
    dir: PathBuf,
}

impl Root {
    /// The root `dir` names; `Err` when it is not a folder that can be read.
    pub fn new(dir: &Path) -> Result<Root, String> {
        let dir = dir
            .canonicalize()
            .map_err(|e| format!("the root {} cannot be opened: {e}", dir.display()))?;
        if !dir.is_dir() {
            return Err(format!("the root {} is not a folder", dir.display()));
        }
        Ok(Root { dir })
    }

    /// The root folder (canonical).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `arg` (relative to the root, or absolute) joined and normalized
    /// without touching the file system: `Err` when `..` climbs above the
    /// root or an absolute path is elsewhere.
    fn lexical(&self, arg: &str) -> Result<PathBuf, PathError> {
        let outside = || {
            PathError::Outside(format!(
                "the path `{arg}` is outside the server's root {}; every path must be inside it",
                self.dir.display()
            ))
        };
        if arg.is_empty() || arg.contains('\0') {
            return Err(PathError::Unusable(format!("`{arg}` is not a path")));
        }
        let p = Path::new(arg);
        let mut out = if p.is_absolute() {
            PathBuf::new()
        } else {
            self.dir.clone()
        };
        for c in p.components() {
            match c {
                Component::Prefix(_) | Component::RootDir => out.push(c.as_os_str()),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !out.pop() {
                        return Err(outside());
                    }
                }
                Component::Normal(n) => out.push(n),
            }
        }
        if !out.starts_with(&self.dir) {
            return Err(outside());
        }
        Ok(out)
    }

    /// Whether `real` (canonical) is inside the root.
    fn inside(&self, real: &Path, arg: &str) -> Result<(), PathError> {
        if real.starts_with(&self.dir) {
            Ok(())
        } else {
            Err(PathError::Outside(format!(
                "the path `{arg}` leads outside the server's root {} (through a symbolic link); every path must be inside it",
                self.dir.display()
            )))
        }
    }

    /// An existing file or folder inside the root, relative to it (see
    /// [`Root::relative`]).
    pub fn existing(&self, arg: &str) -> Result<PathBuf, PathError> {
        let joined = self.lexical(arg)?;
        let real = joined.canonicalize().map_err(|_| {
            PathError::Missing(format!("no such file or folder inside the root: `{arg}`"))
        })?;
        self.inside(&real, arg)?;
        Ok(self.relative(&real))
    }

    /// A file to write inside the root: its folder exists inside the root
    /// (canonical), and the file itself is not a folder or a symbolic
    /// link. The path returned is relative to the root (the canonical
    /// folder joined with the file name).
    pub fn writable(&self, arg: &str) -> Result<PathBuf, PathError> {
        let joined = self.lexical(arg)?;
        // The root itself (`.`), or a folder (not a link to one, refused
        // below as a link): not a file to write.
        if joined == self.dir || std::fs::symlink_metadata(&joined).is_ok_and(|m| m.is_dir()) {
            return Err(PathError::Unusable(format!(
                "`{arg}` is a folder, not a file"
            )));
        }
        let (Some(parent), Some(name)) = (joined.parent(), joined.file_name()) else {
            return Err(PathError::Unusable(format!("`{arg}` does not name a file")));
        };
        let parent = parent.canonicalize().map_err(|_| {
            PathError::Missing(format!(
                "the folder of `{arg}` does not exist inside the root"
            ))
        })?;
        self.inside(&parent, arg)?;
        let target = parent.join(name);
        if let Ok(meta) = std::fs::symlink_metadata(&target) {
            if meta.file_type().is_symlink() {
                return Err(PathError::Outside(format!(
                    "`{arg}` is a symbolic link; the server writes only regular files inside its root"
                )));
            }
            if meta.is_dir() {
                return Err(PathError::Unusable(format!(
                    "`{arg}` is a folder, not a file"
                )));
            }
        }
        Ok(self.relative(&target))
    }

    /// `path` (canonical, inside the root) relative to the root, `.` for
    /// the root itself: the server runs in the root, so this is the path the
    /// library is given and its diagnostics show.
    pub fn relative(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.dir) {
            Ok(p) if p.as_os_str().is_empty() => PathBuf::from("."),
            Ok(p) => p.to_path_buf(),
            Err(_) => path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotdot_and_absolute_paths_outside_are_refused() {
        let tmp = std::env::temp_dir().join(format!("troupe-mcp-root-{}", std::process::id()));
        std::fs::create_dir_all(tmp.join("a")).unwrap();
        let root = Root::new(&tmp).unwrap();
        let outside = |r: Result<PathBuf, PathError>| matches!(r, Err(PathError::Outside(_)));
        assert!(root.existing("a").is_ok());
        assert!(root.existing("a/../a").is_ok());
        for path in ["../x", "a/../../x", "/etc/passwd"] {
            assert!(outside(root.existing(path)), "{path}");
        }
        assert!(matches!(root.existing("nope"), Err(PathError::Missing(_))));
        assert!(outside(root.writable("../out.troupe")));
        assert!(matches!(root.writable("a"), Err(PathError::Unusable(_))));
        for folder in [".", "a/..", ""] {
            assert!(
                matches!(root.writable(folder), Err(PathError::Unusable(_))),
                "{folder}"
            );
        }
        #[cfg(unix)]
        {
            let link = tmp.join("up");
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink("/", &link).unwrap();
            assert!(outside(root.existing("up/etc")));
            assert!(outside(root.writable("up/tmp/x")));
            assert!(outside(root.writable("up")));
        }
        let _ = std::fs::remove_dir_all(&tmp);
    }
}

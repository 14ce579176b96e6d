//! Writing output files so that none is ever lost (Format 16.5), for
//! programs that write what Troupe produces (session files, packages,
//! reports) as the `troupe` command does.
//!
//! - [`write_atomic`] writes a whole file through a partial file beside it
//!   and a rename: the target is either as it was or complete.
//! - [`OutputFile`] is the same for a file that grows (a session being
//!   played): bytes go to a locked partial file (`.<name>.troupe-partial`)
//!   until [`OutputFile::commit`]; dropping it uncommitted removes the
//!   partial file and leaves the target untouched.
//! - [`refuse_inputs`] refuses, before anything runs, an output that is one
//!   of the inputs (the same path, a link to it, a file inside an input
//!   folder).
//!
//! - [`read_input`] reads an input file as the load stage does: a regular
//!   file only (never a FIFO or a device), bounded in size.
//!
//! The writing half needs the `cli` or `testing` feature. Its errors are
//! [`OutputError`]s (a locked partial file, an unwritable
//! target, a system error); their `Display` is one sentence naming the
//! file.
//!
//! ```
//! let dir = tempfile::tempdir()?;
//! let out = dir.path().join("a.txt");
//! troupe::files::write_atomic(&out, b"hello\n")?;
//! assert_eq!(std::fs::read(&out)?, b"hello\n");
//! assert!(troupe::files::refuse_inputs(&[&out], &[dir.path()]).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::Path;

use super::error::{Error, ErrorKind, Result};
use crate::diag::Code;

#[cfg(any(feature = "cli", feature = "testing"))]
pub use crate::output::{partial_path, refuse_inputs, write_atomic, OutputError, OutputFile};

/// The bytes of the regular file at `path`, read as every input is
/// (Format 16): at most 64 MiB, and never from a FIFO, a device or a
/// folder, so reading cannot block or grow without bound.
///
/// Errors: [`ErrorKind::Limit`] for a larger file, [`ErrorKind::Io`]
/// otherwise (missing, not a regular file, unreadable); the message is
/// one sentence without the path.
///
/// ```
/// let bytes = troupe::files::read_input("examples/bundles/tiny.bundle.json")?;
/// assert!(bytes.starts_with(b"{"));
/// assert!(troupe::files::read_input("examples/no-such-file").is_err());
/// # Ok::<(), troupe::Error>(())
/// ```
pub fn read_input(path: impl AsRef<Path>) -> Result<Vec<u8>> {
    let path = path.as_ref();
    crate::load::text::read_bounded(&path.display().to_string(), path).map_err(|d| {
        let kind = if d.code == Code::Limit {
            ErrorKind::Limit
        } else {
            ErrorKind::Io
        };
        Error::new(kind, d.message.to_string())
    })
}

//! Writing output files so that none is ever lost (Format 16.3), for
//! programs that write what Troupe produces (session files, packages,
//! reports) as the `troupe` command does.
//!
//! - [`write_atomic`] writes a whole file through a partial file beside it
//!   and a rename: the target is either as it was or complete.
//! - [`OutputFile`] is the same for a file that grows (a session being
//!   played): bytes go to a locked partial file (`.<name>.troupe-partial`)
//!   until [`OutputFile::commit`]; dropping it uncommitted removes the
//!   partial file and leaves the target untouched.
//! - [`check_outputs`] refuses, before anything runs, an output that is
//!   one of the inputs (the same path, a link to it, a file inside an input
//!   folder), two outputs that are one file, and an existing file that is
//!   not of the output's kind ([`OutputKind`]); [`refuse_inputs`] is the
//!   same for outputs of any kind.
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
use serde_json::Value;

use crate::diag::Code;
use crate::model::script::ScriptRoot;

#[cfg(feature = "testing")]
pub use crate::output::{
    check_outputs, partial_path, refuse_inputs, write_atomic, OutputError, OutputFile, OutputKind,
};

/// The bytes of the regular file at `path`, read as every input is
/// (Format 16): at most 64 MiB, and never from a FIFO, a device or a
/// folder, so reading cannot block or grow without bound.
///
/// Errors: [`ErrorKind::Limit`] for a larger file, [`ErrorKind::Io`]
/// otherwise (missing, not a regular file, unreadable); the message is
/// one sentence without the path.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
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

/// Reads a script of player inputs (Format 20, `troupe run --script`):
/// one input per line (`\r\n` accepted, empty lines skipped), or a YAML
/// list of strings for a `.yaml`/`.yml` file; at most 64 MiB. A YAML script
/// with its root (a mapping, [`read_script_with_root`]) gives its inputs.
///
/// Errors: [`ErrorKind::Io`] when the file cannot be read;
/// [`ErrorKind::Limit`] when it is over 64 MiB; [`ErrorKind::Invalid`] when
/// it is not UTF-8 or (YAML) not a script. The message says which.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// let inputs = troupe::files::read_script("examples/scripts/used-car-safety.txt")?;
/// assert!(!inputs.is_empty());
/// # Ok::<(), troupe::Error>(())
/// ```
pub fn read_script(path: impl AsRef<Path>) -> Result<Vec<String>> {
    Ok(read_script_with_root(path)?.inputs)
}

/// A script (Format 20) with the root it was written for: what `troupe
/// explore --witness` writes, so that `troupe run PACK --script FILE`
/// replays a witness with no other flag (20.5).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Script {
    /// The inputs, one per turn.
    pub inputs: Vec<String>,
    /// The scenario it plays, when the script says.
    pub scenario: Option<String>,
    /// The session seed (18.4), when the script says.
    pub seed: Option<u64>,
    /// The opening of the root, when the script says.
    pub opening: Option<String>,
    /// The difficulty preset of the root, when the script says.
    pub difficulty: Option<String>,
}

/// Reads a script as [`read_script`] does, and a YAML script's root: a
/// `.yaml`/`.yml` script that is a mapping `{inputs: [string], scenario?:
/// id, seed?: int ≥ 0, opening?: id, difficulty?: id}` (Format 20) gives
/// them; any other key is [`ErrorKind::Invalid`] naming it.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("w.yaml");
/// std::fs::write(&path, "scenario: used_car\nseed: 3\ndifficulty: hard\ninputs:\n  - walk away\n").unwrap();
/// let script = troupe::files::read_script_with_root(&path)?;
/// assert_eq!(script.inputs, ["walk away"]);
/// assert_eq!((script.seed, script.difficulty.as_deref()), (Some(3), Some("hard")));
/// # Ok::<(), troupe::Error>(())
/// ```
pub fn read_script_with_root(path: impl AsRef<Path>) -> Result<Script> {
    let path = path.as_ref();
    read_script_text(path).map_err(|(kind, m)| Error::new(kind, m))
}

fn read_script_text(path: &Path) -> std::result::Result<Script, (ErrorKind, String)> {
    let invalid = |m: &str| (ErrorKind::Invalid, format!("{}: {m}", path.display()));
    // A script is untrusted input: bounded like a session file (Format 16),
    // and only a regular file is read (a FIFO would block, `/dev/zero`
    // never ends).
    const MAX_SCRIPT_BYTES: u64 = 64 << 20;
    let shown = path.display().to_string();
    let bytes =
        crate::load::text::read_at_most(&shown, path, MAX_SCRIPT_BYTES).map_err(|d| {
            match d.code {
                Code::Limit => (
                    ErrorKind::Limit,
                    format!("{shown}: a script may have at most {MAX_SCRIPT_BYTES} bytes"),
                ),
                Code::ForbiddenFile => (ErrorKind::Invalid, d.message.to_string()),
                _ => (ErrorKind::Io, format!("cannot read {shown}: {}", d.message)),
            }
        })?;
    let yaml = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    );
    if yaml {
        // The YAML reader takes mappings: read the script as the value of a
        // key (a list, or a mapping with its root).
        let text = String::from_utf8(bytes).map_err(|_| invalid("the script is not UTF-8"))?;
        let mut wrapped = String::from("script:\n");
        for line in text.lines() {
            wrapped.push_str("  ");
            wrapped.push_str(line);
            wrapped.push('\n');
        }
        let l = crate::load::parse_yaml(&path.display().to_string(), wrapped.as_bytes());
        let Some(doc) = l.value else {
            return Err(invalid(
                l.diagnostics
                    .first()
                    .map_or("the script is not YAML", |d| &d.message),
            ));
        };
        let strings = |v: Option<&Value>| -> Option<Vec<String>> {
            v?.as_array()?
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect()
        };
        let shape = "a YAML script is a list of strings, or a mapping {inputs: [string], \
                     scenario?, seed?, opening?, difficulty?}";
        let script = doc.value.get("script");
        if let Some(inputs) = strings(script) {
            return Ok(Script {
                inputs,
                ..Script::default()
            });
        }
        let Some(map) = script.and_then(Value::as_object) else {
            return Err(invalid(shape));
        };
        if let Some(k) = map.keys().find(|k| !ScriptRoot::KEYS.contains(&k.as_str())) {
            return Err(invalid(&format!(
                "`{k}` is not a key of a script{}: {shape}",
                crate::diag::suggest::one_of(k, ScriptRoot::KEYS)
            )));
        }
        let root = ScriptRoot::read(map);
        let [scenario, opening, difficulty] = root.ids().map(|(key, v)| match v {
            None => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(invalid(&format!("`{key}` of a script is an ID (a string)"))),
        });
        let seed = match root.seed {
            None => None,
            Some(v) => Some(
                v.as_u64()
                    .ok_or_else(|| invalid("`seed` of a script is an integer ≥ 0"))?,
            ),
        };
        return Ok(Script {
            inputs: strings(root.inputs)
                .ok_or_else(|| invalid("`inputs` of a script is a list of strings"))?,
            scenario: scenario?,
            seed,
            opening: opening?,
            difficulty: difficulty?,
        });
    }
    let text = String::from_utf8(bytes).map_err(|_| invalid("the script is not UTF-8"))?;
    Ok(Script {
        inputs: text
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect(),
        ..Script::default()
    })
}

//! Opening what `PACK` names (Format 20): a pack directory, a bundle file
//! or a package. Sources are checked (17) and refused when they do not
//! conform; a package whose compiled form matches (14.4) is used without
//! parsing or checking its sources again.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::safety::Safety;

use serde_json::Value;

use crate::check::run::check_paths;
use crate::compile::package::{
    compile_scenario, ir_is_compilation_of, read_ir, verify_ir, PackageIr, ScenarioIr,
};
use crate::diag::render::Sources;
use crate::diag::{Code, Diagnostic, Severity};
use crate::load::compiled::ir_mismatch;
use crate::load::limits::MAX_PACKAGE_FILE_BYTES;
use crate::load::text::read_at_most;
use crate::load::LazyBundle;

/// A checked bundle ready for sessions.
#[derive(Debug, Clone, Default)]
pub struct Opened {
    /// The path as given.
    pub name: String,
    /// The bundle (a pack's lowered bundle). From a package whose IR is
    /// used, `bundle.json` is parsed only when something needs it.
    pub bundle: LazyBundle,
    /// Warnings (IR_MISMATCH, ADVISORY, …).
    pub warnings: Vec<Diagnostic>,
    /// True when a package's compiled form was used (no check ran).
    pub from_ir: bool,
    /// The package's compiled form (Format 14.4), when it was used:
    /// sessions with default seating start from it without parsing,
    /// checking or lowering anything.
    pub ir: Option<Arc<PackageIr>>,
    /// The recorded sessions (name → bytes), in code point order of names.
    pub sessions: Vec<(String, Vec<u8>)>,
    /// Compiled safety rules by scenario ID, shared by the sessions started
    /// from this bundle (regular expressions are compiled once).
    pub safety_cache: Arc<Mutex<HashMap<String, Arc<Safety>>>>,
    /// Compiled runtime parts by scenario and seating (the header's
    /// `players` and `characters`), shared by the sessions started from
    /// this bundle: their key sets are built once, on first use.
    pub runtime_cache: Arc<Mutex<HashMap<String, Arc<crate::compile::runtime::RuntimeIr>>>>,
    /// The expressions the check of the bundle parsed: compiling it and
    /// starting sessions from it parse none of them again.
    pub parsed: Arc<crate::cel::parse::ParseCache>,
    /// The scenarios compiled for default seating (Format 18.4), by the
    /// scenario ID a start named (`""` for none: the first scenario): from
    /// a package's `ir.json`, or, for a pack opened from its sources (or a
    /// package whose compiled form was not used), compiled by the first
    /// session that needs it and shared by every later one (`None`: the
    /// scenario does not run from a compiled form, and each session
    /// compiles it for its own header). Only IDs of the bundle's scenarios
    /// are kept, so it holds at most one entry per scenario, plus `""`.
    pub compiled: Arc<Mutex<HashMap<String, Option<Arc<DefaultScenario>>>>>,
}

/// A scenario compiled for default seating (Format 18.4), shared by every
/// session an opened pack starts with default seating
/// ([`Opened::default_scenario`]): its IR is all they need.
#[derive(Debug)]
pub struct DefaultScenario {
    /// The compiled scenario (a package's, or the pack's own compilation).
    pub ir: Arc<ScenarioIr>,
}

impl Opened {
    /// A bundle the caller has already checked (Format 17.1), ready for
    /// [`crate::runtime::Session::start`].
    pub fn from_checked(name: impl Into<String>, bundle: Value) -> Opened {
        Opened {
            name: name.into(),
            bundle: LazyBundle::from_value(bundle),
            ..Opened::default()
        }
    }

    /// Scenario `id` (the bundle's first for `None`) compiled for default
    /// seating (Format 14.4, 18.4): from the package's `ir.json` when it was
    /// used, else compiled from the checked bundle once per opened pack
    /// (every session after the first shares it). `None` when the scenario
    /// does not exist or cannot run with default seating: a session of it
    /// is then checked and compiled for its own header.
    pub fn default_scenario(&self, id: Option<&str>) -> Option<Arc<DefaultScenario>> {
        // `None` (the first scenario) is kept under "", which no scenario
        // ID is (Format 3.1).
        let key = id.unwrap_or("");
        let mut cache = self.compiled.lock().ok()?;
        if let Some(done) = cache.get(key) {
            return done.clone();
        }
        let made = match &self.ir {
            // A scenario the IR lacks is found lacking again at no cost:
            // it is not remembered.
            Some(ir) => Some(self.share(ir.scenario(id)?)),
            // An ID the bundle lacks is not remembered either.
            None => self.compile_scenario(id)?.map(|ir| self.share(Arc::new(ir))),
        };
        cache.insert(key.to_string(), made.clone());
        made
    }

    /// `ir`, for sharing.
    fn share(&self, ir: Arc<ScenarioIr>) -> Arc<DefaultScenario> {
        Arc::new(DefaultScenario { ir })
    }

    /// Scenario `id` of the checked bundle compiled for default seating:
    /// `None` when the bundle has no such scenario, `Some(None)` when it
    /// does not run with default seating.
    fn compile_scenario(&self, id: Option<&str>) -> Option<Option<ScenarioIr>> {
        let bundle = &*self.bundle;
        let list = bundle.get("scenarios").and_then(Value::as_array)?;
        let index = match id {
            Some(id) => list
                .iter()
                .position(|s| s.get("id").and_then(Value::as_str) == Some(id))?,
            None if list.is_empty() => return None,
            None => 0,
        };
        // The check's parses are reused: nothing is parsed again.
        Some(self.parsed.scope(|| compile_scenario(bundle, index)))
    }

    /// Scenario `id` as written in the bundle.
    pub fn scenario_raw(&self, id: &str) -> Option<&Value> {
        self.bundle
            .get("scenarios")?
            .as_array()?
            .iter()
            .find(|s| s.get("id").and_then(Value::as_str) == Some(id))
    }

    /// The compiled safety rules of scenario `id` whose policy is `policy`;
    /// an error when a term or pattern does not compile.
    pub fn safety(&self, id: &str, policy: Option<&Value>) -> Result<Arc<Safety>, String> {
        if let Ok(cache) = self.safety_cache.lock() {
            if let Some(s) = cache.get(id) {
                return Ok(s.clone());
            }
        }
        let s = Arc::new(Safety::compile(policy)?);
        if let Ok(mut cache) = self.safety_cache.lock() {
            cache.insert(id.to_string(), s.clone());
        }
        Ok(s)
    }
}

/// Why `open` refused: the diagnostics, and the texts they quote.
#[derive(Debug, Default)]
pub struct OpenError {
    /// Every diagnostic.
    pub diagnostics: Vec<Diagnostic>,
    /// Source texts for human output.
    pub sources: Sources,
}

/// How [`open_with`] treats a package's compiled form (Format 14.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenOptions {
    /// Use `ir.json` when its hashes and versions match (the default);
    /// `false` always checks and compiles `bundle.json` (`troupe compile`).
    pub use_ir: bool,
    /// Also recompile `bundle.json` and use `ir.json` only when it is byte
    /// for byte that compilation (`--verify-ir`); otherwise IR_MISMATCH and
    /// the bundle is compiled afresh.
    pub verify_ir: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            use_ir: true,
            verify_ir: false,
        }
    }
}

/// Opens a pack directory, a bundle or a package.
pub fn open(path: &Path) -> Result<Opened, OpenError> {
    open_with(path, OpenOptions::default())
}

/// [`open`] with `options`.
pub fn open_with(path: &Path, options: OpenOptions) -> Result<Opened, OpenError> {
    let name = path.display().to_string();
    let mut warnings = Vec::new();
    if options.use_ir
        && path.extension().and_then(|e| e.to_str()) == Some("troupe")
        && path.is_file()
    {
        let bytes = read_at_most(&name, path, MAX_PACKAGE_FILE_BYTES).map_err(|d| OpenError {
            diagnostics: vec![d],
            sources: Sources::new(),
        })?;
        if let Some(opened) = open_ir(&name, Some(path), &bytes, options, &mut warnings)? {
            return Ok(opened);
        }
    }
    let mut checked = check_paths(&[path.to_path_buf()]);
    // The compiled form is not used from here on: what the check says of it
    // (IR_MISMATCH) does not bear on running bundle.json; what the loader
    // found wrong with it is already in `warnings`.
    checked.diagnostics.retain(|d| d.code != Code::IrMismatch);
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
    let parsed = checked.parsed;
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
        bundle: LazyBundle::from_value(bundle),
        warnings,
        from_ir: false,
        sessions,
        parsed,
        ..Opened::default()
    })
}

/// The compiled form of the package `bytes` when its hashes and versions
/// match (Format 14.4; with `options.verify_ir`, also byte for byte what
/// `bundle.json` compiles to); `None`, with IR_MISMATCH in `warnings`,
/// when the bundle must be checked and compiled afresh. A package read
/// from the file at `path` keeps no `bundle.json` once its hash is checked
/// (it is read again if a caller needs the bundle, [`LazyBundle`]); one
/// held only in memory keeps its bytes.
fn open_ir(
    name: &str,
    path: Option<&Path>,
    bytes: &[u8],
    options: OpenOptions,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Option<Opened>, OpenError> {
    let screened = crate::load::screen_package(name, bytes);
    let Some(mut s) = screened.value else {
        return Err(OpenError {
            diagnostics: screened.diagnostics,
            sources: Sources::new(),
        });
    };
    let sessions = package_sessions(&s.kept);
    let entry = |n: &str| {
        s.kept
            .iter()
            .find(|(k, _)| k == n)
            .map_or(&[][..], |(_, b)| b.as_slice())
    };
    match verify_ir(name, &s.kept) {
        Ok(Some(_))
            if options.verify_ir
                && !ir_is_compilation_of(entry("bundle.json"), entry("ir.json")) =>
        {
            warnings.push(ir_mismatch(
                name,
                "ir.json",
                "",
                "ir.json is not what bundle.json compiles to (--verify-ir); the IR is not used and bundle.json is compiled afresh",
            ));
        }
        Ok(Some(hash)) => match read_ir(entry("ir.json"), &hash) {
            Ok(ir) => {
                let bundle = match path {
                    Some(p) => LazyBundle::from_package_file(
                        std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()),
                        hash,
                    ),
                    // The screened entry's bytes move into the bundle (a
                    // copy of a large bundle.json cost a fresh mapping's
                    // page faults).
                    None => LazyBundle::from_bytes(
                        s.kept
                            .iter_mut()
                            .find(|(k, _)| k == "bundle.json")
                            .map(|(_, b)| std::mem::take(b))
                            .unwrap_or_default(),
                    ),
                };
                return Ok(Some(Opened {
                    name: name.to_string(),
                    bundle,
                    warnings: std::mem::take(warnings),
                    from_ir: true,
                    ir: Some(Arc::new(ir)),
                    sessions,
                    ..Opened::default()
                }))
            }
            Err(f) => warnings.push(ir_mismatch(name, "ir.json", &f.pointer, &f.message)),
        },
        Ok(None) => {}
        Err(d) => warnings.extend(d),
    }
    Ok(None)
}

/// [`open_with`] for a package held in memory (`name` names it in
/// diagnostics): the compiled form when it matches (Format 14.4), else
/// `bundle.json` checked and compiled afresh.
pub fn open_package_bytes(
    name: &str,
    bytes: &[u8],
    options: OpenOptions,
) -> Result<Opened, OpenError> {
    let mut warnings = Vec::new();
    if options.use_ir {
        if let Some(opened) = open_ir(name, None, bytes, options, &mut warnings)? {
            return Ok(opened);
        }
    }
    let loaded = crate::load::parse_package(name, bytes);
    let mut diagnostics = warnings;
    diagnostics.extend(loaded.diagnostics);
    let Some(pkg) = loaded.value else {
        return Err(OpenError {
            diagnostics,
            sources: Sources::new(),
        });
    };
    let parsed = Arc::new(crate::cel::parse::ParseCache::default());
    let (diags, bundle) = parsed.scope(|| crate::check::run::check_package(&pkg));
    diagnostics.extend(diags.into_iter().filter(|d| d.code != Code::IrMismatch));
    let mut sources = Sources::new();
    if let Some(b) = &pkg.bundle {
        sources.add(b.file.clone(), b.text.clone());
    }
    match bundle {
        Some(bundle) if !diagnostics.iter().any(Diagnostic::is_error) => {
            let sessions = crate::load::screen_package(name, bytes)
                .value
                .map(|s| package_sessions(&s.kept))
                .unwrap_or_default();
            diagnostics.retain(|d| d.severity == Severity::Warning);
            Ok(Opened {
                name: name.to_string(),
                bundle: LazyBundle::from_value(bundle),
                warnings: diagnostics,
                from_ir: false,
                sessions,
                parsed,
                ..Opened::default()
            })
        }
        _ => Err(OpenError {
            diagnostics,
            sources,
        }),
    }
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

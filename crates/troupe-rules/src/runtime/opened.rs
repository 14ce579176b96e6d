//! What an opened pack is (Format 20, 14.4): the checked bundle (or a
//! package's, read when first needed), its compiled scenarios and the
//! sessions it ships. [`crate::open`] makes one; sessions start from it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::safety::Safety;
use crate::compile::package::{PackageIr, ScenarioIr};
use crate::compile::Compiled;
use crate::diag::render::Sources;
use crate::diag::Diagnostic;
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
    /// How this pack compiles what its IR does not hold (`None`: it
    /// compiles nothing, and a session its IR does not cover is refused).
    pub seating: Option<Seating>,
}

/// How an opened pack compiles what its IR does not hold (Format 17.1,
/// 18.4): a scenario for default seating, or the story of a session whose
/// header no compiled scenario covers. Both check what they compile and
/// refuse what does not conform; the runtime only calls them, so it
/// imports no checker. [`crate::open`] gives every pack it opens the
/// pipeline's ([`crate::pipeline::SEATING`]).
#[derive(Debug, Clone, Copy)]
pub struct Seating {
    /// Scenario `index` of a checked bundle compiled for default seating;
    /// `None` when it does not run with default seating (no players, or
    /// its default header does not check).
    pub default_scenario: fn(bundle: &Value, index: usize) -> Option<ScenarioIr>,
    /// The story and session of a session about to start with `header`,
    /// checked first: when `plain`, its players are plain characters of
    /// the bundle and only the header is checked, else the header is
    /// checked whole. Refused with the diagnostics when it does not
    /// conform.
    pub start: fn(bundle: &Value, header: &Value, plain: bool) -> Result<Compiled, Vec<Diagnostic>>,
}

/// A scenario compiled for default seating (Format 18.4), shared by every
/// session an opened pack starts with default seating
/// ([`Opened::default_scenario`]): its IR is all they need.
#[derive(Debug)]
pub struct DefaultScenario {
    /// The compiled scenario (a package's, or the pack's own compilation).
    pub ir: Arc<ScenarioIr>,
    /// The text of a default-seating session's header (Format 18.4, 18.8)
    /// up to its `difficulty` and `seed`, the part every such session
    /// shares: made by the first start ([`DefaultScenario::header_head`]).
    head: std::sync::OnceLock<String>,
}

impl DefaultScenario {
    /// The header of a default-seating session of this scenario (Format
    /// 18.4) without `difficulty` and `seed`, the members in the order
    /// they are written: `troupe`, `kind`, `scenario`, then `players` and
    /// `characters` when not empty.
    pub fn header_start(&self) -> serde_json::Map<String, Value> {
        let sc = &self.ir;
        let mut h = serde_json::Map::new();
        h.insert("troupe".into(), "0.1".into());
        h.insert("kind".into(), "session".into());
        h.insert("scenario".into(), Value::String(sc.id.to_string()));
        if !sc.players.is_empty() {
            h.insert("players".into(), Value::Array(sc.players.clone()));
        }
        if !sc.characters.is_empty() {
            h.insert("characters".into(), Value::Array(sc.characters.clone()));
        }
        h
    }

    /// [`DefaultScenario::header_start`] as Troupe JSON without its
    /// closing `}` (written from the scenario's parts, not copied into a
    /// value), made once: a start appends its own members.
    pub fn header_head(&self) -> &str {
        use crate::model::json::{into_string, write_string, write_value};
        self.head.get_or_init(|| {
            let sc = &self.ir;
            let mut out = Vec::with_capacity(256);
            out.extend_from_slice(br#"{"troupe":"0.1","kind":"session","scenario":"#);
            write_string(&sc.id, &mut out);
            for (name, list) in [("players", &sc.players), ("characters", &sc.characters)] {
                if list.is_empty() {
                    continue;
                }
                out.push(b',');
                write_string(name, &mut out);
                out.push(b':');
                for (i, v) in list.iter().enumerate() {
                    out.push(if i == 0 { b'[' } else { b',' });
                    write_value(v, &mut out);
                }
                out.push(b']');
            }
            into_string(out)
        })
    }
}

impl Opened {
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
            None => self
                .compile_scenario(id)?
                .map(|ir| self.share(Arc::new(ir))),
        };
        cache.insert(key.to_string(), made.clone());
        made
    }

    /// `ir`, for sharing.
    fn share(&self, ir: Arc<ScenarioIr>) -> Arc<DefaultScenario> {
        Arc::new(DefaultScenario {
            ir,
            head: std::sync::OnceLock::new(),
        })
    }

    /// Scenario `id` of the checked bundle compiled for default seating:
    /// `None` when the bundle has no such scenario, `Some(None)` when it
    /// does not run with default seating.
    fn compile_scenario(&self, id: Option<&str>) -> Option<Option<ScenarioIr>> {
        let bundle = &*self.bundle;
        let index = match id {
            Some(id) => crate::model::scenario_index(bundle, id)?,
            None if crate::model::array(bundle, "scenarios").is_empty() => return None,
            None => 0,
        };
        let compile = self.seating?.default_scenario;
        // The check's parses are reused: nothing is parsed again.
        Some(self.parsed.scope(|| compile(bundle, index)))
    }

    /// Scenario `id` of the bundle, read into the typed model.
    pub fn scenario(&self, id: &str) -> Option<crate::model::Scenario> {
        serde::Deserialize::deserialize(crate::model::scenario(&self.bundle, id)?).ok()
    }

    /// The compiled safety rules of scenario `id` whose policy is `policy`;
    /// an error when a term or pattern does not compile.
    pub fn safety(&self, id: &str, policy: Option<&Value>) -> Result<Arc<Safety>, String> {
        if let Ok(cache) = self.safety_cache.lock()
            && let Some(s) = cache.get(id)
        {
            return Ok(s.clone());
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

/// How [`Pack::open_with`](crate::Pack::open_with) treats a package's compiled form (Format 14.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenOptions {
    /// Use `ir.json` when its hashes and versions match (the default);
    /// `false` always checks and compiles `bundle.json` (`troupe compile`).
    pub use_ir: bool,
    /// Also recompile `bundle.json` and use `ir.json` only when it is byte
    /// for byte that compilation (`--verify-ir`); otherwise IR_MISMATCH and
    /// the bundle is compiled afresh.
    pub verify_ir: bool,
    /// How many threads check and compile a pack's scenarios and read its
    /// files (docs/performance.md, Run AU): 0 (the default) for the cores
    /// the process may use, 1 for all on the calling thread. Whatever the
    /// number, the diagnostics and the compiled bytes are the same.
    pub jobs: usize,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            use_ir: true,
            verify_ir: false,
            jobs: 0,
        }
    }
}

impl OpenOptions {
    /// Sets [`OpenOptions::use_ir`].
    pub fn use_ir(mut self, yes: bool) -> Self {
        self.use_ir = yes;
        self
    }
    /// Sets [`OpenOptions::verify_ir`].
    pub fn verify_ir(mut self, yes: bool) -> Self {
        self.verify_ir = yes;
        self
    }
    /// Sets [`OpenOptions::jobs`].
    pub fn jobs(mut self, jobs: usize) -> Self {
        self.jobs = jobs;
        self
    }
}

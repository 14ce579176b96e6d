//! The compiled package's orchestration (Format 14.4, 18.4): each
//! scenario's default header is checked before its story is compiled, so
//! this lives in the pipeline (the one module that runs `check` before
//! `compile`); [`crate::compile::package`] holds the IR, its encodings and
//! its validation.

use std::sync::Arc;

use serde_json::Value;

use crate::compile::package::{
    bundle_bytes, content_hash, package_bytes, to_ir_bin, to_ir_json_bytes, PackageIr, ScenarioIr,
    IR_VERSION,
};
use crate::compile::runtime::RuntimeIr;
use crate::compile::safety::Safety;

/// The default header's players and characters of scenario `sc` (Format
/// 18.4) and the header itself (without difficulty and seed).
fn default_header(sc: &Value) -> (Vec<Value>, Vec<Value>, Value) {
    let (players, characters) =
        crate::model::session::default_players(sc, crate::model::session::DEFAULT_PLAYER_NAME);
    let h = crate::model::session::header_start(sc, players.clone(), characters.clone());
    (players, characters, Value::Object(h))
}

/// Compiles every scenario of a checked `bundle` for default seating.
pub fn compile_package_ir(bundle: &Value) -> PackageIr {
    compile_package_ir_hashed(bundle, content_hash(&bundle_bytes(bundle)))
}

/// [`compile_package_ir`] when the caller has already hashed the bundle's
/// `bundle.json` bytes (`bundle_hash`, [`content_hash`]).
fn compile_package_ir_hashed(bundle: &Value, bundle_hash: String) -> PackageIr {
    let list = crate::model::scenarios(bundle);
    // Built once: each scenario's header is checked against it.
    let namespace = crate::check::session::Namespace::of(bundle);
    // A pack's scenarios share one policy (Format 19): a run of scenarios
    // whose policies are equal compiles it once, whichever thread gets
    // there first (a compiled policy depends on the policy alone).
    let policies = PolicyRuns::of(list);
    // Each scenario compiles on its own (`crate::par`); the IR lists them
    // in bundle order, as one thread gives them.
    let scenarios = crate::par::map(list, |index, sc| {
        compile_scenario_in(bundle, &namespace, index, sc, Some(&policies)).map(Arc::new)
    })
    .into_iter()
    .flatten()
    .collect();
    PackageIr {
        ir_version: IR_VERSION.to_string(),
        troupe_version: env!("CARGO_PKG_VERSION").to_string(),
        bundle_hash,
        scenarios,
    }
}

/// Scenario `index` of a checked `bundle` compiled for default seating
/// (Format 18.4), as [`compile_package_ir`] compiles it; `None` when it
/// does not run with default seating (no players, or its default header
/// does not check). A pack opened from its sources compiles each scenario
/// this way once ([`crate::runtime::Opened::default_scenario`]).
pub fn compile_scenario(bundle: &Value, index: usize) -> Option<ScenarioIr> {
    let sc = crate::model::scenarios(bundle).get(index)?;
    let namespace = crate::check::session::Namespace::of(bundle);
    compile_scenario_in(bundle, &namespace, index, sc, None)
}

/// The compiled safety policies of a bundle's scenarios, one per run of
/// consecutive scenarios whose policies (`safety`, absent or null alike)
/// are equal, each compiled on first use; `Err` when the policy does not
/// compile.
struct PolicyRuns {
    /// By scenario index: its run.
    run_of: Vec<usize>,
    runs: Vec<std::sync::OnceLock<Result<Arc<Safety>, ()>>>,
}

impl PolicyRuns {
    fn of(list: &[Value]) -> PolicyRuns {
        fn policy(sc: &Value) -> Option<&Value> {
            sc.get("safety").filter(|v| !v.is_null())
        }
        let mut run_of = Vec::with_capacity(list.len());
        let mut runs = 0;
        for (i, sc) in list.iter().enumerate() {
            if i == 0 || policy(sc) != policy(&list[i - 1]) {
                runs += 1;
            }
            run_of.push(runs - 1);
        }
        PolicyRuns {
            run_of,
            runs: (0..runs).map(|_| std::sync::OnceLock::new()).collect(),
        }
    }

    /// Scenario `index`'s compiled `policy`.
    fn get(&self, index: usize, policy: Option<&Value>) -> Option<Arc<Safety>> {
        let run = self.runs.get(*self.run_of.get(index)?)?;
        run.get_or_init(|| Safety::compile(policy).map(Arc::new).map_err(|_| ()))
            .clone()
            .ok()
    }
}

/// Scenario `index` (`sc`) compiled for default seating; `policies`, when
/// given, holds the policy compiled for the run of scenarios `sc` is in
/// (used again by every scenario of the run), else it is compiled here.
fn compile_scenario_in(
    bundle: &Value,
    namespace: &crate::check::session::Namespace<'_>,
    index: usize,
    sc: &Value,
    policies: Option<&PolicyRuns>,
) -> Option<ScenarioIr> {
    let (players, characters, header) = default_header(sc);
    let (diags, story) =
        crate::check::session::check_plain_header_at(bundle, namespace, index, &header);
    if diags.iter().any(crate::diag::Diagnostic::is_error) {
        return None;
    }
    let story = story?;
    let ir = crate::compile::compile_story(&story).ok()?;
    if ir.players.is_empty() {
        return None;
    }
    let policy = story.scenario.safety.as_ref();
    let safety = match policies {
        Some(p) => p.get(index, policy)?,
        None => Arc::new(Safety::compile(policy).ok()?),
    };
    let runtime = RuntimeIr::compile(&story, &ir, Some(safety)).ok()?;
    Some(ScenarioIr {
        id: Arc::from(crate::model::id_of(sc).unwrap_or("")),
        index,
        players,
        characters,
        default_preset: sc
            .pointer("/difficulty/default")
            .and_then(Value::as_str)
            .map(str::to_string),
        story: Arc::new(ir),
        runtime: Arc::new(runtime),
    })
}

/// The bytes of `ir.json` for a checked `bundle`: `compile_package_ir`
/// as compact JSON and `\n`. The same bundle gives the same bytes.
pub fn ir_bytes(bundle: &Value) -> Vec<u8> {
    to_ir_json_bytes(&compile_package_ir(bundle))
}

/// A package's compiled entries compared with what compiling its
/// `bundle.json` bytes `bundle` gives (Format 14.4: only this proves that
/// `ir.json` or `ir.compact` is the bundle's compilation; the hashes only
/// detect corruption and partial edits), compiling once:
/// whether `ir_json` is byte for byte the compilation's `ir.json`, and
/// whether `compact` (the IR `ir.compact` encodes, after its record) is
/// byte for byte its encoding ([`to_ir_bin`]; `false` when not given). A
/// `bundle.json` that is not JSON compiles to nothing: `(false, false)`.
pub fn compiled_forms_match(bundle: &[u8], ir_json: &[u8], compact: Option<&[u8]>) -> (bool, bool) {
    let Ok(v) = serde_json::from_slice::<Value>(bundle) else {
        return (false, false);
    };
    let ir = compile_package_ir(&v);
    (
        to_ir_json_bytes(&ir) == ir_json,
        compact.is_some_and(|c| to_ir_bin(&ir) == c),
    )
}

/// Writes the package of a checked `bundle` and its sessions (`name` →
/// bytes; names without the `sessions/` prefix): `bundle.json`,
/// `ir.compact`, `ir.json`, `manifest.json` and the sessions (Format
/// 14.4; `package_bytes`).
pub fn write_package(bundle: &Value, sessions: &[(String, Vec<u8>)]) -> std::io::Result<Vec<u8>> {
    let bundle = crate::compile::canonical::canonical_bundle(bundle);
    let bundle_json = bundle_bytes(&bundle);
    let ir = compile_package_ir_hashed(&bundle, content_hash(&bundle_json));
    // The canonical bundle is freed while the package is written
    // (docs/performance.md, Run AZ).
    crate::par::join(
        move || drop(bundle),
        || package_bytes(bundle_json, ir, sessions),
    )
    .1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scenarios of one package whose policies are equal share one
    /// compiled policy; a scenario with another policy compiles its own;
    /// and each scenario's IR is what compiling it alone gives (Run AE).
    #[test]
    fn scenarios_with_one_policy_share_its_compilation() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let text = std::fs::read(root.join("examples/bundles/harbor-lights.bundle.json")).unwrap();
        let mut bundle: Value = serde_json::from_slice(&text).unwrap();
        let first = bundle["scenarios"][0].clone();
        let mut other = first.clone();
        other["id"] = "harbor_lights_2".into();
        let mut third = first.clone();
        third["id"] = "harbor_lights_3".into();
        third["safety"]["categories"][0]["id"] = "another".into();
        bundle["scenarios"] = Value::Array(vec![first, other, third]);
        let ir = compile_package_ir(&bundle);
        assert_eq!(ir.scenarios.len(), 3);
        let safety = |i: usize| &ir.scenarios[i].runtime.safety;
        assert!(Arc::ptr_eq(safety(0), safety(1)));
        assert!(!Arc::ptr_eq(safety(1), safety(2)));
        for (i, sc) in ir.scenarios.iter().enumerate() {
            let alone = compile_scenario(&bundle, i).unwrap();
            assert_eq!(
                serde_json::to_string(&**sc).unwrap(),
                serde_json::to_string(&alone).unwrap(),
                "scenario {i}"
            );
        }
    }
}

//! Conditions that can never hold (Format 17.6) as `troupe check` reports
//! them on a pack: the example negotiation with an ending that needs
//! `deal_progress >= 150` (its max is 100) is a DEAD_LOGIC warning, located
//! in the scenario file, and `--strict` fails on it.

use crate::common;

use common::{edit, pack, troupe};
use serde_json::Value;

fn report(args: &[&str]) -> (i32, Value) {
    let out = troupe(args);
    let r = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), r)
}

fn dead_logic(r: &Value) -> Vec<&Value> {
    r["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "DEAD_LOGIC")
        .collect()
}

#[test]
fn an_ending_past_the_max_is_reported_and_strict_fails() {
    let (_tmp, root) = pack("everyday-negotiation");
    edit(
        &root,
        "scenarios/used_car_negotiation.yaml",
        "ending_conditions:\n",
        "ending_conditions:\n  dream_deal: \"state.deal_progress >= 150\"\n",
    );
    let path = root.to_str().unwrap();
    let (code, r) = report(&["check", path, "--json"]);
    assert_eq!((code, r["valid"].as_bool()), (0, Some(true)), "{r}");
    let found = dead_logic(&r);
    assert_eq!(found.len(), 1, "{r}");
    let d = found[0];
    let msg = d["message"].as_str().unwrap();
    assert!(msg.contains("`dream_deal` can never happen"), "{msg}");
    assert!(
        msg.contains(
            "it needs `state.deal_progress >= 150`, but deal_progress stays within 0…100 (its max)"
        ),
        "{msg}"
    );
    assert!(
        d["file"]
            .as_str()
            .unwrap()
            .ends_with("scenarios/used_car_negotiation.yaml"),
        "{d}"
    );
    assert!(d["line"].as_u64().is_some(), "{d}");
    let (code, r) = report(&["check", "--strict", path, "--json"]);
    assert_eq!((code, r["valid"].as_bool()), (1, Some(false)), "{r}");
}

#[test]
fn the_example_packs_have_no_unreachable_condition() {
    for name in [
        "everyday-negotiation",
        "harbor-lights",
        "job-interview",
        "tenants-meeting",
    ] {
        let (code, r) = report(&["check", &format!("examples/packs/{name}"), "--json"]);
        assert_eq!(code, 0, "{r}");
        assert!(dead_logic(&r).is_empty(), "{name}: {r}");
    }
}

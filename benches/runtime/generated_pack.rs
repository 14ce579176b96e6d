//! The generated pack the runtime benchmarks and `examples/perf_probe.rs`
//! measure (docs/performance.md, Runs C, I, N): one file, included by
//! both with `#[path]`, so the two always measure the same pack.

use std::path::Path;

/// A pack of `n` scenarios, each like the negotiation scenario: four
/// variables, four threshold events, two outcomes, six rules. Each
/// scenario's variables have names of their own (`deal_0007`), so no two
/// scenarios share an expression's text, as in a real pack: what is parsed
/// once per text is still parsed once per scenario.
pub fn generate(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir.join("scenarios")).unwrap();
    std::fs::create_dir_all(dir.join("npcs")).unwrap();
    std::fs::write(
        dir.join("manifest.yaml"),
        "schema_version: \"0.1\"\npack_id: bench.generated\nname: Generated\nversion: \"0.1.0\"\ndescription: generated\nauthors: [bench]\nlicense: CC0-1.0\ncontent_rating: general\nentry_scenarios: [scenarios/s0000.yaml]\nsafety: {policy: safety/policy.yaml}\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("safety")).unwrap();
    std::fs::write(
        dir.join("safety/policy.yaml"),
        "schema_version: \"0.1\"\npolicy_id: p\ncontent_rating_cap: general\ncategories:\n  - {id: threats, action: stop, terms: [I will hurt you]}\nglobal_rules: [minor_safety, crisis_support]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("npcs/vendor.yaml"),
        "schema_version: \"0.1\"\nnpc_id: vendor\nname: Rosa\nfictional: true\nage_band: adult\n",
    )
    .unwrap();
    for i in 0..n {
        let text = format!(
            r#"schema_version: "0.1"
scenario_id: s{i:04}
title: Scenario {i}
npc: {{ref: npcs/vendor.yaml}}
opening: {{npc_says: "Hello, {{{{user}}}}!"}}
state:
  variables:
    deal_{i:04}: {{type: int, default: 0, min: 0, max: 100}}
    mood_{i:04}: {{type: int, default: 50, min: 0, max: 100}}
    patience_{i:04}: {{type: int, default: 60, min: 0, max: 100}}
    count_{i:04}: {{type: int, default: 0}}
events:
  - {{id: warm, when: {{type: variable_above, variable: mood_{i:04}, threshold: 70}}, changes: [{{add: {{deal_{i:04}: 10}}}}]}}
  - {{id: close, when: "state.deal_{i:04} > 40", changes: [{{add: {{count_{i:04}: 1}}}}]}}
  - {{id: tired, when: "state.count_{i:04} > 2", repeat: true, changes: [{{add: {{patience_{i:04}: -5}}}}]}}
  - {{id: warn, when: {{type: variable_below, variable: patience_{i:04}, threshold: 25}}}}
ending_conditions:
  won: {{type: variable_above, variable: deal_{i:04}, threshold: 80}}
  lost: "state.patience_{i:04} < 10"
emotion: "state.patience_{i:04} < 25 ? 'annoyed' : 'calm'"
rules:
  - {{id: rude, keywords: [ridiculous], priority: 9, changes: [{{add: {{patience_{i:04}: -20}}}}], replies: ["Really, {{{{user}}}}?"]}}
  - {{id: offer, pattern: '\b8,?[0-9]{{3}}\b', priority: 4, changes: [{{add: {{deal_{i:04}: 25, count_{i:04}: 1}}}}], replies: ["Closer."]}}
  - {{id: praise, keywords: [lovely, nice], priority: 2, changes: [{{add: {{mood_{i:04}: 12}}}}], replies: ["Thanks!", "Kind of you."]}}
  - {{id: facts, keywords: [service, listed], changes: [{{add: {{deal_{i:04}: 15}}}}], replies: ["Fair point."]}}
  - {{id: stall, keywords: [think], when: "state.patience_{i:04} > 30", replies: ["Take your time."]}}
  - {{id: any, changes: [{{add: {{patience_{i:04}: -3}}}}], replies: ["So?"]}}
"#
        );
        std::fs::write(dir.join(format!("scenarios/s{i:04}.yaml")), text).unwrap();
    }
}

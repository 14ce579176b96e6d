//! Coverage (Format 21.6): the items of each scenario (events, outcomes,
//! rules, entries, openings, condition branches), what the runs reached,
//! and the report (`reached/total` per kind, the percent, the not-reached
//! list, the scenarios without tests).

use std::collections::BTreeSet;

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;

use super::branches::split;
use crate::check::pack::origin::Origins;

/// The kinds of items, in report order.
pub const KINDS: [&str; 6] = [
    "events", "outcomes", "rules", "entries", "openings", "branches",
];

/// One coverage item: its kind, its key (what runs record) and its label in
/// the not-reached list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// One of [`KINDS`].
    pub kind: &'static str,
    /// The key a run records (`event cross`, `branch 3:1:true`).
    pub key: String,
    /// The label (`event cross`, `branch scenarios/a.yaml /events/0/when #2 'state.b' false`).
    pub label: String,
}

/// Where a condition is evaluated, for instrumented runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    /// An event's `when` (index in the scenario's events).
    Event(usize),
    /// An outcome's `when`.
    Outcome(usize),
    /// A rule's `when`.
    Rule(usize),
    /// An entry's `when`, with its owner (`None`: the scenario).
    Entry,
    /// A variable's `derived`.
    Derived,
    /// The scenario's `emotion`.
    Emotion,
    /// A rubric criterion's `score`.
    Score,
}

/// A condition of a scenario (Format 21.6 "Conditions and operands").
#[derive(Debug, Clone)]
pub struct Condition {
    /// Its number within the scenario (keys use it).
    pub index: usize,
    /// Where it is evaluated.
    pub site: Site,
    /// The owner whose `self` it evaluates with (`None`: the scenario).
    pub owner: Option<String>,
    /// Its CEL source.
    pub src: String,
    /// The pack file and pointer it was written at.
    pub file: String,
    /// The pointer in that file.
    pub pointer: String,
    /// The entry's `<owner>/<id>` for entry conditions; the rule's ID for
    /// rule conditions.
    pub entry: Option<String>,
}

/// The items and conditions of one scenario.
#[derive(Debug, Clone, Default)]
pub struct ScenarioModel {
    /// Items in kind order, then declaration order.
    pub items: Vec<Item>,
    /// The conditions with operands (and entry conditions).
    pub conditions: Vec<Condition>,
    /// The enabled entries that can be active (constant or with keys), in
    /// declaration order (Format 5.3).
    pub entries: Vec<EntryModel>,
}

/// What decides whether an entry is active (Format 5.2–5.4).
#[derive(Debug, Clone, Default)]
pub struct EntryModel {
    /// `<owner>/<id>`.
    pub key: String,
    /// `constant: true`.
    pub constant: bool,
    /// `keys`.
    pub keys: Vec<String>,
    /// `secondary_keys`, when present.
    pub secondary: Option<Vec<String>>,
    /// `logic` (`and_any` by default).
    pub logic: String,
    /// `scan_depth` (1 by default).
    pub scan_depth: usize,
    /// `case_sensitive`.
    pub case_sensitive: bool,
    /// `whole_words` (true by default).
    pub whole_words: bool,
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    v.and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect()
    })
}

/// Every scenario's items, from a lowered bundle.
#[derive(Debug, Clone, Default)]
pub struct Model {
    /// By scenario ID, in bundle order.
    pub scenarios: IndexMap<String, ScenarioModel>,
}

/// A condition found: site, owner, source, bundle pointer, entry key.
type Found = (Site, Option<String>, String, String, Option<String>);

fn ids(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.get("id").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

impl Model {
    /// Builds the model of every scenario of `bundle` (lowered from a pack;
    /// `origins` maps bundle pointers back to pack files).
    pub fn new(bundle: &Value, origins: &Origins) -> Model {
        let mut model = Model::default();
        let empty = Vec::new();
        let worlds = bundle
            .get("worlds")
            .and_then(Value::as_array)
            .unwrap_or(&empty);
        let characters = bundle
            .get("characters")
            .and_then(Value::as_array)
            .unwrap_or(&empty);
        let scenarios = bundle
            .get("scenarios")
            .and_then(Value::as_array)
            .unwrap_or(&empty);
        for (si, s) in scenarios.iter().enumerate() {
            let Some(id) = s.get("id").and_then(Value::as_str) else {
                continue;
            };
            let mut m = ScenarioModel::default();
            let base = format!("/scenarios/{si}");
            let mut conds: Vec<Found> = Vec::new();
            for (kind, field, site) in [
                ("events", "events", Site::Event as fn(usize) -> Site),
                ("outcomes", "outcomes", Site::Outcome),
                ("rules", "rules", Site::Rule),
            ] {
                let singular = kind.trim_end_matches('s');
                for (i, x) in ids(s.get(field)).iter().enumerate() {
                    m.items.push(Item {
                        kind,
                        key: format!("{singular} {x}"),
                        label: format!("{singular} {x}"),
                    });
                    if let Some(w) = s
                        .pointer(&format!("/{field}/{i}/when"))
                        .and_then(Value::as_str)
                    {
                        conds.push((
                            site(i),
                            None,
                            w.into(),
                            format!("{base}/{field}/{i}/when"),
                            (field == "rules").then(|| x.clone()),
                        ));
                    }
                }
            }
            // Entries: the scenario's, then its worlds', in `worlds` order.
            let mut owners: Vec<(String, String, &Value)> = vec![(id.to_string(), base.clone(), s)];
            for w in s.get("worlds").and_then(Value::as_array).unwrap_or(&empty) {
                let wid = w.as_str().unwrap_or_default();
                if let Some((wi, wv)) = worlds
                    .iter()
                    .enumerate()
                    .find(|(_, x)| x.get("id").and_then(Value::as_str) == Some(wid))
                {
                    owners.push((wid.to_string(), format!("/worlds/{wi}"), wv));
                }
            }
            for (owner, obase, ov) in &owners {
                for (i, e) in ids(ov.get("entries")).iter().enumerate() {
                    let key = format!("{owner}/{e}");
                    let ev = ov.pointer(&format!("/entries/{i}"));
                    let constant =
                        ev.and_then(|x| x.get("constant")).and_then(Value::as_bool) == Some(true);
                    let enabled =
                        ev.and_then(|x| x.get("enabled")).and_then(Value::as_bool) != Some(false);
                    let keys = strings(ev.and_then(|x| x.get("keys"))).unwrap_or_default();
                    if enabled && (constant || !keys.is_empty()) {
                        let flag = |k: &str, d: bool| {
                            ev.and_then(|x| x.get(k))
                                .and_then(Value::as_bool)
                                .unwrap_or(d)
                        };
                        m.entries.push(EntryModel {
                            key: key.clone(),
                            constant,
                            keys,
                            secondary: strings(ev.and_then(|x| x.get("secondary_keys"))),
                            logic: ev
                                .and_then(|x| x.get("logic"))
                                .and_then(Value::as_str)
                                .unwrap_or("and_any")
                                .to_string(),
                            scan_depth: ev
                                .and_then(|x| x.get("scan_depth"))
                                .and_then(crate::model::integer_u64)
                                .map_or(1, |n| n.clamp(1, 1 << 16) as usize),
                            case_sensitive: flag("case_sensitive", false),
                            whole_words: flag("whole_words", true),
                        });
                    }
                    m.items.push(Item {
                        kind: "entries",
                        key: format!("entry {key}"),
                        label: format!("entry {key}"),
                    });
                    if let Some(w) = ov
                        .pointer(&format!("/entries/{i}/when"))
                        .and_then(Value::as_str)
                    {
                        let self_id = (owner != id).then(|| owner.clone());
                        conds.push((
                            Site::Entry,
                            self_id,
                            w.into(),
                            format!("{obase}/entries/{i}/when"),
                            Some(key),
                        ));
                    }
                }
            }
            for o in ids(s.get("openings")) {
                m.items.push(Item {
                    kind: "openings",
                    key: format!("opening {o}"),
                    label: format!("opening {o}"),
                });
            }
            // Derived variables in use: the scenario's, each cast character's,
            // each used world's.
            let mut var_owners: Vec<(Option<String>, String, &Value)> =
                vec![(None, base.clone(), s)];
            for c in s.get("cast").and_then(Value::as_array).unwrap_or(&empty) {
                let Some(cid) = c.get("character").and_then(Value::as_str) else {
                    continue;
                };
                if let Some((ci, cv)) = characters
                    .iter()
                    .enumerate()
                    .find(|(_, x)| x.get("id").and_then(Value::as_str) == Some(cid))
                {
                    var_owners.push((Some(cid.to_string()), format!("/characters/{ci}"), cv));
                }
            }
            for (owner, obase, _) in owners.iter().skip(1) {
                if let Some(wv) = worlds
                    .iter()
                    .find(|x| x.get("id").and_then(Value::as_str) == Some(owner))
                {
                    var_owners.push((Some(owner.clone()), obase.clone(), wv));
                }
            }
            for (owner, obase, ov) in &var_owners {
                for (i, v) in ov
                    .get("variables")
                    .and_then(Value::as_array)
                    .unwrap_or(&empty)
                    .iter()
                    .enumerate()
                {
                    if let Some(d) = v.get("derived").and_then(Value::as_str) {
                        conds.push((
                            Site::Derived,
                            owner.clone(),
                            d.into(),
                            format!("{obase}/variables/{i}/derived"),
                            None,
                        ));
                    }
                }
            }
            if let Some(e) = s.get("emotion").and_then(Value::as_str) {
                conds.push((
                    Site::Emotion,
                    None,
                    e.into(),
                    format!("{base}/emotion"),
                    None,
                ));
            }
            for (i, c) in s
                .pointer("/rubric/criteria")
                .and_then(Value::as_array)
                .unwrap_or(&empty)
                .iter()
                .enumerate()
            {
                if let Some(sc) = c.get("score").and_then(Value::as_str) {
                    conds.push((
                        Site::Score,
                        None,
                        sc.into(),
                        format!("{base}/rubric/criteria/{i}/score"),
                        None,
                    ));
                }
            }
            for (index, (site, owner, src, ptr, entry)) in conds.into_iter().enumerate() {
                let (file, pointer) = origins.translate(&ptr).unwrap_or((String::new(), ptr));
                let sp = split(&src);
                for (n, r) in sp.operands.iter().enumerate() {
                    let text = src.get(r.clone()).unwrap_or_default();
                    for b in [true, false] {
                        m.items.push(Item {
                            kind: "branches",
                            key: branch_key(index, n, b),
                            label: format!("branch {file} {pointer} #{} '{text}' {b}", n + 1),
                        });
                    }
                }
                m.conditions.push(Condition {
                    index,
                    site,
                    owner,
                    src,
                    file,
                    pointer,
                    entry,
                });
            }
            model.scenarios.insert(id.to_string(), m);
        }
        model
    }
}

/// The key of a branch item: condition `c`, operand `n` (from 0), the value.
pub fn branch_key(c: usize, n: usize, value: bool) -> String {
    format!("branch {c}:{n}:{value}")
}

/// What runs reached: item keys per scenario, and the scenarios used.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hits {
    /// Reached item keys by scenario.
    pub reached: IndexMap<String, BTreeSet<String>>,
    /// Scenarios some test ran.
    pub used: BTreeSet<String>,
}

impl Hits {
    /// Marks `scenario` as used by a test.
    pub fn use_scenario(&mut self, scenario: &str) {
        self.used.insert(scenario.to_string());
    }

    /// Records an item key reached in `scenario`.
    pub fn hit(&mut self, scenario: &str, key: impl Into<String>) {
        self.used.insert(scenario.to_string());
        self.reached
            .entry(scenario.to_string())
            .or_default()
            .insert(key.into());
    }

    /// Adds everything `other` reached.
    pub fn merge(&mut self, other: &Hits) {
        self.used.extend(other.used.iter().cloned());
        for (s, keys) in &other.reached {
            self.reached
                .entry(s.clone())
                .or_default()
                .extend(keys.iter().cloned());
        }
    }
}

/// One kind's numbers (Format 21.6 `--json`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct KindReport {
    /// Items reached.
    pub reached: usize,
    /// All items.
    pub total: usize,
    /// Labels of the items not reached, in declaration order.
    pub not_reached: Vec<String>,
}

/// One scenario's coverage.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ScenarioReport {
    /// The scenario's ID.
    pub scenario: String,
    /// reached / total × 100 (100 with no items), one decimal.
    pub percent: f64,
    /// Per kind, in [`KINDS`] order.
    pub kinds: IndexMap<&'static str, KindReport>,
    /// The exact ratio (reached, total), for `coverage.minimum`.
    #[serde(skip)]
    pub ratio: (usize, usize),
}

/// The coverage report (Format 21.6).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    /// `"all"`, or the one test's name with `--test`.
    pub scope: String,
    /// The scenarios some test used, in bundle order.
    pub scenarios: Vec<ScenarioReport>,
    /// Scenarios no fixture, session or playtest uses.
    pub without_tests: Vec<String>,
}

/// One scenario's report from the model and what was reached.
pub fn scenario_report(
    scenario: &str,
    m: &ScenarioModel,
    reached: Option<&BTreeSet<String>>,
) -> ScenarioReport {
    let mut kinds = IndexMap::new();
    for k in KINDS {
        kinds.insert(
            k,
            KindReport {
                reached: 0,
                total: 0,
                not_reached: Vec::new(),
            },
        );
    }
    let (mut got, mut all) = (0, 0);
    for item in &m.items {
        let Some(k) = kinds.get_mut(item.kind) else {
            continue;
        };
        k.total += 1;
        all += 1;
        if reached.is_some_and(|r| r.contains(&item.key)) {
            k.reached += 1;
            got += 1;
        } else {
            k.not_reached.push(item.label.clone());
        }
    }
    let percent = if all == 0 {
        100.0
    } else {
        (got as f64 * 1000.0 / all as f64).round() / 10.0
    };
    ScenarioReport {
        scenario: scenario.to_string(),
        percent,
        kinds,
        ratio: (got, all),
    }
}

/// The report over `hits`: every used scenario, and the unused ones.
pub fn report(model: &Model, hits: &Hits, scope: &str) -> Report {
    let mut scenarios = Vec::new();
    let mut without_tests = Vec::new();
    for (id, m) in &model.scenarios {
        if hits.used.contains(id) {
            scenarios.push(scenario_report(id, m, hits.reached.get(id)));
        } else {
            without_tests.push(id.clone());
        }
    }
    Report {
        scope: scope.to_string(),
        scenarios,
        without_tests,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn items_and_percent() {
        let bundle = json!({"scenarios": [{"id": "s",
            "events": [{"id": "cross", "when": "state.a > 1 && (state.b || state.c)"}],
            "outcomes": [{"id": "win", "when": {"variable_above": "a"}}],
            "openings": [{"id": "dawn"}]}]});
        let model = Model::new(&bundle, &Origins::default());
        let m = &model.scenarios["s"];
        // 1 event + 1 outcome + 1 opening + 4 operands × 2.
        assert_eq!(m.items.len(), 11);
        let mut hits = Hits::default();
        hits.hit("s", "event cross");
        hits.hit("s", branch_key(0, 0, false));
        let r = report(&model, &hits, "all");
        assert_eq!(r.scenarios[0].kinds["events"].reached, 1);
        assert_eq!(r.scenarios[0].kinds["branches"].reached, 1);
        assert_eq!(r.scenarios[0].kinds["branches"].total, 8);
        assert_eq!(r.scenarios[0].percent, 18.2);
        assert!(r.scenarios[0].kinds["openings"]
            .not_reached
            .contains(&"opening dawn".to_string()));
        assert!(r.scenarios[0].kinds["branches"].not_reached.contains(
            &" /scenarios/0/events/0/when #2 '(state.b || state.c)' true"
                .replace(" /", "branch  /")
        ));
        let unused = report(&model, &Hits::default(), "all");
        assert_eq!(unused.without_tests, vec!["s".to_string()]);
    }
}

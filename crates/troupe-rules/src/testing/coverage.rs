//! Coverage (Format 21.6): the items of each scenario (events, outcomes,
//! rules, speakers, entries, openings, condition branches), what the runs reached,
//! and the report (`reached/total` per kind, the percent, the not-reached
//! list, the scenarios without tests).

use std::collections::{BTreeSet, HashMap};

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;

use crate::engine::observe::Report as Observed;
use crate::engine::Recorder;
use crate::load::origin::Origins;
use crate::model::array;
use crate::model::items::{Cast, Criterion, Event, LoreEntry, VarItem};

/// The kinds of items, in report order.
pub const KINDS: [&str; 7] = [
    "events", "outcomes", "rules", "speakers", "entries", "openings", "branches",
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

/// Where a condition is evaluated (Format 21.6 "Conditions and operands").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    /// An event's `when` (index in the scenario's events).
    Event(usize),
    /// An outcome's `when`.
    Outcome(usize),
    /// A rule's `when`.
    Rule(usize),
    /// An entry's `when`.
    Entry,
    /// A variable's `derived`.
    Derived,
    /// The scenario's `emotion`.
    Emotion,
    /// A rubric criterion's `score`.
    Score,
}

/// A condition of a scenario (Format 21.6 "Conditions and operands").
#[allow(dead_code)] // read by the tests only
#[derive(Debug, Clone)]
pub struct Condition {
    /// Its number within the scenario (keys use it).
    pub index: usize,
    /// Where it is evaluated.
    pub site: Site,
    /// The key of its site, as the engine and runtime report it
    /// ([`crate::engine::Site::key`]: `event cross`, `derived kai.mood`).
    pub key: String,
    /// The owner whose `self` it evaluates with (`None`: the scenario).
    pub owner: Option<String>,
    /// Its CEL source.
    pub src: String,
    /// The pack file and pointer it was written at.
    pub file: String,
    /// The pointer in that file.
    pub pointer: String,
    /// Its operands' texts (Format 21.6), from the compiled program's
    /// lowered tree ([`crate::cel::Program::operands`]).
    pub operands: Vec<String>,
}

/// The items and conditions of one scenario.
#[derive(Debug, Clone, Default)]
pub struct ScenarioModel {
    /// Items in kind order, then declaration order.
    pub items: Vec<Item>,
    /// The conditions (CEL strings) of the scenario.
    pub conditions: Vec<Condition>,
    /// Condition index by site key.
    sites: HashMap<String, usize>,
}

impl ScenarioModel {
    /// The item keys a run's reports reach (Format 21.6): the operand
    /// values seen, the turns' rules, active entries, firings, openings.
    pub fn reached(&self, rec: &Recorder) -> Vec<String> {
        rec.reports
            .iter()
            .filter_map(|r| match r {
                Observed::Seen {
                    site,
                    operand,
                    value,
                } => self
                    .sites
                    .get(site)
                    .map(|&c| branch_key(c, *operand, *value)),
                Observed::Rule(id) => Some(format!("rule {id}")),
                Observed::Entry(k) => Some(format!("entry {k}")),
                Observed::Event(id) => Some(format!("event {id}")),
                Observed::Outcome(id) => Some(format!("outcome {id}")),
                Observed::Opening(id) => Some(format!("opening {id}")),
                Observed::Speaker(id) => Some(format!("speaker {id}")),
            })
            .collect()
    }
}

/// Every scenario's items, from a lowered bundle.
#[derive(Debug, Clone, Default)]
pub struct Model {
    /// By scenario ID, in bundle order.
    pub scenarios: IndexMap<String, ScenarioModel>,
}

/// A condition found: site, owner, source, bundle pointer, site key.
type Found = (Site, Option<String>, String, String, String);

/// The IDs of the items of `v[field]`, in order.
fn ids(v: &Value, field: &str) -> Vec<String> {
    array(v, field)
        .iter()
        .filter_map(|x| crate::model::id_of(x).map(str::to_string))
        .collect()
}

impl Model {
    /// Builds the model of every scenario of `bundle` (lowered from a pack;
    /// `origins` maps bundle pointers back to pack files).
    pub fn new(bundle: &Value, origins: &Origins) -> Model {
        let mut model = Model::default();
        let worlds = crate::model::worlds(bundle);
        let characters = crate::model::characters(bundle);
        for (si, s) in crate::model::scenarios(bundle).iter().enumerate() {
            let Some(id) = crate::model::id_of(s) else {
                continue;
            };
            let mut m = ScenarioModel::default();
            // The story compiled as the runtime compiles it: conditions are
            // compiled against it for their operands.
            let engine = crate::pipeline::compile_checked(bundle, None, Some(id)).ok();
            let base = format!("/scenarios/{si}");
            let mut conds: Vec<Found> = Vec::new();
            for (kind, field, site) in [
                ("events", "events", Site::Event as fn(usize) -> Site),
                ("outcomes", "outcomes", Site::Outcome),
                ("rules", "rules", Site::Rule),
            ] {
                let singular = kind.trim_end_matches('s');
                for (i, x) in ids(s, field).iter().enumerate() {
                    m.items.push(Item {
                        kind,
                        key: format!("{singular} {x}"),
                        label: format!("{singular} {x}"),
                    });
                    // The i-th item's `when`, when written as text.
                    if let Some(w) = array(s, field)
                        .get(i)
                        .and_then(|x| Event::read(x).when)
                        .and_then(Value::as_str)
                    {
                        conds.push((
                            site(i),
                            None,
                            w.into(),
                            format!("{base}/{field}/{i}/when"),
                            format!("{singular} {x}"),
                        ));
                    }
                }
            }
            // Speakers: each character entry no player plays, in cast order.
            for c in Cast::all(s) {
                if let (Some(cid), false) = (c.character, c.player) {
                    m.items.push(Item {
                        kind: "speakers",
                        key: format!("speaker {cid}"),
                        label: format!("speaker {cid}"),
                    });
                }
            }
            // Entries: the scenario's, then its worlds', in `worlds` order.
            let mut owners: Vec<(String, String, &Value)> = vec![(id.to_string(), base.clone(), s)];
            for w in array(s, "worlds") {
                let wid = w.as_str().unwrap_or_default();
                if let Some((wi, wv)) = worlds
                    .iter()
                    .enumerate()
                    .find(|(_, x)| crate::model::id_of(x) == Some(wid))
                {
                    owners.push((wid.to_string(), format!("/worlds/{wi}"), wv));
                }
            }
            for (owner, obase, ov) in &owners {
                for (i, e) in ids(ov, "entries").iter().enumerate() {
                    let key = format!("{owner}/{e}");
                    m.items.push(Item {
                        kind: "entries",
                        key: format!("entry {key}"),
                        label: format!("entry {key}"),
                    });
                    if let Some(w) = array(ov, "entries")
                        .get(i)
                        .and_then(|x| LoreEntry::read(x).when)
                    {
                        let self_id = (owner != id).then(|| owner.clone());
                        conds.push((
                            Site::Entry,
                            self_id,
                            w.into(),
                            format!("{obase}/entries/{i}/when"),
                            format!("entry {key}"),
                        ));
                    }
                }
            }
            for o in ids(s, "openings") {
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
            for c in Cast::all(s) {
                let Some(cid) = c.character else {
                    continue;
                };
                if let Some((ci, cv)) = characters
                    .iter()
                    .enumerate()
                    .find(|(_, x)| crate::model::id_of(x) == Some(cid))
                {
                    var_owners.push((Some(cid.to_string()), format!("/characters/{ci}"), cv));
                }
            }
            for (owner, obase, _) in owners.iter().skip(1) {
                if let Some(wv) = worlds
                    .iter()
                    .find(|x| crate::model::id_of(x) == Some(owner))
                {
                    var_owners.push((Some(owner.clone()), obase.clone(), wv));
                }
            }
            for (owner, obase, ov) in &var_owners {
                for (i, v) in array(ov, "variables").iter().map(VarItem::read).enumerate() {
                    if let Some(d) = v.derived {
                        let vid = v.id.unwrap_or_default();
                        let name = match owner {
                            Some(o) => format!("{o}.{vid}"),
                            None => vid.to_string(),
                        };
                        conds.push((
                            Site::Derived,
                            owner.clone(),
                            d.into(),
                            format!("{obase}/variables/{i}/derived"),
                            format!("derived {name}"),
                        ));
                    }
                }
            }
            if let Some(e) = crate::model::items::emotion(s) {
                conds.push((
                    Site::Emotion,
                    None,
                    e.into(),
                    format!("{base}/emotion"),
                    "emotion".to_string(),
                ));
            }
            for (i, c) in Criterion::all(s).into_iter().flatten().enumerate() {
                if let Some(sc) = c.score {
                    let cid = c.id.unwrap_or_default();
                    conds.push((
                        Site::Score,
                        None,
                        sc.into(),
                        format!("{base}/rubric/criteria/{i}/score"),
                        format!("score {cid}"),
                    ));
                }
            }
            for (index, (site, owner, src, ptr, key)) in conds.into_iter().enumerate() {
                let (file, pointer) = origins.translate(&ptr).unwrap_or((String::new(), ptr));
                // The operands of the program the runtime evaluates: the
                // same source compiled for the same owner.
                let hit = matches!(site, Site::Entry | Site::Rule(_));
                let operands: Vec<String> = engine
                    .as_ref()
                    .and_then(|e| e.compile_condition(&src, owner.as_deref(), hit).ok())
                    .map(|p| {
                        let p = p.program;
                        (0..p.operands().len())
                            .map(|n| p.operand_text(n).to_string())
                            .collect()
                    })
                    .unwrap_or_default();
                for (n, text) in operands.iter().enumerate() {
                    for b in [true, false] {
                        m.items.push(Item {
                            kind: "branches",
                            key: branch_key(index, n, b),
                            label: format!("branch {file} {pointer} #{} '{text}' {b}", n + 1),
                        });
                    }
                }
                m.sites.insert(key.clone(), index);
                m.conditions.push(Condition {
                    index,
                    site,
                    key,
                    owner,
                    src,
                    file,
                    pointer,
                    operands,
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

    /// Records in `scenario` what a run's reports reach (see
    /// `ScenarioModel::reached`); the scenario counts as used.
    pub fn record(&mut self, scenario: &str, model: Option<&ScenarioModel>, rec: &Recorder) {
        self.use_scenario(scenario);
        let none = ScenarioModel::default();
        for key in model.unwrap_or(&none).reached(rec) {
            self.hit(scenario, key);
        }
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
            "variables": [
                {"id": "a", "type": "int", "default": 0},
                {"id": "b", "type": "bool", "default": false},
                {"id": "c", "type": "bool", "default": false}],
            "events": [{"id": "cross", "when": "state.a > 1 && (state.b || state.c)"}],
            "outcomes": [{"id": "win", "when": "state.a > 5"}],
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

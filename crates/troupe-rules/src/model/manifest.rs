//! A pack's manifest (Format 13.1) and the few fields the pack checks read
//! from its other files (the ID of each file kind, Format 13.0; a scenario
//! file's `scenario_id`, 13.2; a policy's `content_rating_cap`, 13.4), as
//! the stages read them: borrowed from the loaded document, each field read
//! on its own, so a field of the wrong type reads as absent (its schema
//! diagnostic is reported already: Format 17.1). Each format field name is
//! written here once.

use serde_json::Value;

use super::{array, integer_u64, list, text};

/// The manifest's path in a pack (Format 13.1).
pub const FILE: &str = "manifest.yaml";

/// A pack's `manifest.yaml` (Format 13.1).
#[derive(Debug, Clone, Copy, Default)]
pub struct Manifest<'a> {
    /// The pack's name.
    pub name: Option<&'a str>,
    /// `pack_id` (`official.my_pack`).
    pub pack_id: Option<&'a str>,
    /// The pack's semantic version.
    pub version: Option<&'a str>,
    /// Its licence.
    pub license: Option<&'a str>,
    /// `general`, `teen` or `mature`.
    pub content_rating: Option<&'a str>,
    /// `entry_scenarios` as written: paths of scenario files (an item that
    /// is no string is kept, so that the others keep their index).
    pub entry_scenarios: &'a [Value],
    /// `safety.policy`: the path of the pack's safety policy file.
    pub safety_policy: Option<&'a str>,
    /// `players.max`, when an integer ≥ 0 (Format 2.2).
    pub players_max: Option<u64>,
    /// `explore` (Format 20.5), when written.
    pub explore: Option<Explore<'a>>,
}

impl<'a> Manifest<'a> {
    /// Reads the manifest document `v`.
    pub fn read(v: &'a Value) -> Manifest<'a> {
        Manifest {
            name: text(v, "name"),
            pack_id: text(v, "pack_id"),
            version: text(v, "version"),
            license: text(v, "license"),
            content_rating: text(v, "content_rating"),
            entry_scenarios: array(v, "entry_scenarios"),
            safety_policy: v.get("safety").and_then(|s| text(s, "policy")),
            players_max: v
                .get("players")
                .and_then(|p| p.get("max"))
                .and_then(integer_u64),
            explore: v.get("explore").map(Explore::read),
        }
    }

    /// Reads the manifest `m`, if there is one (a pack without a manifest
    /// reads as one with no fields).
    pub fn of(m: Option<&'a Value>) -> Manifest<'a> {
        m.map(Manifest::read).unwrap_or_default()
    }

    /// The entry scenarios' paths with their index in `entry_scenarios`;
    /// an item that is no string is left out.
    pub fn entries(&self) -> impl Iterator<Item = (usize, &'a str)> + use<'a> {
        self.entry_scenarios
            .iter()
            .enumerate()
            .filter_map(|(k, e)| Some((k, e.as_str()?)))
    }
}

/// The manifest's `explore` settings (Format 20.5), each as written.
#[derive(Debug, Clone, Copy, Default)]
pub struct Explore<'a> {
    /// `depth`, when a non-negative integer.
    pub depth: Option<u64>,
    /// `states`, when a non-negative integer.
    pub states: Option<u64>,
    /// `seed`, when a non-negative integer.
    pub seed: Option<u64>,
    /// `reachable`, when a list.
    pub reachable: Option<&'a [Value]>,
    /// `unreachable`, when a list.
    pub unreachable: Option<&'a [Value]>,
}

impl<'a> Explore<'a> {
    /// Reads the `explore` block `v`.
    pub fn read(v: &'a Value) -> Explore<'a> {
        let count = |k: &str| v.get(k).and_then(Value::as_u64);
        Explore {
            depth: count("depth"),
            states: count("states"),
            seed: count("seed"),
            reachable: list(v, "reachable"),
            unreachable: list(v, "unreachable"),
        }
    }

    /// The strings of `reachable`, when it is a list.
    #[cfg(test)]
    pub fn reachable(&self) -> Option<impl Iterator<Item = &'a str> + use<'a>> {
        self.reachable.map(super::strings)
    }

    /// The strings of `unreachable`, when it is a list.
    #[cfg(test)]
    pub fn unreachable(&self) -> Option<impl Iterator<Item = &'a str> + use<'a>> {
        self.unreachable.map(super::strings)
    }
}

/// The ID field of each pack file kind, by folder (Format 13.0: two files
/// of one kind with the same ID are DUPLICATE_ID at this field).
pub const ID_FIELDS: &[(&str, &str)] = &[
    ("scenarios/", "scenario_id"),
    ("npcs/", "npc_id"),
    ("rubrics/", "rubric_id"),
    ("safety/", "policy_id"),
    ("scenes/", "scene_id"),
    ("worlds/", "world_id"),
    ("tests/", "fixture_id"),
    ("playtests/", "name"),
    ("personas/", "persona_id"),
];

/// The ID a pack file of the folder `folder` declares (its [`ID_FIELDS`]
/// field), when written as text; `None` for a folder with no ID field.
pub fn file_id<'a>(folder: &str, v: &'a Value) -> Option<&'a str> {
    let (_, field) = ID_FIELDS.iter().find(|(f, _)| *f == folder)?;
    text(v, field)
}

/// The `scenario_id` of a scenario file (Format 13.2) or of a fixture
/// (13.8) or playtest (22.1) naming one.
pub fn scenario_id(v: &Value) -> Option<&str> {
    text(v, "scenario_id")
}

/// The path of a ref `{ref: <path>}` (Format 13.0), when `v` is one.
pub fn ref_path(v: &Value) -> Option<&str> {
    text(v, "ref")
}

/// A safety policy file's `content_rating_cap` (Format 13.4).
pub fn rating_cap(policy: &Value) -> Option<&str> {
    text(policy, "content_rating_cap")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_manifest_reads_its_fields_and_a_wrong_type_reads_as_absent() {
        let v = json!({"name": "Market", "pack_id": "official.market", "version": "1.0.0",
            "content_rating": "teen", "entry_scenarios": ["scenarios/a.yaml", 3, "scenarios/b.yaml"],
            "safety": {"policy": "safety/default.yaml"}, "players": {"max": 4.0},
            "license": ["MIT"]});
        let m = Manifest::read(&v);
        assert_eq!(
            (m.name, m.pack_id, m.version),
            (Some("Market"), Some("official.market"), Some("1.0.0"))
        );
        assert_eq!(m.content_rating, Some("teen"));
        assert_eq!(m.license, None);
        assert_eq!(m.safety_policy, Some("safety/default.yaml"));
        // 4.0 is the integer 4 (Format 2.2).
        assert_eq!(m.players_max, Some(4));
        // The item that is no string keeps the others' indexes.
        let entries: Vec<_> = m.entries().collect();
        assert_eq!(entries, [(0, "scenarios/a.yaml"), (2, "scenarios/b.yaml")]);
        assert!(m.explore.is_none());
    }

    #[test]
    fn odd_shapes_read_as_absent() {
        // Arrays for objects, objects for arrays, a negative maximum.
        let v = json!({"entry_scenarios": {"a": 1}, "safety": ["safety/x.yaml"],
            "players": {"max": -1}, "name": 7});
        let m = Manifest::read(&v);
        assert!(m.entry_scenarios.is_empty() && m.entries().next().is_none());
        assert_eq!((m.safety_policy, m.players_max, m.name), (None, None, None));
        let arr = json!(["name", "x"]);
        let m = Manifest::read(&arr);
        assert!(m.name.is_none() && m.entry_scenarios.is_empty());
        assert!(Manifest::of(None).content_rating.is_none());
        assert_eq!(Manifest::read(&json!({"players": [4]})).players_max, None);
    }

    #[test]
    fn explore_settings_read_each_on_its_own() {
        let v = json!({"explore": {"depth": 5, "states": -3, "seed": "7",
            "reachable": ["outcomes", 2, "events"], "unreachable": "rules"}});
        let e = Manifest::read(&v).explore.unwrap();
        assert_eq!((e.depth, e.states, e.seed), (Some(5), None, None));
        assert_eq!(
            e.reachable().unwrap().collect::<Vec<_>>(),
            ["outcomes", "events"]
        );
        assert!(e.unreachable().is_none());
        // `explore: []` is written, with nothing in it.
        let empty = json!({"explore": []});
        let e = Manifest::read(&empty).explore.unwrap();
        assert!(e.depth.is_none() && e.reachable.is_none());
    }

    #[test]
    fn file_ids_by_folder() {
        let v = json!({"scenario_id": "haggle", "npc_id": 3, "name": "pt"});
        assert_eq!(file_id("scenarios/", &v), Some("haggle"));
        assert_eq!(file_id("npcs/", &v), None);
        assert_eq!(file_id("playtests/", &v), Some("pt"));
        assert_eq!(file_id("elsewhere/", &v), None);
        assert_eq!(scenario_id(&v), Some("haggle"));
        assert_eq!(scenario_id(&json!(["scenario_id"])), None);
        assert_eq!(
            rating_cap(&json!({"content_rating_cap": "teen"})),
            Some("teen")
        );
        assert_eq!(rating_cap(&json!({"content_rating_cap": {}})), None);
        assert_eq!(
            ref_path(&json!({"ref": "npcs/a.yaml"})),
            Some("npcs/a.yaml")
        );
        assert_eq!(ref_path(&json!(["ref"])), None);
        assert_eq!(ref_path(&json!({"ref": 1})), None);
    }
}

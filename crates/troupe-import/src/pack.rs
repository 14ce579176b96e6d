//! An imported card as a pack directory (Format 13; `docs/import.md` §9):
//! the bundle that `card::card_to_bundle` makes, written as pack files —
//! manifest, scenario, NPC, world, safety policy and a smoke fixture — in
//! YAML (the `saphyr` emitter). Fields the pack shapes have no place for
//! are kept in `extensions` (Format 15): the character's `text` map in the
//! NPC's `extensions.text`, the IDs of `group_only` openings in the
//! scenario's `extensions.group_only`.

use std::borrow::Cow;

use saphyr::{Mapping, Scalar, ScalarStyle, Yaml, YamlEmitter};
use serde_json::{json, Map, Value};

/// One file of the pack: its path relative to the pack root and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct PackFile {
    /// `/`-separated path, e.g. `npcs/seraphina.yaml`.
    pub path: String,
    /// The file's content as JSON (written as YAML by [`to_yaml`]).
    pub value: Value,
}

fn obj(v: &Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn items(v: &Value, field: &str) -> Vec<Value> {
    v.get(field)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// A pack ID (Format 13.1: `^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`) for an
/// imported character: `imported.<id>` with `-` as `_`.
pub fn pack_id(character: &str) -> String {
    let id: String = character
        .chars()
        .map(|c| if c == '-' { '_' } else { c })
        .collect();
    format!("imported.{id}")
}

/// The fixture ID for a scenario: `smoke_<scenario>`, cut to the 64
/// characters of an ID (Format 3.1).
fn fixture_id(scenario: &str) -> String {
    let mut id = format!("smoke_{scenario}");
    id.truncate(64);
    while id.ends_with('-') {
        id.pop();
    }
    id
}

/// The pack files of an imported card's bundle (one character, its
/// scenario and its worlds, as `card::card_to_bundle` makes them).
pub fn card_pack(bundle: &Value, character: &str, scenario: &str) -> Vec<PackFile> {
    let v = "0.1";
    let mut files = Vec::new();
    let chars = items(bundle, "characters");
    let ch = chars
        .iter()
        .find(|c| c["id"] == character)
        .cloned()
        .unwrap_or_else(|| json!({}));
    let name = ch["name"].as_str().unwrap_or(character).to_string();

    // The NPC (Format 13.3): `personality` is `persona`; `text` has no place.
    let npc_path = format!("npcs/{character}.yaml");
    let mut npc = Map::new();
    npc.insert("schema_version".into(), json!(v));
    npc.insert("npc_id".into(), json!(character));
    for (from, to) in [
        ("name", "name"),
        ("nickname", "nickname"),
        ("fictional", "fictional"),
        ("age_band", "age_band"),
        ("personality", "persona"),
        ("description", "description"),
    ] {
        if let Some(x) = ch.get(from) {
            npc.insert(to.into(), x.clone());
        }
    }
    let mut ext = obj(&ch["extensions"]);
    if let Some(text) = ch.get("text") {
        ext.insert("text".into(), text.clone());
    }
    if !ext.is_empty() {
        npc.insert("extensions".into(), Value::Object(ext));
    }
    files.push(PackFile {
        path: npc_path.clone(),
        value: Value::Object(npc),
    });

    // Worlds (Format 13.7).
    let mut world_paths = Vec::new();
    for w in items(bundle, "worlds") {
        let id = w["id"].as_str().unwrap_or("world").to_string();
        let path = format!("worlds/{id}.yaml");
        let mut o = Map::new();
        o.insert("schema_version".into(), json!(v));
        o.insert("world_id".into(), json!(id));
        for f in ["name", "description", "entries", "extensions"] {
            if let Some(x) = w.get(f) {
                o.insert(f.into(), x.clone());
            }
        }
        world_paths.push((w["id"].clone(), path.clone()));
        files.push(PackFile {
            path,
            value: Value::Object(o),
        });
    }

    // The scenario (Format 13.2): the character as `npc`, the user seat,
    // openings as `openings` (IDs kept), `group_only` in extensions.
    let scenarios = items(bundle, "scenarios");
    let sc = scenarios
        .iter()
        .find(|s| s["id"] == scenario)
        .cloned()
        .unwrap_or_else(|| json!({}));
    let scenario_path = format!("scenarios/{scenario}.yaml");
    let mut s = Map::new();
    s.insert("schema_version".into(), json!(v));
    s.insert("scenario_id".into(), json!(scenario));
    s.insert(
        "title".into(),
        sc.get("name").cloned().unwrap_or(json!(name)),
    );
    if let Some(d) = sc.get("description") {
        s.insert("description".into(), d.clone());
    }
    s.insert("npc".into(), json!({"ref": npc_path}));
    let seats: Vec<Value> = items(&sc, "cast")
        .iter()
        .filter_map(|c| c.get("seat").map(|seat| json!({"seat": seat})))
        .collect();
    if !seats.is_empty() {
        s.insert("cast".into(), Value::Array(seats));
    }
    let worlds: Vec<Value> = items(&sc, "worlds")
        .iter()
        .filter_map(|w| {
            world_paths
                .iter()
                .find(|(id, _)| id == w)
                .map(|(_, p)| json!({"ref": p}))
        })
        .collect();
    if !worlds.is_empty() {
        s.insert("worlds".into(), Value::Array(worlds));
    }
    let mut group_only = Vec::new();
    let openings: Vec<Value> = items(&sc, "openings")
        .iter()
        .map(|o| {
            if o["group_only"] == json!(true) {
                group_only.push(o["id"].clone());
            }
            let mut p = Map::new();
            p.insert("id".into(), o["id"].clone());
            p.insert(
                "says".into(),
                o.get("text").cloned().unwrap_or_else(|| json!("")),
            );
            p.insert(
                "by".into(),
                o.get("author").cloned().unwrap_or_else(|| json!(character)),
            );
            if let Some(c) = o.get("changes") {
                p.insert("changes".into(), c.clone());
            }
            Value::Object(p)
        })
        .collect();
    if !openings.is_empty() {
        s.insert("openings".into(), Value::Array(openings));
    }
    // Variables (the card's macro variables, docs/import.md §5) as
    // `state.variables`, keyed by ID (Format 13.2).
    let vars: Map<String, Value> = items(&sc, "variables")
        .iter()
        .filter_map(|v| {
            let mut body = v.as_object()?.clone();
            let id = body.remove("id")?.as_str()?.to_string();
            Some((id, Value::Object(body)))
        })
        .collect();
    if !vars.is_empty() {
        s.insert("state".into(), json!({ "variables": vars }));
    }
    for f in [
        "narrator",
        "voice",
        "events",
        "outcomes",
        "rules",
        "entries",
        "difficulty",
    ] {
        if let Some(x) = sc.get(f) {
            s.insert(f.into(), x.clone());
        }
    }
    let mut sext = obj(&sc["extensions"]);
    if !group_only.is_empty() {
        sext.insert("group_only".into(), Value::Array(group_only));
    }
    if !sext.is_empty() {
        s.insert("extensions".into(), Value::Object(sext));
    }
    files.push(PackFile {
        path: scenario_path.clone(),
        value: Value::Object(s),
    });

    // The safety policy (Format 13.4) and the manifest (13.1). A card says
    // nothing of its rating: the pack is labelled `mature` (the widest),
    // which a runtime offers only to adults; the author narrows it.
    files.push(PackFile {
        path: "safety/default.yaml".into(),
        value: json!({
            "schema_version": v,
            "policy_id": "default",
            "content_rating_cap": "mature",
            "categories": [{"id": "threats", "action": "stop", "terms": ["I will hurt you"]}],
            "global_rules": ["minor_safety", "crisis_support"],
        }),
    });
    files.push(PackFile {
        path: format!("tests/smoke_{scenario}.yaml"),
        value: json!({
            "schema_version": v,
            "fixture_id": fixture_id(scenario),
            "scenario_id": scenario,
            "description": "Smoke test: the imported card loads and a greeting ends nothing.",
            "seed": 1,
            "turns": [{"turn": 1, "player_input": "Hello.",
                       "expect": {"session_control": "continue_session", "ended": false}}],
        }),
    });
    files.push(PackFile {
        path: "manifest.yaml".into(),
        value: json!({
            "schema_version": v,
            "pack_id": pack_id(character),
            "name": name,
            "version": "1.0.0",
            "content_rating": "mature",
            "description": format!("{name}, imported from a Character Card by troupe import."),
            "entry_scenarios": [scenario_path],
            "safety": {"policy": "safety/default.yaml"},
        }),
    });
    files
}

fn yaml(v: &Value) -> Yaml<'_> {
    match v {
        Value::Null => Yaml::Value(Scalar::Null),
        Value::Bool(b) => Yaml::Value(Scalar::Boolean(*b)),
        // The number's own text: exact decimals stay exact (Format 2.2).
        Value::Number(n) => {
            Yaml::Representation(Cow::Owned(n.to_string()), ScalarStyle::Plain, None)
        }
        Value::String(s) => Yaml::Value(Scalar::String(Cow::Borrowed(s))),
        Value::Array(a) => Yaml::Sequence(a.iter().map(yaml).collect()),
        Value::Object(o) => {
            let mut m = Mapping::new();
            for (k, x) in o {
                m.insert(Yaml::Value(Scalar::String(Cow::Borrowed(k))), yaml(x));
            }
            Yaml::Mapping(m)
        }
    }
}

/// A JSON value as one YAML document (strings quoted wherever YAML would
/// read them otherwise, numbers as written), ending in a newline.
pub fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    let node = yaml(v);
    let mut emitter = YamlEmitter::new(&mut out);
    if emitter.dump(&node).is_err() {
        return String::new();
    }
    out.push('\n');
    out
}

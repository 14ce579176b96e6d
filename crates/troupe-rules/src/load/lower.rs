//! Lowering a pack directory's files to one bundle (Format 13.2): NPC files
//! become characters, world files worlds, scenario files scenarios (with
//! their scene, rubric and the manifest's safety policy inlined). The
//! lowered bundle is what every semantic check, the compiler and the engine
//! read, so pack shapes and bundle shapes mean the same thing.

use indexmap::IndexMap;
use serde_json::{json, Map, Value};

use super::normalize_ref;
use super::origin::Origins;
use crate::diag::{escape_token, Code, Diagnostic};

/// A pack's parsed YAML files by pack-relative path (`npcs/dealer.yaml`),
/// the manifest included as `manifest.yaml`.
pub type PackValues<'v> = IndexMap<String, &'v Value>;

/// The result of lowering: the bundle, where its values came from, and the
/// reference problems found on the way (located in pack files already).
#[derive(Debug, Default)]
pub struct Lowered {
    /// The bundle (`troupe`, `kind`, `characters`, `worlds`, `scenarios`).
    pub bundle: Value,
    /// Bundle pointer → pack file and pointer.
    pub origins: Origins,
    /// MISSING_FILE / PATH_TRAVERSAL / DUPLICATE_ID found while lowering.
    pub diagnostics: Vec<Diagnostic>,
    /// Whether a ref to an NPC or world file named none, or one that did
    /// not parse or declares no ID: what that file declares is unknown
    /// (Format 13.0, no cascade from a missing declaration).
    pub declarations_missing: bool,
}

/// What scenario lowering looks up: NPC and world files by path, and the
/// manifest's safety policy file.
struct Refs {
    char_index: IndexMap<String, String>,
    world_index: IndexMap<String, String>,
    safety: Option<String>,
}

struct Lowerer<'a> {
    files: &'a PackValues<'a>,
    exists: &'a (dyn Fn(&str) -> bool + Sync),
    out: Lowered,
}

impl Lowerer<'_> {
    /// Lowers the files of one owner kind (NPC files to characters, world
    /// files to worlds): the ID field becomes `id`, `fields` are copied
    /// (renamed), the `variables` map becomes a list. Returns the lowered
    /// objects and a map file → ID.
    fn lower_owners(
        &mut self,
        folder: &str,
        id_field: &str,
        bundle_field: &str,
        fields: &[(&str, &str)],
    ) -> (Vec<Value>, IndexMap<String, String>) {
        let mut lowered = Vec::new();
        let mut index = IndexMap::new();
        for (path, v) in self.files.iter().filter(|(p, _)| p.starts_with(folder)) {
            let Some(id) = v.get(id_field).and_then(Value::as_str) else {
                continue;
            };
            let base = format!("/{bundle_field}/{}", lowered.len());
            let origins = &mut self.out.origins;
            origins.map(&base, path, "");
            origins.map(format!("{base}/id"), path, format!("/{id_field}"));
            for (from, to) in fields {
                if from != to {
                    origins.map(format!("{base}/{to}"), path, format!("/{from}"));
                }
            }
            let mut o = Map::new();
            o.insert("id".into(), json!(id));
            copy(v, &mut o, fields);
            let vars = vars_from_map(
                v.get("variables"),
                &format!("{base}/variables"),
                path,
                "/variables",
                origins,
            );
            if !vars.is_empty() {
                o.insert("variables".into(), Value::Array(vars));
            }
            index.insert(path.clone(), id.to_string());
            lowered.push(Value::Object(o));
        }
        (lowered, index)
    }

    /// Lowers one scenario file (Format 13.2) to a bundle scenario at index
    /// `si`, following its references.
    fn lower_scenario(&mut self, path: &str, v: &Value, si: usize, refs: &Refs) -> Option<Value> {
        let Refs {
            char_index,
            world_index,
            safety,
        } = refs;
        let id = v.get("scenario_id").and_then(Value::as_str)?;
        let base = format!("/scenarios/{si}");
        let o = &mut self.out.origins;
        o.map(&base, path, "");
        o.map(format!("{base}/id"), path, "/scenario_id");
        o.map(format!("{base}/name"), path, "/title");
        let mut s = Map::new();
        s.insert("id".into(), json!(id));
        copy(
            v,
            &mut s,
            &[
                ("title", "name"),
                ("description", "description"),
                ("narrator", "narrator"),
                ("voice", "voice"),
                ("events", "events"),
                ("rules", "rules"),
                ("entries", "entries"),
                ("difficulty", "difficulty"),
                ("emotion", "emotion"),
                ("model", "model"),
                ("turn_order", "turn_order"),
                ("extensions", "extensions"),
            ],
        );

        // Cast: the seed's single NPC, then `cast`, then a player seat.
        let mut cast = Vec::new();
        if let Some(r) = v.pointer("/npc/ref").and_then(Value::as_str)
            && let Some(f) = self.follow_kind(path, "/npc/ref", r, "npcs/")
            && let Some(cid) = self.declared(char_index, &f)
        {
            self.out
                .origins
                .map(format!("{base}/cast/{}", cast.len()), path, "/npc/ref");
            cast.push(json!({"character": cid}));
        }
        let mut has_seat = false;
        for (j, entry) in crate::model::array(v, "cast").iter().enumerate() {
            if let Some(r) = entry.pointer("/npc/ref").and_then(Value::as_str) {
                let ptr = format!("/cast/{j}/npc/ref");
                if let Some(f) = self.follow_kind(path, &ptr, r, "npcs/")
                    && let Some(cid) = self.declared(char_index, &f)
                {
                    let k = cast.len();
                    self.out
                        .origins
                        .map(format!("{base}/cast/{k}"), path, format!("/cast/{j}"));
                    self.out
                        .origins
                        .map(format!("{base}/cast/{k}/character"), path, ptr);
                    let mut e = json!({"character": cid});
                    for field in ["player", "talkativeness", "muted"] {
                        if let Some(p) = entry.get(field) {
                            e[field] = p.clone();
                        }
                    }
                    cast.push(e);
                }
            } else if let Some(seat) = entry.get("seat") {
                has_seat = true;
                self.out.origins.map(
                    format!("{base}/cast/{}", cast.len()),
                    path,
                    format!("/cast/{j}"),
                );
                cast.push(json!({"seat": seat, "player": true}));
            }
        }
        if !has_seat {
            cast.push(json!({"seat": "player", "player": true}));
        }
        s.insert("cast".into(), Value::Array(cast));

        // Worlds by reference.
        let mut wids = Vec::new();
        for (j, w) in crate::model::array(v, "worlds").iter().enumerate() {
            if let Some(r) = w.get("ref").and_then(Value::as_str) {
                let ptr = format!("/worlds/{j}/ref");
                if let Some(f) = self.follow_kind(path, &ptr, r, "worlds/")
                    && let Some(wid) = self.declared(world_index, &f)
                {
                    self.out
                        .origins
                        .map(format!("{base}/worlds/{}", wids.len()), path, ptr);
                    wids.push(json!(wid));
                }
            }
        }
        if !wids.is_empty() {
            s.insert("worlds".into(), Value::Array(wids));
        }

        // Openings: the seed's `opening.npc_says`, then `openings`.
        let first_npc = s["cast"].get(0).and_then(|c| c.get("character")).cloned();
        let mut openings = Vec::new();
        if let Some(says) = v.pointer("/opening/npc_says") {
            let k = openings.len();
            self.out
                .origins
                .map(format!("{base}/openings/{k}"), path, "/opening");
            self.out.origins.map(
                format!("{base}/openings/{k}/text"),
                path,
                "/opening/npc_says",
            );
            let mut op = json!({"id": "opening", "text": says});
            if let Some(a) = &first_npc {
                op["author"] = a.clone();
            }
            openings.push(op);
        }
        for (j, op) in crate::model::array(v, "openings").iter().enumerate() {
            let k = openings.len();
            self.out.origins.map(
                format!("{base}/openings/{k}"),
                path,
                format!("/openings/{j}"),
            );
            self.out.origins.map(
                format!("{base}/openings/{k}/text"),
                path,
                format!("/openings/{j}/says"),
            );
            self.out.origins.map(
                format!("{base}/openings/{k}/author"),
                path,
                format!("/openings/{j}/by"),
            );
            let mut o = Map::new();
            copy(
                op,
                &mut o,
                &[
                    ("id", "id"),
                    ("says", "text"),
                    ("changes", "changes"),
                    ("group_only", "group_only"),
                ],
            );
            if let Some(author) = op.get("by").cloned().or_else(|| first_npc.clone()) {
                o.insert("author".into(), author);
            }
            openings.push(Value::Object(o));
        }
        if !openings.is_empty() {
            s.insert("openings".into(), Value::Array(openings));
        }

        // Scene, rubric and safety files inlined.
        for (field, key) in [("scene", "scene"), ("rubric", "rubric")] {
            let ptr = format!("/{field}/ref");
            if let Some(r) = v.pointer(&ptr).and_then(Value::as_str) {
                let folder = if field == "scene" {
                    "scenes/"
                } else {
                    "rubrics/"
                };
                if let Some(f) = self.follow_kind(path, &ptr, r, folder) {
                    let doc = &self.files[&f];
                    self.out.origins.map(format!("{base}/{key}"), &f, "");
                    let mut m = Map::new();
                    let fields: &[(&str, &str)] = if field == "scene" {
                        &[("location", "location"), ("present", "present")]
                    } else {
                        &[("criteria", "criteria")]
                    };
                    copy(doc, &mut m, fields);
                    s.insert(key.into(), Value::Object(m));
                }
            }
        }
        if let Some(f) = &safety
            && let Some(doc) = self.files.get(f)
        {
            self.out.origins.map(format!("{base}/safety"), f, "");
            let mut policy = (*doc).clone();
            if let Value::Object(m) = &mut policy {
                m.shift_remove("schema_version");
                m.shift_remove("$schema");
            }
            s.insert("safety".into(), policy);
        }

        // Variables from the `state.variables` map; outcomes from
        // `ending_conditions`, then `outcomes`.
        let vars = vars_from_map(
            v.pointer("/state/variables"),
            &format!("{base}/variables"),
            path,
            "/state/variables",
            &mut self.out.origins,
        );
        if !vars.is_empty() {
            s.insert("variables".into(), Value::Array(vars));
        }
        let mut outcomes = Vec::new();
        if let Some(Value::Object(ends)) = v.get("ending_conditions") {
            for (oid, cond) in ends {
                let k = outcomes.len();
                let src = format!("/ending_conditions/{}", escape_token(oid));
                self.out
                    .origins
                    .map(format!("{base}/outcomes/{k}"), path, src.clone());
                self.out
                    .origins
                    .map(format!("{base}/outcomes/{k}/when"), path, src);
                outcomes.push(json!({"id": oid, "when": cond}));
            }
        }
        for (j, oc) in crate::model::array(v, "outcomes").iter().enumerate() {
            let k = outcomes.len();
            self.out.origins.map(
                format!("{base}/outcomes/{k}"),
                path,
                format!("/outcomes/{j}"),
            );
            outcomes.push(oc.clone());
        }
        if !outcomes.is_empty() {
            s.insert("outcomes".into(), Value::Array(outcomes));
        }
        Some(Value::Object(s))
    }

    /// The ID the NPC or world file `f` declares, from `index`. A file that
    /// parsed but declares none (no usable `npc_id` or `world_id`: its own
    /// SCHEMA diagnostic says why) is a missing declaration (Format 13.0):
    /// what it would declare is unknown.
    fn declared<'i>(&mut self, index: &'i IndexMap<String, String>, f: &str) -> Option<&'i String> {
        let id = index.get(f);
        self.out.declarations_missing |= id.is_none();
        id
    }

    /// Resolves the reference at `file`+`pointer` to a file of `folder`'s
    /// kind (`npcs/`), or reports why it does not (Format 13): PATH_TRAVERSAL
    /// for a path that escapes, MISSING_FILE for one that names no file or a
    /// file of another kind. A file of the right kind that exists but did not
    /// parse gives `None` silently: it has its own diagnostics.
    fn follow_kind(
        &mut self,
        file: &str,
        pointer: &str,
        reference: &str,
        folder: &str,
    ) -> Option<String> {
        let path = match normalize_ref(reference) {
            Ok(p) => p,
            Err(e) => {
                self.out.diagnostics.push(
                    Diagnostic::error(e.code, e.message)
                        .in_file(file)
                        .at(pointer),
                );
                return None;
            }
        };
        let in_folder = path
            .strip_prefix(folder)
            .is_some_and(|rest| !rest.contains('/'));
        let exists = self.files.contains_key(&path) || (self.exists)(&path);
        let declares = matches!(folder, "npcs/" | "worlds/");
        let message = match (in_folder, exists) {
            (true, true) if self.files.contains_key(&path) => return Some(path),
            (true, true) => {
                self.out.declarations_missing |= declares;
                return None;
            }
            (false, true) => {
                format!("`{path}` is not a file of `{folder}`, which this reference must name")
            }
            (_, false) => {
                // A typo: the closest file of the folder the reference
                // must name (13.0), among the pack's files.
                let here = self
                    .files
                    .keys()
                    .filter(|p| {
                        p.strip_prefix(folder)
                            .is_some_and(|rest| !rest.contains('/'))
                    })
                    .map(String::as_str);
                format!(
                    "file not found: `{path}` (references are relative to the pack root){}",
                    crate::diag::suggest::did_you_mean(&path, here)
                )
            }
        };
        let mut d = Diagnostic::error(Code::MissingFile, message)
            .in_file(file)
            .at(pointer);
        if declares {
            self.out.declarations_missing = true;
            d = d.with_help(
                "until it is found, references to the IDs and variables it declares are not checked",
            );
        }
        self.out.diagnostics.push(d);
        None
    }
}

fn vars_from_map(
    map: Option<&Value>,
    bundle_base: &str,
    file: &str,
    source_base: &str,
    origins: &mut Origins,
) -> Vec<Value> {
    let Some(Value::Object(m)) = map else {
        return Vec::new();
    };
    let mut list = Vec::new();
    for (i, (id, decl)) in m.iter().enumerate() {
        let mut v = Map::new();
        v.insert("id".into(), Value::String(id.clone()));
        if let Value::Object(d) = decl {
            for (k, x) in d {
                v.insert(k.clone(), x.clone());
            }
        }
        origins.map(
            format!("{bundle_base}/{i}"),
            file,
            format!("{source_base}/{}", escape_token(id)),
        );
        list.push(Value::Object(v));
    }
    list
}

fn copy(from: &Value, to: &mut Map<String, Value>, fields: &[(&str, &str)]) {
    for (src, dst) in fields {
        if let Some(v) = from.get(*src) {
            to.insert((*dst).to_string(), v.clone());
        }
    }
}

/// Lowers a pack's files to a bundle (Format 13.2). `exists` says whether a
/// normalized path names a file of the pack (one that may have failed to
/// parse and so is not in `files`).
///
/// The scenario files lower side by side on the machine's cores
/// ([`crate::par::map`]): each reads only its own file and the owners'
/// indexes, and their origins and diagnostics are joined in file order, so
/// the result is the one-thread result (docs/performance.md, Run AZ).
pub fn lower(files: &PackValues, exists: &(dyn Fn(&str) -> bool + Sync)) -> Lowered {
    let mut l = Lowerer {
        files,
        exists,
        out: Lowered::default(),
    };

    let (characters, char_index) = l.lower_owners(
        "npcs/",
        "npc_id",
        "characters",
        &[
            ("name", "name"),
            ("nickname", "nickname"),
            ("aliases", "aliases"),
            ("fictional", "fictional"),
            ("age_band", "age_band"),
            ("description", "description"),
            ("persona", "personality"),
            ("extensions", "extensions"),
        ],
    );
    let (worlds, world_index) = l.lower_owners(
        "worlds/",
        "world_id",
        "worlds",
        &[
            ("name", "name"),
            ("description", "description"),
            ("entries", "entries"),
            ("recursion", "recursion"),
            ("extensions", "extensions"),
        ],
    );
    let safety = files
        .get("manifest.yaml")
        .and_then(|m| m.pointer("/safety/policy"))
        .and_then(Value::as_str)
        .and_then(|r| l.follow_kind("manifest.yaml", "/safety/policy", r, "safety/"));

    let refs = Refs {
        char_index,
        world_index,
        safety,
    };
    // A scenario file without a usable `scenario_id` lowers to nothing
    // (its own SCHEMA diagnostic says why); the others take the bundle's
    // indexes in file order.
    let scenario_files: Vec<(&String, &Value)> = files
        .iter()
        .filter(|(p, v)| {
            p.starts_with("scenarios/") && v.get("scenario_id").is_some_and(Value::is_string)
        })
        .map(|(p, v)| (p, *v))
        .collect();
    let lowered = crate::par::map(&scenario_files, |si, (path, v)| {
        let mut one = Lowerer {
            files,
            exists,
            out: Lowered::default(),
        };
        let s = one.lower_scenario(path, v, si, &refs);
        (s, one.out)
    });
    let mut scenarios: Vec<Value> = Vec::with_capacity(lowered.len());
    for (s, out) in lowered {
        scenarios.extend(s);
        l.out.origins.extend(out.origins);
        l.out.diagnostics.extend(out.diagnostics);
        l.out.declarations_missing |= out.declarations_missing;
    }
    // Empty lists are left out: a bundle's `worlds` (and the others), when
    // present, has at least one item (Format 2.5, SCHEMA otherwise).
    let mut bundle = Map::new();
    bundle.insert("troupe".into(), json!("0.1"));
    bundle.insert("kind".into(), json!("bundle"));
    for (k, v) in [
        ("characters", characters),
        ("worlds", worlds),
        ("scenarios", scenarios),
    ] {
        if !v.is_empty() {
            bundle.insert(k.into(), Value::Array(v));
        }
    }
    l.out.bundle = Value::Object(bundle);
    l.out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_shapes_lower_to_bundle_shapes() {
        let mut files = PackValues::new();
        let dealer =
            json!({"npc_id": "dealer", "name": "Sam", "fictional": true, "age_band": "adult"});
        files.insert("npcs/dealer.yaml".into(), &dealer);
        let car = json!({
            "scenario_id": "car", "title": "Car", "npc": {"ref": "npcs/dealer.yaml"},
            "opening": {"npc_says": "Hi"},
            "state": {"variables": {"patience": {"type": "int", "default": 50}}},
            "ending_conditions": {"success": {"type": "variable_above", "variable": "patience", "threshold": 80}}
        });
        files.insert("scenarios/car.yaml".into(), &car);
        let l = lower(&files, &|_| false);
        assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
        let s = &l.bundle["scenarios"][0];
        assert_eq!(
            s["cast"],
            json!([{"character": "dealer"}, {"seat": "player", "player": true}])
        );
        assert_eq!(
            s["openings"][0],
            json!({"id": "opening", "text": "Hi", "author": "dealer"})
        );
        assert_eq!(s["variables"][0]["id"], "patience");
        assert_eq!(s["outcomes"][0]["id"], "success");
        assert_eq!(
            l.origins.translate("/scenarios/0/variables/0/default"),
            Some((
                "scenarios/car.yaml".into(),
                "/state/variables/patience/default".into()
            ))
        );
        assert_eq!(
            l.origins.translate("/scenarios/0/outcomes/0/when/variable"),
            Some((
                "scenarios/car.yaml".into(),
                "/ending_conditions/success/variable".into()
            ))
        );
    }

    #[test]
    fn missing_and_escaping_refs_are_reported_at_the_ref() {
        let mut files = PackValues::new();
        let car = json!({"scenario_id": "car", "title": "Car", "npc": {"ref": "npcs/none.yaml"}, "rubric": {"ref": "../../etc/passwd"}});
        files.insert("scenarios/car.yaml".into(), &car);
        let l = lower(&files, &|_| false);
        let got: Vec<(Code, Option<String>)> = l
            .diagnostics
            .iter()
            .map(|d| (d.code, d.location.pointer.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Code::MissingFile, Some("/npc/ref".into())),
                (Code::PathTraversal, Some("/rubric/ref".into()))
            ]
        );
    }
}

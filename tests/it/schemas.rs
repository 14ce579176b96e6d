//! The JSON Schemas of `schemas/` and the schema check (Format 2.2, 3, 13, 15, 17.2).
//!
//! Every worked example in `schemas/examples/` (named `<schema>.<anything>.json|yaml`)
//! must validate; the negative tests pin codes and locations derived by hand
//! from docs/DECISIONS.md.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use saphyr::{LoadableYamlNode, Scalar, Yaml};
use serde_json::{json, Value};
use troupe::internals::check::{SchemaKind, Schemas};
use troupe::internals::check::{ID_BASE, SOURCES};
use troupe::internals::load::{Document, SpanIndex};
use troupe::{Code, Diagnostic};

fn doc(value: Value) -> Document {
    Document {
        file: "test.json".into(),
        text: value.to_string().into(),
        value,
        spans: SpanIndex::default(),
        first_line: 1,
    }
}

fn check(kind: SchemaKind, value: Value) -> Vec<Diagnostic> {
    Schemas::get().validate(kind, &doc(value), "")
}

/// (code, pointer) of each diagnostic, in the order reported.
fn found(kind: SchemaKind, value: Value) -> Vec<(Code, String)> {
    check(kind, value)
        .into_iter()
        .map(|d| (d.code, d.location.pointer.unwrap_or_default()))
        .collect()
}

fn schema(p: &str) -> (Code, String) {
    (Code::Schema, p.to_string())
}

fn unknown(p: &str) -> (Code, String) {
    (Code::UnknownField, p.to_string())
}

/// A YAML document as JSON (test helper; the loader has its own, with spans).
fn yaml_to_json(y: &Yaml) -> Value {
    match y {
        Yaml::Value(Scalar::Null) => Value::Null,
        Yaml::Value(Scalar::Boolean(b)) => Value::Bool(*b),
        Yaml::Value(Scalar::Integer(i)) => json!(i),
        Yaml::Value(Scalar::FloatingPoint(f)) => json!(f.into_inner()),
        Yaml::Value(Scalar::String(s)) => Value::String(s.to_string()),
        Yaml::Sequence(items) => Value::Array(items.iter().map(yaml_to_json).collect()),
        Yaml::Mapping(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::Value(Scalar::String(s)) => s.to_string(),
                        other => panic!("non-string key {other:?}"),
                    };
                    (key, yaml_to_json(v))
                })
                .collect(),
        ),
        Yaml::Tagged(_, inner) => yaml_to_json(inner),
        other => panic!("unexpected YAML node {other:?}"),
    }
}

fn schemas_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas")
}

fn kind_of_example(name: &str) -> Option<SchemaKind> {
    let stem = name.split('.').next()?;
    SchemaKind::ALL.iter().copied().find(|k| {
        let file = k.file().rsplit('/').next().unwrap_or_default();
        file.strip_suffix(".schema.json") == Some(stem)
    })
}

fn read_example(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    if path.extension().is_some_and(|e| e == "yaml") {
        let docs = Yaml::load_from_str(&text).unwrap();
        assert_eq!(docs.len(), 1, "{}", path.display());
        yaml_to_json(&docs[0])
    } else {
        serde_json::from_str(&text).unwrap()
    }
}

#[test]
fn every_example_validates_and_every_kind_has_one() {
    let mut seen = HashSet::new();
    let mut entries: Vec<_> = std::fs::read_dir(schemas_dir().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let kind = kind_of_example(&name).unwrap_or_else(|| panic!("{name}: no schema named so"));
        seen.insert(kind);
        let value = read_example(&path);
        if let Some(s) = value.get("$schema") {
            assert_eq!(s, &json!(kind.id()), "{name}: $schema names another schema");
        }
        let text = std::fs::read_to_string(&path).unwrap();
        if let Some(first) = text.lines().next().filter(|l| l.starts_with("# yaml")) {
            assert_eq!(
                first,
                format!("# yaml-language-server: $schema={}", kind.id()),
                "{name}"
            );
        }
        let diags = Schemas::get().validate(kind, &doc(value), "");
        assert!(diags.is_empty(), "{name}: {diags:#?}");
    }
    for kind in SchemaKind::ALL {
        assert!(seen.contains(kind), "no example for {kind:?}");
    }
}

#[test]
fn ids_are_unique_and_every_ref_resolves_offline() {
    let mut docs: HashMap<String, Value> = HashMap::new();
    for (file, text) in SOURCES {
        let v: Value = serde_json::from_str(text).unwrap();
        let id = v["$id"].as_str().unwrap().to_string();
        assert_eq!(id, format!("{ID_BASE}{file}"));
        assert_eq!(
            v["$schema"],
            json!("https://json-schema.org/draft/2020-12/schema")
        );
        assert!(docs.insert(id.clone(), v).is_none(), "duplicate $id {id}");
    }
    // Every file in schemas/ is embedded.
    let mut on_disk = 0;
    for dir in [schemas_dir(), schemas_dir().join("../conformance")] {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.to_string_lossy().ends_with(".schema.json") {
                on_disk += 1;
            }
        }
    }
    assert_eq!(on_disk, SOURCES.len());
    // Each $ref, resolved against its document's $id, names a node that exists.
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if k == "$ref" {
                        out.push(x.as_str().unwrap().to_string());
                    } else {
                        refs(x, out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }
    let mut count = 0;
    for (id, v) in &docs {
        let mut found = Vec::new();
        refs(v, &mut found);
        for r in found {
            let (file, fragment) = r.split_once('#').unwrap_or((&r, ""));
            let target = if file.is_empty() {
                id.clone()
            } else {
                let mut base = id[..id.rfind('/').unwrap()].to_string();
                let mut rest = file;
                while let Some(r2) = rest.strip_prefix("../") {
                    base.truncate(base.rfind('/').unwrap());
                    rest = r2;
                }
                format!("{base}/{rest}")
            };
            let target_doc = docs
                .get(&target)
                .unwrap_or_else(|| panic!("{id}: $ref {r} names no schema"));
            assert!(
                target_doc.pointer(fragment).is_some(),
                "{id}: $ref {r} names no node"
            );
            count += 1;
        }
    }
    assert!(count > 100, "only {count} refs");
    // And the validators build with no retriever (offline).
    Schemas::build().unwrap();
}

fn bundle_with_character(c: Value) -> Value {
    json!({"troupe": "0.1", "kind": "bundle", "characters": [c]})
}

fn kai() -> Value {
    json!({"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult"})
}

#[test]
fn unknown_field_is_located_at_the_property() {
    let mut c = kai();
    c["mystery"] = json!(1);
    let diags = check(SchemaKind::Bundle, bundle_with_character(c));
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(diags[0].code, Code::UnknownField);
    assert_eq!(
        diags[0].location.pointer.as_deref(),
        Some("/characters/0/mystery")
    );
    assert_eq!(diags[0].location.file.as_deref(), Some("test.json"));
    assert!(diags[0].message.contains("mystery"));
    // Prefixes for session headers and messages; a key with `/` is escaped.
    let d = Schemas::get().validate(
        SchemaKind::SessionHeader,
        &doc(json!({"troupe": "0.1", "kind": "session", "scenario": "s", "a/b": 1})),
        "header",
    );
    assert_eq!(d[0].location.pointer.as_deref(), Some("header/a~1b"));
    let d = Schemas::get().validate(
        SchemaKind::Message,
        &doc(json!({"id": "3", "author": "kai", "changes": [{"set": {"hp": 1}, "oops": 2}]})),
        "message:3",
    );
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0].code, Code::UnknownField);
    assert_eq!(
        d[0].location.pointer.as_deref(),
        Some("message:3/changes/0/oops")
    );
}

#[test]
fn unknown_field_gets_the_key_position_from_spans() {
    let mut c = kai();
    c["mystery"] = json!(1);
    let mut d = doc(bundle_with_character(c));
    let at = |line, column| troupe::internals::load::LineCol { line, column };
    d.spans
        .insert("/characters/0".into(), (at(3, 5), Some(at(3, 1))));
    d.spans
        .insert("/characters/0/mystery".into(), (at(4, 20), Some(at(4, 9))));
    let diags = Schemas::get().validate(SchemaKind::Bundle, &d, "");
    assert_eq!(diags[0].location.line, Some(4));
    assert_eq!(diags[0].location.column, Some(9));
}

#[test]
fn null_empty_string_and_empty_list_in_optional_fields_are_schema() {
    for (field, value) in [
        ("nickname", json!(null)),
        ("nickname", json!("")),
        ("variables", json!([])),
        ("description", json!(null)),
    ] {
        let mut c = kai();
        c[field] = value.clone();
        assert_eq!(
            found(SchemaKind::Bundle, bundle_with_character(c)),
            vec![schema(&format!("/characters/0/{field}"))],
            "{field}: {value}"
        );
    }
    // Message: an empty parts list and a null time.
    assert_eq!(
        found(
            SchemaKind::Message,
            json!({"id": "1", "author": "kai", "parts": [], "time": null})
        ),
        vec![schema("/parts"), schema("/time")]
    );
    // A pack NPC: `persona: ""`.
    assert_eq!(
        found(
            SchemaKind::Npc,
            json!({"schema_version": "0.1", "npc_id": "kai", "name": "Kai",
                   "fictional": true, "age_band": "adult", "persona": ""})
        ),
        vec![schema("/persona")]
    );
}

#[test]
fn characters_and_npcs_are_fictional_adults() {
    let mut c = kai();
    c["fictional"] = json!(false);
    assert_eq!(
        found(SchemaKind::Bundle, bundle_with_character(c)),
        vec![schema("/characters/0/fictional")]
    );
    let mut c = kai();
    c["age_band"] = json!("teen");
    assert_eq!(
        found(SchemaKind::Bundle, bundle_with_character(c)),
        vec![schema("/characters/0/age_band")]
    );
    let mut c = kai();
    c.as_object_mut().unwrap().remove("fictional");
    assert_eq!(
        found(SchemaKind::Bundle, bundle_with_character(c)),
        vec![schema("/characters/0")]
    );
    let npc = json!({"schema_version": "0.1", "npc_id": "kai", "name": "Kai",
                     "fictional": false, "age_band": "teen"});
    assert_eq!(
        found(SchemaKind::Npc, npc),
        vec![schema("/fictional"), schema("/age_band")]
    );
}

fn manifest() -> Value {
    json!({"schema_version": "0.1", "pack_id": "harbor.last_berth", "name": "X",
           "version": "1.0.0", "content_rating": "teen",
           "entry_scenarios": ["scenarios/a.yaml"], "safety": {"policy": "safety/p.yaml"}})
}

#[test]
fn manifest_scripts_is_schema_not_unknown_field() {
    assert!(found(SchemaKind::Manifest, manifest()).is_empty());
    let mut m = manifest();
    m["scripts"] = json!(["setup.sh"]);
    let diags = check(SchemaKind::Manifest, m);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(diags[0].code, Code::Schema);
    assert_eq!(diags[0].location.pointer.as_deref(), Some("/scripts"));
    let mut m = manifest();
    m["version"] = json!("1.0");
    m["pack_id"] = json!("Harbor");
    assert_eq!(
        found(SchemaKind::Manifest, m),
        vec![schema("/pack_id"), schema("/version")]
    );
}

#[test]
fn reserved_ids_are_rejected_where_declared() {
    let mut c = kai();
    c["id"] = json!("narrator");
    assert_eq!(
        found(SchemaKind::Bundle, bundle_with_character(c)),
        vec![schema("/characters/0/id")]
    );
    let b = json!({"troupe": "0.1", "kind": "bundle",
        "worlds": [{"id": "scene", "name": "W"}],
        "scenarios": [{"id": "difficulty", "name": "S", "cast": [{"character": "kai"}],
                       "variables": [{"id": "turn", "type": "int"}, {"id": "trust", "type": "int"}]}]});
    assert_eq!(
        found(SchemaKind::Bundle, b),
        vec![
            schema("/worlds/0/id"),
            schema("/scenarios/0/id"),
            schema("/scenarios/0/variables/0/id"),
        ]
    );
    // A reference may name `narrator`: an author, and a pack variable map key is declared.
    assert!(found(
        SchemaKind::Message,
        json!({"id": "1", "author": "narrator"})
    )
    .is_empty());
    let w = json!({"schema_version": "0.1", "world_id": "w", "name": "W",
                   "variables": {"hour": {"type": "int"}}});
    assert_eq!(found(SchemaKind::World, w), vec![schema("/variables/hour")]);
}

#[test]
fn malformed_timestamps_are_schema() {
    assert_eq!(
        found(
            SchemaKind::Message,
            json!({"id": "1", "author": "kai", "time": "2026-02-30 25:00"})
        ),
        vec![schema("/time")]
    );
    assert_eq!(
        found(
            SchemaKind::SessionHeader,
            json!({"troupe": "0.1", "kind": "session", "scenario": "s", "created": "yesterday"})
        ),
        vec![schema("/created")]
    );
    assert!(found(
        SchemaKind::Message,
        json!({"id": "1", "author": "kai", "time": "2026-02-28T23:59:59.5-05:30"})
    )
    .is_empty());
}

#[test]
fn x_properties_and_extensions_are_accepted() {
    let mut c = kai();
    c["x-foo"] = json!({"anything": [1, null]});
    c["extensions"] = json!({"tool": {"nested": null}});
    assert!(found(SchemaKind::Bundle, bundle_with_character(c)).is_empty());
    let mut m = manifest();
    m["x-editor"] = json!(true);
    m["extensions"] = json!({});
    assert!(found(SchemaKind::Manifest, m).is_empty());
    let msg = json!({"id": "1", "author": "kai", "x-client": "cli",
        "parts": [{"type": "text", "text": "hi", "x-tone": "dry", "extensions": {"a": 1}}]});
    assert!(found(SchemaKind::Message, msg).is_empty());
    // `extensions` must still be an object.
    let mut c = kai();
    c["extensions"] = json!([]);
    assert_eq!(
        found(SchemaKind::Bundle, bundle_with_character(c)),
        vec![schema("/characters/0/extensions")]
    );
}

#[test]
fn a_part_of_unknown_type_is_unknown_field_at_its_type() {
    let msg = json!({"id": "1", "author": "kai",
        "parts": [{"type": "image", "url": "x.png"}, {"type": "text", "text": "ok"}]});
    assert_eq!(
        found(SchemaKind::Message, msg),
        vec![unknown("/parts/0/type")]
    );
}

#[test]
fn a_failing_branch_reports_each_problem_once() {
    // A bad value inside a variable: one SCHEMA at the field, no UNKNOWN_FIELD for valid names.
    let b = json!({"troupe": "0.1", "kind": "bundle", "scenarios": [{"id": "s", "name": "S",
        "cast": [{"character": "kai"}],
        "variables": [{"id": "x", "type": "int", "places": 99, "visibility": "visible", "min": 0}]}]});
    assert_eq!(
        found(SchemaKind::Bundle, b),
        vec![schema("/scenarios/0/variables/0/places")]
    );
    // oneOf `when`: neither a string nor an object → one message naming both forms.
    let event = |when: Value| {
        json!({"troupe": "0.1", "kind": "bundle", "scenarios": [{"id": "s", "name": "S",
            "cast": [{"character": "kai"}], "events": [{"id": "e", "when": when}]}]})
    };
    let d = check(SchemaKind::Bundle, event(json!(5)));
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(
        d[0].location.pointer.as_deref(),
        Some("/scenarios/0/events/0/when")
    );
    assert!(d[0].message.contains("string") && d[0].message.contains("object"));
    // An object with a bad `type`: the object branch's error, at the field.
    assert_eq!(
        found(
            SchemaKind::Bundle,
            event(json!({"type": "variable_abov", "variable": "x", "threshold": 1}))
        ),
        vec![schema("/scenarios/0/events/0/when/type")]
    );
    // An unknown field inside the object branch is UNKNOWN_FIELD, once.
    assert_eq!(
        found(
            SchemaKind::Bundle,
            event(json!({"type": "variable_above", "variable": "x", "threshold": 1, "by": 2}))
        ),
        vec![unknown("/scenarios/0/events/0/when/by")]
    );
    // An empty string: the string branch's error.
    assert_eq!(
        found(SchemaKind::Bundle, event(json!(""))),
        vec![schema("/scenarios/0/events/0/when")]
    );
    // A change with an unknown key beside a known one: UNKNOWN_FIELD only.
    let msg = json!({"id": "1", "author": "kai", "changes": [{"set": {}, "mystery": 1}],
                     "firings": [{"event": "e", "outcome": "o"}]});
    assert_eq!(
        found(SchemaKind::Message, msg),
        vec![unknown("/changes/0/mystery"), schema("/firings/0")]
    );
}

#[test]
fn cast_seats_and_openings() {
    let b = |cast: Value, openings: Value| {
        json!({"troupe": "0.1", "kind": "bundle", "scenarios": [{"id": "s", "name": "S",
            "cast": cast, "openings": openings}]})
    };
    assert_eq!(
        found(
            SchemaKind::Bundle,
            b(
                json!([{"seat": "p", "player": false}, {"character": "kai", "seat2": 1}]),
                json!([{"id": "o", "text": "hi", "parts": [{"type": "text", "text": "x"}]}])
            )
        ),
        vec![
            schema("/scenarios/0/cast/0/player"),
            unknown("/scenarios/0/cast/1/seat2"),
            schema("/scenarios/0/openings/0/text"),
        ]
    );
}

#[test]
fn safety_policies_list_both_global_rules() {
    let s = json!({"schema_version": "0.1", "policy_id": "p", "content_rating_cap": "teen",
        "categories": [{"id": "c", "action": "stop"}], "global_rules": ["minor_safety"]});
    let d = check(SchemaKind::Safety, s);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].location.pointer.as_deref(), Some("/global_rules"));
    assert!(d[0].message.contains("crisis_support"), "{}", d[0].message);
}

#[test]
fn conformance_case_tests_are_closed_per_type() {
    let case = |test: Value| json!({"description": "d", "tests": [test]});
    let ok = [
        json!({"type": "cel", "expr": "1 == 1", "expect": true}),
        json!({"type": "cel", "expr": "null", "expect": {"checkError": true}}),
        json!({"type": "check", "expect": {"codes": []}}),
        json!({"type": "knows", "message": "1", "part": 0, "expect": []}),
        json!({"type": "parse", "kind": "bundle", "base64": "e30=", "expect": {"codes": ["PARSE"]}}),
    ];
    for t in ok {
        assert!(
            found(SchemaKind::ConformanceCase, case(t.clone())).is_empty(),
            "{t}"
        );
    }
    assert_eq!(
        found(
            SchemaKind::ConformanceCase,
            case(json!({"type": "check", "expect": {"codes": [], "code": "SCHEMA"}}))
        ),
        vec![unknown("/tests/0/expect/code")]
    );
    assert_eq!(
        found(
            SchemaKind::ConformanceCase,
            case(json!({"type": "cel", "expr": "x", "expect": {"checkError": true, "value": 1}}))
        ),
        vec![unknown("/tests/0/expect/value")]
    );
    // A field of another test type is unknown.
    assert_eq!(
        found(
            SchemaKind::ConformanceCase,
            case(json!({"type": "ended", "at": "1", "expr": "x", "expect": true}))
        ),
        vec![unknown("/tests/0/expr")]
    );
    // Both `part` and `summary`: one problem.
    assert_eq!(
        found(
            SchemaKind::ConformanceCase,
            case(
                json!({"type": "knows", "message": "1", "part": 0, "summary": true, "expect": []})
            )
        ),
        vec![schema("/tests/0")]
    );
    // bundle and bundleFile together.
    assert_eq!(
        found(
            SchemaKind::ConformanceCase,
            json!({"description": "d", "bundle": {}, "bundleFile": "b.json",
                   "tests": [{"type": "check", "expect": {"codes": []}}]})
        ),
        vec![schema("/bundleFile")]
    );
}

#[test]
fn output_is_deterministic_and_sorted() {
    let msg = json!({"id": "", "author": "Kai", "zzz": 1, "aaa": 2,
                     "parts": [{"type": "text", "text": "x", "q": 1}]});
    let first = found(SchemaKind::Message, msg.clone());
    for _ in 0..5 {
        assert_eq!(found(SchemaKind::Message, msg.clone()), first);
    }
    assert_eq!(
        first,
        vec![
            schema("/id"),
            schema("/author"),
            unknown("/zzz"),
            unknown("/aaa"),
            unknown("/parts/0/q"),
        ]
    );
}

#[test]
fn integers_outside_i64_are_schema() {
    let header = |seed: &str| {
        serde_json::from_str::<Value>(&format!(
            r#"{{"troupe": "0.1", "kind": "session", "scenario": "s", "seed": {seed}}}"#
        ))
        .unwrap()
    };
    assert!(found(SchemaKind::SessionHeader, header("9223372036854775807")).is_empty());
    assert_eq!(
        found(SchemaKind::SessionHeader, header("9223372036854775808")),
        vec![schema("/seed")]
    );
    assert_eq!(
        found(SchemaKind::SessionHeader, header("-1")),
        vec![schema("/seed")]
    );
}

/// Every object schema is closed with `additionalProperties: false` and an
/// explicit property list; none uses `unevaluatedProperties`, whose failing
/// subschemas would make it list valid names (so each problem is reported once).
#[test]
fn every_object_schema_is_closed() {
    // Open on purpose: `if` tests, the `else` of a part of unknown type (its
    // type alone is reported), the conformance test object (closed per type),
    // and the constraints a derived variable adds (they forbid fields of the
    // closed variable object, Format 8.1).
    let open = [
        "defs.schema.json#/$defs/part/else",
        "defs.schema.json#/$defs/variable/dependentSchemas/derived",
        "defs.schema.json#/$defs/variableBody/dependentSchemas/derived",
        "defs.schema.json#/$defs/variable/dependentSchemas/knob",
        "defs.schema.json#/$defs/variableBody/dependentSchemas/knob",
        "conformance/case.schema.json#/$defs/test",
    ];
    fn walk(file: &str, ptr: &str, key: &str, v: &Value, open: &[&str], bad: &mut Vec<String>) {
        let Value::Object(m) = v else {
            if let Value::Array(a) = v {
                for (i, x) in a.iter().enumerate() {
                    walk(file, &format!("{ptr}/{i}"), key, x, open, bad);
                }
            }
            return;
        };
        assert!(!m.contains_key("unevaluatedProperties"), "{file}#{ptr}");
        let here = format!("{file}#{ptr}");
        if key != "if"
            && m.contains_key("properties")
            && m.get("additionalProperties") != Some(&Value::Bool(false))
            && !open.contains(&here.as_str())
        {
            bad.push(here);
        }
        for (k, x) in m {
            if k == "properties" || k == "$defs" || k == "patternProperties" {
                if let Value::Object(props) = x {
                    for (name, s) in props {
                        walk(file, &format!("{ptr}/{k}/{name}"), name, s, open, bad);
                    }
                }
            } else {
                walk(file, &format!("{ptr}/{k}"), k, x, open, bad);
            }
        }
    }
    let mut bad = Vec::new();
    for (file, text) in SOURCES {
        let v: Value = serde_json::from_str(text).unwrap();
        walk(file, "", "", &v, &open, &mut bad);
    }
    assert!(bad.is_empty(), "open object schemas: {bad:#?}");
}

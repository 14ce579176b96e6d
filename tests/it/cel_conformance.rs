//! Runs the `cel` tests of `conformance/cases/cel/*.json` (seed §3.4) at no
//! evaluation point, with a minimal reading of the inline bundles: the
//! initial state (Format 8.6) of the features those cases use. The full
//! runner (issue: conformance) replaces this harness; `check` tests are left
//! to it.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value as Json;
use troupe::internals::cel::{self, Activation, Env, NoHost, ObjectType, StoryDecls, Type, Value};

fn var_type(v: &Json) -> Type {
    let base = match v["type"].as_str().unwrap_or("") {
        "number" => Type::Double,
        other => Type::parse(other).expect("variable type"),
    };
    if v.get("keys").is_some() {
        Type::map(Type::String, base)
    } else {
        base
    }
}

fn default_value(v: &Json, cast: &[String]) -> Value {
    let ty = v["type"].as_str().unwrap_or("");
    let single = match v.get("default") {
        Some(d) if ty == "number" => Value::Double(d.as_f64().expect("number")),
        Some(d) => Value::from_json(d).expect("default"),
        None => match ty {
            "int" => Value::Int(0),
            "number" => Value::Double(0.0),
            "bool" => Value::Bool(false),
            "string" => Value::string(""),
            t if t.starts_with("list") => Value::List(Arc::new(vec![])),
            _ => Value::from_json(&serde_json::json!({})).expect("map"),
        },
    };
    let keys: Vec<String> = match v.get("keys") {
        None => return single,
        Some(Json::String(s)) if s == "*" => vec![],
        Some(Json::String(s)) if s == "cast" => cast.to_vec(),
        Some(Json::Array(a)) => a
            .iter()
            .filter_map(|k| k.as_str().map(String::from))
            .collect(),
        Some(_) => vec![],
    };
    let mut m = cel::MapValue::default();
    for k in keys {
        m.insert(cel::Key::String(Arc::from(k.as_str())), single.clone());
    }
    Value::Map(Arc::new(m))
}

fn vars_object(name: &str, vars: Option<&Json>) -> ObjectType {
    let mut o = ObjectType::new(name);
    for v in vars.and_then(Json::as_array).into_iter().flatten() {
        o = o.field(v["id"].as_str().unwrap_or(""), var_type(v));
    }
    o
}

fn run_case(path: &Path) -> usize {
    let case: Json = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let bundle = &case["bundle"];
    // This harness reads the initial state of a scenario and its cast only:
    // cases with worlds or a session are left to the full runner.
    if bundle.get("worlds").is_some() || case.get("session").is_some() {
        return 0;
    }
    let scenario = &bundle["scenarios"][0];
    let chars = bundle["characters"].as_array().cloned().unwrap_or_default();
    let char_vars = |id: &str| {
        chars
            .iter()
            .find(|c| c["id"] == id)
            .and_then(|c| c.get("variables"))
            .cloned()
    };
    let cast: Vec<String> = scenario["cast"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["character"].as_str().map(String::from))
        .collect();
    let players: Vec<Value> = scenario["cast"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["player"] == true && e.get("character").is_some())
        .map(|e| Value::string(e["character"].as_str().unwrap()))
        .collect();
    let mut state = vars_object("state", scenario.get("variables"));
    for c in &cast {
        state = state.field(c.clone(), vars_object(c, char_vars(c).as_ref()).into_type());
    }
    let difficulty = scenario.get("difficulty");
    let knobs = difficulty.map(|d| {
        let preset = d["default"].as_str().unwrap();
        d["options"][preset]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    });
    let mut count = 0;
    for t in case["tests"].as_array().unwrap() {
        if t["type"] != "cel" || t.get("at").is_some() || t.get("self") == Some(&scenario["id"]) {
            continue;
        }
        count += 1;
        let owner = t.get("self").and_then(Json::as_str).unwrap_or("");
        let own = if owner.is_empty() {
            vars_object("own", scenario.get("variables"))
        } else {
            vars_object("own", char_vars(owner).as_ref())
        };
        let decls = StoryDecls {
            state: state.clone(),
            own,
            difficulty_knobs: knobs.clone(),
        };
        let env: Env =
            cel::troupe_env(&decls).with_hit(t.get("kind").and_then(Json::as_str) == Some("entry"));
        let mut act = Activation::new(&env);
        let mut set = |n: &str, v: Value| {
            act.set_by_name(&env, n, v);
        };
        for v in scenario["variables"].as_array().into_iter().flatten() {
            set(
                &format!("state.{}", v["id"].as_str().unwrap()),
                default_value(v, &cast),
            );
        }
        for c in &cast {
            for v in char_vars(c)
                .as_ref()
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
            {
                let id = v["id"].as_str().unwrap();
                set(&format!("state.{c}.{id}"), default_value(v, &cast));
                if c == owner {
                    set(&format!("own.{id}"), default_value(v, &cast));
                }
            }
        }
        if owner.is_empty() {
            for v in scenario["variables"].as_array().into_iter().flatten() {
                set(
                    &format!("own.{}", v["id"].as_str().unwrap()),
                    default_value(v, &cast),
                );
            }
        }
        let location = scenario["scene"]["location"].as_str().unwrap_or("");
        set("scene.location", Value::string(location));
        set(
            "scene.present",
            Value::List(Arc::new(cast.iter().map(|c| Value::string(c)).collect())),
        );
        set(
            "char",
            Value::string(t.get("char").and_then(Json::as_str).unwrap_or("")),
        );
        let user = players.first().cloned().unwrap_or(Value::string(""));
        set("user", user);
        let self_id = if owner.is_empty() {
            scenario["id"].as_str().unwrap()
        } else {
            owner
        };
        set("self", Value::string(self_id));
        for n in ["turn", "round", "elapsed"] {
            set(n, Value::Int(0));
        }
        set("hour", Value::Int(-1));
        set("weekday", Value::Int(-1));
        for n in ["opening", "last.id", "last.author", "last.text"] {
            set(n, Value::string(""));
        }
        set("players", Value::List(Arc::new(players.clone())));
        if let Some(d) = difficulty {
            let preset = d["default"].as_str().unwrap();
            set("difficulty.preset", Value::string(preset));
            for (k, v) in d["options"][preset].as_object().unwrap() {
                set(
                    &format!("difficulty.{k}"),
                    Value::Double(v.as_f64().unwrap()),
                );
            }
        }
        let expr = t["expr"].as_str().unwrap();
        let name = format!("{}: {}", path.display(), t["name"]);
        match &t["expect"] {
            Json::Bool(want) => {
                let p = cel::compile(expr, &env).unwrap_or_else(|e| panic!("{name}: {e:?}"));
                assert_eq!(p.eval_bool(&act, &mut NoHost), *want, "{name}");
            }
            e => {
                let want = e["checkError"].as_bool().unwrap();
                assert_eq!(cel::compile(expr, &env).is_err(), want, "{name}");
            }
        }
    }
    count
}

#[test]
fn cel_conformance_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/cases/cel");
    let mut total = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            total += run_case(&path);
        }
    }
    assert!(total >= 25, "only {total} cel tests");
}

//! The field order of `bundle.json` in a compiled package (Format 14.4):
//! each object's fields in the order the format's shapes list them, then
//! its `x-` properties (and any other field) in written order.

use serde_json::{Map, Value};

use crate::model::SCENARIO_FIELDS as SCENARIO;

const BUNDLE: &[&str] = &[
    "troupe",
    "kind",
    "characters",
    "worlds",
    "scenarios",
    "extensions",
];
const CHARACTER: &[&str] = &[
    "id",
    "name",
    "nickname",
    "aliases",
    "fictional",
    "age_band",
    "description",
    "personality",
    "text",
    "variables",
    "extensions",
];
const WORLD: &[&str] = &[
    "id",
    "name",
    "description",
    "variables",
    "entries",
    "extensions",
];
const VARIABLE: &[&str] = &[
    "id",
    "type",
    "default",
    "min",
    "max",
    "places",
    "keys",
    "derived",
    "visibility",
    "description",
];
const ENTRY: &[&str] = &[
    "id",
    "content",
    "keys",
    "secondary_keys",
    "logic",
    "constant",
    "case_sensitive",
    "whole_words",
    "scan_depth",
    "order",
    "position",
    "enabled",
    "when",
    "extensions",
];
const OPENING: &[&str] = &[
    "id",
    "author",
    "parts",
    "text",
    "changes",
    "scene",
    "group_only",
    "extensions",
];
const EVENT: &[&str] = &[
    "id",
    "when",
    "repeat",
    "changes",
    "end",
    "signal",
    "description",
    "extensions",
];
const RULE: &[&str] = &[
    "id",
    "when",
    "keywords",
    "pattern",
    "priority",
    "changes",
    "replies",
    "by",
    "reply_as",
    "on",
    "extensions",
];
const POLICY: &[&str] = &[
    "policy_id",
    "content_rating_cap",
    "categories",
    "global_rules",
    "extensions",
];
const CATEGORY: &[&str] = &[
    "id",
    "action",
    "terms",
    "patterns",
    "redirect_text",
    "extensions",
];
const CRITERION: &[&str] = &["id", "description", "weight", "score", "extensions"];

fn order(v: &Value, fields: &[&str], child: impl Fn(&str, &Value) -> Value) -> Value {
    let Value::Object(m) = v else {
        return v.clone();
    };
    let rank = |k: &str| fields.iter().position(|f| *f == k).unwrap_or(fields.len());
    // Members already in shape order (what a bundle written in the
    // format's order, and most items of a lowered pack, have) are copied
    // in one pass without a ranked list (docs/performance.md, Run AQ).
    let mut last = 0;
    let in_order = m.keys().all(|k| {
        let r = rank(k);
        let ok = r >= last;
        last = r;
        ok
    });
    if in_order {
        let mut out = Map::with_capacity(m.len());
        for (k, x) in m {
            let x = match fields.get(rank(k)) {
                Some(f) => child(f, x),
                None => x.clone(),
            };
            out.insert(k.clone(), x);
        }
        return Value::Object(out);
    }
    // One pass over the members, each ranked by its place in `fields` (the
    // others after them, in written order: the sort is stable), instead of
    // a look-up of every field of the shape and of every member
    // (docs/performance.md, Run AE).
    let mut ranked: Vec<(usize, &String, &Value)> =
        m.iter().map(|(k, x)| (rank(k), k, x)).collect();
    ranked.sort_by_key(|r| r.0);
    let mut out = Map::with_capacity(ranked.len());
    for (rank, k, x) in ranked {
        let x = match fields.get(rank) {
            Some(f) => child(f, x),
            None => x.clone(),
        };
        out.insert(k.clone(), x);
    }
    Value::Object(out)
}

fn each(v: &Value, f: impl Fn(&Value) -> Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.iter().map(f).collect()),
        other => other.clone(),
    }
}

fn plain(fields: &'static [&'static str]) -> impl Fn(&Value) -> Value {
    move |v| order(v, fields, |_, x| x.clone())
}

fn with_vars(fields: &'static [&'static str]) -> impl Fn(&Value) -> Value {
    move |v| {
        order(v, fields, |k, x| match k {
            "variables" => each(x, plain(VARIABLE)),
            "entries" => each(x, plain(ENTRY)),
            _ => x.clone(),
        })
    }
}

fn scenario(v: &Value) -> Value {
    order(v, SCENARIO, |k, x| match k {
        "variables" => each(x, plain(VARIABLE)),
        "entries" => each(x, plain(ENTRY)),
        "openings" => each(x, plain(OPENING)),
        "events" | "outcomes" => each(x, plain(EVENT)),
        "rules" => each(x, plain(RULE)),
        "rubric" => order(x, &["criteria", "extensions"], |_, c| {
            each(c, plain(CRITERION))
        }),
        "safety" => order(x, POLICY, |k, c| {
            if k == "categories" {
                each(c, plain(CATEGORY))
            } else {
                c.clone()
            }
        }),
        _ => x.clone(),
    })
}

/// `bundle` with every object's fields in shape order.
pub fn canonical_bundle(bundle: &Value) -> Value {
    order(bundle, BUNDLE, |k, x| match k {
        "characters" => each(x, with_vars(CHARACTER)),
        "worlds" => each(x, with_vars(WORLD)),
        // Each scenario ordered on one of the machine's cores (`crate::par`).
        "scenarios" => match x {
            Value::Array(a) => Value::Array(crate::par::map(a, |_, s| scenario(s))),
            other => other.clone(),
        },
        _ => x.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The member order as it was built before Run AE: each field of the
    /// shape looked up in turn, then every other member in written order.
    fn order_by_look_up(v: &Value, fields: &[&str]) -> Value {
        let Value::Object(m) = v else {
            return v.clone();
        };
        let mut out = Map::new();
        for f in fields {
            if let Some(x) = m.get(*f) {
                out.insert((*f).to_string(), x.clone());
            }
        }
        for (k, x) in m {
            if !out.contains_key(k) {
                out.insert(k.clone(), x.clone());
            }
        }
        Value::Object(out)
    }

    fn objects<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
        match v {
            Value::Object(m) => {
                out.push(v);
                m.values().for_each(|x| objects(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| objects(x, out)),
            _ => {}
        }
    }

    /// Ranking the members in one pass orders every object of the example
    /// bundles, under every shape, as looking each field up did (compared
    /// as text: a map's equality ignores order).
    #[test]
    fn one_pass_ranking_orders_as_looking_each_field_up() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let mut docs: Vec<Value> = ["harbor-lights.bundle.json", "tiny.bundle.json"]
            .iter()
            .map(|f| {
                let text = std::fs::read(root.join("examples/bundles").join(f)).unwrap();
                serde_json::from_slice(&text).unwrap()
            })
            .collect();
        docs.push(serde_json::json!({
            "x-b": 1, "name": "N", "extensions": {}, "id": "c", "x-a": [2], "age_band": "adult"
        }));
        let shapes = [
            BUNDLE, CHARACTER, WORLD, VARIABLE, ENTRY, OPENING, EVENT, RULE, POLICY, CATEGORY,
            CRITERION, SCENARIO,
        ];
        let mut n = 0;
        for doc in &docs {
            let mut all = Vec::new();
            objects(doc, &mut all);
            for o in all {
                for shape in shapes {
                    let one_pass = order(o, shape, |_, x| x.clone()).to_string();
                    assert_eq!(one_pass, order_by_look_up(o, shape).to_string());
                    n += 1;
                }
            }
        }
        assert!(n > 1000, "{n} objects ordered");
        let c = order(docs.last().unwrap(), CHARACTER, |_, x| x.clone());
        let keys: Vec<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["id", "name", "age_band", "extensions", "x-b", "x-a"]);
    }
}

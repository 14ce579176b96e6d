//! Evaluating a static assertion against the pack files as written
//! (Format 21.4): resolving a path (refs followed) and holding a check.

use std::str::FromStr;

use rust_decimal::Decimal;
use serde_json::Value;

use super::syntax::{Check, Cmp, Path, Selector};
use crate::changes::values::{exact_decimal, kind_of};
use crate::load::normalize_ref;
use crate::model::manifest::{Manifest, FILE as MANIFEST};

/// The pack documents a path reads: every parsed file by pack-relative path
/// (`manifest.yaml` included).
pub trait PackDocs {
    /// The parsed document at a pack-relative path.
    fn doc(&self, rel: &str) -> Option<&Value>;
}

impl PackDocs for indexmap::IndexMap<String, Value> {
    fn doc(&self, rel: &str) -> Option<&Value> {
        self.get(rel)
    }
}

/// Resolves `path` starting from `scenario_file` (the fixture's scenario's
/// pack-relative path). `Err` is the failure message
/// (`path not found: no 'events[id=rush]' (step 1)`).
pub fn resolve<'a>(
    docs: &'a dyn PackDocs,
    scenario_file: &str,
    path: &Path,
) -> Result<&'a Value, String> {
    let mut steps = path.steps.iter().enumerate().peekable();
    let first = path.steps.first();
    let start = match first {
        Some(s) if s.selectors.is_empty() && s.name == "scenario" => {
            steps.next();
            docs.doc(scenario_file)
        }
        Some(s) if s.selectors.is_empty() && s.name == "manifest" => {
            steps.next();
            docs.doc(MANIFEST)
        }
        Some(s) if s.selectors.is_empty() && s.name == "safety" => {
            steps.next();
            docs.doc(MANIFEST)
                .and_then(|m| Manifest::read(m).safety_policy)
                .and_then(|p| normalize_ref(p).ok())
                .and_then(|p| docs.doc(&p))
        }
        _ => docs.doc(scenario_file),
    };
    let Some(mut cur) = start else {
        let what = first.map_or(String::new(), |s| s.name.clone());
        return Err(format!("path not found: no file for '{what}' (step 1)"));
    };
    for (i, step) in steps {
        let not_found = || {
            let mut text = step.name.clone();
            for s in &step.selectors {
                match s {
                    Selector::Index(n) => text.push_str(&format!("[{n}]")),
                    Selector::Filter(k, v) => text.push_str(&format!("[{k}={v}]")),
                }
            }
            format!("path not found: no '{text}' (step {})", i + 1)
        };
        if step.name != "ref" {
            cur = follow(docs, cur);
        }
        cur = cur.get(&step.name).ok_or_else(not_found)?;
        for sel in &step.selectors {
            let items = cur.as_array().ok_or_else(not_found)?;
            cur = match sel {
                Selector::Index(n) => items.get(*n),
                Selector::Filter(k, v) => items.iter().find(|item| {
                    item.as_object()
                        .and_then(|o| o.get(k))
                        .and_then(text_of)
                        .is_some_and(|t| t == *v)
                }),
            }
            .ok_or_else(not_found)?;
        }
    }
    Ok(follow(docs, cur))
}

/// Follows a ref (`{ref: path}`) to the referenced document; anything else
/// (or a ref naming no parsed file) stays as it is.
fn follow<'a>(docs: &'a dyn PackDocs, v: &'a Value) -> &'a Value {
    let target = crate::model::manifest::ref_path(v)
        .and_then(|p| normalize_ref(p).ok())
        .and_then(|p| docs.doc(&p));
    target.unwrap_or(v)
}

/// The text of a scalar for a filter: a string as it is, a number as 10.4
/// formats it, a bool as `true`/`false`.
fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(_) => exact_decimal(v).map(format_decimal),
        _ => None,
    }
}

/// A decimal written plainly, without trailing fractional zeros, `-0` as `0`
/// (Format 10.4).
pub fn format_decimal(d: Decimal) -> String {
    let n = d.normalize();
    if n.is_zero() {
        "0".into()
    } else {
        n.to_string()
    }
}

/// A JSON number text as an exact decimal.
fn number(text: &str) -> Option<Decimal> {
    serde_json::from_str::<Value>(text)
        .ok()
        .filter(Value::is_number)?;
    Decimal::from_str(text)
        .or_else(|_| Decimal::from_scientific(text))
        .ok()
}

/// `same(x, v)` of Format 21.4.
fn same(x: &Value, v: &str) -> bool {
    match x {
        Value::String(s) => s == v,
        Value::Bool(b) => (v == "true" && *b) || (v == "false" && !*b),
        Value::Number(_) => match (exact_decimal(x), number(v)) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        },
        _ => false,
    }
}

/// Holds `check` for the value found; `Err` says why it does not hold.
pub fn holds(check: &Check, x: &Value) -> Result<(), String> {
    let found = || format!("found {}", describe(x));
    match check {
        Check::NonEmptyString => match x {
            Value::String(s) if s.chars().any(|c| !c.is_whitespace()) => Ok(()),
            Value::String(_) => {
                Err("expected a non-empty string, found an empty or blank string".into())
            }
            _ => Err(format!("expected a string, {}", found())),
        },
        Check::MinLength1 => match x {
            Value::Array(a) if !a.is_empty() => Ok(()),
            Value::String(s) if !s.is_empty() => Ok(()),
            Value::Object(o) if !o.is_empty() => Ok(()),
            Value::Array(_) | Value::String(_) | Value::Object(_) => {
                Err(format!("expected at least one item, {}", found()))
            }
            _ => Err(format!(
                "expected a list, a string or an object, {}",
                found()
            )),
        },
        Check::Equals(v) => {
            if same(x, v) {
                Ok(())
            } else {
                Err(format!("expected {v}, {}", found()))
            }
        }
        Check::Contains(v) => {
            let ok = match x {
                Value::Array(items) => items.iter().any(|y| same(y, v)),
                Value::String(s) => s.contains(v.as_str()),
                Value::Object(o) => o.contains_key(v),
                _ => {
                    return Err(format!(
                        "expected a list, a string or an object, {}",
                        found()
                    ))
                }
            };
            if ok {
                Ok(())
            } else {
                Err(format!("expected something containing {v}, {}", found()))
            }
        }
        Check::Compare(cmp, n) => {
            let (Some(a), Some(b)) = (exact_decimal(x), number(n)) else {
                return Err(format!("expected a number, {}", found()));
            };
            let ok = match cmp {
                Cmp::Lt => a < b,
                Cmp::Lte => a <= b,
                Cmp::Gt => a > b,
                Cmp::Gte => a >= b,
            };
            let op = match cmp {
                Cmp::Lt => "<",
                Cmp::Lte => "<=",
                Cmp::Gt => ">",
                Cmp::Gte => ">=",
            };
            if ok {
                Ok(())
            } else {
                Err(format!(
                    "expected a number {op} {n}, found {}",
                    format_decimal(a)
                ))
            }
        }
        Check::Fields(fields) => {
            let Value::Object(o) = x else {
                return Err(format!("expected an object, {}", found()));
            };
            for (k, v) in fields {
                match o.get(k) {
                    None => return Err(format!("{k}: no such member")),
                    Some(m) if !same(m, v) => {
                        return Err(format!("{k}: expected {v}, found {}", describe(m)))
                    }
                    Some(_) => {}
                }
            }
            Ok(())
        }
    }
}

fn describe(x: &Value) -> String {
    match x {
        Value::String(s) => format!("the string {}", serde_json::Value::String(s.clone())),
        Value::Bool(b) => format!("the bool {b}"),
        Value::Number(_) => match exact_decimal(x) {
            Some(d) => format!("the number {}", format_decimal(d)),
            None => "a number".into(),
        },
        _ => kind_of(x).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::syntax::{parse_check, parse_path};
    use super::*;
    use indexmap::IndexMap;
    use serde_json::json;

    fn docs() -> IndexMap<String, Value> {
        let mut d = IndexMap::new();
        d.insert(
            "scenarios/haggle.yaml".into(),
            json!({"scenario_id": "haggle", "npc": {"ref": "npcs/vendor.yaml"},
                   "opening": {"npc_says": "Best prices!"},
                   "events": [{"id": "warming_up", "when": {"type": "variable_above", "variable": "impression", "threshold": 60}}],
                   "ending_conditions": {"failure": "state.impression < 10"},
                   "state": {"variables": {"impression": {"visibility": "visible", "default": 50.0}}}}),
        );
        d.insert("npcs/vendor.yaml".into(), json!({"fictional": true}));
        d.insert(
            "manifest.yaml".into(),
            json!({"entry_scenarios": ["scenarios/haggle.yaml"], "safety": {"policy": "safety/p.yaml"}}),
        );
        d.insert("safety/p.yaml".into(), json!({"policy_id": "p"}));
        d
    }

    fn run(path: &str, check: &str) -> Result<(), String> {
        let d = docs();
        let p = parse_path(path).unwrap();
        let c = parse_check(check).unwrap();
        let x = resolve(&d, "scenarios/haggle.yaml", &p)?;
        holds(&c, x)
    }

    #[test]
    fn the_spec_table() {
        assert_eq!(run("opening.npc_says", "non_empty_string"), Ok(()));
        assert_eq!(
            run(
                "events[id=warming_up].when",
                "type=variable_above AND variable=impression AND threshold=60"
            ),
            Ok(())
        );
        assert_eq!(run("events[id=warming_up].when", "threshold=60.0"), Ok(()));
        assert_eq!(
            run("state.variables.impression.visibility", "equals visible"),
            Ok(())
        );
        assert_eq!(
            run("ending_conditions.failure", "contains impression"),
            Ok(())
        );
        assert_eq!(run("npc.fictional", "equals true"), Ok(()));
        assert_eq!(
            run("manifest.entry_scenarios", "contains scenarios/haggle.yaml"),
            Ok(())
        );
        assert_eq!(run("safety.policy_id", "equals p"), Ok(()));
        assert_eq!(
            run("scenario.difficulty.options.hard.patience", "lte 33"),
            Err("path not found: no 'difficulty' (step 2)".into())
        );
        assert_eq!(
            run("events[id=rush].when", "non_empty_string"),
            Err("path not found: no 'events[id=rush]' (step 1)".into())
        );
    }

    #[test]
    fn types_that_do_not_fit_fail() {
        assert_eq!(
            run("opening.npc_says", "lte 3"),
            Err("expected a number, found the string \"Best prices!\"".into())
        );
        assert_eq!(
            run("state.variables.impression.default", "equals 50"),
            Ok(())
        );
        assert_eq!(
            run("state.variables.impression.default", "gt 50"),
            Err("expected a number > 50, found 50".into())
        );
        assert!(run("npc.fictional", "equals yes").is_err());
        assert!(run("npc", "equals true").is_err());
        assert_eq!(run("npc.ref", "equals npcs/vendor.yaml"), Ok(()));
    }
}

//! Lints (Format 17.4): logic a pack declares that can never take effect.
//! Warnings (DEAD_LOGIC), so errors only under `troupe check --strict`:
//! a rule that a fallback tried before it always hides, and a threshold an
//! event or outcome can never cross because of its variable's bounds.

use rust_decimal::Decimal;
use serde_json::Value;

use super::changes::{resolve_target, Target};
use super::story::Story;
use super::values::exact_decimal;
use crate::diag::{Code, Diagnostic, Severity};
use crate::model::Condition;

fn lint(message: String, at: String) -> Diagnostic {
    Diagnostic::error(Code::DeadLogic, message)
        .with_severity(Severity::Warning)
        .at(at)
}

fn array<'v>(v: &'v Value, field: &str) -> &'v [Value] {
    v.get(field)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Runs the lints of one story.
pub fn lint_story(story: &Story, out: &mut Vec<Diagnostic>) {
    shadowed_rules(story, out);
    unreachable_thresholds(story, out);
}

/// A rule with no `keywords`, `pattern` or `when` matches every input
/// (Format 18.2), so every rule tried after it (lower priority, or equal
/// priority declared later) never applies.
fn shadowed_rules(story: &Story, out: &mut Vec<Diagnostic>) {
    let base = &story.pointer;
    let rules = array(&story.raw, "rules");
    let priority = |r: &Value| r.get("priority").and_then(Value::as_i64).unwrap_or(0);
    let mut order: Vec<usize> = (0..rules.len()).collect();
    // Highest priority first; a stable sort keeps declaration order.
    order.sort_by_key(|&i| std::cmp::Reverse(priority(&rules[i])));
    let fallback = order.iter().position(|&i| {
        let r = &rules[i];
        r.get("keywords").is_none() && r.get("pattern").is_none() && r.get("when").is_none()
    });
    let Some(f) = fallback else { return };
    let by = rules[order[f]]
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or("");
    for &i in &order[f + 1..] {
        let id = rules[i].get("id").and_then(Value::as_str).unwrap_or("");
        out.push(lint(
            format!(
                "rule `{id}` can never apply: `{by}` matches every input (no keywords, pattern or when) and is tried first (priority {} ≥ {}); give `{by}` a lower priority",
                priority(&rules[order[f]]),
                priority(&rules[i])
            ),
            format!("{base}/rules/{i}/id"),
        ));
    }
}

/// A Threshold (Format 9.5) past its variable's bounds can never hold:
/// `variable_above t` with `max ≤ t`, `variable_below t` with `min ≥ t`.
fn unreachable_thresholds(story: &Story, out: &mut Vec<Diagnostic>) {
    let base = &story.pointer;
    for (field, what) in [("events", "event"), ("outcomes", "ending")] {
        for (i, ev) in array(&story.raw, field).iter().enumerate() {
            let Some(when) = ev.get("when") else { continue };
            let Ok(Condition::Threshold {
                kind,
                variable,
                threshold,
            }) = serde_json::from_value::<Condition>(when.clone())
            else {
                continue;
            };
            let name = match resolve_target(story, &variable) {
                Ok(Target::Variable(v)) | Ok(Target::Key(v, _)) => v.to_string(),
                _ => continue, // reported by the threshold check
            };
            let Some(decl) = story.variables.get(&name) else {
                continue;
            };
            let bound = |b: &Option<Value>| b.as_ref().and_then(exact_decimal);
            let Some(t) = exact_decimal(&threshold) else {
                continue;
            };
            let id = ev.get("id").and_then(Value::as_str).unwrap_or("");
            let never = match kind.as_str() {
                "variable_above" => bound(&decl.decl.max)
                    .filter(|m: &Decimal| *m <= t)
                    .map(|m| format!("`{variable}` never goes above {t}: its max is {m}")),
                "variable_below" => bound(&decl.decl.min)
                    .filter(|m: &Decimal| *m >= t)
                    .map(|m| format!("`{variable}` never goes below {t}: its min is {m}")),
                _ => None,
            };
            if let Some(why) = never {
                out.push(lint(
                    format!("{why}, so {what} `{id}` can never happen this way"),
                    format!("{base}/{field}/{i}/when/threshold"),
                ));
            }
        }
    }
}

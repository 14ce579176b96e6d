//! Lints (Format 17.4): logic a pack declares that can never take effect.
//! Warnings (DEAD_LOGIC), so errors only under `troupe check --strict`:
//! a rule that a fallback tried before it always hides, a threshold an
//! event or outcome can never cross because of its variable's bounds, a
//! difficulty knob that nothing reads, and (17.6, [`super::reach`]) an
//! event or outcome condition that can never hold.

use std::collections::BTreeSet;

use rust_decimal::Decimal;
use serde_json::Value;

use crate::changes::values::exact_decimal;
use crate::changes::{resolve_target, Target};
use crate::diag::{escape_token, Code, Diagnostic, Severity};
use crate::model::items::{Rule, VarItem};
use crate::model::Condition;
use crate::model::List;
use crate::resolve::env::owner_env;
use crate::resolve::story::{Owner, Story};

pub(super) fn lint(message: String, at: String) -> Diagnostic {
    Diagnostic::error(Code::DeadLogic, message)
        .with_severity(Severity::Warning)
        .at(at)
}

/// Runs the lints of one story. `reads` is what the story's conditions
/// read ([`super::conditions::check_conditions`]; `None` when one did not
/// compile, and then knobs are not linted).
///
/// `out` holds the story's diagnostics so far: a difficulty with an error
/// (Format 6.5) is not linted for knobs either.
pub fn lint_story(story: &Story, reads: Option<&BTreeSet<String>>, out: &mut Vec<Diagnostic>) {
    shadowed_rules(story, out);
    unreachable_thresholds(story, out);
    super::ensemble::lint_ensemble(story, out);
    let difficulty = format!("{}/difficulty", story.pointer);
    let broken = out.iter().any(|d| {
        d.is_error()
            && d.location.pointer.as_deref().is_some_and(|p| {
                p.strip_prefix(&difficulty)
                    .is_some_and(|r| r.is_empty() || r.starts_with('/'))
            })
    });
    if let (Some(reads), false) = (reads, broken) {
        unread_knobs(story, reads, out);
    }
}

/// A difficulty knob (Format 6.5) that no scenario variable starts at
/// (8.1 `knob`) and no expression reads as `difficulty.<knob>` changes
/// nothing whichever preset is chosen. `reads` holds what the conditions
/// read; the `emotion` expression (18.6) is compiled here only when some
/// knob is still unread.
fn unread_knobs(story: &Story, reads: &BTreeSet<String>, out: &mut Vec<Diagnostic>) {
    let Some((preset, knobs)) = story
        .scenario
        .difficulty()
        .and_then(|d| d.options)
        .and_then(|o| o.iter().next())
        .and_then(|(p, k)| Some((p, k.as_object()?)))
    else {
        return;
    };
    let bound: BTreeSet<&str> = story
        .scenario
        .variables
        .iter()
        .filter_map(|v| VarItem::read(v).knob?.as_str())
        .collect();
    let mut unread: Vec<&str> = knobs
        .keys()
        .map(String::as_str)
        .filter(|k| !bound.contains(k) && !reads.contains(&format!("difficulty.{k}")))
        .collect();
    if unread.is_empty() {
        return;
    }
    if let Some(src) = story.scenario.emotion() {
        let scenario = Owner::Scenario(story.scenario.id.clone());
        let env = owner_env(story, &scenario, false);
        match &*crate::resolve::env::compile_once(story, &scenario, false, src, &env) {
            Ok(p) => unread.retain(|k| !p.reads(&env).contains(&format!("difficulty.{k}"))),
            Err(_) => return, // reported by the runtime checks; reads unknown
        }
    }
    let base = &story.pointer;
    for k in unread {
        out.push(lint(
            format!(
                "difficulty knob `{k}` is never read: no variable starts at it (`knob: {k}`) and no condition reads `difficulty.{k}`, so every preset plays the same for it"
            ),
            format!(
                "{base}/difficulty/options/{}/{}",
                escape_token(preset),
                escape_token(k)
            ),
        ));
    }
}

/// The fields of a rule (Format 18.1; `$defs/rule` of
/// `schemas/bundle.schema.json`, which a unit test compares with this).
const RULE_FIELDS: [&str; 11] = [
    "id",
    "when",
    "keywords",
    "pattern",
    "changes",
    "replies",
    "priority",
    "by",
    "reply_as",
    "on",
    "extensions",
];

/// A rule with no `keywords`, `pattern` or `when` matches every input
/// (Format 18.2), so every rule tried after it (lower priority, or equal
/// priority declared later) for the same replies never applies: the same
/// `on`, and a `by` that is the later rule's or none (Format 18.9). A
/// `reply_as` naming a character makes the earlier rule conditional.
fn shadowed_rules(story: &Story, out: &mut Vec<Diagnostic>) {
    let base = &story.pointer;
    let written = &story.scenario.rules;
    let rules: Vec<Rule<'_>> = story.scenario.rule_items().collect();
    let mut order: Vec<usize> = (0..rules.len()).collect();
    // Highest priority first; a stable sort keeps declaration order.
    order.sort_by_key(|&i| std::cmp::Reverse(rules[i].priority()));
    // A rule with a field the format does not define (a misspelt
    // `keyword:` is UNKNOWN_FIELD, Format 15) is not judged: that error is
    // the one diagnostic at the cause, not one warning per rule it would
    // seem to hide.
    let broken = |r: &Value| {
        r.as_object().is_some_and(|o| {
            o.keys()
                .any(|k| !RULE_FIELDS.contains(&k.as_str()) && !k.starts_with("x-"))
        })
    };
    let unconditional = |i: usize| {
        let r = &rules[i];
        r.keywords.is_none()
            && r.pattern.is_none()
            && r.when.is_none()
            && r.reply_as.is_none_or(|a| a == "narrator")
            && !broken(&written[i])
    };
    // The first unconditional rule tried for each (`on`, `by`): linear in
    // the rules.
    let mut first: std::collections::HashMap<(bool, Option<&str>), usize> =
        std::collections::HashMap::new();
    for &i in &order {
        let later = &rules[i];
        let on = later.on_reply;
        let by = later.by;
        let shadow = first
            .get(&(on, None))
            .or_else(|| by.and_then(|b| first.get(&(on, Some(b)))))
            .copied();
        if unconditional(i) {
            first.entry((on, by)).or_insert(i);
        }
        let Some(f) = shadow else {
            continue;
        };
        let by = rules[f].id.unwrap_or("");
        let id = rules[i].id.unwrap_or("");
        out.push(lint(
            format!(
                "rule `{id}` can never apply: `{by}` matches every input (no keywords, pattern or when) and is tried first (priority {} ≥ {}); give `{by}` a lower priority",
                rules[f].priority(),
                rules[i].priority()
            ),
            format!("{base}/rules/{i}/id"),
        ));
    }
}

/// A Threshold (Format 9.5) past its variable's bounds can never hold:
/// `variable_above t` with `max ≤ t`, `variable_below t` with `min ≥ t`.
pub(crate) fn unreachable_thresholds(story: &Story, out: &mut Vec<Diagnostic>) {
    let base = &story.pointer;
    for (field, what) in [(List::Events, "event"), (List::Outcomes, "ending")] {
        for (i, ev) in story.scenario.event_items(field).enumerate() {
            let Some(when) = ev.when else { continue };
            let Some(Condition::Threshold {
                kind,
                variable,
                threshold,
            }) = Condition::read(when)
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
            let id = ev.id.unwrap_or("");
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

#[cfg(test)]
mod rule_field_tests {
    /// The lint's list of rule fields is the schema's, so a field added to
    /// the format is not taken for a typo.
    #[test]
    fn rule_fields_are_the_schemas() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../../schemas/bundle.schema.json")).unwrap();
        let props: Vec<&str> = schema["$defs"]["rule"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(props, super::RULE_FIELDS);
    }
}

//! The rules runtime (Format 18.1–18.3): the first rule, by priority then
//! declaration order, whose keywords, pattern and `when` all hold proposes
//! its changes and one of its replies, chosen by the seeded generator.

use std::sync::Arc;

use super::compiled::{RuleIr, RuntimeIr};
use super::generator::{choose, reply_label};
use super::{Changes, CompiledChanges, Proposal, Reply, Runtime, TurnContext};
use crate::cel::{EvalError, Host, Value};
use crate::keys::{KeyOptions, KeyScan, KeySet};

/// The default runtime.
#[derive(Debug, Clone)]
pub struct RulesRuntime {
    ir: Arc<RuntimeIr>,
}

impl RulesRuntime {
    /// A rules runtime over a story's compiled rules.
    pub fn new(ir: Arc<RuntimeIr>) -> RulesRuntime {
        RulesRuntime { ir }
    }
}

/// The host of a rule's `when` (Format 18.2): `hit()` scans the input with
/// `case_sensitive` false and `whole_words` true; `roll()` is seeded with
/// `"<seed>:<message id>:rules:<k>"`, k counting every rule `roll` at the
/// message.
struct RuleHost<'a> {
    keys: &'a std::sync::Mutex<std::collections::HashMap<Vec<String>, Arc<KeySet>>>,
    lowered: &'a str,
    seed: u64,
    /// The input message's ID (the label is built only when a rule rolls).
    input_id: &'a str,
    calls: u64,
}

impl Host for RuleHost<'_> {
    fn hit(&mut self, keys: &[&str]) -> bool {
        let list: Vec<String> = keys.iter().map(|k| (*k).to_string()).collect();
        let set = match self.keys.lock() {
            Ok(mut cache) => cache
                .entry(list)
                .or_insert_with_key(|l| {
                    Arc::new(KeySet::new(
                        l.iter().map(String::as_str),
                        KeyOptions::RUNTIME,
                    ))
                })
                .clone(),
            Err(_) => return false,
        };
        set.hits(self.lowered)
    }
    fn roll(&mut self, notation: &str) -> Result<i64, EvalError> {
        let k = self.calls;
        self.calls += 1;
        let label = format!("{}:rules", self.input_id);
        crate::cel::dice::roll(notation, self.seed, &label, k)
    }
}

/// Whether `rule`, the `i`-th in trial order, matches (Format 18.2; its
/// keywords are looked up in the turn's `scan`); evaluation stops at the
/// first condition that fails, and a `when` that errors is false.
fn matches(
    (i, rule): (usize, &RuleIr),
    ctx: &TurnContext<'_>,
    scan: &KeyScan<'_, '_>,
    host: &mut RuleHost<'_>,
) -> bool {
    let keywords = rule.keywords.as_ref().is_none_or(|k| scan.hits(i, k));
    if !keywords || !rule.matches_pattern(ctx.input) {
        return false;
    }
    match &rule.when {
        None => true,
        Some(program) => {
            let mut rec = ctx.observer.map(|r| r.borrow_mut());
            let obs = rec
                .as_deref_mut()
                .map(|r| r as &mut dyn crate::engine::Observer);
            let site = crate::engine::Site::Rule(&rule.id);
            matches!(
                ctx.point
                    .eval_observed(program, 0, ctx.state, host, site, obs),
                Ok(Value::Bool(true))
            )
        }
    }
}

/// Whether `rule` is tried for the reply of `ctx` (Format 18.9 "Rules
/// for a reply"): its `on` fits, its `by` is the speaker, its `reply_as`
/// is the narrator or a speaker.
fn for_speaker(rule: &RuleIr, ctx: &TurnContext<'_>) -> bool {
    rule.on_reply == ctx.reaction
        && rule.by.as_deref().is_none_or(|by| by == ctx.responder)
        && rule
            .reply_as
            .as_deref()
            .is_none_or(|r| r == "narrator" || (ctx.is_speaker)(r))
}

/// The turn's rule (Format 18.2), if any.
pub fn turn_rule<'r>(ir: &'r RuntimeIr, ctx: &TurnContext<'_>) -> Option<&'r RuleIr> {
    // Rule keywords and `hit()` are both matched with KeyOptions::RUNTIME:
    // the scan's text is the lower-cased input.
    let scan = ir.keywords().scan(ctx.input);
    let mut host = RuleHost {
        keys: &ir.hit_keys,
        lowered: scan.text(),
        seed: ctx.seed,
        input_id: ctx.input_id,
        calls: 0,
    };
    // The `when`s tried for one reply share one budget (Format 11.6).
    let _shared = crate::cel::eval::shared_budget(Some(crate::cel::SHARED_BUDGET));
    ir.rules
        .iter()
        .enumerate()
        .filter(|(_, r)| for_speaker(r, ctx))
        .find(|&r| matches(r, ctx, &scan, &mut host))
        .map(|(_, r)| r)
}

impl Runtime for RulesRuntime {
    fn name(&self) -> &str {
        "rules"
    }

    fn propose(&mut self, ctx: &TurnContext<'_>) -> Option<Proposal> {
        let rule = turn_rule(&self.ir, ctx)?;
        let reply = (!rule.replies.is_empty()).then(|| {
            let i = choose(rule.replies.len(), &reply_label(ctx.seed, ctx.reply_id));
            Reply::Template(rule.replies[i.min(rule.replies.len() - 1)].clone())
        });
        Some(Proposal {
            rule: Some(rule.id.clone()),
            reply,
            changes: Changes::Compiled(CompiledChanges::new(
                rule.written_changes(),
                rule.changes.clone(),
            )),
            author: rule.reply_as.clone(),
        })
    }
}

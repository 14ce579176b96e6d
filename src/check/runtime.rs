//! Checks of what only runtimes read (Format 18.1, 18.6, 19.1–19.2): rule
//! keywords and patterns, rule changes, the `emotion` expression, safety
//! category IDs, terms and patterns. (Reply and redirect templates are
//! checked with every template field, in `bundle.rs`.)

use std::collections::HashSet;

use serde_json::Value;

use super::changes::check_changes;
use super::conditions::owner_env;
use super::story::{Owner, Story};
use crate::cel::{self, Type};
use crate::diag::{Code, Diagnostic};
use crate::keys::{self, KeyOptions};

fn array<'v>(v: &'v Value, field: &str) -> &'v [Value] {
    v.get(field)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A rule keyword or safety term (Format 18.1, 19.2), compiled as the
/// runtime compiles it (`case_sensitive` false, `whole_words` true).
fn runtime_key(key: &str, at: String, out: &mut Vec<Diagnostic>) {
    if let Err(msg) = keys::check_key(key, KeyOptions::RUNTIME) {
        out.push(Diagnostic::error(Code::Schema, msg).at(at));
    }
}

fn pattern(p: &str, at: String, out: &mut Vec<Diagnostic>) {
    if let Err(msg) = keys::compile_pattern(p) {
        out.push(Diagnostic::error(Code::Schema, msg).at(at));
    }
}

/// Checks the runtime parts of a story's scenario.
pub fn check_runtime(story: &Story, out: &mut Vec<Diagnostic>) {
    let base = &story.pointer;
    let sc = &story.raw;
    for (i, r) in array(sc, "rules").iter().enumerate() {
        let at = format!("{base}/rules/{i}");
        for (k, key) in array(r, "keywords").iter().enumerate() {
            if let Some(key) = key.as_str() {
                runtime_key(key, format!("{at}/keywords/{k}"), out);
            }
        }
        if let Some(p) = r.get("pattern").and_then(Value::as_str) {
            pattern(p, format!("{at}/pattern"), out);
        }
        check_changes(story, array(r, "changes"), &format!("{at}/changes"), out);
    }
    if let Some(src) = sc.get("emotion").and_then(Value::as_str) {
        let env = owner_env(story, &Owner::Scenario(story.scenario.id.clone()), false);
        let at = format!("{base}/emotion");
        match cel::compile(src, &env) {
            Err(errors) => {
                for e in errors {
                    out.push(
                        Diagnostic::error(e.code(), e.message.clone())
                            .at(at.clone())
                            .inside(e.line, e.column),
                    );
                }
            }
            Ok(p) if *p.result_type() != Type::String && *p.result_type() != Type::Dyn => {
                out.push(
                    Diagnostic::error(
                        Code::CelType,
                        format!(
                            "`emotion` must be a string expression; this one is {}",
                            p.result_type()
                        ),
                    )
                    .at(at),
                );
            }
            Ok(_) => {}
        }
    }
    if let Some(policy) = sc.get("safety") {
        let pbase = format!("{base}/safety");
        let mut seen = HashSet::new();
        for (i, c) in array(policy, "categories").iter().enumerate() {
            let at = format!("{pbase}/categories/{i}");
            if let Some(id) = c.get("id").and_then(Value::as_str) {
                if !seen.insert(id.to_string()) {
                    out.push(
                        Diagnostic::error(
                            Code::DuplicateId,
                            format!("category `{id}` is declared twice in the policy"),
                        )
                        .at(format!("{at}/id")),
                    );
                }
            }
            for (k, t) in array(c, "terms").iter().enumerate() {
                if let Some(t) = t.as_str() {
                    runtime_key(t, format!("{at}/terms/{k}"), out);
                }
            }
            for (k, p) in array(c, "patterns").iter().enumerate() {
                if let Some(p) = p.as_str() {
                    pattern(p, format!("{at}/patterns/{k}"), out);
                }
            }
        }
    }
}

//! Checks of what only runtimes read (Format 18.1, 18.6, 19.1–19.2): rule
//! keywords and patterns, rule changes, the `emotion` expression, safety
//! category IDs, terms and patterns. (Reply and redirect templates are
//! checked with every template field, in `bundle.rs`.)

use std::collections::HashSet;

use crate::cel::Type;
use crate::changes::check_changes;
use crate::changes::{resolve_target, Target};
use crate::diag::{escape_token, Code, Diagnostic};
use crate::keys::{self, KeyOptions};
use crate::model::items::Rule;
use crate::model::ScalarType;
use crate::model::Scenario;
use crate::resolve::env::{compile_once, owner_env};
use crate::resolve::story::{Owner, Story};

/// A rule keyword or safety term (Format 18.1, 19.2), compiled as the
/// runtime compiles it (`case_sensitive` false, `whole_words` true).
fn runtime_key(key: &str, at: String, out: &mut Vec<Diagnostic>) {
    if let Err(msg) = keys::check_key(key, KeyOptions::RUNTIME) {
        out.push(Diagnostic::error(Code::Schema, msg).at(at));
    }
}

fn pattern(p: &str, at: String, out: &mut Vec<Diagnostic>) {
    // A pack repeats its patterns in every scenario: each text is checked
    // once per bundle.
    if let Err(msg) = crate::cel::parse::pattern_verdict(p, keys::check_pattern) {
        out.push(Diagnostic::error(Code::Schema, msg).at(at));
    }
}

/// A rule's `by` and `reply_as` (Format 18.1) name a character of a
/// `character` entry of the cast (`reply_as` may also be `narrator`):
/// UNKNOWN_REF at the field otherwise.
fn check_speaker_refs(sc: &Scenario, rule: &Rule<'_>, at: &str, out: &mut Vec<Diagnostic>) {
    let in_cast = |id: &str| sc.cast_entries().any(|e| e.character == Some(id));
    for (field, named, narrator_ok) in [("by", rule.by, false), ("reply_as", rule.reply_as, true)] {
        let Some(id) = named else {
            continue;
        };
        if (narrator_ok && id == "narrator") || in_cast(id) {
            continue;
        }
        let narrator = narrator_ok.then_some("narrator");
        let choices = sc
            .cast_entries()
            .filter_map(|e| e.character)
            .chain(narrator);
        out.push(
            Diagnostic::error(
                Code::UnknownRef,
                format!(
                    "`{field}` names `{}`, which is not a character entry of the scenario's cast (Format 18.1){}",
                    escape_token(id),
                    crate::diag::suggest::one_of(id, choices)
                ),
            )
            .at(format!("{at}/{field}"))
            .with_help("name a character listed in the scenario's `cast`"),
        );
    }
}

/// Checks the runtime parts of a story's scenario.
pub fn check_runtime(story: &Story, out: &mut Vec<Diagnostic>) {
    let base = &story.pointer;
    let sc = &story.scenario;
    check_model(story, base, out);
    for (i, r) in sc.rule_items().enumerate() {
        let at = format!("{base}/rules/{i}");
        for (k, key) in r.keywords.unwrap_or_default().iter().enumerate() {
            if let Some(key) = key.as_str() {
                runtime_key(key, format!("{at}/keywords/{k}"), out);
            }
        }
        if let Some(p) = r.pattern {
            pattern(p, format!("{at}/pattern"), out);
        }
        check_changes(story, r.changes, &format!("{at}/changes"), out);
        check_speaker_refs(sc, &r, &at, out);
    }
    if let Some(src) = sc.emotion() {
        let scenario = Owner::Scenario(story.scenario.id.clone());
        let env = owner_env(story, &scenario, false);
        let at = format!("{base}/emotion");
        match &*compile_once(story, &scenario, false, src, &env) {
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
    if sc.safety.is_some() {
        let pbase = format!("{base}/safety");
        let mut seen = HashSet::new();
        for (i, c) in sc.categories().enumerate() {
            let at = format!("{pbase}/categories/{i}");
            if let Some(id) = c.id
                && !seen.insert(id.to_string())
            {
                out.push(
                    Diagnostic::error(
                        Code::DuplicateId,
                        format!("category `{id}` is declared twice in the policy"),
                    )
                    .at(format!("{at}/id")),
                );
            }
            for (k, t) in c.terms.iter().enumerate() {
                if let Some(t) = t.as_str() {
                    runtime_key(t, format!("{at}/terms/{k}"), out);
                }
            }
            for (k, p) in c.patterns.iter().enumerate() {
                if let Some(p) = p.as_str() {
                    pattern(p, format!("{at}/patterns/{k}"), out);
                }
            }
        }
    }
}

pub use crate::changes::scalar_of;

/// The checks of a `model` block against its story (Format 24.2): each
/// name is a state name of a scalar, non-derived variable (or
/// `scene.location`); `step` only on `int`/`number` ones. Diagnostics at
/// `<base>/model/changes/<name>`.
pub fn check_model(story: &Story, base: &str, out: &mut Vec<crate::diag::Diagnostic>) {
    let Some(changes) = story.scenario.model_changes() else {
        return;
    };
    for (name, d) in changes {
        let step = crate::model::items::ModelChange::read(d).step;
        let at = format!("{base}/model/changes/{}", escape_token(name));
        match resolve_target(story, name) {
            Err(msg) => out.push(Diagnostic::error(Code::UnknownVariable, msg).at(at)),
            Ok(Target::Present) => out.push(
                Diagnostic::error(
                    Code::TypeMismatch,
                    "`scene.present` cannot be given to a model: name scalar variables".to_string(),
                )
                .at(at),
            ),
            Ok(t) => {
                let var = match t {
                    Target::Variable(v) | Target::Key(v, _) => Some(v),
                    _ => None,
                };
                if let Some(d) = var.and_then(|v| story.variables.get(v))
                    && d.is_derived()
                {
                    out.push(
                            Diagnostic::error(
                                Code::DerivedSet,
                                format!(
                                    "`{name}` is derived: it is computed, so no model may change it (Format 24.2)"
                                ),
                            )
                            .at(at),
                        );
                    continue;
                }
                match scalar_of(story, name) {
                    None => out.push(
                        Diagnostic::error(
                            Code::TypeMismatch,
                            format!("`{name}` is not a scalar (int, number, bool, string): a model may change scalars only"),
                        )
                        .at(at),
                    ),
                    Some(s) if step.is_some() && !matches!(s, ScalarType::Int | ScalarType::Number) => {
                        out.push(
                            Diagnostic::error(
                                Code::TypeMismatch,
                                format!("`step` applies to int and number variables; `{name}` is not one"),
                            )
                            .at(format!("{at}/step")),
                        )
                    }
                    Some(ScalarType::Int)
                        if step.is_some_and(|v| {
                            v.as_i64().is_none()
                                && crate::changes::values::exact_decimal(v)
                                    .is_none_or(|d| !d.fract().is_zero())
                        }) =>
                    {
                        out.push(
                            Diagnostic::error(
                                Code::TypeMismatch,
                                format!("`step` on int `{name}` must be a whole number (Format 24.2)"),
                            )
                            .at(format!("{at}/step")),
                        )
                    }
                    _ => {}
                }
            }
        }
    }
}

//! The semantic checks of a bundle (Format 3–11, 17.2): IDs and references,
//! variables and their values, changes, conditions and templates. Schema
//! checks are separate ([`super::schema`]); these run on the document as
//! written and skip what cannot be read.

use std::collections::HashSet;

use serde_json::Value;

use super::templates::check_template;
use crate::changes::check_changes;
use crate::changes::values::check_value;
use crate::diag::{Code, Diagnostic};
use crate::model::array;
use crate::model::items::{Difficulty, LoreEntry, Opening, VarItem};
use crate::model::{CastEntry, Condition, Keys, ScalarType, VarType, Variable};
use crate::model::{List, Scenario};
use crate::resolve::story::{self, Story};

/// Runs every semantic check of a bundle that needs no session.
pub fn check_bundle(bundle: &Value) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    // One namespace: characters, worlds, scenarios (Format 3).
    let mut seen = HashSet::new();
    for field in ["characters", "worlds", "scenarios"] {
        for (i, id) in ids_of(bundle, field) {
            if !seen.insert(id.clone()) {
                out.push(dup(&id, format!("/{field}/{i}/id")));
            }
        }
    }
    for (ci, ch) in crate::model::characters(bundle).iter().enumerate() {
        let base = format!("/characters/{ci}");
        check_var_list(array(ch, "variables"), &base, &mut out);
        no_knobs(ch, &base, "a character's", &mut out);
        check_text_fields(ch, &base, &mut out);
    }
    for (wi, w) in crate::model::worlds(bundle).iter().enumerate() {
        let base = format!("/worlds/{wi}");
        check_var_list(array(w, "variables"), &base, &mut out);
        no_knobs(w, &base, "a world's", &mut out);
        check_text_fields(w, &base, &mut out);
        check_entries(array(w, "entries"), &base, &mut out);
    }
    let char_ids: HashSet<String> = ids_of(bundle, "characters")
        .into_iter()
        .map(|x| x.1)
        .collect();
    let world_ids: HashSet<String> = ids_of(bundle, "worlds").into_iter().map(|x| x.1).collect();
    // Each scenario's checks read the bundle and write only its own
    // diagnostics, so they run on the machine's cores (`crate::par`); the
    // diagnostics are joined in scenario order, as one thread gives them.
    let checked = crate::par::map(crate::model::scenarios(bundle), |si, sc| {
        let mut mine = Vec::new();
        check_scenario_refs(sc, si, &char_ids, &world_ids, &mut mine);
        let story = story::resolve(bundle, si, None, &mut mine);
        if let Some(story) = &story {
            check_story(story, &mut mine);
        }
        (mine, story)
    });
    let mut stories = Vec::with_capacity(checked.len());
    for (mine, story) in checked {
        out.extend(mine);
        stories.extend(story);
    }
    // Format 17.6 is judged once every story was checked: an error in a
    // world or character that only a later scenario uses silences it too.
    // A story's judgement reads those diagnostics and adds warnings under
    // its own scenario only, so the stories are judged side by side too.
    let judged = crate::par::map(&stories, |_, story| {
        let mut found = Vec::new();
        super::reach::unreachable_conditions(story, &out, &mut found);
        found
    });
    drop(stories);
    out.extend(judged.into_iter().flatten());
    super::conditions::check_unused(bundle, &mut out);
    super::conditions::dedup_cel(&mut out);
    out
}

/// The checks of one resolved story: names, changes, conditions, templates.
pub fn check_story(story: &Story, out: &mut Vec<Diagnostic>) {
    let base = &story.pointer;
    let sc = &story.scenario;
    check_var_list(&sc.variables, base, out);
    // A scenario variable named like a cast member or a used world (Format
    // 8.7); a bundle character outside the cast is no clash (a session that
    // seats it is checked in `check::session`).
    for (vi, v) in crate::model::read_list::<Variable>(&sc.variables) {
        if story.in_cast(&v.id) || story.worlds.iter().any(|(w, _)| w.id == v.id) {
            out.push(
                Diagnostic::error(
                    Code::NameClash,
                    format!(
                        "scenario variable `{}` has the ID of a character or world, so `state.{}` would mean two things",
                        v.id, v.id
                    ),
                )
                .at(format!("{base}/variables/{vi}/id")),
            );
        }
    }
    // Events and outcomes share one namespace (Format 3).
    let mut seen = HashSet::new();
    for field in [List::Events, List::Outcomes] {
        for (i, id) in ids_in(sc.list(field)) {
            if !seen.insert(id.clone()) {
                out.push(dup(&id, format!("{base}/{field}/{i}/id")));
            }
        }
    }
    for field in [List::Openings, List::Rules, List::Entries] {
        let mut seen = HashSet::new();
        for (i, id) in ids_in(sc.list(field)) {
            if !seen.insert(id.clone()) {
                out.push(dup(&id, format!("{base}/{field}/{i}/id")));
            }
        }
    }
    check_entries(&sc.entries, base, out);
    if let Some(t) = &sc.description {
        check_template(t, &format!("{base}/description"), out);
    }
    for (ri, rule) in sc.rule_items().enumerate() {
        for (k, reply) in rule.replies.iter().enumerate() {
            if let Some(t) = reply.as_str() {
                let at = format!("{base}/rules/{ri}/replies/{k}");
                if let Some(parsed) = check_template(t, &at, out) {
                    super::templates::unknown_macros(story, t, &parsed, &at, out);
                }
            }
        }
    }
    for (ci, cat) in sc.categories().enumerate() {
        if let Some(t) = cat.redirect_text {
            check_template(
                t,
                &format!("{base}/safety/categories/{ci}/redirect_text"),
                out,
            );
        }
    }
    // The model runtime's instructions (Format 24.2) are a template too.
    if let Some(t) = sc.model_prompt() {
        check_template(t, &format!("{base}/model/prompt"), out);
    }
    super::runtime::check_runtime(story, out);
    // Openings (Format 6.3).
    for (oi, raw) in sc.openings.iter().enumerate() {
        let o = Opening::read(raw);
        let at = format!("{base}/openings/{oi}");
        if let Some(author) = o.author
            && author != "narrator"
            && !story.in_cast(author)
        {
            out.push(not_cast(author, format!("{at}/author")));
        }
        if let Some(t) = o.text.and_then(Value::as_str) {
            let text_at = format!("{at}/text");
            if let Some(parsed) = check_template(t, &text_at, out) {
                super::templates::unknown_macros(story, t, &parsed, &text_at, out);
            }
        }
        check_parts(story, raw, &at, out);
        if let Some(present) = o.present.and_then(Value::as_array) {
            let ids = present.iter().map(Value::as_str);
            check_present(story, ids, &format!("{at}/scene/present"), out);
        }
        check_changes(story, o.changes, &format!("{at}/changes"), out);
    }
    if let Some(present) = sc.present() {
        let ids = present.iter().map(|id| Some(id.as_str()));
        check_present(story, ids, &format!("{base}/scene/present"), out);
    }
    // Events and outcomes (Format 9).
    for field in [List::Events, List::Outcomes] {
        for (i, ev) in sc.event_items(field).enumerate() {
            let at = format!("{base}/{field}/{i}");
            if let Some(when) = ev.when
                && let Some(Condition::Threshold {
                    variable,
                    threshold,
                    ..
                }) = Condition::read(when)
            {
                super::conditions::check_threshold(
                    story,
                    &variable,
                    &threshold,
                    &format!("{at}/when"),
                    out,
                );
            }
            check_changes(story, ev.changes, &format!("{at}/changes"), out);
        }
    }
    // Difficulty (Format 6.5) and the variables that start at a knob (8.1).
    if let Some(d) = sc.difficulty() {
        check_difficulty(d, &format!("{base}/difficulty"), out);
    }
    check_knobs(sc, base, out);
    // Rubric criteria IDs.
    if let Some(criteria) = sc.criteria() {
        let mut seen = HashSet::new();
        for (i, c) in criteria.enumerate() {
            if let Some(id) = c.id
                && !seen.insert(id)
            {
                out.push(dup(id, format!("{base}/rubric/criteria/{i}/id")));
            }
            if let Some(w) = c.weight {
                number_field(w, &format!("{base}/rubric/criteria/{i}/weight"), out);
            }
        }
    }
    let reads = super::conditions::check_conditions(story, out);
    super::lints::lint_story(story, reads.as_ref(), out);
}

/// LIMIT at a scenario list with more items than the compiled form can
/// number (Format 16): counts never wrap.
fn check_counts(sc: &Value, base: &str, out: &mut Vec<Diagnostic>) {
    use crate::load::limits::MAX_SCENARIO_ITEMS as MAX;
    let limit = |what: &str, n: usize, max: usize, at: String| {
        Diagnostic::error(
            Code::Limit,
            format!("the scenario has {n} {what}; at most {max} are allowed (Format 16)"),
        )
        .at(at)
    };
    for field in ["cast", "worlds", "openings", "events", "outcomes"] {
        let n = array(sc, field).len();
        if n > MAX {
            out.push(limit(field, n, MAX, format!("{base}/{field}")));
        }
    }
    let (cast, worlds) = (array(sc, "cast").len(), array(sc, "worlds").len());
    if cast <= MAX && worlds <= MAX && cast + worlds > MAX - 1 {
        out.push(limit(
            "cast members and worlds together",
            cast + worlds,
            MAX - 1,
            format!("{base}/worlds"),
        ));
    }
    if let Some(options) = Difficulty::of(sc).and_then(|d| d.options) {
        if options.len() > MAX {
            out.push(limit(
                "difficulty presets",
                options.len(),
                MAX,
                format!("{base}/difficulty/options"),
            ));
        }
        if let Some((name, knobs)) = options.iter().next() {
            let n = knobs.as_object().map_or(0, |k| k.len());
            if n > MAX {
                out.push(limit(
                    "difficulty knobs",
                    n,
                    MAX,
                    format!(
                        "{base}/difficulty/options/{}",
                        crate::diag::escape_token(name)
                    ),
                ));
            }
        }
    }
}

fn check_scenario_refs(
    sc: &Value,
    si: usize,
    chars: &HashSet<String>,
    worlds: &HashSet<String>,
    out: &mut Vec<Diagnostic>,
) {
    let base = format!("/scenarios/{si}");
    check_counts(sc, &base, out);
    let mut seen_worlds = HashSet::new();
    for (i, w) in array(sc, "worlds").iter().enumerate() {
        let Some(w) = w.as_str() else { continue };
        if !worlds.contains(w) {
            out.push(
                Diagnostic::error(Code::UnknownRef, format!("no world `{w}` in this bundle"))
                    .at(format!("{base}/worlds/{i}")),
            );
        } else if !seen_worlds.insert(w) {
            out.push(dup(w, format!("{base}/worlds/{i}")));
        }
    }
    let mut in_cast = HashSet::new();
    let mut seats = HashSet::new();
    for (i, entry) in array(sc, "cast").iter().enumerate() {
        let Ok(entry) = serde_json::from_value::<CastEntry>(entry.clone()) else {
            continue;
        };
        if let Some(c) = &entry.character {
            let at = format!("{base}/cast/{i}/character");
            if !chars.contains(c) {
                out.push(
                    Diagnostic::error(
                        Code::UnknownRef,
                        format!("no character `{c}` in this bundle"),
                    )
                    .at(at),
                );
            } else if !in_cast.insert(c.clone()) {
                out.push(dup(c, at));
            }
        }
        if let Some(s) = &entry.seat
            && !seats.insert(s.clone())
        {
            out.push(dup(s, format!("{base}/cast/{i}/seat")));
        }
    }
}

/// Declarations of one variable list: duplicates, types, defaults, bounds, keys.
fn check_var_list(variables: &[Value], base: &str, out: &mut Vec<Diagnostic>) {
    let mut seen = HashSet::new();
    for (vi, v) in crate::model::read_list::<Variable>(variables) {
        let at = format!("{base}/variables/{vi}");
        if !seen.insert(v.id.clone()) {
            out.push(dup(&v.id, format!("{at}/id")));
        }
        let Some(ty) = VarType::parse(&v.ty) else {
            continue; // SCHEMA
        };
        let mismatch = |field: &str, msg: String| {
            Diagnostic::error(Code::TypeMismatch, msg).at(format!("{at}/{field}"))
        };
        if v.keys.is_some() && !matches!(ty, VarType::Scalar(_)) {
            out.push(mismatch(
                "keys",
                format!(
                    "a keyed variable's type is its values' type and must be a scalar, not {ty}"
                ),
            ));
        }
        if let Some(d) = &v.default
            && let Err((item, e)) = check_value(ty, d)
        {
            out.push(mismatch(
                &format!("default{item}"),
                format!("default of `{}`: {e}", v.id),
            ));
        }
        let numeric = ty.is_numeric();
        for (field, bound) in [("min", &v.min), ("max", &v.max)] {
            if let Some(b) = bound {
                if !numeric {
                    out.push(mismatch(
                        field,
                        format!(
                            "`{field}` applies to int and number variables; `{}` is {ty}",
                            v.id
                        ),
                    ));
                } else if let Err((_, e)) = check_value(ty, b) {
                    out.push(mismatch(field, format!("`{field}` of `{}`: {e}", v.id)));
                }
            }
        }
        if let (Some(lo), Some(hi)) = (&v.min, &v.max)
            && let (Some(lo), Some(hi)) = (
                crate::changes::values::exact_decimal(lo),
                crate::changes::values::exact_decimal(hi),
            )
            && lo > hi
        {
            out.push(mismatch(
                "max",
                format!("`max` {hi} is less than `min` {lo}"),
            ));
        }
        if ty == VarType::Scalar(ScalarType::Number) {
            // Bounds must be values the variable can hold (Format 8.3).
            let places = v.places.unwrap_or(2);
            for (field, bound) in [("min", &v.min), ("max", &v.max)] {
                let scale = bound
                    .as_ref()
                    .and_then(crate::changes::values::exact_decimal)
                    .map(|d| d.normalize().scale());
                if scale.is_some_and(|s| s > places) {
                    out.push(mismatch(
                        field,
                        format!(
                            "`{field}` of `{}` has more decimals than its {places} places",
                            v.id
                        ),
                    ));
                }
            }
        }
        if v.places.is_some() && ty != VarType::Scalar(ScalarType::Number) {
            out.push(mismatch(
                "places",
                format!("`places` applies to number variables; `{}` is {ty}", v.id),
            ));
        }
        if let Some(Keys::List(keys)) = &v.keys {
            let mut seen_keys = HashSet::new();
            for (k, key) in keys.iter().enumerate() {
                if !seen_keys.insert(key) {
                    out.push(dup(key, format!("{at}/keys/{k}")));
                }
            }
        }
    }
}

fn check_entries(entries: &[Value], base: &str, out: &mut Vec<Diagnostic>) {
    let mut seen = HashSet::new();
    for (i, id) in ids_in(entries) {
        if !seen.insert(id.clone()) {
            out.push(dup(&id, format!("{base}/entries/{i}/id")));
        }
    }
    for (i, raw) in entries.iter().enumerate() {
        let e = LoreEntry::read(raw);
        // Keys compile with the entry's own settings (Format 5.4).
        let options = crate::keys::KeyOptions {
            case_sensitive: e.case_sensitive,
            whole_words: true,
        };
        for (field, keys) in [("keys", e.key_list()), ("secondary_keys", e.secondary_keys)] {
            for (k, key) in keys.iter().enumerate() {
                let Some(key) = key.as_str() else { continue };
                if let Err(msg) = crate::keys::check_key(key, options) {
                    out.push(
                        Diagnostic::error(Code::Schema, msg)
                            .at(format!("{base}/entries/{i}/{field}/{k}")),
                    );
                }
            }
        }
        if let Some(t) = e.content {
            check_template(t, &format!("{base}/entries/{i}/content"), out);
        }
        // Format 5.3, 17.4: an enabled entry with neither `constant: true`
        // nor `keys` never passes: DEAD_LOGIC (a lint, a warning).
        if raw.is_object()
            && e.enabled != Some(false)
            && e.constant != Some(true)
            && e.keys.is_none()
        {
            let id = e.id.unwrap_or("");
            out.push(
                Diagnostic::error(
                    Code::DeadLogic,
                    format!("entry `{id}` never activates: it has no `keys` and is not `constant` (Format 5.3)"),
                )
                .with_severity(crate::diag::Severity::Warning)
                .at(format!("{base}/entries/{i}"))
                .with_help("give it `keys`, make it `constant: true`, or set `enabled: false` if it is kept on purpose"),
            );
        }
    }
}

/// The template fields of a character, world or scenario (Format 10):
/// `description`, `personality` and every value of `text`.
pub(crate) fn check_text_fields(owner: &Value, base: &str, out: &mut Vec<Diagnostic>) {
    let fields = crate::model::items::TextFields::read(owner);
    for (field, t) in fields.templates() {
        if let Some(t) = t {
            check_template(t, &format!("{base}/{field}"), out);
        }
    }
    if let Some(text) = fields.text {
        for (k, v) in text {
            if let Some(t) = v.as_str() {
                check_template(
                    t,
                    &format!("{base}/text/{}", crate::diag::escape_token(k)),
                    out,
                );
            }
        }
    }
}

fn check_parts(story: &Story, owner: &Value, at: &str, out: &mut Vec<Diagnostic>) {
    for (pi, part) in array(owner, "parts").iter().enumerate() {
        let part = crate::model::Part::read(part);
        if let Some(t) = part.text {
            check_template(t, &format!("{at}/parts/{pi}/text"), out);
        }
        for (k, a) in part.audience.unwrap_or_default().iter().enumerate() {
            if let Some(a) = a.as_str()
                && a != "narrator"
                && !story.cast_ref_ok(a)
            {
                out.push(not_cast(a, format!("{at}/parts/{pi}/audience/{k}")));
            }
        }
    }
}

fn check_present<'a>(
    story: &Story,
    present: impl Iterator<Item = Option<&'a str>>,
    at: &str,
    out: &mut Vec<Diagnostic>,
) {
    for (k, id) in present.enumerate() {
        if let Some(id) = id
            && !story.cast_ref_ok(id)
        {
            out.push(not_cast(id, format!("{at}/{k}")));
        }
    }
}

/// `knob` is for scenario variables only (Format 8.1): SCHEMA at `/knob` of
/// a character's or world's variable.
fn no_knobs(owner: &Value, base: &str, whose: &str, out: &mut Vec<Diagnostic>) {
    for (vi, v) in array(owner, "variables").iter().enumerate() {
        if VarItem::read(v).knob.is_some() {
            out.push(
                Diagnostic::error(
                    Code::Schema,
                    format!("`knob` is for a scenario's own variables, not {whose}: the scenarios that use it may have other difficulties (Format 8.1)"),
                )
                .at(format!("{base}/variables/{vi}/knob")),
            );
        }
    }
}

/// A scenario variable with `knob` (Format 8.1): `int` or `number`, a knob
/// of the scenario's difficulty, and for an `int` an int value in every
/// preset. (`knob` with `default`, `keys` or `derived` is SCHEMA.)
fn check_knobs(sc: &Scenario, base: &str, out: &mut Vec<Diagnostic>) {
    let options = sc.difficulty().and_then(|d| d.options);
    let knobs: Vec<&str> = options
        .and_then(|o| o.values().next())
        .and_then(Value::as_object)
        .map(|k| k.keys().map(String::as_str).collect())
        .unwrap_or_default();
    for (vi, v) in sc.variables.iter().map(VarItem::read).enumerate() {
        let Some(knob) = v.knob.and_then(Value::as_str) else {
            continue;
        };
        let at = format!("{base}/variables/{vi}/knob");
        let ty = v.ty.and_then(VarType::parse);
        let scalar = match ty {
            Some(VarType::Scalar(t @ (ScalarType::Int | ScalarType::Number))) => t,
            Some(_) => {
                out.push(
                    Diagnostic::error(
                        Code::TypeMismatch,
                        "a variable that starts at a difficulty knob is an `int` or a `number` (knob values are numbers)",
                    )
                    .at(at),
                );
                continue;
            }
            None => continue, // SCHEMA
        };
        if !knobs.contains(&knob) {
            let message = if options.is_none() {
                format!("the scenario has no difficulty, so it has no knob `{knob}`")
            } else {
                format!(
                    "the scenario's difficulty has no knob `{knob}`{}",
                    crate::diag::suggest::one_of(knob, knobs.iter().copied())
                )
            };
            out.push(Diagnostic::error(Code::UnknownRef, message).at(at));
            continue;
        }
        for (preset, values) in options.into_iter().flatten() {
            let Some(value) = values.get(knob) else {
                continue; // the preset mismatch is reported
            };
            if let Err(why) = crate::changes::values::check_scalar(scalar, value) {
                out.push(
                    Diagnostic::error(
                        Code::TypeMismatch,
                        format!(
                            "variable `{}` starts at knob `{knob}`, so preset `{preset}`'s value must be a value of its type: {why}",
                            v.id.unwrap_or("")
                        ),
                    )
                    .at(format!(
                        "{base}/difficulty/options/{}/{}",
                        crate::diag::escape_token(preset),
                        crate::diag::escape_token(knob)
                    )),
                );
            }
        }
    }
}

fn check_difficulty(d: Difficulty<'_>, at: &str, out: &mut Vec<Diagnostic>) {
    let Some(options) = d.options else {
        return;
    };
    if let Some(def) = d.default
        && !options.contains_key(def)
    {
        out.push(
            Diagnostic::error(Code::UnknownRef, format!("no difficulty preset `{def}`"))
                .at(format!("{at}/default")),
        );
    }
    let mut first: Option<(&String, Vec<&String>)> = None;
    for (preset, knobs) in options {
        let Some(knobs) = knobs.as_object() else {
            continue;
        };
        let pat = format!("{at}/options/{}", crate::diag::escape_token(preset));
        for (knob, v) in knobs {
            let here = format!("{pat}/{}", crate::diag::escape_token(knob));
            // `difficulty.preset` names the preset (Format 6.5).
            if knob == "preset" {
                out.push(
                    Diagnostic::error(
                        Code::Schema,
                        "a knob cannot be named `preset`: `difficulty.preset` is the preset's ID",
                    )
                    .at(here.clone()),
                );
            }
            number_field(v, &here, out);
        }
        let mut names: Vec<&String> = knobs.keys().collect();
        names.sort();
        match &first {
            None => first = Some((preset, names)),
            Some((p0, n0)) => {
                if *n0 != names {
                    let missing: Vec<String> = n0
                        .iter()
                        .filter(|k| !names.contains(k))
                        .map(|k| format!("`{k}`"))
                        .collect();
                    let extra: Vec<String> = names
                        .iter()
                        .filter(|k| !n0.contains(k))
                        .map(|k| format!("`{k}`"))
                        .collect();
                    let mut why = Vec::new();
                    if !missing.is_empty() {
                        why.push(format!("it lacks {}", missing.join(", ")));
                    }
                    if !extra.is_empty() {
                        why.push(format!(
                            "it has {}, which `{p0}` does not",
                            extra.join(", ")
                        ));
                    }
                    out.push(
                        Diagnostic::error(
                            Code::Schema,
                            format!(
                                "preset `{preset}` must set the same knobs as `{p0}`: {}",
                                why.join("; ")
                            ),
                        )
                        .at(format!(
                            "{at}/options/{}",
                            crate::diag::escape_token(preset)
                        )),
                    );
                }
            }
        }
    }
}

/// A number field other than a variable value (difficulty knobs, rubric
/// weights, a fixture's `coverage.minimum`): a number outside the decimal
/// limits of Format 2.2 is SCHEMA.
pub(crate) fn number_field(v: &Value, at: &str, out: &mut Vec<Diagnostic>) {
    if v.is_number() && crate::changes::values::exact_decimal(v).is_none() {
        out.push(
            Diagnostic::error(
                Code::Schema,
                format!(
                    "{} is not a decimal (at most 28 significant digits, below 10^28, Format 2.2)",
                    crate::changes::values::shown(v)
                ),
            )
            .at(at),
        );
    }
}

fn ids_of(v: &Value, field: &str) -> Vec<(usize, String)> {
    ids_in(array(v, field))
}

/// The IDs of the items of `list` that have one, with their index.
fn ids_in(list: &[Value]) -> Vec<(usize, String)> {
    list.iter()
        .enumerate()
        .filter_map(|(i, x)| crate::model::id_of(x).map(|s| (i, s.to_string())))
        .collect()
}

fn dup(id: &str, at: String) -> Diagnostic {
    Diagnostic::error(Code::DuplicateId, format!("`{id}` is declared twice")).at(at)
}

fn not_cast(id: &str, at: String) -> Diagnostic {
    Diagnostic::error(
        Code::UnknownRef,
        format!("`{id}` is not a member of the cast or `narrator`"),
    )
    .at(at)
}

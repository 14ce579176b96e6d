//! The references of a pack's fixtures (Format 13.8), checked before any
//! test runs: the scenario, the preset, the events, outcomes and rules a
//! turn expects, the state names it reads, and the turn numbers. Each
//! unknown name says what was probably meant (Format 17.2).

use serde_json::Value;

use crate::changes::resolve_target;
use crate::changes::settings::Declared;
use crate::diag::suggest::{did_you_mean, one_of};
use crate::diag::{escape_token, Code, Diagnostic};
use crate::load::lower::PackValues;
use crate::model::fixture::{Fixture, Step};
use crate::resolve::story::{resolve, SessionContext, Story};

/// Checks every `tests/*.yaml` fixture of `files` against the lowered
/// `bundle`. Diagnostics carry the fixture's file and a pointer into it.
/// A fixture whose scenario is not in the bundle is left to the
/// `scenario_id` check (Format 13.8), which runs with the pack checks.
/// `exists` says whether a pack-relative path is a file of the pack (a
/// fixture's `cassette`).
pub fn check_fixtures(
    files: &PackValues,
    bundle: &Value,
    exists: &dyn Fn(&str) -> bool,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let scenarios = crate::model::scenarios(bundle);
    for (path, fixture) in files.iter().filter(|(p, _)| p.starts_with("tests/")) {
        let fixture = Fixture::read(fixture);
        let mut found = Vec::new();
        check_turn_numbers(&fixture, &mut found);
        if let Some(rel) = fixture.cassette
            && in_cassettes(rel)
            && !exists(rel)
        {
            found.push(
                    Diagnostic::error(
                        Code::MissingFile,
                        format!("the cassette `{rel}` names no file in the pack (record it with `troupe run PACK --runtime model --cassette {rel} --record`)"),
                    )
                    .at("/cassette"),
                );
        }
        if let Some(m) = fixture.coverage_minimum {
            crate::check::bundle::number_field(m, "/coverage/minimum", &mut found);
        }
        let index = fixture.scenario_id.and_then(|id| {
            scenarios
                .iter()
                .position(|s| crate::model::id_of(s) == Some(id))
        });
        if let Some(story) = index.and_then(|i| story_as_run(bundle, i)) {
            check_against(&fixture, &story, &mut found);
        }
        out.extend(found.into_iter().map(|d| d.in_file(path.as_str())));
    }
    out
}

/// The story a fixture plays: the scenario with its seats filled as a
/// runtime fills them (Format 18.4), so `keys: "cast"` includes the seats.
fn story_as_run(bundle: &Value, index: usize) -> Option<Story> {
    let scenario = crate::model::scenarios(bundle).get(index)?;
    let (players, characters) = crate::model::session::default_players(
        scenario,
        crate::model::session::DEFAULT_PLAYER_NAME,
    );
    let header = serde_json::json!({"players": players, "characters": characters});
    let ctx = SessionContext::from_header(&header);
    resolve(bundle, index, Some(&ctx), &mut Vec::new())
}

/// Whether a fixture's `cassette` is a path under the pack's `cassettes/`
/// folder: relative, first segment `cassettes`, then only plain segments
/// (no `.` or `..`), at least one (Format 13.8, 21.3).
pub fn in_cassettes(rel: &str) -> bool {
    use std::path::Component;
    let mut parts = std::path::Path::new(rel).components();
    matches!(parts.next(), Some(Component::Normal(f)) if f == "cassettes")
        && parts.clone().next().is_some()
        && parts.all(|c| matches!(c, Component::Normal(_)))
}

/// The k-th turn of `turns` (settings steps not counted) is numbered k
/// (ORDER at `/turns/<i>/turn`).
fn check_turn_numbers(fixture: &Fixture<'_>, out: &mut Vec<Diagnostic>) {
    let mut want = 0;
    for (i, step) in fixture.steps() {
        let Step::Turn(t) = step else {
            continue; // a settings step (Format 8.9)
        };
        want += 1;
        let Some(n) = t.turn else {
            continue; // SCHEMA
        };
        if n != want {
            out.push(
                Diagnostic::error(
                    Code::Order,
                    format!(
                        "turn {want} of the list is numbered {n}: turns are numbered 1, 2, 3, … in list order (settings steps not counted), so this one is {want}"
                    ),
                )
                .at(format!("/turns/{i}/turn")),
            );
        }
    }
}

fn ids(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .filter_map(|x| crate::model::id_of(x))
        .collect()
}

/// The references a fixture makes into its story.
fn check_against(fixture: &Fixture<'_>, story: &Story, out: &mut Vec<Diagnostic>) {
    let sc = &story.scenario;
    let sid = &sc.id;
    if let Some(p) = fixture.difficulty {
        let presets: Vec<&str> = sc
            .difficulty()
            .map(|d| d.presets().collect())
            .unwrap_or_default();
        if !presets.contains(&p) {
            let message = if presets.is_empty() {
                format!("scenario `{sid}` has no difficulty, so it has no preset `{p}`")
            } else {
                format!(
                    "scenario `{sid}` has no difficulty preset `{p}`{}",
                    one_of(p, presets.iter().copied())
                )
            };
            out.push(Diagnostic::error(Code::UnknownRef, message).at("/difficulty"));
        }
    }
    let events = ids(&sc.events);
    let outcomes = ids(&sc.outcomes);
    let rules = ids(&sc.rules);
    let firing_ids: Vec<&str> = events.iter().chain(&outcomes).copied().collect();
    for (i, step) in fixture.steps() {
        let t = match step {
            Step::Settings(s) => {
                crate::changes::settings::check_settings(
                    story.scenario.difficulty().and_then(Declared::of).as_ref(),
                    s,
                    &format!("/turns/{i}/settings"),
                    out,
                );
                continue;
            }
            Step::Turn(t) => t,
        };
        let Some(e) = t.expect else { continue };
        let at = format!("/turns/{i}/expect");
        for (field, items) in e.firing_lists() {
            for (k, id) in items.iter().enumerate() {
                let Some(id) = id.as_str() else { continue };
                if !firing_ids.contains(&id) {
                    out.push(
                        Diagnostic::error(
                            Code::UnknownRef,
                            format!(
                                "scenario `{sid}` has no event or outcome `{id}`{}",
                                one_of(id, firing_ids.iter().copied())
                            ),
                        )
                        .at(format!("{at}/{field}/{k}")),
                    );
                }
            }
        }
        if let Some(id) = e.outcome
            && !outcomes.contains(&id)
        {
            let also = if events.contains(&id) {
                format!(" (`{id}` is an event: expect it with `fired: [{id}]`)")
            } else {
                one_of(id, outcomes.iter().copied())
            };
            out.push(
                Diagnostic::error(
                    Code::UnknownRef,
                    format!("scenario `{sid}` has no outcome `{id}`{also}"),
                )
                .at(format!("{at}/outcome")),
            );
        }
        // `rule`, and each reply's `rule` (Format 13.8).
        let named_rules = e
            .rule
            .map(|id| (id, format!("{at}/rule")))
            .into_iter()
            .chain(e.replies.iter().enumerate().filter_map(|(k, item)| {
                let id = item.get("rule").and_then(Value::as_str)?;
                Some((id, format!("{at}/replies/{k}/rule")))
            }));
        for (id, pointer) in named_rules {
            if !rules.contains(&id) {
                out.push(
                    Diagnostic::error(
                        Code::UnknownRef,
                        format!(
                            "scenario `{sid}` has no rule `{id}`{}",
                            one_of(id, rules.iter().copied())
                        ),
                    )
                    .at(pointer),
                );
            }
        }
        let cast: Vec<&str> = sc
            .cast_entries()
            .filter_map(|c| c.character)
            .chain(["narrator"])
            .collect();
        for (k, item) in e.replies.iter().enumerate() {
            if let Some(id) = item.get("by").and_then(Value::as_str)
                && !cast.contains(&id)
            {
                out.push(
                    Diagnostic::error(
                        Code::UnknownRef,
                        format!(
                            "`{id}` is no character entry of scenario `{sid}`'s cast, nor `narrator`{}",
                            one_of(id, cast.iter().copied())
                        ),
                    )
                    .at(format!("{at}/replies/{k}/by")),
                );
            }
        }
        for (k, name) in e.state_delta_contains.iter().enumerate() {
            let Some(name) = name.as_str() else { continue };
            if let Some(why) = not_a_state_name(story, name) {
                out.push(
                    Diagnostic::error(Code::UnknownVariable, why)
                        .at(format!("{at}/state_delta_contains/{k}")),
                );
            }
        }
        if let Some(state) = e.state {
            for name in state.keys() {
                if let Some(why) = not_a_state_name(story, name) {
                    out.push(
                        Diagnostic::error(Code::UnknownVariable, why)
                            .at(format!("{at}/state/{}", escape_token(name))),
                    );
                }
            }
        }
    }
}

/// Why `name` is not a flattened state name of the story (Format 8.6,
/// 8.7), or `None` when it is one.
fn not_a_state_name(story: &Story, name: &str) -> Option<String> {
    match resolve_target(story, name) {
        Ok(_) => None,
        Err(why) if story.variables.contains_key(name) => Some(why),
        Err(why) if why.starts_with("no variable") => {
            // Offer the flattened names (keys included) as the choices.
            let mut names = vec!["scene.location".to_string(), "scene.present".to_string()];
            for (n, v) in &story.variables {
                match v.fixed_keys(&story.cast) {
                    Some(keys) => names.extend(keys.iter().map(|k| format!("{n}.{k}"))),
                    None if v.is_open_map() => {}
                    None => names.push(n.clone()),
                }
            }
            Some(format!(
                "the story has no state `{name}`{}",
                did_you_mean(name, names.iter().map(String::as_str))
            ))
        }
        Err(why) => Some(why),
    }
}

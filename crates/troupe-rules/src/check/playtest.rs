//! The checks of playtests and personas (Format 22.7): unique names and
//! IDs, references (scenario, roles, targets, `who`, presets), seats taken
//! twice, choreography that can never proceed (DEADLOCK), goal and persona
//! conditions type-checked in 22.3's environment, and the roster-size
//! ADVISORY. Diagnostics carry the file and a pointer into it.

use std::collections::HashSet;

use serde_json::Value;

use super::templates::check_template_syntax;
use crate::cel::{self, Env, Type};
use crate::diag::{Code, Diagnostic, Severity};
use crate::model::id_of;
use crate::model::items::{Cast, Difficulty, Event};
use crate::model::playtest::{Persona, Playtest};
use crate::resolve::env::owner_env;
use crate::resolve::story::{resolve, Owner, Story};

/// The environment of Format 22.3: `env` plus `signals` (list(string)) and
/// `progress` (map(string, list(string))).
pub fn playtest_env(env: Env) -> Env {
    let mut env = env;
    env.declare("signals", Type::list(Type::String));
    env.declare(
        "progress",
        Type::map(Type::String, Type::list(Type::String)),
    );
    env
}

fn err(code: Code, file: &str, at: String, message: String) -> Diagnostic {
    Diagnostic::error(code, message).in_file(file).at(at)
}

/// Checks the playtests and personas among `files` (pack path → value, in
/// path order) against the pack's lowered `bundle`; `players_max` is the
/// manifest's `players.max`; `exists` says whether a pack-relative path is a
/// file of the pack (a playtest's `cassette`).
pub fn check_playtests(
    files: &[(&str, &Value, bool)],
    bundle: &Value,
    players_max: Option<u64>,
    exists: &dyn Fn(&str) -> bool,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let personas: Vec<(&str, Persona<'_>)> = files
        .iter()
        .filter(|(_, _, p)| !*p)
        .map(|(f, v, _)| (*f, Persona::read(v)))
        .collect();
    let playtests: Vec<(&str, Playtest<'_>)> = files
        .iter()
        .filter(|(_, _, p)| *p)
        .map(|(f, v, _)| (*f, Playtest::read(v)))
        .collect();
    let mut seen = HashSet::new();
    for (file, p) in &personas {
        let mut lines = Vec::new();
        for (k, r) in p.rule_items().enumerate() {
            for (j, line) in r.say.iter().enumerate() {
                if let Some(t) = line.as_str() {
                    check_template_syntax(t, &format!("/rules/{k}/say/{j}"), &mut lines);
                }
            }
        }
        for (j, line) in p.fallback.iter().enumerate() {
            if let Some(t) = line.as_str() {
                check_template_syntax(t, &format!("/fallback/{j}"), &mut lines);
            }
        }
        for mut d in lines {
            d.location.file = Some(file.to_string());
            out.push(d);
        }
        if let Some(id) = p.id
            && !seen.insert(id)
        {
            out.push(err(
                Code::DuplicateId,
                file,
                "/persona_id".into(),
                format!("persona `{id}` is declared in an earlier file"),
            ));
        }
    }
    let mut names = HashSet::new();
    for (file, pt) in &playtests {
        if let Some(n) = pt.name
            && !names.insert(n)
        {
            out.push(err(
                Code::DuplicateId,
                file,
                "/name".into(),
                format!("playtest `{n}` is declared in an earlier file"),
            ));
        }
        check_cassette(file, pt, exists, &mut out);
        check_one(file, pt, &personas, bundle, players_max, &mut out);
    }
    // A diagnostic is reported once per location (Format 11.2).
    let mut once = HashSet::new();
    out.retain(|d| {
        once.insert((
            d.location.file.clone(),
            d.location.pointer.clone(),
            d.code,
            d.message.to_string(),
        ))
    });
    out
}

/// A playtest's `cassette` (Format 22.7): a path as 13.0 says
/// (PATH_TRAVERSAL) naming a file of the pack (MISSING_FILE), at
/// `/cassette`.
fn check_cassette(
    file: &str,
    pt: &Playtest<'_>,
    exists: &dyn Fn(&str) -> bool,
    out: &mut Vec<Diagnostic>,
) {
    let Some(rel) = pt.cassette else {
        return;
    };
    match crate::load::refs::normalize_ref(rel) {
        Err(e) => out.push(err(e.code, file, "/cassette".into(), e.message)),
        Ok(path) if !exists(&path) => out.push(err(
            Code::MissingFile,
            file,
            "/cassette".into(),
            format!(
                "the cassette `{rel}` names no file in the pack (record it with `troupe playtest PACK {} --runtime model --endpoint URL --cassette PACK/{path} --record` before the playtest names it)",
                pt.name.unwrap_or("NAME")
            ),
        )),
        Ok(_) => {}
    }
}

fn dup_ids(file: &str, items: &[Value], prefix: &str, out: &mut Vec<Diagnostic>) {
    let mut seen = HashSet::new();
    for (i, it) in items.iter().enumerate() {
        if let Some(id) = id_of(it)
            && !seen.insert(id)
        {
            out.push(err(
                Code::DuplicateId,
                file,
                format!("{prefix}/{i}/id"),
                format!("`{id}` is used twice"),
            ));
        }
    }
}

fn check_one(
    file: &str,
    pt: &Playtest<'_>,
    personas: &[(&str, Persona<'_>)],
    bundle: &Value,
    players_max: Option<u64>,
    out: &mut Vec<Diagnostic>,
) {
    let roster = pt.roster;
    let mode = pt.mode.unwrap_or("party");
    dup_ids(file, roster, "/roster", out);
    dup_ids(file, pt.group_goals, "/group_goals", out);
    for (i, a) in pt.agents().enumerate() {
        dup_ids(file, a.goals, &format!("/roster/{i}/goals"), out);
        if let Some(role) = a.role
            && !personas.iter().any(|(_, p)| p.id == Some(role))
        {
            out.push(err(
                Code::UnknownRef,
                file,
                format!("/roster/{i}/role"),
                format!("no persona `{role}` in personas/"),
            ));
        }
    }
    let ids: Vec<&str> = pt.agents().filter_map(|a| a.id).collect();
    let rounds = pt.rounds.and_then(crate::model::integer_u64).unwrap_or(20);
    for (i, step) in pt.steps().enumerate() {
        if let Some(t) = step.say {
            let mut found = Vec::new();
            check_template_syntax(t, &format!("/choreography/{i}/do"), &mut found);
            for mut d in found {
                d.location.file = Some(file.to_string());
                out.push(d);
            }
        }
        if let Some(who) = step.who
            && !ids.contains(&who)
        {
            out.push(err(
                Code::UnknownRef,
                file,
                format!("/choreography/{i}/who"),
                format!("`{who}` is not a roster id"),
            ));
        }
        if let Some(r) = step.round.and_then(crate::model::integer_u64)
            && r > rounds
        {
            out.push(err(
                Code::Deadlock,
                file,
                format!("/choreography/{i}/round"),
                format!(
                    "round {r} is past the playtest's {rounds} rounds; the step can never be taken"
                ),
            ));
        }
    }
    // In `parallel` mode each session has one player: no session is
    // larger than the roster's single agent (a decision, see DECISIONS.md).
    if let Some(max) = players_max.filter(|_| mode != "parallel")
        && roster.len() as u64 > max
    {
        out.push(
            Diagnostic::error(
                Code::Advisory,
                format!(
                    "the roster has {} agents; the manifest's players.max is {max}",
                    roster.len()
                ),
            )
            .with_severity(Severity::Warning)
            .in_file(file)
            .at("/roster"),
        );
    }
    // Checks that need the scenario.
    let Some(sid) = pt.scenario_id else {
        return;
    };
    let Some(index) = crate::model::scenario_index(bundle, sid) else {
        out.push(err(
            Code::UnknownRef,
            file,
            "/scenario_id".into(),
            format!("the pack has no scenario `{sid}`"),
        ));
        return;
    };
    let sc = &crate::model::scenarios(bundle)[index];
    let signals: Vec<&str> = crate::model::array(sc, "events")
        .iter()
        .filter_map(|e| Event::read(e).signal)
        .collect();
    for (i, step) in pt.steps().enumerate() {
        if let Some(sig) = step.after
            && !signals.contains(&sig)
        {
            out.push(err(
                    Code::Deadlock,
                    file,
                    format!("/choreography/{i}/after"),
                    format!("no event of scenario `{sid}` raises the signal `{sig}`; the step waits forever"),
                ));
        }
    }
    if let Some(d) = pt.requires_difficulty {
        let known = Difficulty::of(sc).is_some_and(|x| x.has(d));
        if !known {
            out.push(err(
                Code::UnknownRef,
                file,
                "/requires/difficulty".into(),
                format!("scenario `{sid}` has no difficulty preset `{d}`"),
            ));
        }
    }
    let cast: Vec<Cast<'_>> = Cast::all(sc).collect();
    let playable = |t: &str| {
        cast.iter()
            .any(|c| c.seat == Some(t) || (c.character == Some(t) && c.player))
    };
    let mut taken: Vec<&str> = Vec::new();
    for (i, a) in pt.agents().enumerate() {
        let Some(t) = a.target else { continue };
        if !playable(t) {
            out.push(err(
                Code::UnknownRef,
                file,
                format!("/roster/{i}/target"),
                format!("`{t}` is neither a seat nor a player character of scenario `{sid}`"),
            ));
        } else if mode != "parallel" && taken.contains(&t) {
            out.push(err(
                Code::Seat,
                file,
                format!("/roster/{i}/target"),
                format!("`{t}` is already played by an earlier agent"),
            ));
        }
        taken.push(t);
    }
    // Conditions (Format 22.7): bool, in 22.3's environment.
    let mut ignored = Vec::new();
    let Some(story) = resolve(bundle, index, None, &mut ignored) else {
        return;
    };
    let cond = |src: &str, owner: &Owner, hit: bool, at: String, out: &mut Vec<Diagnostic>| {
        check_cel(&story, src, owner, hit, file, at, out);
    };
    for (i, a) in pt.agents().enumerate() {
        let Some(t) = a.target else { continue };
        // The agent's character (22.5): a seat's is 18.4's filling.
        let owner = Owner::Character(crate::model::session::default_seat_character(t));
        for (j, g) in a.goal_items().enumerate() {
            if let Some(v) = g.verify {
                cond(
                    v,
                    &owner,
                    false,
                    format!("/roster/{i}/goals/{j}/verify"),
                    out,
                );
            }
        }
        let role = a.role.unwrap_or_default();
        if let Some((pfile, p)) = personas.iter().find(|(_, p)| p.id == Some(role)) {
            for (k, r) in p.rule_items().enumerate() {
                if let Some(w) = r.when {
                    let mut found = Vec::new();
                    check_cel(
                        &story,
                        w,
                        &owner,
                        true,
                        pfile,
                        format!("/rules/{k}/when"),
                        &mut found,
                    );
                    out.extend(found);
                }
            }
        }
    }
    let scenario_owner = Owner::Scenario(sid.to_string());
    for (j, g) in pt.group_goal_items().enumerate() {
        if let Some(v) = g.verify {
            cond(
                v,
                &scenario_owner,
                false,
                format!("/group_goals/{j}/verify"),
                out,
            );
        }
    }
}

fn check_cel(
    story: &Story,
    src: &str,
    owner: &Owner,
    hit: bool,
    file: &str,
    at: String,
    out: &mut Vec<Diagnostic>,
) {
    let env = playtest_env(std::sync::Arc::unwrap_or_clone(owner_env(
        story, owner, hit,
    )));
    match cel::compile(src, &env) {
        Err(errors) => {
            for e in errors {
                out.push(err(e.code(), file, at.clone(), e.message.to_string()));
            }
        }
        Ok(program) => {
            let ty = program.result_type();
            if !matches!(ty, Type::Bool | Type::Dyn) {
                out.push(err(
                    Code::CelType,
                    file,
                    at,
                    format!("the expression has type {ty}, but bool is needed here"),
                ));
            }
        }
    }
}

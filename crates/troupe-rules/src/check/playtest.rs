//! The checks of playtests and personas (Format 22.7): unique names and
//! IDs, references (scenario, roles, targets, `who`, presets), seats taken
//! twice, choreography that can never proceed (DEADLOCK), goal and persona
//! conditions type-checked in 22.3's environment, and the roster-size
//! ADVISORY. Diagnostics carry the file and a pointer into it.

use std::collections::HashSet;

use serde_json::Value;

use crate::resolve::env::owner_env;
use crate::resolve::story::{resolve, Owner, Story};
use super::templates::check_template;
use crate::cel::{self, Env, Type};
use crate::diag::{Code, Diagnostic, Severity};

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

fn s<'v>(v: &'v Value, k: &str) -> Option<&'v str> {
    v.get(k).and_then(Value::as_str)
}

fn arr<'v>(v: &'v Value, k: &str) -> &'v [Value] {
    v.get(k)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
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
    let personas: Vec<(&str, &Value)> = files
        .iter()
        .filter(|(_, _, p)| !*p)
        .map(|(f, v, _)| (*f, *v))
        .collect();
    let playtests: Vec<(&str, &Value)> = files
        .iter()
        .filter(|(_, _, p)| *p)
        .map(|(f, v, _)| (*f, *v))
        .collect();
    let mut seen = HashSet::new();
    for (file, p) in &personas {
        let mut lines = Vec::new();
        for (k, r) in arr(p, "rules").iter().enumerate() {
            for (j, line) in arr(r, "say").iter().enumerate() {
                if let Some(t) = line.as_str() {
                    check_template(t, &format!("/rules/{k}/say/{j}"), &mut lines);
                }
            }
        }
        for (j, line) in arr(p, "fallback").iter().enumerate() {
            if let Some(t) = line.as_str() {
                check_template(t, &format!("/fallback/{j}"), &mut lines);
            }
        }
        for mut d in lines {
            d.location.file = Some(file.to_string());
            out.push(d);
        }
        if let Some(id) = s(p, "persona_id") {
            if !seen.insert(id) {
                out.push(err(
                    Code::DuplicateId,
                    file,
                    "/persona_id".into(),
                    format!("persona `{id}` is declared in an earlier file"),
                ));
            }
        }
    }
    let mut names = HashSet::new();
    for (file, pt) in &playtests {
        if let Some(n) = s(pt, "name") {
            if !names.insert(n) {
                out.push(err(
                    Code::DuplicateId,
                    file,
                    "/name".into(),
                    format!("playtest `{n}` is declared in an earlier file"),
                ));
            }
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
fn check_cassette(file: &str, pt: &Value, exists: &dyn Fn(&str) -> bool, out: &mut Vec<Diagnostic>) {
    let Some(rel) = s(pt, "cassette") else {
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
                s(pt, "name").unwrap_or("NAME")
            ),
        )),
        Ok(_) => {}
    }
}

fn dup_ids(file: &str, items: &[Value], prefix: &str, out: &mut Vec<Diagnostic>) {
    let mut seen = HashSet::new();
    for (i, it) in items.iter().enumerate() {
        if let Some(id) = s(it, "id") {
            if !seen.insert(id) {
                out.push(err(
                    Code::DuplicateId,
                    file,
                    format!("{prefix}/{i}/id"),
                    format!("`{id}` is used twice"),
                ));
            }
        }
    }
}

fn check_one(
    file: &str,
    pt: &Value,
    personas: &[(&str, &Value)],
    bundle: &Value,
    players_max: Option<u64>,
    out: &mut Vec<Diagnostic>,
) {
    let roster = arr(pt, "roster");
    let mode = s(pt, "mode").unwrap_or("party");
    dup_ids(file, roster, "/roster", out);
    dup_ids(file, arr(pt, "group_goals"), "/group_goals", out);
    for (i, a) in roster.iter().enumerate() {
        dup_ids(file, arr(a, "goals"), &format!("/roster/{i}/goals"), out);
        if let Some(role) = s(a, "role") {
            if !personas
                .iter()
                .any(|(_, p)| s(p, "persona_id") == Some(role))
            {
                out.push(err(
                    Code::UnknownRef,
                    file,
                    format!("/roster/{i}/role"),
                    format!("no persona `{role}` in personas/"),
                ));
            }
        }
    }
    let ids: Vec<&str> = roster.iter().filter_map(|a| s(a, "id")).collect();
    let rounds = pt
        .get("rounds")
        .and_then(crate::model::integer_u64)
        .unwrap_or(20);
    for (i, step) in arr(pt, "choreography").iter().enumerate() {
        if let Some(t) = s(step, "do") {
            let mut found = Vec::new();
            check_template(t, &format!("/choreography/{i}/do"), &mut found);
            for mut d in found {
                d.location.file = Some(file.to_string());
                out.push(d);
            }
        }
        if let Some(who) = s(step, "who") {
            if !ids.contains(&who) {
                out.push(err(
                    Code::UnknownRef,
                    file,
                    format!("/choreography/{i}/who"),
                    format!("`{who}` is not a roster id"),
                ));
            }
        }
        if let Some(r) = step.get("round").and_then(crate::model::integer_u64) {
            if r > rounds {
                out.push(err(
                    Code::Deadlock,
                    file,
                    format!("/choreography/{i}/round"),
                    format!("round {r} is past the playtest's {rounds} rounds; the step can never be taken"),
                ));
            }
        }
    }
    // In `parallel` mode each session has one player: no session is
    // larger than the roster's single agent (a decision, see DECISIONS.md).
    if let Some(max) = players_max.filter(|_| mode != "parallel") {
        if roster.len() as u64 > max {
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
    }
    // Checks that need the scenario.
    let scenarios = arr(bundle, "scenarios");
    let Some(sid) = s(pt, "scenario_id") else {
        return;
    };
    let Some(index) = scenarios.iter().position(|x| s(x, "id") == Some(sid)) else {
        out.push(err(
            Code::UnknownRef,
            file,
            "/scenario_id".into(),
            format!("the pack has no scenario `{sid}`"),
        ));
        return;
    };
    let sc = &scenarios[index];
    let signals: Vec<&str> = arr(sc, "events")
        .iter()
        .filter_map(|e| s(e, "signal"))
        .collect();
    for (i, step) in arr(pt, "choreography").iter().enumerate() {
        if let Some(sig) = s(step, "after") {
            if !signals.contains(&sig) {
                out.push(err(
                    Code::Deadlock,
                    file,
                    format!("/choreography/{i}/after"),
                    format!("no event of scenario `{sid}` raises the signal `{sig}`; the step waits forever"),
                ));
            }
        }
    }
    if let Some(d) = pt.pointer("/requires/difficulty").and_then(Value::as_str) {
        let known = sc
            .pointer("/difficulty/options")
            .and_then(Value::as_object)
            .is_some_and(|o| o.contains_key(d));
        if !known {
            out.push(err(
                Code::UnknownRef,
                file,
                "/requires/difficulty".into(),
                format!("scenario `{sid}` has no difficulty preset `{d}`"),
            ));
        }
    }
    let cast = arr(sc, "cast");
    let playable = |t: &str| {
        cast.iter().any(|c| {
            s(c, "seat") == Some(t)
                || (s(c, "character") == Some(t) && c.get("player") == Some(&Value::Bool(true)))
        })
    };
    let mut taken: Vec<&str> = Vec::new();
    for (i, a) in roster.iter().enumerate() {
        let Some(t) = s(a, "target") else { continue };
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
    for (i, a) in roster.iter().enumerate() {
        let Some(t) = s(a, "target") else { continue };
        let owner = Owner::Character(t.to_string());
        for (j, g) in arr(a, "goals").iter().enumerate() {
            if let Some(v) = s(g, "verify") {
                cond(
                    v,
                    &owner,
                    false,
                    format!("/roster/{i}/goals/{j}/verify"),
                    out,
                );
            }
        }
        let role = s(a, "role").unwrap_or_default();
        if let Some((pfile, p)) = personas
            .iter()
            .find(|(_, p)| s(p, "persona_id") == Some(role))
        {
            for (k, r) in arr(p, "rules").iter().enumerate() {
                if let Some(w) = s(r, "when") {
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
    for (j, g) in arr(pt, "group_goals").iter().enumerate() {
        if let Some(v) = s(g, "verify") {
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
    let env = playtest_env(owner_env(story, owner, hit));
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

//! Checks only a pack has (Format 13): the manifest's references, one ID per
//! file kind, the safety policy's rating cap, fixtures naming scenarios, and
//! one smoke fixture per entry scenario.

use std::collections::HashMap;

use serde_json::Value;

use crate::load::lower::PackValues;
use crate::diag::{Code, Diagnostic, Severity};
use crate::load::normalize_ref;

/// The ID field of each pack file kind, by folder.
const ID_FIELDS: &[(&str, &str)] = &[
    ("scenarios/", "scenario_id"),
    ("npcs/", "npc_id"),
    ("rubrics/", "rubric_id"),
    ("safety/", "policy_id"),
    ("scenes/", "scene_id"),
    ("worlds/", "world_id"),
    ("tests/", "fixture_id"),
    ("playtests/", "name"),
    ("personas/", "persona_id"),
];

/// Content ratings in rank order (Format 13.4).
const RATINGS: &[&str] = &["general", "teen", "mature"];

/// Runs the pack-level checks. Diagnostics carry their file and pointer.
/// `exists` says whether a normalized path names a file of the pack; a file
/// that exists but is not in `files` failed to parse and has its own
/// diagnostics, so nothing that depends on its content is reported again.
pub fn check_pack_files(files: &PackValues, exists: &dyn Fn(&str) -> bool) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let manifest = files.get("manifest.yaml");

    // Entry scenarios exist (MISSING_FILE / PATH_TRAVERSAL at the item).
    let mut entry_ids = Vec::new();
    if let Some(m) = manifest {
        for (k, e) in m
            .get("entry_scenarios")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .enumerate()
        {
            let Some(r) = e.as_str() else { continue };
            let at = format!("/entry_scenarios/{k}");
            match normalize_ref(r) {
                Err(e) => out.push(
                    Diagnostic::error(e.code, e.message)
                        .in_file("manifest.yaml")
                        .at(at),
                ),
                Ok(p) => match files.get(&p) {
                    Some(s) if p.starts_with("scenarios/") => {
                        if let Some(id) = s.get("scenario_id").and_then(Value::as_str) {
                            entry_ids.push(id.to_string());
                        }
                    }
                    None if p.starts_with("scenarios/") && exists(&p) => {}
                    _ => out.push(
                        Diagnostic::error(
                            Code::MissingFile,
                            format!("entry scenario `{p}` is not a scenario file of this pack"),
                        )
                        .in_file("manifest.yaml")
                        .at(at),
                    ),
                },
            }
        }
    }

    // One ID per file kind (DUPLICATE_ID at the later file's ID field).
    for (folder, field) in ID_FIELDS {
        let mut seen: HashMap<&str, &str> = HashMap::new();
        for (path, v) in files.iter().filter(|(p, _)| p.starts_with(folder)) {
            let Some(id) = v.get(*field).and_then(Value::as_str) else {
                continue;
            };
            if let Some(first) = seen.insert(id, path) {
                out.push(
                    Diagnostic::error(
                        Code::DuplicateId,
                        format!("duplicate {field} `{id}`: `{first}` declares it too"),
                    )
                    .in_file(path.as_str())
                    .at(format!("/{field}")),
                );
                seen.insert(id, first);
            }
        }
    }

    // The safety policy's cap against the manifest's rating (Format 13.4).
    if let Some(m) = manifest {
        let rating = m.get("content_rating").and_then(Value::as_str);
        let policy = m
            .pointer("/safety/policy")
            .and_then(Value::as_str)
            .and_then(|r| normalize_ref(r).ok())
            .and_then(|p| files.get(&p));
        let cap = policy
            .and_then(|p| p.get("content_rating_cap"))
            .and_then(Value::as_str);
        let rank = |r: &str| RATINGS.iter().position(|x| *x == r);
        if let (Some(rating), Some(cap)) = (rating, cap) {
            if let (Some(r), Some(c)) = (rank(rating), rank(cap)) {
                if c < r {
                    out.push(
                        Diagnostic::error(
                            Code::RatingCap,
                            format!("content_rating `{rating}` is above the safety policy's content_rating_cap `{cap}`"),
                        )
                        .in_file("manifest.yaml")
                        .at("/content_rating")
                        .with_help("lower the pack's content_rating or raise the policy's cap"),
                    );
                }
            }
        }
    }

    // Fixtures name scenarios of the pack; every entry scenario has a smoke
    // fixture (advice).
    let scenario_ids: Vec<&str> = files
        .iter()
        .filter(|(p, _)| p.starts_with("scenarios/"))
        .filter_map(|(_, v)| v.get("scenario_id").and_then(Value::as_str))
        .collect();
    // A scenario file that did not parse may be the one a fixture names.
    let all_scenarios_read = !files.is_empty()
        && files.keys().filter(|p| p.starts_with("scenarios/")).count()
            == scenario_files_on_disk(files, exists);
    let mut tested = Vec::new();
    for (path, v) in files.iter().filter(|(p, _)| p.starts_with("tests/")) {
        if let Some(s) = v.get("scenario_id").and_then(Value::as_str) {
            if all_scenarios_read && !scenario_ids.contains(&s) {
                out.push(
                    Diagnostic::error(
                        Code::UnknownRef,
                        format!(
                            "the pack has no scenario `{s}`{}",
                            crate::diag::suggest::one_of(s, scenario_ids.iter().copied())
                        ),
                    )
                    .in_file(path.as_str())
                    .at("/scenario_id"),
                );
            }
            if path
                .rsplit('/')
                .next()
                .is_some_and(|n| n.starts_with("smoke_"))
            {
                tested.push(s.to_string());
            }
        }
    }
    for id in entry_ids {
        if !tested.contains(&id) {
            out.push(
                Diagnostic::error(
                    Code::Advisory,
                    format!("entry scenario `{id}` has no smoke fixture (tests/smoke_{id}.yaml)"),
                )
                .with_severity(Severity::Warning)
                .in_file("manifest.yaml")
                .at("/entry_scenarios"),
            );
        }
    }
    out
}

/// How many scenario files the manifest's entry list and the parsed files
/// know of that exist on disk; used to tell whether every scenario was read.
fn scenario_files_on_disk(files: &PackValues, exists: &dyn Fn(&str) -> bool) -> usize {
    let mut names: Vec<String> = files
        .keys()
        .filter(|p| p.starts_with("scenarios/"))
        .cloned()
        .collect();
    if let Some(entries) = files
        .get("manifest.yaml")
        .and_then(|m| m.get("entry_scenarios"))
        .and_then(Value::as_array)
    {
        for e in entries.iter().filter_map(Value::as_str) {
            if let Ok(p) = normalize_ref(e) {
                if p.starts_with("scenarios/") && exists(&p) && !names.contains(&p) {
                    names.push(p);
                }
            }
        }
    }
    names.len()
}

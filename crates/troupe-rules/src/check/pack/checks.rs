//! Checks only a pack has (Format 13): the manifest's references, one ID per
//! file kind, the safety policy's rating cap, fixtures naming scenarios, and
//! one smoke fixture per entry scenario.

use std::collections::HashMap;

use crate::diag::{Code, Diagnostic, Severity};
use crate::load::lower::PackValues;
use crate::load::normalize_ref;
use crate::model::manifest::{
    file_id, rating_cap, scenario_id, Manifest, FILE as MANIFEST, ID_FIELDS,
};

/// Content ratings in rank order (Format 13.4).
const RATINGS: &[&str] = &["general", "teen", "mature"];

/// Runs the pack-level checks. Diagnostics carry their file and pointer.
/// `exists` says whether a normalized path names a file of the pack; a file
/// that exists but is not in `files` failed to parse and has its own
/// diagnostics, so nothing that depends on its content is reported again.
pub fn check_pack_files(files: &PackValues, exists: &dyn Fn(&str) -> bool) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let manifest = files.get(MANIFEST).map(|v| Manifest::read(v));

    // Entry scenarios exist (MISSING_FILE / PATH_TRAVERSAL at the item).
    let mut entry_ids = Vec::new();
    if let Some(m) = manifest {
        for (k, r) in m.entries() {
            let at = format!("/entry_scenarios/{k}");
            match normalize_ref(r) {
                Err(e) => out.push(
                    Diagnostic::error(e.code, e.message)
                        .in_file(MANIFEST)
                        .at(at),
                ),
                Ok(p) => match files.get(&p) {
                    Some(s) if p.starts_with("scenarios/") => {
                        if let Some(id) = scenario_id(s) {
                            entry_ids.push(id.to_string());
                        }
                    }
                    None if p.starts_with("scenarios/") && exists(&p) => {}
                    _ => out.push(
                        Diagnostic::error(
                            Code::MissingFile,
                            format!("entry scenario `{p}` is not a scenario file of this pack"),
                        )
                        .in_file(MANIFEST)
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
            let Some(id) = file_id(folder, v) else {
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
        let rating = m.content_rating;
        let policy = m
            .safety_policy
            .and_then(|r| normalize_ref(r).ok())
            .and_then(|p| files.get(&p));
        let cap = policy.and_then(|p| rating_cap(p));
        let rank = |r: &str| RATINGS.iter().position(|x| *x == r);
        if let (Some(rating), Some(cap)) = (rating, cap)
            && let (Some(r), Some(c)) = (rank(rating), rank(cap))
            && c < r
        {
            out.push(
                        Diagnostic::error(
                            Code::RatingCap,
                            format!("content_rating `{rating}` is above the safety policy's content_rating_cap `{cap}`"),
                        )
                        .in_file(MANIFEST)
                        .at("/content_rating")
                        .with_help("lower the pack's content_rating or raise the policy's cap"),
                    );
        }
    }

    // Fixtures name scenarios of the pack; every entry scenario has a smoke
    // fixture (advice).
    let scenario_ids: Vec<&str> = files
        .iter()
        .filter(|(p, _)| p.starts_with("scenarios/"))
        .filter_map(|(_, v)| scenario_id(v))
        .collect();
    // A scenario file that did not parse may be the one a fixture names.
    let all_scenarios_read = !files.is_empty()
        && files.keys().filter(|p| p.starts_with("scenarios/")).count()
            == scenario_files_on_disk(files, exists);
    let mut tested = Vec::new();
    for (path, v) in files.iter().filter(|(p, _)| p.starts_with("tests/")) {
        if let Some(s) = scenario_id(v) {
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
                .in_file(MANIFEST)
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
    let manifest = Manifest::of(files.get(MANIFEST).copied());
    for (_, e) in manifest.entries() {
        if let Ok(p) = normalize_ref(e)
            && p.starts_with("scenarios/")
            && exists(&p)
            && !names.contains(&p)
        {
            names.push(p);
        }
    }
    names.len()
}

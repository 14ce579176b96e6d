//! The ensemble lints (Format 17.4, 18.9): DEAD_LOGIC warnings for a
//! cast member who can never be the responder under the default turn
//! order, a rule owned by a character who is never present (or muted),
//! an alias that is another cast member's name, and a `natural` turn
//! order whose speakers all have `talkativeness` 0.

use std::collections::HashSet;

use serde_json::Value;

use super::lints::lint;
use crate::diag::{escape_token, Diagnostic};
use crate::model::array;
use crate::model::items::{scene_present, Cast, Rule, SceneMoves};
use crate::model::{id_list as ids, List, Scenario};
use crate::resolve::story::Story;

/// What the scenario's changes and openings can do to `scene.present`:
/// who can enter it, and who can leave it (Format 6.3, 6.4, 8.5). A
/// `set` of `scene.present` lets every character it leaves out leave and
/// every one it names enter.
struct Presence {
    enters: HashSet<String>,
    leaves: HashSet<String>,
}

fn presence(sc: &Scenario, cast: &[String]) -> Presence {
    let mut p = Presence {
        enters: HashSet::new(),
        leaves: HashSet::new(),
    };
    let replace = |list: &Value, p: &mut Presence| {
        let named: HashSet<&str> = ids(list).collect();
        for c in cast {
            if named.contains(c.as_str()) {
                p.enters.insert(c.clone());
            } else {
                p.leaves.insert(c.clone());
            }
        }
    };
    let mut lists: Vec<&Value> = Vec::new();
    for field in [List::Rules, List::Events, List::Outcomes, List::Openings] {
        for x in sc.list(field) {
            lists.push(x);
        }
    }
    for x in lists {
        for c in array(x, "changes").iter().map(SceneMoves::read) {
            if let Some(l) = c.enter {
                p.enters.extend(ids(l).map(str::to_string));
            }
            if let Some(l) = c.leave {
                p.leaves.extend(ids(l).map(str::to_string));
            }
            if let Some(l) = c.present {
                replace(l, &mut p);
            }
        }
        if let Some(l) = scene_present(x) {
            replace(l, &mut p);
        }
    }
    p
}

/// The lints of Format 17.4 for turn order (18.9).
pub fn lint_ensemble(story: &Story, out: &mut Vec<Diagnostic>) {
    let base = &story.pointer;
    let sc = &story.scenario;
    let cast: Vec<Cast<'_>> = sc.cast_entries().collect();
    // Character entries that are not players: (index, id, muted).
    let npcs: Vec<(usize, &str, bool)> = cast
        .iter()
        .enumerate()
        .filter(|(_, e)| !e.player)
        .filter_map(|(i, e)| Some((i, e.character?, e.muted)))
        .collect();
    let all: Vec<String> = cast
        .iter()
        .filter_map(|e| e.character)
        .map(str::to_string)
        .collect();
    let initial: HashSet<&str> = match sc.present() {
        Some(l) => l.iter().map(String::as_str).collect(),
        None => all.iter().map(String::as_str).collect(),
    };
    let p = presence(sc, &all);
    let order = sc.turn_order();
    let strategy = order.strategy.unwrap_or("first_present");
    let max = order.max_replies_per_turn.unwrap_or(1);
    let rules: Vec<Rule<'_>> = sc.rule_items().collect();

    // A rule owned by a character who is never present, or muted.
    for (i, r) in rules.iter().enumerate() {
        let Some(by) = r.by else {
            continue;
        };
        let Some(&(_, _, muted)) = npcs.iter().find(|(_, id, _)| *id == by) else {
            continue;
        };
        let never = !initial.contains(by) && !p.enters.contains(by);
        if muted || never {
            let why = if muted {
                "is muted"
            } else {
                "is never in `scene.present` (not at the start, and no change or opening brings it in)"
            };
            out.push(
                lint(
                    format!(
                        "rule `{}` can never apply: its owner `{}` {why}, and a rule is tried only for its owner (Format 18.9)",
                        escape_token(r.id.unwrap_or("")),
                        escape_token(by)
                    ),
                    format!("{base}/rules/{i}/by"),
                )
                .with_help("bring the owner into the scene (an `enter` change or the scenario's `scene.present`), unmute it, or remove `by`"),
            );
        }
    }

    // Under first_present with one reply a turn, a character after one
    // who is always present and unmuted is never the responder unless
    // `@`-named (Format 18.9), so the rules it owns are never tried.
    // Only a scenario the rules runtime plays (it has rules) is linted.
    if strategy == "first_present" && max <= 1 && !rules.is_empty() {
        let always = npcs
            .iter()
            .find(|(_, id, muted)| !muted && initial.contains(id) && !p.leaves.contains(*id));
        if let Some(&(first_i, first, _)) = always {
            let owners: HashSet<&str> = rules.iter().filter_map(|r| r.by).collect();
            for &(i, id, muted) in &npcs {
                // Only a character with lines of its own is linted: its
                // rules are never tried.
                let ever = initial.contains(id) || p.enters.contains(id);
                if i <= first_i || muted || !ever || !owners.contains(id) {
                    continue;
                }
                out.push(
                    lint(
                        format!(
                            "`{}` never answers, so its rules never apply, unless a player writes `@{}`: under the default turn order (`first_present`) `{}` is always present and comes first in the cast (Format 18.9)",
                            escape_token(id),
                            escape_token(id),
                            escape_token(first)
                        ),
                        format!("{base}/cast/{i}/character"),
                    )
                    .with_help("give the scenario a `turn_order` (`addressed`, `natural`, `round_robin` or `all`), or let the first character leave the scene"),
                );
            }
        }
    }

    // An alias that is another cast member's name (Format 4, 18.9).
    let names = |id: &str| -> Vec<(String, &'static str)> {
        let Some(c) = story.characters.get(id) else {
            return Vec::new();
        };
        let mut v = vec![(crate::keys::lower(&c.name), "name")];
        if let Some(n) = &c.nickname {
            v.push((crate::keys::lower(n), "nickname"));
        }
        v.push((crate::keys::lower(id), "ID"));
        v
    };
    for (i, e) in cast.iter().enumerate() {
        let Some(id) = e.character else {
            continue;
        };
        let Some(c) = story.characters.get(id) else {
            continue;
        };
        for alias in &c.aliases {
            let low = crate::keys::lower(alias);
            for other in all.iter().filter(|o| o.as_str() != id) {
                let other_names = names(other);
                let other_aliases = story
                    .characters
                    .get(other.as_str())
                    .map_or(&[][..], |o| o.aliases.as_slice());
                let hit = other_names
                    .iter()
                    .find(|(n, _)| *n == low)
                    .map(|(_, what)| *what)
                    .or_else(|| {
                        other_aliases
                            .iter()
                            .any(|a| crate::keys::lower(a) == low)
                            .then_some("alias")
                    });
                if let Some(what) = hit {
                    out.push(
                        lint(
                            format!(
                                "the alias `{}` of `{}` is also the {what} of `{}`: a player who writes it addresses whichever comes first (Format 18.9)",
                                escape_token(alias),
                                escape_token(id),
                                escape_token(other)
                            ),
                            format!("{base}/cast/{i}/character"),
                        )
                        .with_help("give the alias to one character only"),
                    );
                }
            }
        }
    }

    // natural with every speaker at talkativeness 0.
    if strategy == "natural" || order.fallback == Some("natural") {
        let weights: Vec<u64> = cast
            .iter()
            .filter(|e| !e.player && e.character.is_some() && !e.muted)
            .map(|e| e.talkativeness.unwrap_or(50))
            .collect();
        if !weights.is_empty() && weights.iter().all(|w| *w == 0) {
            out.push(
                lint(
                    "every speaker has `talkativeness` 0, so `natural` never draws: the first speaker always answers (Format 18.9)".to_string(),
                    format!("{base}/turn_order"),
                )
                .with_help("give the characters who should speak a `talkativeness` above 0"),
            );
        }
    }
}

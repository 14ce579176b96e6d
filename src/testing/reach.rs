//! What a run reached, for coverage (Format 21.6): read from an engine
//! holding the run's messages (a replayed session, or the messages a
//! fixture's turns wrote) — recorded firings, the openings of roots,
//! active constant entries, and the operands seen by the conditions the
//! run evaluates: events' and outcomes' `when` at each evaluated message
//! before its firings, derived variables and entry conditions after its
//! changes, the `emotion` at each turn's last message.

use super::branches::Instrumented;
use super::coverage::{branch_key, EntryModel, Hits, ScenarioModel, Site};
use crate::compile::session::Fired;
use crate::compile::Who;
use crate::engine::replay::step;
use crate::engine::{Engine, Scratch};
use crate::runtime::keys::{lower, Key};

fn is_player(engine: &Engine, w: Who) -> bool {
    matches!(w, Who::Cast(c) if engine.ir.cast.get(c as usize).is_some_and(|x| x.player))
}

/// Records in `hits` what the engine's session reached in `scenario`.
pub fn reached(engine: &Engine, scenario: &str, model: Option<&ScenarioModel>, hits: &mut Hits) {
    hits.use_scenario(scenario);
    let session = &engine.session;
    for msg in &session.messages {
        for f in &msg.firings {
            let id = match f {
                Fired::Event(i) => engine
                    .ir
                    .events
                    .get(*i as usize)
                    .map(|e| format!("event {}", e.id)),
                Fired::Outcome(i) => engine
                    .ir
                    .outcomes
                    .get(*i as usize)
                    .map(|o| format!("outcome {}", o.id)),
            };
            if let Some(id) = id {
                hits.hit(scenario, id);
            }
        }
        if let (None, Some(o)) = (msg.parent, msg.opening) {
            if let Some(op) = engine.ir.openings.get(o as usize) {
                hits.hit(scenario, format!("opening {}", op.id));
            }
        }
    }
    let Some(model) = model else { return };
    let conds: Vec<(&super::coverage::Condition, Instrumented)> = model
        .conditions
        .iter()
        .filter(|c| !matches!(c.site, Site::Rule(_) | Site::Score))
        .map(|c| {
            let hit = c.site == Site::Entry;
            (
                c,
                Instrumented::new(engine, &c.src, c.owner.as_deref(), hit),
            )
        })
        .collect();
    // The session without recorded firings: each message's state before
    // its firings.
    let mut bare = session.clone();
    bare.messages.iter_mut().for_each(|m| m.firings.clear());
    let mut scratch = Scratch::new(&engine.ir);
    for (mi, msg) in session.messages.iter().enumerate() {
        let m = mi as u32;
        // A player's message without changes answered by the next line is
        // not evaluated (Format 18.5).
        let answered = is_player(engine, msg.author)
            && msg.changes.is_empty()
            && session
                .messages
                .get(mi + 1)
                .is_some_and(|n| n.parent == Some(m) && !is_player(engine, n.author));
        let after = engine.state_at(m);
        let mut before = match msg.parent {
            Some(p) => engine.state_at(p),
            None => engine.initial().clone(),
        };
        step(&engine.ir, &bare, &mut before, m, &mut scratch);
        let author = match msg.author {
            Who::Cast(c) if !is_player(engine, msg.author) => engine
                .ir
                .cast
                .get(c as usize)
                .map_or(String::new(), |x| x.id.to_string()),
            _ => String::new(),
        };
        let mut when_false: Vec<String> = Vec::new();
        for (c, inst) in &conds {
            let (at, ch) = match c.site {
                Site::Event(_) | Site::Outcome(_) if answered => continue,
                Site::Event(_) | Site::Outcome(_) => (&before, ""),
                Site::Emotion if answered || msg.parent.is_none() => continue,
                Site::Emotion => (&after, author.as_str()),
                _ => (&after, ""),
            };
            let index = c.index;
            let value = inst.eval(engine, at, ch, &mut |n, b| {
                hits.hit(scenario, branch_key(index, n, b))
            });
            if let (Site::Entry, Some(key)) = (c.site, &c.entry) {
                if value != Some(crate::cel::Value::Bool(true)) {
                    when_false.push(key.clone());
                }
            }
        }
        // Entries active here (Format 5.3): enabled, constant or keys
        // matching the scanned text, and `when` true.
        let path = engine.path(m);
        for e in &model.entries {
            if when_false.contains(&e.key) {
                continue;
            }
            if e.constant || keys_match(e, &scanned(engine, &path, e.scan_depth)) {
                hits.hit(scenario, format!("entry {}", e.key));
            }
        }
    }
}

/// The scanned text at the last message of `path` (Format 5.3): the texts
/// of its last `depth` non-hidden messages, oldest first, joined by `\n`.
fn scanned(engine: &Engine, path: &[u32], depth: usize) -> String {
    let visible: Vec<u32> = path
        .iter()
        .copied()
        .filter(|m| {
            engine
                .session
                .messages
                .get(*m as usize)
                .is_some_and(|x| !x.hidden)
        })
        .collect();
    let from = visible.len().saturating_sub(depth);
    visible[from..]
        .iter()
        .map(|m| engine.session.text(*m))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether one key hits `text` (Format 5.4), honouring the entry's
/// `case_sensitive` and `whole_words`.
fn key_hits(e: &EntryModel, key: &str, text: &str) -> bool {
    if crate::check::keys::split_regex_key(key).is_some() {
        // Regular-expression keys: the runtime's matcher (case-insensitive,
        // whole words), on the lower-cased text.
        return Key::new(key).is_ok_and(|k| k.hits(&lower(text)));
    }
    let (k, t) = if e.case_sensitive {
        (key.to_string(), text.to_string())
    } else {
        (lower(key), lower(text))
    };
    if k.is_empty() {
        return false;
    }
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut from = 0;
    while let Some(pos) = t.get(from..).and_then(|x| x.find(k.as_str())) {
        let start = from + pos;
        let end = start + k.len();
        if !e.whole_words
            || (!word(t[..start].chars().next_back()) && !word(t[end..].chars().next()))
        {
            return true;
        }
        from = start + t[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// Whether an entry's keys match `text` (Format 5.4).
fn keys_match(e: &EntryModel, text: &str) -> bool {
    if !e.keys.iter().any(|k| key_hits(e, k, text)) {
        return false;
    }
    let Some(sec) = &e.secondary else { return true };
    let hit: Vec<bool> = sec.iter().map(|k| key_hits(e, k, text)).collect();
    match e.logic.as_str() {
        "and_all" => hit.iter().all(|h| *h),
        "not_any" => !hit.iter().any(|h| *h),
        "not_all" => hit.iter().any(|h| !*h),
        _ => hit.iter().any(|h| *h),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Format 5.4's example.
    #[test]
    fn key_matching_follows_the_spec_example() {
        let mut e = EntryModel {
            key: "w/dragon".into(),
            keys: vec!["dragon".into()],
            logic: "and_any".into(),
            scan_depth: 1,
            whole_words: true,
            ..EntryModel::default()
        };
        let text = "Dragons? No, a DRAGON.";
        assert!(keys_match(&e, text));
        e.secondary = Some(vec!["gold".into()]);
        assert!(!keys_match(&e, text));
        e.logic = "not_any".into();
        assert!(keys_match(&e, text));
        e.secondary = None;
        e.case_sensitive = true;
        assert!(
            !keys_match(&e, text),
            "DRAGON is not dragon when case-sensitive"
        );
        e.case_sensitive = false;
        assert!(!keys_match(&e, "Dragons only"));
        e.whole_words = false;
        assert!(keys_match(&e, "Dragons only"));
    }
}

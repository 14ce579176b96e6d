//! SUMMARY_REVEALS (Format 12.5): a summary whose explicit `audience` lists
//! an ID that does not know every part the summary covers (7.4).
//!
//! The session checker reads messages one at a time in file order; what it
//! keeps per path is [`PathKnowledge`]: who is present (6.4, 8.5) and, for
//! the summary window still open (the messages after the last summary), who
//! knows every covered part so far. It is persistent, so a message shares
//! its parent's in O(1), and its size is bounded by the cast.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::diag::{Code, Diagnostic};
use crate::model::items::{Opening, SceneMoves};
use crate::model::{array as list, FiringRecord, Message, Part};
use crate::resolve::story::Story;

/// What the checker needs of a story to follow `scene.present` along a
/// path (Format 6.4, 8.5, 8.6): the cast, the initial scene, and the scene
/// and changes of openings, events and outcomes.
pub(super) struct SceneRules {
    /// Cast member IDs, in cast order.
    cast: Vec<String>,
    /// Cast member ID → its index in `cast` (so that each look-up is O(1)
    /// and a part costs O(cast), not O(cast²)).
    index: HashMap<String, u32>,
    /// The initial `scene.present` (6.4), as cast indices.
    initial: rpds::HashTrieSetSync<u32>,
    /// Opening ID → what an opening brings to a root.
    openings: HashMap<String, OpeningScene>,
    /// Event ID → its changes.
    events: HashMap<String, Vec<Value>>,
    /// Outcome ID → its changes.
    outcomes: HashMap<String, Vec<Value>>,
}

/// What an opening brings to a root that names it (Format 6.3): its
/// `scene.present`, its changes and its parts.
type OpeningScene = (Option<Value>, Vec<Value>, Vec<Value>);

/// The knowledge facts of one path (see the module documentation).
#[derive(Default, Clone)]
pub(super) struct PathKnowledge {
    /// `scene.present` at the path's last message, as cast indices.
    present: rpds::HashTrieSetSync<u32>,
    /// The first covered part of the open summary window (message ID, part
    /// index); `None` while the window has no part.
    first: Option<(String, usize)>,
    /// Who knows every covered part of the window (valid with `first`).
    every: rpds::HashTrieSetSync<String>,
    /// For an ID that knew the window's first part but not a later one,
    /// that later part. An ID in neither `every` nor `missed` did not know
    /// the first part.
    missed: rpds::HashTrieMapSync<String, (String, usize)>,
}

fn changes_by_id(items: &[Value]) -> HashMap<String, Vec<Value>> {
    items
        .iter()
        .filter_map(|x| {
            let id = crate::model::id_of(x)?;
            Some((id.to_string(), list(x, "changes").to_vec()))
        })
        .collect()
}

impl SceneRules {
    /// The rules of `story`.
    pub(super) fn of(story: &Story) -> SceneRules {
        let cast: Vec<String> = story.cast.iter().map(|m| m.character.clone()).collect();
        let mut rules = SceneRules {
            initial: rpds::HashTrieSet::new_sync(),
            openings: story
                .scenario
                .openings
                .iter()
                .filter_map(|o| {
                    let o = Opening::read(o);
                    let parts = match o.text {
                        Some(t) => vec![serde_json::json!({"type": "text", "text": t})],
                        None => o.parts.to_vec(),
                    };
                    Some((
                        o.id?.to_string(),
                        (o.present.cloned(), o.changes.to_vec(), parts),
                    ))
                })
                .collect(),
            events: changes_by_id(&story.scenario.events),
            outcomes: changes_by_id(&story.scenario.outcomes),
            index: cast
                .iter()
                .enumerate()
                .filter_map(|(i, c)| Some((c.clone(), u32::try_from(i).ok()?)))
                .collect(),
            cast,
        };
        rules.initial = match story
            .scenario
            .scene
            .as_ref()
            .and_then(|s| s.present.as_ref())
        {
            Some(p) => rules.members(p.iter().map(String::as_str)),
            None => (0..rules.cast.len())
                .filter_map(|i| u32::try_from(i).ok())
                .collect(),
        };
        rules
    }

    fn index(&self, id: &str) -> Option<u32> {
        self.index.get(id).copied()
    }

    fn members<'a>(&self, ids: impl Iterator<Item = &'a str>) -> rpds::HashTrieSetSync<u32> {
        ids.filter_map(|id| self.index(id)).collect()
    }

    /// Applies the scene moves of `changes` (8.5) to `present`; items that
    /// name no cast member are reported by other checks and skipped here.
    fn apply(&self, changes: &[Value], present: &mut rpds::HashTrieSetSync<u32>) {
        for c in changes.iter().map(SceneMoves::read) {
            if let Some(p) = c.present {
                *present = self.members(crate::model::id_list(p));
            }
            if let Some(e) = c.enter {
                for i in crate::model::id_list(e).filter_map(|id| self.index(id)) {
                    present.insert_mut(i);
                }
            }
            if let Some(l) = c.leave {
                for i in crate::model::id_list(l).filter_map(|id| self.index(id)) {
                    present.remove_mut(&i);
                }
            }
        }
    }

    /// The knowledge facts at a root, before its own steps.
    pub(super) fn root(&self) -> PathKnowledge {
        PathKnowledge {
            present: self.initial.clone(),
            ..PathKnowledge::default()
        }
    }

    /// Steps `k` (its parent's facts, or [`SceneRules::root`]) over message
    /// `m` with ID `id` (Format 8.6: the opening's scene and changes at a
    /// root, its changes, its firings' changes), takes its parts into the
    /// summary window (7.4), and for a summary with `audience` reports
    /// SUMMARY_REVEALS at `<at>/summary/audience` (12.5).
    pub(super) fn message(
        &self,
        k: &mut PathKnowledge,
        id: &str,
        m: &Message<'_>,
        at: &str,
        out: &mut Vec<Diagnostic>,
    ) {
        let root = m.parent.is_none();
        let opening = if root {
            m.opening.and_then(|o| self.openings.get(o))
        } else {
            None
        };
        if let Some((scene, changes, _)) = opening {
            if let Some(p) = scene {
                k.present = self.members(crate::model::id_list(p));
            }
            self.apply(changes, &mut k.present);
        }
        self.apply(m.changes.unwrap_or_default(), &mut k.present);
        for f in m.firings() {
            let changes = match f {
                Some(FiringRecord::Event(e)) => self.events.get(e),
                Some(FiringRecord::Outcome(o)) => self.outcomes.get(o),
                None => None,
            };
            if let Some(c) = changes {
                self.apply(c, &mut k.present);
            }
        }
        let hidden = m.hidden;
        let author = m.author.unwrap_or("");
        // A hidden message's parts are not covered parts (Format 12.5).
        let parts = match (opening, m.parts) {
            _ if hidden => &[][..],
            (Some((_, _, parts)), None) => parts.as_slice(),
            (_, parts) => parts.unwrap_or_default(),
        };
        for (i, part) in parts.iter().enumerate() {
            let audience = Part::read(part).audience.map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<HashSet<&str>>()
            });
            let knows = |x: &str| -> bool {
                if x == author || x == "narrator" {
                    return true;
                }
                match &audience {
                    Some(a) => a.contains(x),
                    None => self.index(x).is_some_and(|i| k.present.contains(&i)),
                }
            };
            if k.first.is_none() {
                k.first = Some((id.to_string(), i));
                k.every = self
                    .cast
                    .iter()
                    .map(String::as_str)
                    .chain(["narrator"])
                    .filter(|x| knows(x))
                    .map(str::to_string)
                    .collect();
                continue;
            }
            let lost: Vec<String> = k.every.iter().filter(|x| !knows(x)).cloned().collect();
            for x in lost {
                k.every.remove_mut(&x);
                k.missed.insert_mut(x, (id.to_string(), i));
            }
        }
        let Some(summary) = m.summary else {
            return;
        };
        if let (Some(aud), false, Some(first)) = (summary.audience, hidden, &k.first) {
            // Items that are no cast member are UNKNOWN_REF (checked apart).
            let mut who: Vec<&str> = aud
                .iter()
                .filter_map(Value::as_str)
                .filter(|x| self.index(x).is_some())
                .chain(["narrator"])
                .collect();
            who.sort_unstable();
            who.dedup();
            for x in who {
                if k.every.contains(x) {
                    continue;
                }
                let (msg, part) = k.missed.get(x).unwrap_or(first);
                out.push(
                    Diagnostic::error(
                        Code::SummaryReveals,
                        format!(
                            "this summary's audience reveals part {part} of message `{msg}` to `{x}`, who does not know it"
                        ),
                    )
                    .at(format!("{at}/summary/audience"))
                    .with_help(format!(
                        "remove `{x}` from the audience, or drop `audience` so that only those who know every covered part know the summary (Format 12.5)"
                    )),
                );
            }
        }
        // A summary ends the window: the next one covers what follows it.
        k.first = None;
        k.every = rpds::HashTrieSet::new_sync();
        k.missed = rpds::HashTrieMap::new_sync();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::check::session::check_session;
    use crate::diag::Code;

    fn reveals(messages: &[Value]) -> Vec<(String, String)> {
        let c = |id: &str| json!({"id": id, "name": id, "fictional": true, "age_band": "adult"});
        let bundle = json!({"troupe": "0.1", "kind": "bundle",
            "characters": [c("kai"), c("ana"), c("ben")],
            "scenarios": [{"id": "s", "name": "S",
                "cast": [{"character": "kai"}, {"character": "ana"}, {"character": "ben"}],
                "scene": {"present": ["kai", "ana"]},
                "events": [{"id": "arrive", "when": "false", "changes": [{"enter": ["ben"]}]}]}]});
        let header = json!({"troupe": "0.1", "kind": "session", "scenario": "s"});
        let refs: Vec<&Value> = messages.iter().collect();
        check_session(&bundle, &header, &refs)
            .into_iter()
            .filter(|d| d.code == Code::SummaryReveals)
            .map(|d| {
                (
                    d.location.pointer.unwrap_or_default(),
                    d.message.to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn one_warning_per_revealed_id_naming_the_first_missed_part() {
        let t = |s: &str| json!({"type": "text", "text": s});
        let got = reveals(&[
            json!({"id": "a", "author": "kai", "parts": [t("x")]}),
            // ben arrives through a recorded firing's changes.
            json!({"id": "b", "parent": "a", "author": "ana", "parts": [t("y")],
                   "firings": [{"event": "arrive"}]}),
            json!({"id": "c", "parent": "b", "author": "ana",
                   "parts": [t("z"), {"type": "text", "text": "w", "audience": ["kai"]}],
                   "summary": {"text": "s", "audience": ["ben", "ana", "kai", "ben"]}}),
        ]);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "message:c/summary/audience");
        assert!(
            got[0].1.contains("part 0 of message `a` to `ben`"),
            "{got:?}"
        );
        // After a summary the window starts again: ben knows d's part.
        let got = reveals(&[
            json!({"id": "a", "author": "kai", "parts": [t("x")], "summary": {"text": "s"}}),
            json!({"id": "d", "parent": "a", "author": "kai", "changes": [{"enter": ["ben"]}],
                   "parts": [t("y")], "summary": {"text": "s", "audience": ["ben"]}}),
        ]);
        assert!(got.is_empty(), "{got:?}");
    }

    #[test]
    fn a_whisper_after_the_first_part_is_found() {
        let t = |s: &str| json!({"type": "text", "text": s});
        let got = reveals(&[
            json!({"id": "a", "author": "kai", "parts": [t("x"),
                   {"type": "text", "text": "psst", "audience": ["ana"]}]}),
            json!({"id": "b", "parent": "a", "author": "ana", "parts": [t("y")],
                   "summary": {"text": "s", "audience": ["kai", "ana"]}}),
        ]);
        assert!(got.is_empty(), "{got:?}");
        let got = reveals(&[
            json!({"id": "a", "author": "ana", "parts": [t("x"),
                   {"type": "text", "text": "psst", "audience": ["ana"]}]}),
            json!({"id": "b", "parent": "a", "author": "ana", "parts": [t("y")],
                   "summary": {"text": "s", "audience": ["kai"]}}),
        ]);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].1.contains("part 1 of message `a` to `kai`"),
            "{got:?}"
        );
    }
}

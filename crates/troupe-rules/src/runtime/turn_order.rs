//! Turn order (Format 18.9): who says each reply of a turn — speakers,
//! addressing by name or `@name`, the strategies, reactions — and the
//! record of why (`chosen`).

use std::sync::Arc;

use serde::Serialize;

use super::compiled::{Strategy, TurnOrderIr};
use super::generator::choose;
use super::session::{Session, TurnError};
use crate::compile::{StoryIr, Who};
use crate::engine::{Engine, State};

/// Why a reply's author was chosen (Format 18.9 "Recording").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Why {
    /// No speaker: the narrator.
    Narrator,
    /// The host named the responder (`Session::turn_to`).
    Host,
    /// Named (or `@`-named) in the text answered.
    Addressed,
    /// The first speaker.
    FirstPresent,
    /// The `all` strategy's next speaker.
    All,
    /// The speaker after the last one.
    RoundRobin,
    /// Drawn by `talkativeness` (`natural`).
    Drawn,
    /// A reaction to the reply before.
    Reaction,
    /// A rule's `reply_as`.
    ReplyAs,
    /// A safety text (Format 19.4), the narrator's.
    Safety,
}

impl Why {
    /// The name as written (`first_present`).
    pub fn as_str(self) -> &'static str {
        match self {
            Why::Narrator => "narrator",
            Why::Host => "host",
            Why::Addressed => "addressed",
            Why::FirstPresent => "first_present",
            Why::All => "all",
            Why::RoundRobin => "round_robin",
            Why::Drawn => "drawn",
            Why::Reaction => "reaction",
            Why::ReplyAs => "reply_as",
            Why::Safety => "safety",
        }
    }

    /// Whether a runtime writes it on the message (Format 18.9: not for
    /// what follows from the state and the texts alone).
    pub fn is_written(self) -> bool {
        !matches!(self, Why::FirstPresent | Why::Narrator | Why::Safety)
    }
}

/// A Chosen (Format 18.9): why a reply's author was chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Chosen {
    /// The reason.
    pub why: Why,
    /// The name that addressed the speaker, as declared (`@` + name for an
    /// @-naming).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<Arc<str>>,
    /// The draw `r` of `natural`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draw: Option<u64>,
}

impl Chosen {
    pub(crate) fn because(why: Why) -> Chosen {
        Chosen {
            why,
            name: None,
            draw: None,
        }
    }
}

/// Whether cast member `c` is a speaker at state `st` (Format 18.9).
pub(crate) fn speaker_at(ir: &StoryIr, order: &TurnOrderIr, st: &State, c: u16) -> bool {
    ir.cast.get(c as usize).is_some_and(|m| {
        !m.player
            && st.present.get(c as usize).copied().unwrap_or(false)
            && !(order.any_muted && order.member(&m.id).is_some_and(|x| x.muted))
    })
}

/// A candidate speaker with why it was chosen.
pub(crate) type Choice = (Who, Chosen);

/// What choosing a speaker reads (Format 18.9): the story, with its
/// session and states, and its turn order. A running session and a
/// prompt (`troupe prompt`, 24.3) choose with the same code.
pub(crate) struct Floor<'a> {
    /// The story and its session.
    pub engine: &'a Engine,
    /// The scenario's turn order.
    pub order: &'a TurnOrderIr,
}

impl Floor<'_> {
    /// Whether cast member `c` is a speaker at state `st` (Format 18.9):
    /// not a player, present, not muted.
    pub(crate) fn is_speaker(&self, st: &State, c: u16) -> bool {
        speaker_at(&self.engine.ir, self.order, st, c)
    }

    /// The speakers at `st`, in cast order.
    pub(crate) fn speakers<'s>(&'s self, st: &'s State) -> impl Iterator<Item = u16> + 's {
        (0..self.engine.ir.cast.len() as u16).filter(move |&c| self.is_speaker(st, c))
    }

    /// The speakers addressed in `text` (Format 18.9), by position (ties
    /// in cast order), each with the name that addressed it; bare names
    /// count when `bare`, `@`-names always.
    pub(crate) fn addressed(&self, st: &State, text: &str, bare: bool) -> Vec<(u16, Arc<str>)> {
        if !bare && !text.contains('@') {
            return Vec::new();
        }
        let lowered = crate::keys::lower(text);
        // Every member's names in one pass over the text (the automaton is
        // built once per turn order); a member whose names are not all
        // plain text is matched with its own sets.
        let names = self.order.names();
        let mut starts = Vec::new();
        names.hits.scan(&lowered, &mut starts);
        let mut found: Vec<(usize, u16, Arc<str>)> = Vec::new();
        for c in self.speakers(st) {
            let Some(j) = self.order.member_index(&self.engine.ir.cast[c as usize].id) else {
                continue;
            };
            let m = &self.order.members[j];
            // The earliest start; on a tie the first `@`-name, then the
            // first name (a name counts only when strictly earlier).
            let mut best: Option<(usize, bool, usize)> = None;
            let mut consider = |hits: &mut dyn Iterator<Item = (usize, Option<usize>)>,
                                at: bool| {
                for (k, start) in hits {
                    if let Some(start) = start
                        && best.is_none_or(|(b, _, _)| start < b)
                    {
                        best = Some((start, at, k));
                    }
                }
            };
            for (set, at, keys) in [(2 * j, true, &m.at_keys), (2 * j + 1, false, &m.keys)] {
                if !at && !bare {
                    continue;
                }
                if names.hits.indexed(set) {
                    let mut hits =
                        (0..keys.keys().len()).map(|k| (k, names.hits.start(&starts, set, k)));
                    consider(&mut hits, at);
                } else {
                    let mut hits = keys
                        .first_hits(&lowered)
                        .into_iter()
                        .map(|h| h.map(|(s, _)| s))
                        .enumerate();
                    consider(&mut hits, at);
                }
            }
            if let Some((pos, at, k)) = best {
                let name = if at {
                    names.at_names[j][k].clone()
                } else {
                    m.names[k].clone()
                };
                found.push((pos, c, name));
            }
        }
        // Stable: equal positions keep cast order.
        found.sort_by_key(|(pos, _, _)| *pos);
        found.into_iter().map(|(_, c, n)| (c, n)).collect()
    }

    /// The author of the latest message on the path up to `parent` (the
    /// parent of the message answered) that a cast member who is not a
    /// player authored (`L` of Format 18.9).
    fn last_speaker_from(&self, parent: Option<u32>) -> Option<u16> {
        let ms = &self.engine.session.messages;
        let mut at = parent;
        while let Some(p) = at {
            let msg = &ms[p as usize];
            if let Who::Cast(c) = msg.author
                && self
                    .engine
                    .ir
                    .cast
                    .get(c as usize)
                    .is_some_and(|x| !x.player)
            {
                return Some(c);
            }
            at = msg.parent;
        }
        None
    }

    /// The first reply's speaker, the responder (Format 18.9), at message
    /// `m_in` (state `st`) whose text is `input`; `host` is the host's
    /// choice. A host's choice that is not a speaker refuses the turn.
    pub(crate) fn first_speaker(
        &self,
        m_in: u32,
        st: &State,
        input: &str,
        host: Option<u16>,
    ) -> Result<Choice, TurnError> {
        let Some(msg) = self.engine.session.messages.get(m_in as usize) else {
            return Ok((Who::Narrator, Chosen::because(Why::Narrator)));
        };
        self.first_speaker_of(msg.parent, &msg.id, st, input, host)
    }

    /// [`Floor::first_speaker`] for an input message that need not exist:
    /// its parent `parent` and its ID `id` (what `L` and the `natural`
    /// draw read, Format 18.9).
    pub(crate) fn first_speaker_of(
        &self,
        parent: Option<u32>,
        id: &str,
        st: &State,
        input: &str,
        host: Option<u16>,
    ) -> Result<Choice, TurnError> {
        let order = self.order;
        if let Some(h) = host {
            if !self.is_speaker(st, h) {
                return Err(TurnError::NotASpeaker(
                    self.engine.ir.who_id(Who::Cast(h)).to_string(),
                    String::new(),
                ));
            }
            return Ok((Who::Cast(h), Chosen::because(Why::Host)));
        }
        let Some(first) = self.speakers(st).next() else {
            return Ok((Who::Narrator, Chosen::because(Why::Narrator)));
        };
        let bare = matches!(order.strategy, Strategy::Addressed | Strategy::Natural);
        if let Some((c, name)) = self.addressed(st, input, bare).into_iter().next() {
            return Ok((
                Who::Cast(c),
                Chosen {
                    why: Why::Addressed,
                    name: Some(name),
                    draw: None,
                },
            ));
        }
        let strategy = match order.strategy {
            Strategy::Addressed | Strategy::Manual => order.fallback,
            s => s,
        };
        Ok(match strategy {
            Strategy::FirstPresent | Strategy::Addressed | Strategy::Manual => {
                (Who::Cast(first), Chosen::because(Why::FirstPresent))
            }
            Strategy::All => (Who::Cast(first), Chosen::because(Why::All)),
            Strategy::RoundRobin => {
                let next = self.last_speaker_from(parent).and_then(|l| {
                    let speakers: Vec<u16> = self.speakers(st).collect();
                    speakers
                        .iter()
                        .find(|&&c| c > l)
                        .or_else(|| speakers.first())
                        .copied()
                });
                (
                    Who::Cast(next.unwrap_or(first)),
                    Chosen::because(Why::RoundRobin),
                )
            }
            Strategy::Natural => self.natural(parent, id, st),
        })
    }

    /// The `natural` draw (Format 18.9) for the input message `id` whose
    /// parent is `parent`.
    fn natural(&self, parent: Option<u32>, id: &str, st: &State) -> Choice {
        let order = self.order;
        let last = self.last_speaker_from(parent);
        let speakers: Vec<u16> = self.speakers(st).collect();
        let alone = speakers.len() == 1 && Some(speakers[0]) == last;
        let candidates: Vec<(u16, u64)> = speakers
            .iter()
            .filter(|&&c| order.allow_self_responses || alone || Some(c) != last)
            .map(|&c| {
                let w = order
                    .member(&self.engine.ir.cast[c as usize].id)
                    .map_or(50, |x| x.talkativeness);
                (c, u64::from(w))
            })
            .collect();
        let total: u64 = candidates.iter().map(|(_, w)| w).sum();
        let Some(&(first, _)) = candidates.first() else {
            return (Who::Narrator, Chosen::because(Why::Narrator));
        };
        if total == 0 {
            return (Who::Cast(first), Chosen::because(Why::FirstPresent));
        }
        let label = format!("speaker:{}:{id}", self.engine.session.seed);
        let r = choose(total as usize, &label) as u64;
        let mut acc = 0;
        for (c, w) in &candidates {
            acc += w;
            if r < acc {
                return (
                    Who::Cast(*c),
                    Chosen {
                        why: Why::Drawn,
                        name: None,
                        draw: Some(r),
                    },
                );
            }
        }
        (Who::Cast(first), Chosen::because(Why::FirstPresent))
    }
}

impl Session {
    /// The turn order's reading of this session.
    pub(crate) fn floor(&self) -> Floor<'_> {
        Floor {
            engine: &self.engine,
            order: &self.engine.ir.turn_order,
        }
    }

    /// Whether cast member `c` is a speaker at state `st` (Format 18.9).
    pub(crate) fn is_speaker(&self, st: &State, c: u16) -> bool {
        self.floor().is_speaker(st, c)
    }

    /// The speakers at `st`, in cast order.
    pub(crate) fn speakers<'s>(&'s self, st: &'s State) -> impl Iterator<Item = u16> + 's {
        (0..self.engine.ir.cast.len() as u16).filter(move |&c| self.is_speaker(st, c))
    }

    /// The speakers addressed in `text` (Format 18.9), see [`Floor::addressed`].
    pub(crate) fn addressed(&self, st: &State, text: &str, bare: bool) -> Vec<(u16, Arc<str>)> {
        self.floor().addressed(st, text, bare)
    }

    /// The first reply's speaker at message `m_in` (Format 18.9), see
    /// [`Floor::first_speaker`].
    pub(crate) fn first_speaker(
        &self,
        m_in: u32,
        input: &str,
        host: Option<u16>,
    ) -> Result<Choice, TurnError> {
        self.floor()
            .first_speaker(m_in, &self.states[m_in as usize], input, host)
    }

    /// Who would say the first reply of a turn if the first player said
    /// `input` now (Format 18.9 "The first reply"): the responder the turn
    /// order chooses for an input written after the current message, with
    /// why (a `Chosen`), computed without taking the turn — nothing is
    /// written and the session does not change; the same session and input
    /// always give the same answer (a `natural` draw uses the ID the input
    /// would get, [`Session::next_message_id`]). `host` is a host's choice
    /// (as [`Session::turn_to`]): a character that is not a speaker is
    /// refused with [`TurnError::NotASpeaker`], as the turn would be. The
    /// speakers are read at the current message: the input message has no
    /// changes (Format 18.5), so its state is the current one's. Under
    /// `all` this is the first candidate; the turn passes over a candidate
    /// no rule applies to, which this does not try. Further replies
    /// (reactions) depend on the replies' texts and are not foretold.
    pub fn next_speaker(
        &self,
        input: &str,
        host: Option<&str>,
    ) -> Result<(String, Chosen), TurnError> {
        let host = match host {
            Some(h) => match self.engine.ir.cast_index(h) {
                Some(c) => Some(c),
                None => return Err(not_an_id(&self.engine.ir, h)),
            },
            None => None,
        };
        let initial;
        let st = match self.current {
            Some(p) => &self.states[p as usize],
            None => {
                initial = self.engine.initial().clone();
                &initial
            }
        };
        let (who, chosen) =
            self.floor()
                .first_speaker_of(self.current, &self.next_id(), st, input, host)?;
        Ok((self.engine.ir.who_id(who).to_string(), chosen))
    }

    /// The candidates for a further reply answering message `answered`
    /// (Format 18.9): under `all`, the characters @-named in the input,
    /// then every speaker, less those `tried`; otherwise the reactions to
    /// the reply `answered` (said by `prev`, rendered `text`).
    pub(crate) fn further_candidates(
        &self,
        answered: u32,
        input: &str,
        text: &str,
        prev: Who,
        tried: &[u16],
    ) -> Vec<Choice> {
        let st = &self.states[answered as usize];
        let order = &self.engine.ir.turn_order;
        let mut out: Vec<Choice> = Vec::new();
        let push = |out: &mut Vec<Choice>, c: u16, chosen: Chosen| {
            if !out.iter().any(|(w, _)| *w == Who::Cast(c)) {
                out.push((Who::Cast(c), chosen));
            }
        };
        if order.strategy == Strategy::All {
            for (c, name) in self.addressed(st, input, false) {
                if !tried.contains(&c) {
                    let chosen = Chosen {
                        why: Why::Addressed,
                        name: Some(name),
                        draw: None,
                    };
                    push(&mut out, c, chosen);
                }
            }
            for c in self.speakers(st) {
                if !tried.contains(&c) {
                    push(&mut out, c, Chosen::because(Why::All));
                }
            }
            return out;
        }
        let Who::Cast(x) = prev else {
            return out;
        };
        let allowed = |c: u16| c != x || order.allow_self_responses;
        for (c, name) in self.addressed(st, text, true) {
            if allowed(c) {
                let chosen = Chosen {
                    why: Why::Reaction,
                    name: Some(name),
                    draw: None,
                };
                push(&mut out, c, chosen);
            }
        }
        for c in self.speakers(st) {
            if allowed(c) {
                push(&mut out, c, Chosen::because(Why::Reaction));
            }
        }
        out
    }
}

/// [`TurnError::NotASpeaker`] for a responder named by something that is
/// no character ID of the cast (Format 18.9 names the responder by its ID):
/// when it is one of a character's names (18.9, case-insensitively), the
/// message says that character's ID; else it lists the IDs of the cast's
/// characters no player plays.
pub(crate) fn not_an_id(ir: &crate::compile::StoryIr, named: &str) -> TurnError {
    let lower = crate::keys::lower(named);
    let owner = ir
        .turn_order
        .members
        .iter()
        .find(|m| m.names.iter().any(|n| crate::keys::lower(n) == lower));
    let hint = match owner {
        Some(m) => format!(
            "; `{named}` is a name of `{}`: name the responder by its ID, `{}`",
            m.id, m.id
        ),
        None => {
            let ids: Vec<String> = ir
                .cast
                .iter()
                .filter(|c| !c.player)
                .map(|c| format!("`{}`", c.id))
                .collect();
            format!("; the cast's characters are {}", ids.join(", "))
        }
    };
    TurnError::NotASpeaker(named.to_string(), hint)
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::runtime::{Opened, Options, Session};

    fn ch(id: &str, name: &str) -> Value {
        json!({"id": id, "name": name, "fictional": true, "age_band": "adult"})
    }

    /// A landlord, a neighbour and a plumber, `natural` order with
    /// reactions, rules owned by each, one handing the floor and one said
    /// by the narrator (issue 37's pack, grown).
    fn bundle() -> Value {
        json!({"troupe": "0.1", "kind": "bundle",
        "characters": [ch("greaves", "Greaves"), ch("priya", "Priya"), ch("ozzy", "Ozzy")],
        "scenarios": [{"id": "flat", "name": "The flat",
          "turn_order": {"strategy": "natural", "max_replies_per_turn": 3},
          "cast": [{"character": "greaves", "talkativeness": 60}, {"character": "priya"},
                   {"character": "ozzy", "talkativeness": 20}, {"seat": "player", "player": true}],
          "rules": [
            {"id": "g-damp", "by": "greaves", "keywords": ["damp"], "replies": ["The damp is fine."]},
            {"id": "g-leave", "by": "greaves", "keywords": ["leave"],
             "changes": [{"leave": ["greaves"]}], "replies": ["I'm off."]},
            {"id": "g-any", "by": "greaves", "replies": ["Rent is due."]},
            {"id": "p-damp", "by": "priya", "on": "reply", "keywords": ["damp", "rent"],
             "replies": ["Greaves, it is mould."]},
            {"id": "p-floor", "by": "priya", "keywords": ["pipes"],
             "changes": [{"set": {"scene.present": ["ozzy", "priya"]}}], "replies": ["Ask Ozzy."]},
            {"id": "p-any", "by": "priya", "replies": ["Hmm."]},
            {"id": "o-back", "by": "ozzy", "keywords": ["back"],
             "changes": [{"enter": ["greaves"]}], "replies": ["Fetching him."]},
            {"id": "o-any", "by": "ozzy", "replies": ["Pipes are pipes."]},
            {"id": "o-mould", "by": "ozzy", "on": "reply", "keywords": ["mould"],
             "replies": ["Mould is my trade."]},
            {"id": "knock", "reply_as": "narrator", "keywords": ["knock"], "priority": 5,
             "replies": ["Someone knocks."]}
          ]}]})
    }

    fn play(seed: u64, script: &[&str]) -> (String, Vec<(String, Option<String>)>) {
        let opened = Opened::from_checked("t", bundle());
        let options = Options {
            seed,
            ..Options::default()
        };
        let mut s = Session::start(&opened, &options).unwrap();
        let mut said = Vec::new();
        for line in script {
            let r = s.turn(line).unwrap();
            assert!(r.replies.len() <= 3, "max_replies_per_turn bounds a turn");
            said.extend(
                r.replies
                    .iter()
                    .map(|x| (x.author.to_string(), x.rule.as_ref().map(|r| r.to_string()))),
            );
        }
        (s.session_text().to_string(), said)
    }

    /// Format 18.9: over seeded random scripts, every reply's author owns
    /// the rule that produced it (or is its `reply_as`), and the same seed
    /// and script give the same session bytes.
    #[test]
    fn every_line_is_said_by_its_owner() {
        let words = [
            "hello", "damp", "leave", "pipes", "back", "knock", "Priya?", "@ozzy hi", "rent",
            "Greaves!",
        ];
        let rules = bundle()["scenarios"][0]["rules"].clone();
        let owner = |rule: &str| -> Option<String> {
            let r = rules.as_array()?.iter().find(|r| r["id"] == rule)?;
            let r = crate::model::items::Rule::read(r);
            r.reply_as.or(r.by).map(str::to_string)
        };
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut speakers = std::collections::HashSet::new();
        for seed in 0..24u64 {
            let script: Vec<&str> = (0..12)
                .map(|_| {
                    x = x
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    words[(x >> 33) as usize % words.len()]
                })
                .collect();
            let (text, said) = play(seed, &script);
            for (author, rule) in &said {
                let rule = rule.as_deref().expect("every reply here has a rule");
                assert_eq!(owner(rule).as_deref(), Some(author.as_str()), "{rule}");
                speakers.insert(author.clone());
            }
            assert_eq!(play(seed, &script).0, text, "same seed, same bytes");
        }
        // The draws and addressing let every character speak.
        for c in ["greaves", "priya", "ozzy", "narrator"] {
            assert!(speakers.contains(c), "{c} never spoke");
        }
    }
}

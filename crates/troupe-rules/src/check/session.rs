//! The checks of a session against its bundle (Format 12): the header's
//! scenario, players, seats and difficulty; each message's parent, opening,
//! author, audience, changes and firings; and the path rules of Format 9
//! (once-only events, messages after the end).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::bundle::check_story;
use super::summaries::{PathKnowledge, SceneRules};
use super::templates::check_template_syntax;
use crate::changes::check_changes;
use crate::changes::settings::Declared;
use crate::diag::{escape_token, Code, Diagnostic};
use crate::model::firing::{record, Firing, PathFirings};
use crate::model::items::Event;
use crate::model::{array, FiringRecord, Header, Message, Part};
use crate::resolve::story::{self, SessionContext, Story};

/// Checks a session (header and messages in file order) against `bundle`.
/// Locations are `header/<pointer>` and `message:<id>/<pointer>`.
pub fn check_session(bundle: &Value, header: &Value, messages: &[&Value]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if let Some(mut checker) = SessionChecker::begin(bundle, header, &mut out) {
        for (i, m) in messages.iter().enumerate() {
            checker.message(m, u32::try_from(i + 2).unwrap_or(u32::MAX), &mut out);
        }
    }
    out
}

/// The checks of a session's messages, one message at a time in file order
/// (Format 12, 7, 9): what is kept between messages is, per message ID, the
/// facts of its path (once-only events fired, ended), shared with its
/// parent's where they are the same, so a session is checked without holding
/// its messages.
pub struct SessionChecker {
    /// What the checks read and never change: shared by [`SessionChecker::fresh`]
    /// copies.
    rules: std::sync::Arc<Rules>,
    /// The facts of each message's path; `None` for a message with no path
    /// (its parent is not an earlier line, or has no path itself: Format 12.1).
    facts: HashMap<String, Option<PathFacts>>,
}

impl std::fmt::Debug for SessionChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionChecker")
            .field("messages", &self.facts.len())
            .finish_non_exhaustive()
    }
}

/// The story and the tables a [`SessionChecker`] checks messages against.
struct Rules {
    story: Story,
    /// Event ID → (index, repeats, ends the story).
    events: HashMap<String, (u32, bool, bool)>,
    outcomes: HashSet<String>,
    openings: indexmap::IndexSet<String>,
    /// How `scene.present` moves, for who knows what (Format 7.4, 12.5).
    scene: SceneRules,
}

impl SessionChecker {
    /// Resolves the story `header` names and runs the checks of the header
    /// and of the story as the session sees it, into `out`; `None` when there
    /// is no story to check messages against (UNKNOWN_REF or a seat error is
    /// in `out`).
    pub fn begin(bundle: &Value, header: &Value, out: &mut Vec<Diagnostic>) -> Option<Self> {
        let story = resolve_story(bundle, header, out)?;
        // The story as this session sees it (seats filled, header characters in
        // place) can fail checks the bundle alone passes: a seat-filled
        // character named in an opening's scene, variables of a header
        // character. Report what the session adds (Format 11.2, 12.2).
        if story.cast.iter().any(|m| m.seat.is_some()) || Header::read(header).characters.is_some()
        {
            let mut alone = Vec::new();
            if let Some(bundle_story) = story::resolve(bundle, story.index, None, &mut alone) {
                check_story(&bundle_story, &mut alone);
                super::reach::unreachable_conditions(&bundle_story, &[], &mut alone);
            }
            let mut seen: HashSet<(Code, Option<String>)> = alone
                .into_iter()
                .map(|d| (d.code, d.location.pointer))
                .collect();
            let mut story_diags = Vec::new();
            check_story(&story, &mut story_diags);
            super::reach::unreachable_conditions(&story, &[], &mut story_diags);
            out.extend(
                story_diags
                    .into_iter()
                    .filter(|d| seen.insert((d.code, d.location.pointer.clone()))),
            );
        }
        check_header(bundle, &story, header, out);
        Some(Self::of_story(story))
    }

    /// A checker of the messages of a session whose header and story have
    /// passed their checks (a session started or resumed): the story is
    /// resolved from `header`, not checked again; `None` when it does not
    /// resolve.
    pub fn for_lines(bundle: &Value, header: &Value) -> Option<Self> {
        resolve_story(bundle, header, &mut Vec::new()).map(Self::of_story)
    }

    /// A checker that has read no message, sharing this one's story.
    pub fn fresh(&self) -> Self {
        SessionChecker {
            rules: self.rules.clone(),
            facts: HashMap::new(),
        }
    }

    fn of_story(story: Story) -> Self {
        let events = story
            .scenario
            .events
            .iter()
            .map(Event::read)
            .enumerate()
            .filter_map(|(i, e)| {
                let at = (u32::try_from(i).unwrap_or(u32::MAX), e.repeat, e.end);
                Some((e.id?.to_string(), at))
            })
            .collect();
        let outcomes = story
            .scenario
            .outcomes
            .iter()
            .filter_map(|o| crate::model::id_of(o).map(str::to_string))
            .collect();
        let openings = story
            .scenario
            .openings
            .iter()
            .filter_map(|o| crate::model::id_of(o).map(str::to_string))
            .collect();
        SessionChecker {
            rules: std::sync::Arc::new(Rules {
                scene: SceneRules::of(&story),
                story,
                events,
                outcomes,
                openings,
            }),
            facts: HashMap::new(),
        }
    }

    /// The story the session is checked against (its header's scenario,
    /// seats filled).
    pub fn story(&self) -> &Story {
        &self.rules.story
    }

    /// Checks the next message line, `m`, at file line `line` (for the
    /// `line:<n>` location of a line without a string ID, Format 17.2), into
    /// `out`. Every diagnostic is about `m`: `message:<id>/<pointer>` or
    /// `line:<n>/<pointer>`.
    pub fn message(&mut self, line_value: &Value, line: u32, out: &mut Vec<Diagnostic>) {
        let rules = &*self.rules;
        let story = &rules.story;
        let m = Message::read(line_value);
        // A line without a string ID is checked like every message, located
        // at `line:<n>` (Format 17.2); no later line can name it.
        let id = m.id;
        let prefix = match id {
            Some(id) => format!("message:{}", escape_token(id)),
            None => format!("line:{line}"),
        };
        let at = |p: &str| format!("{prefix}{p}");
        if id.is_some_and(|id| self.facts.contains_key(id)) {
            let id = id.unwrap_or_default();
            out.push(
                Diagnostic::error(
                    Code::DuplicateId,
                    format!("message ID `{id}` is used by an earlier line"),
                )
                .at(at("/id")),
            );
            return;
        }
        let parent = m.parent;
        let mut path = match parent {
            Some(p) => match self.facts.get(p) {
                Some(f) => f.clone(),
                None => {
                    out.push(
                        Diagnostic::error(
                            Code::Order,
                            format!("parent `{p}` is not the ID of an earlier line"),
                        )
                        .at(at("/parent")),
                    );
                    None
                }
            },
            None => Some(PathFacts {
                knowledge: rules.scene.root(),
                ..PathFacts::default()
            }),
        };
        if path.as_ref().is_some_and(|f| f.ended) {
            out.push(
                Diagnostic::error(
                    Code::AfterEnd,
                    "this message continues a story that has already ended",
                )
                .at(at("")),
            );
        }
        if let Some(o) = m.opening {
            if parent.is_some() {
                out.push(
                    Diagnostic::error(
                        Code::Order,
                        "only a root (a message with no parent) may name an opening",
                    )
                    .at(at("/opening")),
                );
            } else if !rules.openings.contains(o) {
                out.push(
                    Diagnostic::error(
                        Code::UnknownRef,
                        format!(
                            "the scenario has no opening `{o}`{}",
                            crate::diag::suggest::one_of(
                                o,
                                rules.openings.iter().map(String::as_str)
                            )
                        ),
                    )
                    .at(at("/opening")),
                );
            }
        }
        if let Some(a) = m.author
            && a != "narrator"
            && !story.in_cast(a)
        {
            out.push(
                Diagnostic::error(
                    Code::UnknownRef,
                    format!("author `{a}` is not a member of the cast or `narrator`"),
                )
                .at(at("/author")),
            );
        }
        for (pi, part) in m.parts.unwrap_or_default().iter().enumerate() {
            let part = Part::read(part);
            if let Some(t) = part.text {
                check_template_syntax(t, &at(&format!("/parts/{pi}/text")), out);
            }
            check_audience(
                story,
                part.audience.unwrap_or_default(),
                &at(&format!("/parts/{pi}/audience")),
                out,
            );
        }
        if let Some(summary) = m.summary {
            if let Some(t) = summary.text {
                check_template_syntax(t, &at("/summary/text"), out);
            }
            // Summary audiences are references, as part audiences (Format 12.5).
            if let Some(aud) = summary.audience {
                check_audience(story, aud, &at("/summary/audience"), out);
            }
        }
        check_changes(story, m.changes.unwrap_or_default(), &at("/changes"), out);
        if let Some(set) = m.settings {
            crate::changes::settings::check_settings(
                story.scenario.difficulty().and_then(Declared::of).as_ref(),
                set,
                &at("/settings"),
                out,
            );
        }
        // Path-dependent checks use a scratch copy when there is no path.
        let has_path = path.is_some();
        let mut facts_here = path.take().unwrap_or_default();
        let path = &mut facts_here;
        let ended_before = path.ended;
        for (fi, f) in m.firings().enumerate() {
            if has_path && path.ended && !ended_before {
                out.push(
                    Diagnostic::error(
                        Code::AfterEnd,
                        "this firing is recorded after the firing that ended the story",
                    )
                    .at(at(&format!("/firings/{fi}"))),
                );
            }
            if let Some(FiringRecord::Event(e)) = f {
                match rules.events.get(e) {
                    None => out.push(
                        Diagnostic::error(
                            Code::UnknownRef,
                            format!("the scenario has no event `{e}`"),
                        )
                        .at(at(&format!("/firings/{fi}/event"))),
                    ),
                    Some(&(index, repeat, end)) => {
                        let recorded = record(path, Firing::Event { index, repeat, end });
                        if recorded.repeated && has_path {
                            out.push(
                                Diagnostic::error(
                                    Code::RepeatedFiring,
                                    format!("event `{e}` does not repeat but already fired on this path"),
                                )
                                .at(at(&format!("/firings/{fi}/event"))),
                            );
                        }
                        if recorded.ending {
                            path.ended = true;
                        }
                    }
                }
            } else if let Some(FiringRecord::Outcome(o)) = f {
                if !rules.outcomes.contains(o) {
                    out.push(
                        Diagnostic::error(
                            Code::UnknownRef,
                            format!("the scenario has no outcome `{o}`"),
                        )
                        .at(at(&format!("/firings/{fi}/outcome"))),
                    );
                } else if record(path, Firing::Outcome).ending {
                    // A second outcome on a path is after the ending: AFTER_END,
                    // not REPEATED_FIRING (Format 9.4).
                    path.ended = true;
                }
            }
        }
        if let (Some(id), true) = (id, has_path) {
            rules
                .scene
                .message(&mut path.knowledge, id, &m, &prefix, out);
        }
        if let Some(id) = id {
            self.facts
                .insert(id.to_string(), has_path.then_some(facts_here));
        }
    }
}

/// The checks of a header alone (Format 12, 12.2, 12.3) for header
/// characters that carry no variables or templates (the default players a
/// runtime adds, Format 18.4): the story is not checked again, since such
/// characters cannot change its diagnostics.
pub fn check_plain_header(bundle: &Value, header: &Value) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if let Some(story) = resolve_story(bundle, header, &mut out) {
        check_plain_story_header(&Namespace::of(bundle), &story, header, &mut out);
    }
    out
}

/// The IDs of a bundle's worlds and scenarios: the namespace header
/// characters share (Format 3.3, 12.2). Built once for a bundle, it keeps
/// checking the headers of all its scenarios linear in the bundle.
#[derive(Debug)]
pub struct Namespace<'b>(HashSet<&'b str>);

impl<'b> Namespace<'b> {
    /// The worlds' and scenarios' IDs of `bundle`.
    pub fn of(bundle: &'b Value) -> Namespace<'b> {
        Namespace(
            ["worlds", "scenarios"]
                .iter()
                .flat_map(|f| array(bundle, f))
                .filter_map(|x| crate::model::id_of(x))
                .collect(),
        )
    }
}

/// [`check_plain_header`] for the default header of scenario `index`
/// (Format 18.4), with the bundle's namespace built once by the caller:
/// the header's diagnostics, and the story it resolves (the caller goes on
/// to compile it; it is resolved once).
pub fn check_plain_header_at(
    bundle: &Value,
    namespace: &Namespace<'_>,
    index: usize,
    header: &Value,
) -> (Vec<Diagnostic>, Option<Story>) {
    let mut out = Vec::new();
    let ctx = SessionContext::from_header(header);
    let story = story::resolve(bundle, index, Some(&ctx), &mut out);
    if let Some(story) = &story {
        check_plain_story_header(namespace, story, header, &mut out);
    }
    (out, story)
}

fn check_plain_story_header(
    namespace: &Namespace<'_>,
    story: &Story,
    header: &Value,
    out: &mut Vec<Diagnostic>,
) {
    check_header_in(namespace, story, header, out);
    // A seat whose ID is a scenario variable's makes `<id>.x` ambiguous
    // (Format 8.7, 18.4): the one story-level check a plain character
    // can change.
    let scenario = story::Owner::Scenario(story.scenario.id.clone());
    for (i, c) in crate::model::read_items::<crate::model::Character>(header, "characters") {
        let clash = story
            .variables
            .values()
            .any(|v| v.owner == scenario && v.decl.id == c.id);
        if clash {
            out.push(
                Diagnostic::error(
                    Code::NameClash,
                    format!(
                        "header character `{}` has the ID of a scenario variable, so `state.{}` would mean two things",
                        c.id, c.id
                    ),
                )
                .at(format!("header/characters/{i}/id")),
            );
        }
    }
}

/// Resolves the story a session header names, reporting UNKNOWN_REF at
/// `header/scenario` and seat problems.
pub fn resolve_story(bundle: &Value, header: &Value, out: &mut Vec<Diagnostic>) -> Option<Story> {
    let name = Header::read(header).scenario?;
    let Some(index) = crate::model::scenario_index(bundle, name) else {
        out.push(
            Diagnostic::error(
                Code::UnknownRef,
                format!(
                    "the bundle has no scenario `{name}`{}",
                    crate::diag::suggest::one_of(name, crate::model::scenario_ids(bundle))
                ),
            )
            .at("header/scenario"),
        );
        return None;
    };
    let ctx = SessionContext::from_header(header);
    story::resolve(bundle, index, Some(&ctx), out)
}

fn check_header(bundle: &Value, story: &Story, header: &Value, out: &mut Vec<Diagnostic>) {
    check_header_in(&Namespace::of(bundle), story, header, out);
}

fn check_header_in(
    namespace: &Namespace<'_>,
    story: &Story,
    header: &Value,
    out: &mut Vec<Diagnostic>,
) {
    // Header characters share the bundle namespace with worlds and scenarios
    // (Format 3.3, 12.2); a bundle character's ID is a replacement.
    let mut seen: HashSet<&str> = HashSet::new();
    let header = Header::read(header);
    for (i, c) in header.characters.unwrap_or_default().iter().enumerate() {
        super::bundle::check_text_fields(c, &format!("header/characters/{i}"), out);
        if let Some(id) = crate::model::id_of(c)
            && (namespace.0.contains(id) || !seen.insert(id))
        {
            out.push(
                Diagnostic::error(Code::DuplicateId, format!("`{id}` is declared twice"))
                    .at(format!("header/characters/{i}/id")),
            );
        }
    }
    if let Some(d) = header.difficulty {
        let difficulty = story.scenario.difficulty();
        let known = difficulty.is_some_and(|x| x.has(d));
        if !known {
            out.push(
                Diagnostic::error(
                    Code::UnknownRef,
                    format!(
                        "the scenario has no difficulty preset `{d}`{}",
                        crate::diag::suggest::one_of(
                            d,
                            difficulty.into_iter().flat_map(|x| x.presets())
                        )
                    ),
                )
                .at("header/difficulty"),
            );
        }
    }
}

/// What is known of each message's path while reading the lines in order.
/// Cloning is O(1): the set is persistent, so a message shares its parent's
/// (a path of fired events copied per message would cost the session's
/// length times the scenario's events).
#[derive(Default, Clone)]
struct PathFacts {
    /// Indices of the events fired on the path (Format 9.2), kept by
    /// [`record`], the rule the engine's state keeps too (`Sync`: a live
    /// session holding the checker moves between threads).
    fired: rpds::HashTrieSetSync<u32>,
    /// Whether the story has ended on the path.
    ended: bool,
    /// Who is present, and who knows the open summary window (Format 12.5).
    knowledge: PathKnowledge,
}

/// The checker's store of what fired on a path (Format 9.2–9.4).
impl PathFirings for PathFacts {
    fn has_fired(&self, index: u32) -> bool {
        self.fired.contains(&index)
    }
    fn mark_fired(&mut self, index: u32) {
        self.fired.insert_mut(index);
    }
    fn ended(&self) -> bool {
        self.ended
    }
}

/// An audience's items (of a part, 7.2, or a summary, 12.5) are cast
/// members or `narrator`: UNKNOWN_REF at `<base>/<k>` otherwise.
fn check_audience(story: &Story, items: &[Value], base: &str, out: &mut Vec<Diagnostic>) {
    for (k, a) in items.iter().enumerate() {
        if let Some(a) = a.as_str()
            && a != "narrator"
            && !story.in_cast(a)
        {
            out.push(
                Diagnostic::error(
                    Code::UnknownRef,
                    format!("`{a}` is not a member of the cast or `narrator`"),
                )
                .at(format!("{base}/{k}")),
            );
        }
    }
}

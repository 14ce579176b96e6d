//! The replay runtime (Format 18.7): re-steps a recorded, conforming
//! session and compares each message's recorded firings with what 9.2
//! produces there, reporting FIRING_MISMATCH.

use serde_json::{Map, Value};

use super::firing::evaluate_observed;
use crate::cel::NoHost;
use crate::compile::session::Fired;
use crate::compile::{SessionIr, Who};
use crate::diag::{Code, Diagnostic};
use crate::engine::replay::step_observed;
use crate::engine::{Engine, Observer, Point, Scratch, Site};

/// What replay yields for one message.
#[derive(Debug, Clone)]
pub struct ReplayedMessage {
    /// The message ID.
    #[allow(dead_code)] // read by the tests only
    pub id: String,
    /// The flattened state at the message (recorded firings applied).
    #[allow(dead_code)] // read by the tests only
    pub state: Map<String, Value>,
    /// The recorded firings (`event:<id>` / `outcome:<id>`).
    #[allow(dead_code)] // read by the tests only
    pub recorded: Vec<String>,
    /// The firings 9.2 produces there.
    #[allow(dead_code)] // read by the tests only
    pub produced: Vec<String>,
    /// Each part's rendered text (Format 10.5), in part order.
    #[allow(dead_code)] // read by the tests only
    pub texts: Vec<String>,
}

/// The replay of a session.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    /// FIRING_MISMATCH diagnostics, in file order.
    pub diagnostics: Vec<Diagnostic>,
    /// Every message in file order.
    pub messages: Vec<ReplayedMessage>,
}

/// `(id, kind)` of a recorded firing ([`Engine::fired`]); an index the IR
/// does not have is an empty ID.
fn name(engine: &Engine, f: &Fired) -> (String, &'static str) {
    match engine.fired(f) {
        Some((kind, id)) => (id.to_string(), kind),
        None if matches!(f, Fired::Event(_)) => (String::new(), "event"),
        None => (String::new(), "outcome"),
    }
}

fn is_player(engine: &Engine, w: Who) -> bool {
    matches!(w, Who::Cast(c) if engine.ir.cast.get(c as usize).is_some_and(|x| x.player))
}

/// SPEAKER_MISMATCH (Format 18.7, 18.9) for message `mi` when it is a
/// turn's first reply (its parent a player's message) that records
/// `chosen`: a host's choice must be a speaker at the parent; `reply_as`,
/// `safety` and `all` depend on the rules and the texts and are not
/// judged; any other reason must be what the first-reply choice of 18.9
/// gives at the parent, with the parent's rendered text as the input —
/// the same author and the same `chosen`.
fn speaker_mismatch(
    engine: &Engine,
    order: &crate::compile::runtime::TurnOrderIr,
    mi: usize,
) -> Option<Diagnostic> {
    use super::turn_order::{Floor, Why};
    let session = &engine.session;
    let msg = &session.messages[mi];
    let rec = msg.chosen.as_ref()?;
    let p = msg.parent?;
    if !is_player(engine, session.messages[p as usize].author) || is_player(engine, msg.author) {
        return None;
    }
    let floor = Floor { engine, order };
    let st = engine.state_at(p);
    let at = format!("message:{}/chosen", msg.id);
    let who = |w: Who| engine.ir.who_id(w).to_string();
    match &*rec.why {
        "reply_as" | "safety" | "all" => return None,
        "host" => {
            let ok = matches!(msg.author, Who::Cast(c) if floor.is_speaker(&st, c));
            return (!ok).then(|| {
                Diagnostic::error(
                    Code::SpeakerMismatch,
                    format!(
                        "`{}` is recorded as the host's choice, but is not a speaker here (absent, muted or a player)",
                        who(msg.author)
                    ),
                )
                .at(at)
            });
        }
        _ => {}
    }
    let text: Vec<String> = (0..session.messages[p as usize].parts.len())
        .filter_map(|i| engine.render_part(p, i))
        .collect();
    let (w, chosen) = floor.first_speaker(p, &st, &text.join("\n"), None).ok()?;
    if chosen.why == Why::All {
        return None;
    }
    let same = w == msg.author
        && chosen.why.is_written()
        && chosen.why.as_str() == &*rec.why
        && chosen.name.as_deref() == rec.name.as_deref()
        && chosen.draw == rec.draw;
    let show = |why: &str, name: Option<&str>, draw: Option<u64>| {
        let mut s = why.to_string();
        if let Some(n) = name {
            s.push_str(&format!(" by `{n}`"));
        }
        if let Some(d) = draw {
            s.push_str(&format!(", draw {d}"));
        }
        s
    };
    (!same).then(|| {
        Diagnostic::error(
            Code::SpeakerMismatch,
            format!(
                "the turn order chooses `{}` here ({}), but `{}` is recorded ({})",
                who(w),
                show(chosen.why.as_str(), chosen.name.as_deref(), chosen.draw),
                who(msg.author),
                show(&rec.why, rec.name.as_deref(), rec.draw)
            ),
        )
        .at(at)
    })
}

/// Replays `engine`'s session (Format 18.7).
pub fn replay(engine: &Engine) -> Replay {
    replay_observed(engine, None)
}

/// [`replay`], reporting to `obs` what a runtime evaluates at each message
/// of the recorded session (Format 21.6): the recorded firings, the opening
/// of each root, the branches of the derived variables after each change
/// step and of events' and outcomes' `when` (9.2, where a turn evaluates
/// them), the scenario's `emotion` at each turn's messages (18.6), and the
/// entries active at every message with their `when` (5.3).
pub fn replay_observed(engine: &Engine, mut obs: Option<&mut (dyn Observer + '_)>) -> Replay {
    let session = &engine.session;
    // The emotion, as the rules runtime evaluates it (only when observed).
    let emotion = obs.as_ref().and(engine.ir.emotion.as_ref());
    // The session with no recorded firings: a message's own step.
    let bare = SessionIr {
        messages: session
            .messages
            .iter()
            .map(|m| {
                let mut m = m.clone();
                m.firings.clear();
                m
            })
            .collect(),
        index: session.index.clone(),
        seed: session.seed,
        preset: session.preset,
    };
    let mut scratch = Scratch::new(&engine.ir);
    let mut out = Replay::default();
    let floor_order = &engine.ir.turn_order;
    for (mi, msg) in session.messages.iter().enumerate() {
        let m = mi as u32;
        let answered = is_player(engine, msg.author)
            && msg.changes.is_empty()
            && session.messages.get(mi + 1).is_some_and(|next| {
                // A settings message (Format 8.9) is the host's, not an
                // answer: the turn was evaluated at its input.
                next.parent == Some(m) && !is_player(engine, next.author) && next.settings.is_none()
            });
        let mut st = match msg.parent {
            Some(p) => engine.state_at(p),
            None => engine.initial().clone(),
        };
        let rolls = step_observed(
            &engine.ir,
            &bare,
            &mut st,
            m,
            &mut scratch,
            obs.as_deref_mut(),
        );
        let produced = if answered {
            Vec::new()
        } else {
            evaluate_observed(
                &engine.ir,
                &bare,
                &mut st,
                m,
                rolls,
                &mut scratch,
                obs.as_deref_mut(),
            )
        };
        let recorded = &msg.firings;
        if let Some(o) = obs.as_deref_mut() {
            for f in recorded {
                let (id, kind) = name(engine, f);
                o.fired(&id, kind == "outcome");
            }
            let after = engine.state_at(m);
            if let (Some(p), false, Some(_)) = (&emotion, answered, msg.parent) {
                let point = Point {
                    ir: &engine.ir,
                    session: Some(session),
                    char: match msg.author {
                        Who::Cast(c) if !is_player(engine, msg.author) => Some(c),
                        _ => None,
                    },
                };
                let _ = point.eval_observed(p, 0, &after, &mut NoHost, Site::Emotion, Some(o));
            }
            engine.entries_at_observed(m, Some(o));
        }
        let at = |p: &str| format!("message:{}{p}", msg.id);
        let mut mismatch = false;
        for (i, f) in recorded.iter().enumerate() {
            if !produced.contains(f) {
                mismatch = true;
                let (id, kind) = name(engine, f);
                out.diagnostics.push(
                    Diagnostic::error(
                        Code::FiringMismatch,
                        format!("the {kind} `{id}` is recorded but not produced: its condition does not fire here"),
                    )
                    .at(at(&format!("/firings/{i}"))),
                );
            }
        }
        for f in &produced {
            if !recorded.contains(f) {
                mismatch = true;
                let (id, kind) = name(engine, f);
                let pointer = if recorded.is_empty() {
                    at("")
                } else {
                    at("/firings")
                };
                out.diagnostics.push(
                    Diagnostic::error(
                        Code::FiringMismatch,
                        format!("the {kind} `{id}` is produced but not recorded"),
                    )
                    .at(pointer),
                );
            }
        }
        if !mismatch && produced != *recorded {
            out.diagnostics.push(
                Diagnostic::error(
                    Code::FiringMismatch,
                    "the recorded firings are produced in another order",
                )
                .at(at("/firings")),
            );
        }
        if let Some(d) = speaker_mismatch(engine, floor_order, mi) {
            out.diagnostics.push(d);
        }
        let names = |l: &[Fired]| {
            l.iter()
                .map(|f| {
                    let (id, kind) = name(engine, f);
                    format!("{kind}:{id}")
                })
                .collect()
        };
        out.messages.push(ReplayedMessage {
            id: msg.id.to_string(),
            state: engine.flatten(&engine.state_at(m)),
            recorded: names(recorded),
            produced: names(&produced),
            texts: (0..msg.parts.len())
                .filter_map(|i| engine.render_part(m, i))
                .collect(),
        });
    }
    out
}

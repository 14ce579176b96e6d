//! Running a playtest (Format 22.5): sessions under the rules runtime, the
//! roster speaking turn by turn (persona or choreography), the blackboard,
//! and goals verified after every message written (22.6).

use indexmap::IndexMap;
use serde_json::{json, Map, Value};

use super::model::{Mode, PackPlaytests, Playtest};
use super::persona::{render_at_tip, AgentPolicy, ModelSource};
use super::report::{
    GoalResult, PersonaUsage, PlaytestReport, SignalRecord, StepNotTaken, Verdict,
};
use super::verify::{compile, BoardView, PlayCondition};
use crate::compile::session::Fired;
use crate::runtime::{Opened, Options, Session};

/// Settings the caller chooses (Format 22.5).
#[derive(Debug, Clone, Default)]
pub struct RunSettings {
    /// `--difficulty`; `None`: the scenario's default.
    pub difficulty: Option<String>,
    /// The backend of `--runtime model` for model-driven personas without
    /// answers (Format 22.3 "The backend" 2); `None`: the playtest's
    /// `cassette`, else NOT RUN.
    pub model: Option<ModelSource>,
}

/// One session of a run and who plays in it.
struct Play {
    session: Session,
    /// Roster indexes of its agents.
    agents: Vec<usize>,
    /// Agent goal conditions (per agent in `agents`, per goal).
    goals: Vec<Vec<Option<PlayCondition>>>,
    /// Group goal conditions.
    group: Vec<Option<PlayCondition>>,
    /// Persona policies per agent in `agents`.
    policies: Vec<Option<AgentPolicy>>,
    /// Group goals met in this session (evidence).
    group_met: Vec<Option<Value>>,
    /// The agent ID naming this session (`parallel` mode).
    name: Option<String>,
}

struct Run<'a> {
    pt: &'a Playtest,
    plays: Vec<Play>,
    /// Agent goals met: per roster index, per goal.
    met: Vec<Vec<Option<Value>>>,
    signals: Vec<SignalRecord>,
    round: u64,
}

/// The character an agent plays (Format 22.5): a `player: true`
/// character's ID is its target; a seat is filled with the header
/// character of 18.4, whose ID is the seat's ID, or the seat's ID followed
/// by `-1` when that is a reserved ID (seat `user`, character `user-1`).
fn character(target: &str) -> String {
    crate::model::session::default_seat_character(target)
}

impl Run<'_> {
    fn board(&self) -> BoardView {
        let mut progress = IndexMap::new();
        for (i, a) in self.pt.roster.iter().enumerate() {
            let met = a
                .goals
                .iter()
                .zip(&self.met[i])
                .filter(|(_, m)| m.is_some())
                .map(|(g, _)| g.id.clone())
                .collect();
            progress.insert(a.id.clone(), met);
        }
        BoardView {
            signals: self.signals.iter().map(|s| s.signal.clone()).collect(),
            progress,
        }
    }

    fn has_signal(&self, s: &str) -> bool {
        self.signals.iter().any(|r| r.signal == s)
    }

    fn raise(&mut self, p: usize, signal: &str, message: &str) {
        if !self.has_signal(signal) {
            self.signals.push(SignalRecord {
                signal: signal.to_string(),
                message: message.to_string(),
                session: self.plays[p].name.clone(),
                round: self.round,
            });
        }
    }

    /// Evaluates every goal not yet met at message `id` of play `p`.
    fn evaluate(&mut self, p: usize, id: &str) {
        let round = self.round;
        let play = &self.plays[p];
        let Some(state) = play.session.state_of(id) else {
            return;
        };
        let mut evidence = json!({"message": id, "round": round, "turn": state.turn});
        if let Some(n) = &play.name {
            evidence["session"] = Value::String(n.clone());
        }
        let mut newly = Vec::new();
        let mut board = self.board();
        for (k, &ai) in play.agents.iter().enumerate() {
            let agent = &self.pt.roster[ai];
            for (g, cond) in play.goals[k].iter().enumerate() {
                if self.met[ai][g].is_some() || newly.contains(&(ai, g)) {
                    continue;
                }
                let ok = cond.as_ref().is_some_and(|c| {
                    c.holds(
                        play.session.engine(),
                        state,
                        &character(&agent.target),
                        &board,
                    )
                });
                if ok {
                    newly.push((ai, g));
                    if let Some(list) = board.progress.get_mut(&agent.id) {
                        list.push(agent.goals[g].id.clone());
                    }
                }
            }
        }
        let mut group_new = Vec::new();
        for (g, cond) in play.group.iter().enumerate() {
            if play.group_met[g].is_some() {
                continue;
            }
            if cond
                .as_ref()
                .is_some_and(|c| c.holds(play.session.engine(), state, "", &board))
            {
                group_new.push(g);
            }
        }
        for (ai, g) in newly {
            self.met[ai][g] = Some(evidence.clone());
        }
        for g in group_new {
            self.plays[p].group_met[g] = Some(evidence.clone());
        }
    }

    /// Agent `ai` (in play `p`, position `k`) says `text`: one turn.
    fn say(&mut self, p: usize, ai: usize, text: &str) {
        let target = self.pt.roster[ai].target.clone();
        let Ok(result) = self.plays[p].session.turn_as(&character(&target), text) else {
            return;
        };
        // Firings are recorded on the turn's last message (Format 18.5
        // step 5): its signals are raised there, before its goals.
        let n = result.messages.len();
        for (i, m) in result.messages.iter().enumerate() {
            if i + 1 == n {
                for s in &result.signals {
                    self.raise(p, s, m);
                }
            }
            self.evaluate(p, m);
        }
    }

    fn all_over(&self) -> bool {
        self.plays.iter().all(|p| p.session.is_over())
    }
}

/// The header players and characters of a session whose agents are
/// `agents` (Format 22.5 "Settings"), in cast order; and the session's
/// number of players. The seats those agents target are filled (the
/// others stay unfilled); a `player: true` character is a player of every
/// session (6.1), targeted or not.
fn header_players(
    scenario: &Value,
    pt: &Playtest,
    agents: &[usize],
    pack: &PackPlaytests,
) -> (Value, Option<Value>, usize) {
    let targeted = |id: &str| agents.iter().find(|&&a| pt.roster[a].target == id);
    let player_character = |id: &str| {
        crate::model::array(scenario, "cast").iter().any(|e| {
            e.get("character").and_then(Value::as_str) == Some(id)
                && e.get("player").and_then(Value::as_bool) == Some(true)
        })
    };
    let (players, characters) = crate::model::session::seated_players(scenario, |id| {
        let name = targeted(id).map(|&a| {
            pack.persona(&pt.roster[a].role)
                .and_then(|p| p.name.clone())
                .unwrap_or_else(|| crate::model::session::DEFAULT_PLAYER_NAME.into())
        });
        // A character entry's name is not used (seated_players).
        name.or_else(|| player_character(id).then(String::new))
    });
    let n = players.len();
    let chars = (!characters.is_empty()).then_some(Value::Array(characters));
    (Value::Array(players), chars, n)
}

/// Runs playtest `pt` (from `file`) of the pack `opened` (Format 22.5,
/// 22.6). Deterministic: the same inputs give the same report and session
/// bytes.
pub fn run_playtest(
    opened: &Opened,
    pack: &PackPlaytests,
    file: &str,
    pt: &Playtest,
    settings: &RunSettings,
) -> PlaytestReport {
    let mut report = PlaytestReport {
        name: pt.name.clone(),
        file: file.to_string(),
        status: Verdict::Fail,
        reason: None,
        requirements: Vec::new(),
        goals: Vec::new(),
        signals: Vec::new(),
        steps_not_taken: Vec::new(),
        model: Vec::new(),
        sessions: Vec::new(),
    };
    let scenario = crate::model::scenario(&opened.bundle, &pt.scenario_id);
    let Some(scenario) = scenario else {
        report
            .requirements
            .push(format!("the pack has no scenario `{}`", pt.scenario_id));
        return not_run(report, pt);
    };
    // Sessions and who plays in each.
    let groups: Vec<Vec<usize>> = if pt.mode == Mode::Parallel {
        (0..pt.roster.len()).map(|i| vec![i]).collect()
    } else {
        vec![(0..pt.roster.len()).collect()]
    };
    // Requires.
    let preset = settings.difficulty.clone().or_else(|| {
        scenario
            .pointer("/difficulty/default")
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    if let Some(want) = &pt.requires.difficulty
        && preset.as_deref() != Some(want)
    {
        report.requirements.push(format!(
            "requires difficulty {want}; the run uses {}",
            preset.as_deref().unwrap_or("no difficulty")
        ));
    }
    if let Some(want) = &pt.requires.content_rating
        && pack.content_rating.as_deref() != Some(want)
    {
        report.requirements.push(format!(
            "requires content rating {want}; the pack is rated {}",
            pack.content_rating.as_deref().unwrap_or("nothing")
        ));
    }
    let headers: Vec<_> = groups
        .iter()
        .map(|g| header_players(scenario, pt, g, pack))
        .collect();
    if let Some(want) = pt.requires.players {
        for (g, (_, _, n)) in groups.iter().zip(&headers) {
            if *n as u64 != want {
                let which = match pt.mode {
                    Mode::Parallel => format!("the session of `{}`", pt.roster[g[0]].id),
                    _ => "the session".into(),
                };
                report
                    .requirements
                    .push(format!("requires {want} players; {which} has {n}"));
            }
        }
    }
    if !report.requirements.is_empty() {
        return not_run(report, pt);
    }
    // The model-driven personas' backend (Format 22.3 "The backend").
    let voiceless = pt.roster.iter().find(|a| {
        pack.persona(&a.role)
            .and_then(|p| p.model.as_ref())
            .is_some_and(|m| m.answers.is_none())
    });
    let source = match (voiceless, &settings.model, &pt.cassette) {
        (None, _, _) => None,
        (Some(_), Some(s), _) => Some(s.clone()),
        (Some(_), None, Some(rel)) => match read_cassette(&pack.root, rel) {
            Ok(c) => Some(ModelSource::new(
                crate::runtime::chat::Settings::default(),
                crate::runtime::chat::Backend::Replay(c),
            )),
            Err(why) => {
                report.requirements.push(format!("MODEL_CASSETTE: {why}"));
                return not_run(report, pt);
            }
        },
        (Some(a), None, None) => {
            report.reason = Some(format!(
                "persona {} speaks through a model and has no model backend (no answers, no cassette, no --runtime model)",
                a.role
            ));
            let mut r = not_run(report, pt);
            r.status = Verdict::NotRun;
            return r;
        }
    };
    // Start the sessions.
    let mut plays = Vec::new();
    for (g, (players, chars, _)) in groups.iter().zip(headers) {
        let options = Options {
            scenario: Some(pt.scenario_id.clone()),
            difficulty: settings.difficulty.clone(),
            seed: pt.seed,
            header_players: Some((players, chars)),
            leave_unfilled: true,
            ..Options::default()
        };
        let session = match Session::start(opened, &options) {
            Ok(s) => s,
            Err(e) => {
                report.requirements.push(e.to_string());
                return not_run(report, pt);
            }
        };
        let engine = session.engine();
        let goals = g
            .iter()
            .map(|&a| {
                let agent = &pt.roster[a];
                agent
                    .goals
                    .iter()
                    .map(|goal| {
                        compile(
                            engine,
                            &goal.verify,
                            Some(&*character(&agent.target)),
                            false,
                        )
                        .ok()
                    })
                    .collect()
            })
            .collect();
        let group = pt
            .group_goals
            .iter()
            .map(|goal| compile(engine, &goal.verify, None, false).ok())
            .collect();
        let policies = g
            .iter()
            .map(|&a| {
                let agent = &pt.roster[a];
                pack.persona(&agent.role).map(|p| {
                    AgentPolicy::new(
                        engine,
                        p,
                        &character(&agent.target),
                        &agent.goals,
                        source.as_ref(),
                    )
                })
            })
            .collect();
        plays.push(Play {
            session,
            agents: g.clone(),
            goals,
            group,
            policies,
            group_met: vec![None; pt.group_goals.len()],
            name: (pt.mode == Mode::Parallel).then(|| pt.roster[g[0]].id.clone()),
        });
    }
    let mut run = Run {
        pt,
        plays,
        met: pt
            .roster
            .iter()
            .map(|a| vec![None; a.goals.len()])
            .collect(),
        signals: Vec::new(),
        round: 1,
    };
    // The roots (Format 22.6: the root included).
    for p in 0..run.plays.len() {
        let root = run.plays[p].session.current_id().map(str::to_string);
        if let Some(id) = root {
            let engine = run.plays[p].session.engine();
            let raised: Vec<String> = engine
                .session
                .messages
                .first()
                .map(|m| {
                    m.firings
                        .iter()
                        .filter_map(|f| match f {
                            Fired::Event(i) => engine
                                .ir
                                .events
                                .get(*i as usize)
                                .and_then(|e| e.signal.as_ref())
                                .map(|s| s.to_string()),
                            Fired::Outcome(_) => None,
                        })
                        .collect()
                })
                .unwrap_or_default();
            for s in raised {
                run.raise(p, &s, &id);
            }
            run.evaluate(p, &id);
        }
    }
    let mut taken = vec![false; pt.choreography.len()];
    if pt.mode == Mode::Scenario {
        run_scenario(&mut run, &mut taken, &mut report.steps_not_taken);
    } else {
        run_rounds(&mut run, &mut taken);
        for (i, step) in pt.choreography.iter().enumerate() {
            if taken[i] {
                continue;
            }
            let reason = match (&step.after, step.round) {
                (Some(s), _) if !run.has_signal(s) => format!("signal '{s}' was not raised"),
                (_, Some(r)) if r > pt.rounds => {
                    format!("round {r} is past the run's {} rounds", pt.rounds)
                }
                _ => "the run ended first".into(),
            };
            report
                .steps_not_taken
                .push(StepNotTaken { step: i, reason });
        }
    }
    finish(run, report)
}

fn run_rounds(run: &mut Run<'_>, taken: &mut [bool]) {
    let pt = run.pt;
    for r in 1..=pt.rounds {
        run.round = r;
        if run.all_over() {
            break;
        }
        for ai in 0..pt.roster.len() {
            let Some((p, k)) =
                run.plays.iter().enumerate().find_map(|(p, play)| {
                    play.agents.iter().position(|&a| a == ai).map(|k| (p, k))
                })
            else {
                continue;
            };
            if run.plays[p].session.is_over() {
                continue;
            }
            let agent = &pt.roster[ai];
            let ch = &character(&agent.target);
            let next = pt
                .choreography
                .iter()
                .enumerate()
                .find(|(i, s)| s.who == agent.id && !taken[*i]);
            let ready = next.filter(|(_, s)| {
                s.after.as_ref().is_none_or(|sig| run.has_signal(sig))
                    && s.round.is_none_or(|want| r >= want)
            });
            let text = match ready {
                Some((i, s)) => {
                    taken[i] = true;
                    Some(render_at_tip(&run.plays[p].session, &s.does, ch))
                }
                None => {
                    let board = run.board();
                    let play = &mut run.plays[p];
                    play.policies[k].as_mut().and_then(|pol| {
                        pol.utterance(&play.session, pt.seed, &agent.id, ch, &board, r)
                    })
                }
            };
            if let Some(t) = text {
                run.say(p, ai, &t);
            }
        }
    }
}

fn run_scenario(run: &mut Run<'_>, taken: &mut [bool], not_taken: &mut Vec<StepNotTaken>) {
    let pt = run.pt;
    run.round = 1;
    let mut stop: Option<(usize, String)> = None;
    for (i, step) in pt.choreography.iter().enumerate() {
        if run.plays[0].session.is_over() {
            stop = Some((i, "the session had ended".into()));
            break;
        }
        if let Some(r) = step.round
            && r > run.round
        {
            run.round = r;
        }
        if run.round > pt.rounds {
            stop = Some((
                i,
                format!("round {} is past the run's {} rounds", run.round, pt.rounds),
            ));
            break;
        }
        if let Some(s) = &step.after
            && !run.has_signal(s)
        {
            stop = Some((i, format!("blocked: signal '{s}' was not raised")));
            break;
        }
        let Some(ai) = pt.roster.iter().position(|a| a.id == step.who) else {
            stop = Some((i, format!("`{}` is not in the roster", step.who)));
            break;
        };
        let text = render_at_tip(
            &run.plays[0].session,
            &step.does,
            &character(&pt.roster[ai].target),
        );
        taken[i] = true;
        run.say(0, ai, &text);
    }
    if let Some((first, reason)) = stop {
        not_taken.push(StepNotTaken {
            step: first,
            reason,
        });
        for j in first + 1..pt.choreography.len() {
            not_taken.push(StepNotTaken {
                step: j,
                reason: format!("the run ended at step {first}"),
            });
        }
    }
}

/// The final state evidence of a session (Format 22.6).
fn final_state(play: &Play) -> Value {
    let mut e = Map::new();
    if let Some(n) = &play.name {
        e.insert("session".into(), Value::String(n.clone()));
    }
    e.insert("state".into(), Value::Object(play.session.flattened()));
    Value::Object(e)
}

fn finish(run: Run<'_>, mut report: PlaytestReport) -> PlaytestReport {
    let pt = run.pt;
    let adversarial = pt.mode == Mode::Adversarial;
    for (ai, agent) in pt.roster.iter().enumerate() {
        let play = run
            .plays
            .iter()
            .find(|p| p.agents.contains(&ai))
            .or(run.plays.first());
        for (g, goal) in agent.goals.iter().enumerate() {
            let met = run.met[ai][g].clone();
            report.goals.push(GoalResult {
                agent: Some(agent.id.clone()),
                goal: goal.id.clone(),
                does: goal.does.clone(),
                met: met.is_some(),
                required: !adversarial,
                evidence: met.unwrap_or_else(|| play.map_or(Value::Null, final_state)),
            });
        }
    }
    for (g, goal) in pt.group_goals.iter().enumerate() {
        let met = run.plays.iter().all(|p| p.group_met[g].is_some());
        let per: Vec<Value> = run
            .plays
            .iter()
            .map(|p| p.group_met[g].clone().unwrap_or_else(|| final_state(p)))
            .collect();
        let evidence = if pt.mode == Mode::Parallel {
            Value::Array(per)
        } else {
            per.into_iter().next().unwrap_or(Value::Null)
        };
        report.goals.push(GoalResult {
            agent: None,
            goal: goal.id.clone(),
            does: goal.does.clone(),
            met,
            required: true,
            evidence,
        });
    }
    report.signals = run.signals;
    for (ai, agent) in pt.roster.iter().enumerate() {
        let voice = run.plays.iter().find_map(|p| {
            let k = p.agents.iter().position(|&a| a == ai)?;
            p.policies[k].as_ref()?.voice.as_ref()
        });
        if let Some(v) = voice {
            report.model.push(PersonaUsage {
                agent: agent.id.clone(),
                requests: v.requests,
                usage: v.usage,
                refused: v.refused.clone(),
            });
        }
    }
    for p in &run.plays {
        let file = match &p.name {
            Some(a) => format!("{}.{a}.jsonl", pt.name),
            None => format!("{}.jsonl", pt.name),
        };
        report
            .sessions
            .push((file, p.session.session_text().to_string()));
    }
    let ok = report.requirements.is_empty() && report.goals.iter().all(|g| g.met || !g.required);
    report.status = if ok { Verdict::Pass } else { Verdict::Fail };
    report
}

/// A playtest's `cassette` (Format 22.1), resolved inside `root` (13.0)
/// and read (24.5); `Err` says why it cannot be used.
fn read_cassette(
    root: &std::path::Path,
    rel: &str,
) -> Result<crate::runtime::chat::Cassette, String> {
    let path = crate::load::refs::resolve_ref(root, rel).map_err(|e| e.message)?;
    crate::runtime::chat::Cassette::read(&root.join(path))
}

/// A report for a playtest that did not run (FAIL): every goal not met,
/// no evidence.
fn not_run(mut report: PlaytestReport, pt: &Playtest) -> PlaytestReport {
    for a in &pt.roster {
        for g in &a.goals {
            report.goals.push(GoalResult {
                agent: Some(a.id.clone()),
                goal: g.id.clone(),
                does: g.does.clone(),
                met: false,
                required: pt.mode != Mode::Adversarial,
                evidence: Value::Null,
            });
        }
    }
    for g in &pt.group_goals {
        report.goals.push(GoalResult {
            agent: None,
            goal: g.id.clone(),
            does: g.does.clone(),
            met: false,
            required: true,
            evidence: Value::Null,
        });
    }
    report.status = Verdict::Fail;
    report
}

/// Runs the pack's playtests (all, or the one `name` names; Format 22.6).
/// `Err` lists the names when `name` names none.
pub fn run_pack(
    opened: &Opened,
    pack: &PackPlaytests,
    name: Option<&str>,
    settings: &RunSettings,
) -> Result<Vec<PlaytestReport>, Vec<String>> {
    let chosen: Vec<&(String, Playtest)> = match name {
        Some(n) => match pack.find(n) {
            Some(p) => vec![p],
            None => return Err(pack.playtests.iter().map(|(_, p)| p.name.clone()).collect()),
        },
        None => pack.playtests.iter().collect(),
    };
    Ok(chosen
        .into_iter()
        .map(|(file, pt)| run_playtest(opened, pack, file, pt, settings))
        .collect())
}

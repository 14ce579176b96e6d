//! Lowering a checked [`Story`] to a [`StoryIr`] (Format 6, 8, 9, 11).

use std::sync::Arc;

use rust_decimal::prelude::ToPrimitive;
use serde_json::Value;

use super::changes::{cast_ref, lower_changes, ChangeScope};
use super::ir::*;
use super::value::{json_decimal, Norm, Val};
use super::CompileError;
use crate::cel::{self, Value as CelValue};
use crate::model::items::Event;
use crate::model::{Keys, Opening, ScalarType, VarType, Variable};
use crate::resolve::env::{condition_text, derived_order, owner_env};
use crate::resolve::story::{Owner, Story};

#[cfg(test)]
thread_local! {
    /// How many stories this thread has lowered: the tests that a pack
    /// compiles each scenario once, however many sessions start from it.
    pub(crate) static COMPILES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Lowers a checked story. Errors mean the story was not conforming.
pub fn compile_story(story: &Story) -> Result<StoryIr, CompileError> {
    #[cfg(test)]
    COMPILES.with(|c| c.set(c.get() + 1));
    let err = |m: String| CompileError(m);
    // Counts the IR numbers with 16-bit indices never wrap (Format 16: the
    // checks report LIMIT first).
    let max = crate::load::limits::MAX_SCENARIO_ITEMS;
    let knobs = story.scenario.difficulty().and_then(|d| d.options);
    let counts = [
        ("cast members", story.cast.len()),
        ("worlds", story.worlds.len()),
        (
            "cast members and worlds",
            story.cast.len() + story.worlds.len() + 1,
        ),
        ("openings", story.scenario.openings.len()),
        ("events", story.scenario.events.len()),
        ("outcomes", story.scenario.outcomes.len()),
        ("difficulty presets", knobs.map_or(0, |o| o.len())),
        (
            "difficulty knobs",
            knobs
                .and_then(|o| o.values().next())
                .and_then(Value::as_object)
                .map_or(0, |k| k.len()),
        ),
    ];
    if let Some((what, n)) = counts.iter().find(|(_, n)| *n > max) {
        return Err(err(format!(
            "the scenario has {n} {what}; at most {max} are allowed"
        )));
    }
    let cast: Vec<CastIr> = story
        .cast
        .iter()
        .map(|m| {
            let display = story
                .characters
                .get(&m.character)
                .map(|c| c.display_name().to_string())
                .unwrap_or_else(|| m.character.clone());
            CastIr {
                id: Arc::from(m.character.as_str()),
                display: Arc::from(display.as_str()),
                player: m.player,
                seat: m.seat.as_deref().map(Arc::from),
            }
        })
        .collect();
    let players = (0..cast.len())
        .filter(|&i| cast[i].player)
        .map(|i| i as CastIx)
        .collect();
    let worlds: Vec<Arc<str>> = story
        .worlds
        .iter()
        .map(|(w, _)| Arc::from(w.id.as_str()))
        .collect();
    let owner_ref = |o: &Owner| -> OwnerRef {
        match o {
            Owner::Scenario(_) => OwnerRef::Scenario,
            Owner::Character(c) => OwnerRef::Cast(cast_index(&cast, c).unwrap_or(0)),
            Owner::World(w) => {
                OwnerRef::World(worlds.iter().position(|x| **x == **w).unwrap_or(0) as u16)
            }
        }
    };

    // Variables and their slots (Format 8.1, 8.4).
    let mut vars: Vec<VarIr> = Vec::new();
    // Keyed by the variables' own names (one `Arc<str>` each, shared).
    let mut names: foldhash::HashMap<Arc<str>, NameRef> = Default::default();
    let mut by_name: foldhash::HashMap<Arc<str>, u32> = Default::default();
    let mut slot = 0u32;
    for (name, decl) in &story.variables {
        let ty = decl
            .ty
            .ok_or_else(|| err(format!("variable `{name}` has an unknown type")))?;
        let d = &decl.decl;
        let norm = Norm::of(d);
        let default = declared_default(ty, d, &norm)
            .ok_or_else(|| err(format!("default of `{name}` has the wrong type")))?;
        let start = match &d.knob {
            Some(knob) => knob_starts(story, knob, ty, &norm)
                .ok_or_else(|| err(format!("variable `{name}` names knob `{knob}`, which not every preset has as a value of its type")))?,
            None => Vec::new(),
        };
        let vi = vars.len() as u32;
        let shared: Arc<str> = Arc::from(name.as_str());
        let layout = match &d.keys {
            None => {
                names.insert(shared.clone(), NameRef::Slot(slot));
                slot += 1;
                Layout::Single(slot - 1)
            }
            Some(Keys::Word(w)) if w == "*" => {
                slot += 1;
                Layout::Open(slot - 1)
            }
            Some(_) => {
                let keys: Vec<Arc<str>> = decl
                    .fixed_keys(&story.cast)
                    .unwrap_or_default()
                    .iter()
                    .map(|k| Arc::from(k.as_str()))
                    .collect();
                let first = slot;
                for (i, k) in keys.iter().enumerate() {
                    names.insert(
                        Arc::from(format!("{name}.{k}").as_str()),
                        NameRef::Slot(first + i as u32),
                    );
                }
                slot += keys.len() as u32;
                Layout::Fixed { first, keys }
            }
        };
        by_name.insert(shared.clone(), vi);
        vars.push(VarIr {
            name: shared,
            id: Arc::from(d.id.as_str()),
            owner: owner_ref(&decl.owner),
            ty,
            norm,
            layout,
            default,
            start,
            derived: None,
            hidden: d.visibility.as_deref() == Some("hidden"),
        });
    }
    names.insert(Arc::from("scene.location"), NameRef::Location);
    names.insert(Arc::from("scene.present"), NameRef::Present);

    // Environments: the scenario's first, then each cast character's and
    // each world's (Format 11.3).
    let mut owners: Vec<(Owner, OwnerRef)> = vec![(
        Owner::Scenario(story.scenario.id.clone()),
        OwnerRef::Scenario,
    )];
    for m in &story.cast {
        let o = Owner::Character(m.character.clone());
        let r = owner_ref(&o);
        owners.push((o, r));
    }
    for (w, _) in &story.worlds {
        let o = Owner::World(w.id.clone());
        let r = owner_ref(&o);
        owners.push((o, r));
    }
    let difficulty = difficulty_ir(story);
    let players_value = CelValue::List(Arc::new(
        story
            .players()
            .iter()
            .map(|p| CelValue::string(p))
            .collect(),
    ));
    let mut envs = Vec::new();
    for (o, r) in &owners {
        let env = Arc::unwrap_or_clone(owner_env(story, o, false));
        let sources = env
            .slots()
            .map(|s| source_of(&s.name, o, &by_name, &players_value, difficulty.as_ref()))
            .collect();
        envs.push(EnvIr {
            owner: *r,
            env,
            sources,
        });
    }

    // Every owner's environment extends the story's one base (written once
    // in the IR).
    let base_env = envs.first().and_then(|e| e.env.base().cloned());
    debug_assert!(envs.iter().all(|e| match (e.env.base(), &base_env) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (a, _) => a.is_none(),
    }));

    // Derived variables in dependency order (Format 8.1).
    let mut derived = Vec::new();
    for name in derived_order(story).order {
        let Some(decl) = story.variables.get(&name) else {
            continue;
        };
        let Some(src) = &decl.decl.derived else {
            continue;
        };
        let vi = by_name[name.as_str()];
        let env_ix = owners
            .iter()
            .position(|(o, _)| *o == decl.owner)
            .unwrap_or(0);
        let env = &envs[env_ix].env;
        let program = cel::compile(src, env)
            .map_err(|e| err(format!("derived `{name}`: {}", first_error(&e))))?;
        // The slots it reads, ascending, each once (the program's own list:
        // the source is parsed and checked once).
        let reads = program.slots().to_vec();
        vars[vi as usize].derived = Some(derived.len() as u32);
        derived.push(DerivedIr {
            var: vi,
            program,
            env: env_ix as u16,
            reads,
        });
    }
    // A derived variable left out of the order is in a cycle: not conforming.
    if let Some(v) = story
        .variables
        .iter()
        .find(|(n, d)| d.is_derived() && vars[by_name[n.as_str()] as usize].derived.is_none())
    {
        return Err(err(format!("derived variable `{}` is in a cycle", v.0)));
    }
    for v in &vars {
        if v.derived.is_some()
            && let Layout::Single(s) = v.layout
        {
            names.insert(v.name.clone(), NameRef::Slot(s));
        }
    }

    let scope = ChangeScope {
        decls: story,
        vars: &vars,
        by_name: &by_name,
        cast: &cast,
    };
    let scenario_env = &envs[0].env;
    let mut events = Vec::new();
    for ev in &story.scenario.events {
        events.push(firing_ir(story, &scope, scenario_env, ev, false)?);
    }
    let mut outcomes = Vec::new();
    for oc in &story.scenario.outcomes {
        outcomes.push(firing_ir(story, &scope, scenario_env, oc, true)?);
    }
    let default_author = cast
        .iter()
        .position(|c| !c.player)
        .map(|i| Who::Cast(i as CastIx))
        .unwrap_or(Who::Narrator);
    let mut openings = Vec::new();
    for o in &story.scenario.openings {
        let o: Opening =
            serde_json::from_value(o.clone()).map_err(|e| err(format!("opening: {e}")))?;
        let author = match o.author.as_deref() {
            None => default_author,
            Some("narrator") => Who::Narrator,
            Some(a) => Who::Cast(
                cast_index(&cast, a)
                    .ok_or_else(|| err(format!("opening author `{a}` is not in the cast")))?,
            ),
        };
        let parts = match &o.text {
            Some(t) => vec![PartIr {
                text: Arc::from(t.as_str()),
                audience: None,
            }],
            None => lower_parts(story, &o.parts, &cast).map_err(err)?,
        };
        let scene = o.scene.unwrap_or_default();
        openings.push(OpeningIr {
            id: Arc::from(o.id.as_str()),
            author,
            parts,
            scene_location: scene.location.as_deref().map(Arc::from),
            scene_present: match &scene.present {
                Some(p) => Some(present_list(story, p, &cast).map_err(err)?),
                None => None,
            },
            changes: lower_changes(&scope, &o.changes).map_err(err)?,
            group_only: o.group_only,
        });
    }

    let scene = story.scenario.scene.clone().unwrap_or_default();
    let location: Arc<str> = Arc::from(scene.location.as_deref().unwrap_or(""));
    let present = match &scene.present {
        Some(p) => {
            let mut v = vec![false; cast.len()];
            for i in present_list(story, p, &cast).map_err(err)? {
                v[i as usize] = true;
            }
            v
        }
        None => vec![true; cast.len()],
    };

    // The scenario's `emotion` (Format 18.6), in its environment.
    let emotion = match story.scenario.emotion() {
        Some(src) => Some(
            crate::cel::compile(src, &envs[0].env)
                .map_err(|e| err(format!("`emotion`: {}", first_error(&e))))?,
        ),
        None => None,
    };

    let entries = super::lore::compile_entries(story, |o| {
        envs.iter().position(|e| e.owner == o).unwrap_or(0) as u16
    })?;

    let open_seats = story
        .seat_ids()
        .filter(|s| !cast.iter().any(|m| m.seat.as_deref() == Some(*s)))
        .map(Arc::from)
        .collect();
    Ok(StoryIr {
        scenario: Arc::from(story.scenario.id.as_str()),
        narrator: Arc::from(story.narrator_name()),
        single_voice: story.scenario.voice.as_deref() == Some("single"),
        cast,
        players,
        worlds,
        vars,
        slot_count: slot as usize,
        location,
        present,
        derived,
        base_env,
        envs,
        events,
        outcomes,
        openings,
        difficulty,
        names,
        var_index: by_name,
        entries,
        recursion: super::lore::recursion_limit(story),
        open_seats,
        turn_order: super::runtime::TurnOrderIr::compile(story),
        emotion,
        model: super::model::ModelIr::compile(story),
        derived_inputs: Default::default(),
    })
}

fn first_error(e: &[crate::cel::CelError]) -> String {
    e.first().map(|e| e.to_string()).unwrap_or_default()
}

fn source_of(
    slot: &str,
    owner: &Owner,
    by_name: &foldhash::HashMap<Arc<str>, u32>,
    players: &CelValue,
    difficulty: Option<&DifficultyIr>,
) -> Source {
    if let Some(rest) = slot.strip_prefix("state.") {
        return by_name.get(rest).map_or(Source::None, |v| Source::Var(*v));
    }
    if let Some(rest) = slot.strip_prefix("own.") {
        let name = match owner {
            Owner::Scenario(_) => rest.to_string(),
            o => format!("{}.{rest}", o.id()),
        };
        return by_name
            .get(name.as_str())
            .map_or(Source::None, |v| Source::Var(*v));
    }
    if let Some(knob) = slot.strip_prefix("difficulty.") {
        if knob == "preset" {
            return Source::Preset;
        }
        return difficulty
            .and_then(|d| d.knobs.iter().position(|k| &**k == knob))
            .map_or(Source::None, |i| Source::Knob(i as u16));
    }
    match slot {
        "scene.location" => Source::Location,
        "scene.present" => Source::Present,
        "char" => Source::Char,
        "user" => Source::User,
        "self" => Source::Const(CelValue::string(owner.id())),
        "turn" => Source::Turn,
        "round" => Source::Round,
        "elapsed" => Source::Elapsed,
        "hour" => Source::Hour,
        "weekday" => Source::Weekday,
        "opening" => Source::Opening,
        "last.id" => Source::LastId,
        "last.author" => Source::LastAuthor,
        "last.text" => Source::LastText,
        "players" => Source::Const(players.clone()),
        _ => Source::None,
    }
}

/// The normalized initial values of a variable that names `knob` (Format
/// 8.1): the knob's value in each preset, in the order [`difficulty_ir`]
/// lists the presets. `None` when a preset lacks the knob or its value is
/// not a value of the type (the check reports both).
fn knob_starts(story: &Story, knob: &str, ty: VarType, norm: &Norm) -> Option<Vec<Val>> {
    story
        .scenario
        .difficulty()?
        .options?
        .values()
        .map(|preset| {
            let v = Val::from_json(ty, preset.get(knob)?)?;
            Some(norm.value(ty, v))
        })
        .collect()
}

fn difficulty_ir(story: &Story) -> Option<DifficultyIr> {
    let d = story.scenario.difficulty()?;
    let options = d.options?;
    let knobs: Vec<Arc<str>> = options
        .values()
        .next()?
        .as_object()?
        .keys()
        .map(|k| Arc::from(k.as_str()))
        .collect();
    let presets: Vec<(Arc<str>, Vec<f64>)> = options
        .iter()
        .map(|(p, kv)| {
            let vals = knobs
                .iter()
                .map(|k| {
                    kv.get(&**k)
                        .and_then(json_decimal)
                        .and_then(|d| d.to_f64())
                        .unwrap_or(0.0)
                })
                .collect();
            (Arc::from(p.as_str()), vals)
        })
        .collect();
    let default_name = d.default.unwrap_or("");
    let default = presets
        .iter()
        .position(|(p, _)| &**p == default_name)
        .unwrap_or(0) as u16;
    Some(DifficultyIr {
        default,
        presets,
        knobs,
    })
}

fn firing_ir(
    story: &Story,
    scope: &ChangeScope<'_>,
    env: &crate::cel::Env,
    v: &Value,
    outcome: bool,
) -> Result<FiringIr, CompileError> {
    let v = Event::read(v);
    let id = v.id.unwrap_or("");
    // A `when` that does not lower is an error, never a dead event.
    let when = match v.when {
        Some(w) => {
            let (src, _) = condition_text(story, w)
                .ok_or_else(|| CompileError(format!("`{id}`: `when` does not lower")))?;
            Some(cel::compile(&src, env).map_err(|e| {
                CompileError(format!(
                    "`{id}`: `when` does not compile: {}",
                    first_error(&e)
                ))
            })?)
        }
        None => None,
    };
    let changes =
        lower_changes(scope, v.changes).map_err(|e| CompileError(format!("`{id}`: {e}")))?;
    Ok(FiringIr {
        id: Arc::from(id),
        when,
        repeat: !outcome && v.repeat,
        end: outcome || v.end,
        changes,
        signal: v.signal.map(Arc::from),
    })
}

/// Lowers message or opening parts (Format 7.2).
pub fn lower_parts(
    story: &dyn crate::changes::Decls,
    parts: &[Value],
    cast: &[CastIr],
) -> Result<Vec<PartIr>, String> {
    parts
        .iter()
        .map(|p| {
            let crate::model::session::Part { text, audience } =
                crate::model::session::Part::read(p);
            let audience = match audience {
                Some(a) => {
                    let mut who = Vec::with_capacity(a.len());
                    for x in a {
                        match x.as_str().unwrap_or("") {
                            "narrator" => who.push(Who::Narrator),
                            x => who.extend(cast_ref(story, cast, x)?.map(Who::Cast)),
                        }
                    }
                    Some(who)
                }
                None => None,
            };
            Ok(PartIr {
                text: Arc::from(text.unwrap_or("")),
                audience,
            })
        })
        .collect()
}

fn present_list(story: &Story, p: &[String], cast: &[CastIr]) -> Result<Vec<CastIx>, String> {
    let mut out = Vec::with_capacity(p.len());
    for x in p {
        out.extend(cast_ref(story, cast, x)?);
    }
    Ok(out)
}

/// A variable's initial value (Format 8.1): its `default`, or its type's
/// zero, normalized by `norm` (8.3); `None` when the default is not of its
/// type. An absent key of a `"*"` variable starts from it too (8.4).
pub fn declared_default(ty: VarType, d: &Variable, norm: &Norm) -> Option<Val> {
    let v = match &d.default {
        Some(v) => Val::from_json(ty, v)?,
        None => match ty {
            VarType::Scalar(ScalarType::Int) => Val::Int(0),
            VarType::Scalar(ScalarType::Number) => Val::Num(Default::default()),
            VarType::Scalar(ScalarType::Bool) => Val::Bool(false),
            VarType::Scalar(ScalarType::String) => Val::Str(Arc::from("")),
            VarType::List(_) => Val::List(Arc::from(Vec::new())),
            VarType::Map(_) => Val::Map(Default::default()),
        },
    };
    Some(norm.value(ty, v))
}

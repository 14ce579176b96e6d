//! A story's CEL environments and what its conditions resolve to (Format
//! 8.1, 9.5, 11.3): the declarations every owner shares and each owner's
//! own (`own`, `self`), a Threshold condition lowered to its CEL text, the
//! variables an expression reads, and the order derived variables are
//! computed in. Built from the resolved [`Story`]: the checks type-check
//! against these environments and the compiler builds its programs in
//! them, so both judge an expression alike.

use std::collections::BTreeSet;

// foldhash, not SipHash: built per story (Run AE); none is iterated into output.
use foldhash::{HashMap, HashSet};

use serde_json::Value;

use super::story::{Owner, Story, VarDecl};
use crate::cel::checker::TExpr;
use crate::cel::{self, CelError, Env, ObjectType, Type};
use crate::changes::{resolve_target, Target};
use crate::model::{Condition, ScalarType, VarType};

/// The CEL type of a scalar variable type (Format 11.3: `number` → double).
pub fn scalar_cel(s: ScalarType) -> Type {
    match s {
        ScalarType::Int => Type::Int,
        ScalarType::Number => Type::Double,
        ScalarType::Bool => Type::Bool,
        ScalarType::String => Type::String,
    }
}

/// The CEL type of a declared variable (Format 11.3): keyed variables are
/// `map(string, T)`.
pub fn var_cel(decl: &VarDecl) -> Option<Type> {
    let ty = decl.ty?;
    Some(match ty {
        VarType::Scalar(s) if decl.is_keyed() => Type::map(Type::String, scalar_cel(s)),
        VarType::Scalar(s) => scalar_cel(s),
        VarType::List(s) => Type::list(scalar_cel(s)),
        VarType::Map(s) => Type::map(Type::String, scalar_cel(s)),
    })
}

/// What an expression compiled to: its program, or the errors.
pub(crate) type CompileResult = std::sync::Arc<Result<cel::Program, Vec<CelError>>>;

/// The expressions of one story compiled by its checks, by owner, whether
/// `hit()` is declared, and source text: the condition checks (17.2) and
/// static reachability (17.6) read the same conditions, and compiling one
/// (parse, type check, lowering) costs far more than looking it up. Bounded
/// by the story's expressions. A clone starts empty (it is a cache).
///
/// Kept by owner and `hit` first, then by text, each looked up borrowed:
/// a look-up copies neither the owner nor the text (docs/performance.md,
/// Run AJ).
#[derive(Default)]
pub(crate) struct Compiled(
    std::sync::Mutex<
        indexmap::IndexMap<OwnerKey, HashMap<String, CompileResult>, foldhash::fast::RandomState>,
    >,
);

/// An owner's kind, ID and `hit`, the key of [`Compiled`]'s programs.
type OwnerKey = (u8, bool, String);

/// [`OwnerKey`] borrowed; hashes as it does (a tuple and a tuple struct
/// hash their fields in order, a `String` as its `str`).
#[derive(Hash)]
struct OwnerKeyRef<'a>(u8, bool, &'a str);

impl indexmap::Equivalent<OwnerKey> for OwnerKeyRef<'_> {
    fn equivalent(&self, k: &OwnerKey) -> bool {
        self.0 == k.0 && self.1 == k.1 && self.2 == k.2
    }
}

fn owner_key(owner: &Owner, hit: bool) -> OwnerKeyRef<'_> {
    let kind = match owner {
        Owner::Scenario(_) => 0,
        Owner::Character(_) => 1,
        Owner::World(_) => 2,
    };
    OwnerKeyRef(kind, hit, owner.id())
}

impl Clone for Compiled {
    fn clone(&self) -> Self {
        Compiled::default()
    }
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Compiled")
    }
}

/// `src` compiled in `env`, which must be `owner_env(story, owner, hit)`;
/// each (owner, `hit`, text) is compiled once per story.
pub(crate) fn compile_once(
    story: &Story,
    owner: &Owner,
    hit: bool,
    src: &str,
    env: &Env,
) -> CompileResult {
    let key = owner_key(owner, hit);
    if let Some(r) = story
        .programs
        .0
        .lock()
        .ok()
        .and_then(|m| m.get(&key)?.get(src).cloned())
    {
        return r;
    }
    let r = std::sync::Arc::new(cel::compile(src, env));
    if let Ok(mut m) = story.programs.0.lock() {
        let programs = match m.get_index_of(&key) {
            Some(at) => &mut m[at],
            None => m.entry((key.0, key.1, key.2.to_string())).or_default(),
        };
        programs.insert(src.to_string(), r.clone());
    }
    r
}

/// The CEL declarations of one story (Format 11.3), built once: the
/// environment every owner shares (`state`, `scene`, `difficulty`, …) and
/// each owner's variables (the type of `own`). Building it is one pass over
/// the story's variables; an owner's environment then costs only its own
/// variables (Format 16.2).
/// Each owner's environment is built once too, on first use, and kept
/// beside the story (docs/performance.md, Run AJ): the checks of one story
/// ask for the scenario's several times.
#[derive(Debug)]
pub struct StoryEnv {
    base: std::sync::Arc<Env>,
    owners: HashMap<Owner, ObjectType>,
    /// Each owner's environment, with `hit()` and without, once built.
    built: std::sync::Mutex<HashMap<(Owner, bool), std::sync::Arc<Env>>>,
}

impl StoryEnv {
    fn build(story: &Story) -> StoryEnv {
        let mut owners: HashMap<Owner, ObjectType> = HashMap::default();
        for decl in story.variables.values() {
            if let Some(t) = var_cel(decl) {
                let o = owners
                    .entry(decl.owner.clone())
                    .or_insert_with(|| ObjectType::new(decl.owner.id()));
                o.fields.insert(decl.decl.id.clone(), t);
            }
        }
        let object = |owner: &Owner| {
            owners
                .get(owner)
                .cloned()
                .unwrap_or_else(|| ObjectType::new(owner.id()))
        };
        let mut state = object(&Owner::Scenario(story.scenario.id.clone()));
        state.name = "state".into();
        for m in &story.cast {
            let o = object(&Owner::Character(m.character.clone()));
            state.fields.insert(m.character.clone(), o.into_type());
        }
        for (w, _) in &story.worlds {
            let o = object(&Owner::World(w.id.clone()));
            state.fields.insert(w.id.clone(), o.into_type());
        }
        let knobs = story
            .scenario
            .difficulty
            .as_ref()
            .and_then(|d| d.get("options"))
            .and_then(Value::as_object)
            .and_then(|o| o.values().next())
            .and_then(Value::as_object)
            .map(|k| k.keys().cloned().collect());
        StoryEnv {
            base: std::sync::Arc::new(cel::troupe_base_env(state, knobs.as_ref())),
            owners,
            built: Default::default(),
        }
    }

    fn own(&self, owner: &Owner) -> ObjectType {
        self.owners
            .get(owner)
            .cloned()
            .unwrap_or_else(|| ObjectType::new(owner.id()))
    }
}

/// The environment an expression owned by `owner` is checked and evaluated
/// in (Format 11.3); `hit` declares `hit()` (entry and rule conditions,
/// Format 11.4). The story's shared declarations are built once, and each
/// owner's environment once (see [`StoryEnv`]): a caller that needs its
/// own copy clones it.
pub fn owner_env(story: &Story, owner: &Owner, hit: bool) -> std::sync::Arc<Env> {
    let env = story
        .cel
        .get_or_init(|| std::sync::Arc::new(StoryEnv::build(story)));
    let key = (owner.clone(), hit);
    if let Some(e) = env.built.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return e;
    }
    let e =
        std::sync::Arc::new(cel::troupe_owner_env(env.base.clone(), env.own(owner)).with_hit(hit));
    if let Ok(mut m) = env.built.lock() {
        m.insert(key, e.clone());
    }
    e
}

/// Lowers a Threshold condition to its CEL text (Format 9.5); `None` when
/// the variable is not an int or number variable or key of the story, or
/// the threshold does not fit it (those are reported by the bundle checks).
pub fn lower_threshold(
    story: &Story,
    kind: &str,
    variable: &str,
    threshold: &Value,
) -> Option<String> {
    let op = match kind {
        "variable_above" => ">",
        "variable_below" => "<",
        "variable_equals" => "==",
        _ => return None,
    };
    let var = match resolve_target(story, variable).ok()? {
        Target::Variable(v) | Target::Key(v, _) => v,
        _ => return None,
    };
    let decl = story.variables.get(var)?;
    let literal = match decl.ty? {
        VarType::Scalar(ScalarType::Int) => {
            if !crate::changes::values::is_int(threshold) {
                return None;
            }
            threshold.to_string()
        }
        VarType::Scalar(ScalarType::Number) => {
            let d = crate::changes::values::exact_decimal(threshold)?;
            let text = d.normalize().to_string();
            if text.contains('.') {
                text
            } else {
                format!("{text}.0")
            }
        }
        _ => return None,
    };
    let mut path = String::from("state");
    for seg in variable.split('.') {
        if seg.contains('-') {
            path.push_str(&format!("[\"{seg}\"]"));
        } else {
            path.push('.');
            path.push_str(seg);
        }
    }
    Some(format!("{path} {op} {literal}"))
}

/// The CEL text of a `when` (a CEL string, or a Threshold lowered).
pub fn condition_text(story: &Story, when: &Value) -> Option<(String, bool)> {
    match Condition::read(when)? {
        Condition::Cel(s) => Some((s, true)),
        Condition::Threshold {
            kind,
            variable,
            threshold,
        } => lower_threshold(story, &kind, &variable, &threshold).map(|s| (s, false)),
    }
}

/// The state names of the variables an expression owned by `owner` reads.
pub fn reads(story: &Story, owner: &Owner, env: &Env, expr: &TExpr) -> BTreeSet<String> {
    let mut slots = Vec::new();
    slot_reads(expr, &mut slots);
    let mut out = BTreeSet::new();
    for s in slots {
        let Some(slot) = env.slot_at(s) else {
            continue;
        };
        if let Some(rest) = slot.name.strip_prefix("state.") {
            if story.variables.contains_key(rest) {
                out.insert(rest.to_string());
            }
        } else if let Some(rest) = slot.name.strip_prefix("own.") {
            let name = match owner {
                Owner::Scenario(_) => rest.to_string(),
                o => format!("{}.{rest}", o.id()),
            };
            if story.variables.contains_key(&name) {
                out.insert(name);
            }
        }
    }
    out
}

pub use crate::cel::checker::slot_reads;

/// The derived variables that read each other in cycles, and an order to
/// compute the others in (Format 8.1): dependencies first, ties broken by
/// declaration order (the story's variable order). Variables whose
/// expression does not check are left out of both.
#[derive(Debug, Clone, Default)]
pub struct DerivedOrder {
    /// State names in computing order.
    pub order: Vec<String>,
    /// State names of every derived variable in a cycle.
    pub cyclic: Vec<String>,
}

/// Orders the derived variables of `story` (Format 8.1).
pub fn derived_order(story: &Story) -> DerivedOrder {
    let mut deps: HashMap<String, BTreeSet<String>> = HashMap::default();
    // By owner, not by ID: a character and a world may share an ID.
    let mut envs: HashMap<Owner, std::sync::Arc<Env>> = HashMap::default();
    for (name, decl) in &story.variables {
        let Some(src) = &decl.decl.derived else {
            continue;
        };
        let env = envs
            .entry(decl.owner.clone())
            .or_insert_with(|| owner_env(story, &decl.owner, false));
        let Ok(ast) = cel::parse::parse_shared(src) else {
            continue;
        };
        let Ok((texpr, _)) = cel::checker::check(&ast, src, env) else {
            continue;
        };
        let r: BTreeSet<String> = reads(story, &decl.owner, env, &texpr)
            .into_iter()
            .filter(|n| story.variables.get(n).is_some_and(VarDecl::is_derived))
            .collect();
        deps.insert(name.clone(), r);
    }
    // Kahn's algorithm, always taking the earliest declared ready variable.
    let declared: Vec<&String> = story
        .variables
        .keys()
        .filter(|n| deps.contains_key(*n))
        .collect();
    let mut done: HashSet<String> = HashSet::default();
    let mut order = Vec::new();
    loop {
        let next = declared.iter().find(|n| {
            !done.contains(n.as_str())
                && deps[n.as_str()]
                    .iter()
                    .all(|d| done.contains(d) || !deps.contains_key(d))
        });
        match next {
            Some(n) => {
                done.insert((*n).clone());
                order.push((*n).clone());
            }
            None => break,
        }
    }
    // What is left waits on a cycle; the members are those that reach
    // themselves.
    let left: Vec<&String> = declared
        .iter()
        .copied()
        .filter(|n| !done.contains(n.as_str()))
        .collect();
    let cyclic = left
        .iter()
        .filter(|n| reaches(&deps, n, n))
        .map(|n| (*n).clone())
        .collect();
    DerivedOrder { order, cyclic }
}

fn reaches(deps: &HashMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
    let mut stack: Vec<&str> = deps
        .get(from)
        .map(|d| d.iter().map(String::as_str).collect())
        .unwrap_or_default();
    let mut seen = HashSet::default();
    while let Some(n) = stack.pop() {
        if n == to {
            return true;
        }
        if seen.insert(n)
            && let Some(d) = deps.get(n)
        {
            stack.extend(d.iter().map(String::as_str));
        }
    }
    false
}

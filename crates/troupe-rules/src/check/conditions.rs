//! The checks of conditions and derived variables (Format 8.1, 9.5, 11.2):
//! the type-check of every expression of a story against its CEL
//! environment, Threshold conditions, and DERIVED_CYCLE at every member of a
//! cycle's `/derived`. The environments, the Threshold lowering and the
//! derived variables' order are the resolved story's
//! ([`crate::resolve::env`]), which the compiler uses too.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::Value;

use crate::cel::{self, CelError, Env, Type};
use crate::changes::{resolve_target, Target};
use crate::diag::{Code, Diagnostic};
use crate::model::array;
use crate::model::items::{Cast, LoreEntry, VarItem};
use crate::model::List;
use crate::model::{ScalarType, VarType};
use crate::resolve::env::{compile_once, condition_text, derived_order, owner_env, scalar_cel};
use crate::resolve::story::{Owner, Story, VarDecl};

/// Checks a Threshold condition at `at` (the `when` object, Format 9.5):
/// `variable` must be a state name of an int or number variable or key
/// (UNKNOWN_VARIABLE, or TYPE_MISMATCH for another type, at `/variable`),
/// and `threshold` a value of that type (TYPE_MISMATCH at `/threshold`).
pub fn check_threshold(
    story: &Story,
    variable: &str,
    threshold: &Value,
    at: &str,
    out: &mut Vec<Diagnostic>,
) {
    let var = match resolve_target(story, variable) {
        Ok(Target::Key(v, _)) => v,
        Ok(Target::Variable(v)) if !story.variables.get(v).is_some_and(VarDecl::is_keyed) => v,
        Ok(Target::Variable(v)) => {
            out.push(
                Diagnostic::error(
                    Code::UnknownVariable,
                    format!("`{v}` is keyed: name one key, such as `{v}.<key>`"),
                )
                .at(format!("{at}/variable")),
            );
            return;
        }
        Ok(_) => {
            out.push(
                Diagnostic::error(
                    Code::TypeMismatch,
                    format!("`{variable}` is not an int or number; thresholds compare numbers"),
                )
                .at(format!("{at}/variable")),
            );
            return;
        }
        Err(why) => {
            out.push(Diagnostic::error(Code::UnknownVariable, why).at(format!("{at}/variable")));
            return;
        }
    };
    let Some(ty) = story.variables.get(var).and_then(|d| d.ty) else {
        return;
    };
    let ok = match ty {
        VarType::Scalar(ScalarType::Int) => crate::changes::values::is_int(threshold),
        VarType::Scalar(ScalarType::Number) => {
            crate::changes::values::exact_decimal(threshold).is_some()
        }
        other => {
            out.push(
                Diagnostic::error(
                    Code::TypeMismatch,
                    format!("`{variable}` is {other}; thresholds compare int and number variables"),
                )
                .at(format!("{at}/variable")),
            );
            return;
        }
    };
    if !ok {
        out.push(
            Diagnostic::error(
                Code::TypeMismatch,
                format!("the threshold for `{variable}` must be a value of its type {ty}"),
            )
            .at(format!("{at}/threshold")),
        );
    }
}

/// What type an expression must have.
#[derive(Debug, Clone)]
enum Want {
    Bool,
    Double,
    Var(Box<VarDecl>),
}

/// Checks every CEL expression of a story (Format 11.2): event and outcome
/// `when` (Threshold objects lowered, 9.5), derived variables, entry and
/// rule `when` (with `hit()`), rubric `score`; and DERIVED_CYCLE (8.1).
///
/// Returns the environment slots those expressions read (`state.gold`,
/// `difficulty.patience`; [`crate::cel::Program::reads`]), or `None` when
/// one of them did not compile (what it reads is then unknown).
pub fn check_conditions(story: &Story, out: &mut Vec<Diagnostic>) -> Option<BTreeSet<String>> {
    let start = out.len();
    let mut reads = Some(BTreeSet::new());
    check_conditions_of(story, &mut reads, out);
    // A world's condition is checked once per scenario that uses it, and a
    // type depends on the scenario's declarations: say which one.
    for d in &mut out[start..] {
        if d.code == Code::CelType {
            d.message = format!(
                "{} (checked in scenario `{}`)",
                d.message, story.scenario.id
            )
            .into();
        }
    }
    reads
}

/// What the checked expressions read: `None` once one did not compile.
type Reads = Option<BTreeSet<String>>;

fn check_conditions_of(story: &Story, reads: &mut Reads, out: &mut Vec<Diagnostic>) {
    let scenario = Owner::Scenario(story.scenario.id.clone());
    let base = &story.pointer;
    let plain_env = owner_env(story, &scenario, false);
    let plain = In {
        story,
        owner: &scenario,
        hit: false,
        env: &plain_env,
    };
    let hit_env = owner_env(story, &scenario, true);
    let with_hit = In {
        hit: true,
        env: &hit_env,
        ..plain
    };
    for field in [List::Events, List::Outcomes] {
        for (i, ev) in story.scenario.event_items(field).enumerate() {
            let Some(when) = ev.when else { continue };
            if let Some((src, written)) = condition_text(story, when) {
                let at = format!("{base}/{field}/{i}/when");
                check_one(&src, &plain, &Want::Bool, &at, written, reads, out);
            }
        }
    }
    let entries = story
        .scenario
        .entries
        .iter()
        .map(|e| LoreEntry::read(e).when);
    let rules = story.scenario.rule_items().map(|r| r.when);
    for (field, whens) in [
        (List::Entries, entries.collect::<Vec<_>>()),
        (List::Rules, rules.collect()),
    ] {
        for (i, when) in whens.into_iter().enumerate() {
            if let Some(src) = when {
                let at = format!("{base}/{field}/{i}/when");
                check_one(src, &with_hit, &Want::Bool, &at, true, reads, out);
            }
        }
    }
    for (w, wi) in &story.worlds {
        let owner = Owner::World(w.id.clone());
        let env = owner_env(story, &owner, true);
        let world = In {
            story,
            owner: &owner,
            hit: true,
            env: &env,
        };
        for (i, e) in w.entries.iter().map(LoreEntry::read).enumerate() {
            if let Some(src) = e.when {
                let at = format!("/worlds/{wi}/entries/{i}/when");
                check_one(src, &world, &Want::Bool, &at, true, reads, out);
            }
        }
    }
    if let Some(criteria) = story.scenario.criteria() {
        for (i, c) in criteria.enumerate() {
            if let Some(src) = c.score {
                let at = format!("{base}/rubric/criteria/{i}/score");
                check_one(src, &plain, &Want::Double, &at, true, reads, out);
            }
        }
    }
    // By owner, not by ID: a character and a world may share an ID.
    let mut envs: HashMap<Owner, std::sync::Arc<Env>> = HashMap::new();
    for decl in story.variables.values() {
        let Some(src) = &decl.decl.derived else {
            continue;
        };
        let env = envs
            .entry(decl.owner.clone())
            .or_insert_with(|| owner_env(story, &decl.owner, false));
        let at = format!("{}/derived", decl.pointer);
        let want = Want::Var(Box::new(decl.clone()));
        let owned = In {
            story,
            owner: &decl.owner,
            hit: false,
            env,
        };
        check_one(src, &owned, &want, &at, true, reads, out);
    }
    for name in derived_order(story).cyclic {
        if let Some(decl) = story.variables.get(&name) {
            out.push(
                Diagnostic::error(
                    Code::DerivedCycle,
                    format!("derived variable `{name}` depends on itself through other derived variables"),
                )
                .at(format!("{}/derived", decl.pointer)),
            );
        }
    }
}

/// Compiles `src` in `env` and reports its errors and a wrong result type at
/// `at`; `written` says whether the text is the author's (positions inside
/// it are meaningful) or lowered from a Threshold. Adds what it reads to
/// `reads` (`None` when it does not compile).
fn check_one(
    src: &str,
    place: &In<'_>,
    want: &Want,
    at: &str,
    written: bool,
    reads: &mut Reads,
    out: &mut Vec<Diagnostic>,
) {
    let compiled = compile_once(place.story, place.owner, place.hit, src, place.env);
    match &*compiled {
        Err(errors) => {
            *reads = None;
            for e in errors {
                out.push(cel_diag(e, at, written));
            }
        }
        Ok(program) => {
            if let Some(r) = reads {
                r.extend(program.reads(place.env));
            }
            let ty = program.result_type();
            if let Some(expected) = mismatch(want, ty) {
                out.push(
                    Diagnostic::error(
                        Code::CelType,
                        format!("the expression has type {ty}, but {expected} is needed here"),
                    )
                    .at(at),
                );
            }
        }
    }
}

/// Where an expression is compiled: the story, the owner whose
/// environment `env` is, and whether `hit()` is declared in it.
#[derive(Clone, Copy)]
struct In<'a> {
    story: &'a Story,
    owner: &'a Owner,
    hit: bool,
    env: &'a Env,
}

fn cel_diag(e: &CelError, at: &str, written: bool) -> Diagnostic {
    let d = Diagnostic::error(e.code(), e.message.clone()).at(at);
    if written {
        d.inside(e.line, e.column)
    } else {
        d
    }
}

/// `Some(what is needed)` when `ty` is not acceptable for `want`.
fn mismatch(want: &Want, ty: &Type) -> Option<String> {
    let ok = |t: &Type, allowed: &[Type]| allowed.iter().any(|a| fits(t, a));
    match want {
        Want::Bool => (!ok(ty, &[Type::Bool])).then(|| "bool".into()),
        Want::Double => (!ok(ty, &[Type::Double])).then(|| "double".into()),
        Want::Var(decl) => {
            let vt = decl.ty?;
            let item = |s: ScalarType| match s {
                ScalarType::Number => vec![Type::Int, Type::Double],
                other => vec![scalar_cel(other)],
            };
            let allowed: Vec<Type> = match vt {
                VarType::Scalar(s) => item(s),
                VarType::List(s) => item(s).into_iter().map(Type::list).collect(),
                VarType::Map(s) => item(s)
                    .into_iter()
                    .map(|t| Type::map(Type::String, t))
                    .collect(),
            };
            (!ok(ty, &allowed)).then(|| format!("a value of the variable's type {vt}"))
        }
    }
}

/// True when a value of type `t` fits `want` (`dyn` parts fit anything).
fn fits(t: &Type, want: &Type) -> bool {
    match (t, want) {
        (Type::Dyn, _) => true,
        (Type::List(a), Type::List(b)) => fits(a, b),
        (Type::Map(ka, va), Type::Map(kb, vb)) => fits(ka, kb) && fits(va, vb),
        (a, b) => a == b,
    }
}

/// Parses the expressions of characters and worlds no scenario uses (Format
/// 11.2: such an expression is only parsed); CEL_SYNTAX at each.
pub fn check_unused(bundle: &Value, out: &mut Vec<Diagnostic>) {
    let scenarios = crate::model::scenarios(bundle);
    let cast_ids: HashSet<&str> = scenarios
        .iter()
        .flat_map(|s| array(s, "cast").iter())
        .filter_map(|c| Cast::read(c).character)
        .collect();
    let world_ids: HashSet<&str> = scenarios
        .iter()
        .flat_map(|s| array(s, "worlds").iter())
        .filter_map(Value::as_str)
        .collect();
    for (field, used) in [("characters", &cast_ids), ("worlds", &world_ids)] {
        for (i, item) in array(bundle, field).iter().enumerate() {
            let id = crate::model::id_of(item).unwrap_or("");
            // Used by no scenario: only parsed (Format 11.2). A character that
            // fills a seat is type-checked with the session that seats it.
            if used.contains(id) {
                continue;
            }
            for (vi, v) in array(item, "variables")
                .iter()
                .map(VarItem::read)
                .enumerate()
            {
                if let Some(src) = v.derived {
                    parse_only(src, &format!("/{field}/{i}/variables/{vi}/derived"), out);
                }
            }
            for (ei, e) in array(item, "entries")
                .iter()
                .map(LoreEntry::read)
                .enumerate()
            {
                if let Some(src) = e.when {
                    parse_only(src, &format!("/{field}/{i}/entries/{ei}/when"), out);
                }
            }
        }
    }
}

fn parse_only(src: &str, at: &str, out: &mut Vec<Diagnostic>) {
    if let Err(errors) = cel::parse::parse(src) {
        for e in errors {
            out.push(cel_diag(&e, at, true));
        }
    }
}

/// Removes CEL diagnostics found again at the same location with the same
/// code (Format 11.2: a diagnostic found for several scenarios is reported
/// once).
pub fn dedup_cel(out: &mut Vec<Diagnostic>) {
    let mut seen: HashSet<(Code, Option<String>)> = HashSet::new();
    out.retain(|d| {
        if !matches!(d.code, Code::CelSyntax | Code::CelType | Code::DerivedCycle) {
            return true;
        }
        seen.insert((d.code, d.location.pointer.clone()))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::env::*;
    use serde_json::json;

    fn story(vars: Value) -> Story {
        let bundle = json!({"troupe": "0.1", "kind": "bundle",
            "characters": [{"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult",
                            "variables": [{"id": "mood", "type": "number"}]}],
            "scenarios": [{"id": "s", "name": "S", "cast": [{"character": "kai"}],
                           "variables": vars}]});
        crate::resolve::story::resolve(&bundle, 0, None, &mut Vec::new()).unwrap()
    }

    #[test]
    fn an_expression_is_compiled_once_per_owner_and_environment() {
        let s = story(json!([{"id": "gold", "type": "int"}]));
        let scenario = Owner::Scenario("s".into());
        let plain = owner_env(&s, &scenario, false);
        let a = compile_once(&s, &scenario, false, "state.gold > 1", &plain);
        let b = compile_once(&s, &scenario, false, "state.gold > 1", &plain);
        assert!(
            std::sync::Arc::ptr_eq(&a, &b),
            "the second ask reuses the first compile"
        );
        assert!(a.is_ok());
        // Another environment (with `hit()`), another owner or another text
        // is its own compile; so is an error, kept as the errors.
        let with_hit = owner_env(&s, &scenario, true);
        let c = compile_once(&s, &scenario, true, "state.gold > 1", &with_hit);
        assert!(!std::sync::Arc::ptr_eq(&a, &c));
        let kai = Owner::Character("kai".into());
        let own = owner_env(&s, &kai, false);
        let d = compile_once(&s, &kai, false, "state.gold > 1", &own);
        assert!(!std::sync::Arc::ptr_eq(&a, &d));
        let e = compile_once(&s, &scenario, false, "state.gold >", &plain);
        assert!(e.is_err());
        assert!(std::sync::Arc::ptr_eq(
            &e,
            &compile_once(&s, &scenario, false, "state.gold >", &plain)
        ));
        // A clone of the story starts with an empty cache.
        let copy = s.clone();
        let f = compile_once(&copy, &scenario, false, "state.gold > 1", &plain);
        assert!(!std::sync::Arc::ptr_eq(&a, &f));
    }

    #[test]
    fn a_derived_variable_is_checked_in_its_own_owners_environment() {
        // A character and a world with one ID (DUPLICATE_ID, reported
        // elsewhere) each check their derived variable against their own
        // `own`, not the first one seen with that ID.
        let bundle = json!({"troupe": "0.1", "kind": "bundle",
            "characters": [{"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult",
                "variables": [{"id": "mood", "type": "int"},
                              {"id": "calm", "type": "int", "derived": "own.mood + 1"}]}],
            "worlds": [{"id": "kai", "name": "Kai Island",
                "variables": [{"id": "tide", "type": "int"},
                              {"id": "high", "type": "bool", "derived": "own.tide > 3"}]}],
            "scenarios": [{"id": "s", "name": "S", "cast": [{"character": "kai"}],
                           "worlds": ["kai"]}]});
        let s = crate::resolve::story::resolve(&bundle, 0, None, &mut Vec::new()).unwrap();
        let mut out = Vec::new();
        check_conditions(&s, &mut out);
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(derived_order(&s).order.len(), 2);
    }

    #[test]
    fn thresholds_lower_to_typed_literals() {
        let s = story(
            json!([{"id": "gold", "type": "int"}, {"id": "imp", "type": "number"},
                              {"id": "trust", "type": "int", "keys": ["old-kai"]}]),
        );
        assert_eq!(
            lower_threshold(&s, "variable_above", "imp", &json!(60)).as_deref(),
            Some("state.imp > 60.0")
        );
        assert_eq!(
            lower_threshold(&s, "variable_equals", "gold", &json!(3)).as_deref(),
            Some("state.gold == 3")
        );
        assert_eq!(
            lower_threshold(&s, "variable_below", "trust.old-kai", &json!(2)).as_deref(),
            Some("state.trust[\"old-kai\"] < 2")
        );
        assert_eq!(
            lower_threshold(&s, "variable_above", "kai.mood", &json!(0.5)).as_deref(),
            Some("state.kai.mood > 0.5")
        );
        assert!(lower_threshold(&s, "variable_above", "gold", &json!(1.5)).is_none());
    }

    #[test]
    fn derived_order_follows_reads_then_declaration() {
        let s = story(json!([
            {"id": "a", "type": "int", "derived": "state.b + 1"},
            {"id": "b", "type": "int", "derived": "state.c + 1"},
            {"id": "c", "type": "int"},
            {"id": "x", "type": "int", "derived": "state.y"},
            {"id": "y", "type": "int", "derived": "state.x"},
            {"id": "z", "type": "int", "derived": "state.x"}
        ]));
        let o = derived_order(&s);
        assert_eq!(o.order, vec!["b", "a"]);
        assert_eq!(o.cyclic, vec!["x", "y"]);
        let mut out = Vec::new();
        check_conditions(&s, &mut out);
        let cycles: Vec<_> = out
            .iter()
            .filter(|d| d.code == Code::DerivedCycle)
            .map(|d| d.location.pointer.clone().unwrap())
            .collect();
        assert_eq!(
            cycles,
            vec![
                "/scenarios/0/variables/3/derived",
                "/scenarios/0/variables/4/derived"
            ]
        );
    }

    #[test]
    fn wrong_types_and_syntax_are_located_inside_the_expression() {
        let s = story(
            json!([{"id": "gold", "type": "int", "derived": "state.gold2 +"},
                              {"id": "ok", "type": "bool", "derived": "1 + 1"}]),
        );
        let mut out = Vec::new();
        check_conditions(&s, &mut out);
        let syn = out.iter().find(|d| d.code == Code::CelSyntax).unwrap();
        assert_eq!(
            syn.location.pointer.as_deref(),
            Some("/scenarios/0/variables/0/derived")
        );
        assert!(syn.location.inner.is_some());
        let ty = out.iter().find(|d| d.code == Code::CelType).unwrap();
        assert_eq!(
            ty.location.pointer.as_deref(),
            Some("/scenarios/0/variables/1/derived")
        );
    }
}

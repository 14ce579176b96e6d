//! Troupe's CEL beyond the shared suite: the Format 11.3 environment, keyed
//! state reads, `hit()`/`roll()` availability, the cost budget, error
//! positions, branch coverage and the `troupe cel` command. Expected values
//! are worked out by hand from Format 11.

use std::process::Command;
use std::sync::Arc;

use troupe::internals::cel::{
    self, Activation, CelErrorKind, Env, EvalError, EvalErrorKind, Host, NoHost, ObjectType,
    StoryDecls, Type, Value,
};

fn story() -> Env {
    let decls = StoryDecls {
        state: ObjectType::new("state")
            .field("trust", Type::map(Type::String, Type::Double))
            .field("met", Type::Bool)
            .field(
                "kai",
                ObjectType::new("kai")
                    .field("mood", Type::String)
                    .field("hp", Type::Int)
                    .into_type(),
            ),
        own: ObjectType::new("own")
            .field("mood", Type::String)
            .field("hp", Type::Int),
        difficulty_knobs: Some(vec!["damage".into()]),
    };
    cel::troupe_env(&decls)
}

fn map(entries: &[(&str, f64)]) -> Value {
    Value::from_json(&serde_json::Value::Object(
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::json!(v)))
            .collect(),
    ))
    .unwrap()
}

/// An activation at no evaluation point (Format 11.3): turn 0, hour -1, ...
fn initial(env: &Env) -> Activation {
    let mut act = Activation::new(env);
    let s = |n: &str| env.slot(n).unwrap_or_else(|| panic!("slot {n}"));
    act.set(s("state.trust"), map(&[("kai", 55.0), ("mia", 70.5)]));
    act.set(s("state.met"), Value::Bool(false));
    act.set(s("state.kai.mood"), Value::string("calm"));
    // state.kai.hp left unbound: an absent derived variable.
    act.set(s("scene.location"), Value::string("harbor"));
    act.set(
        s("scene.present"),
        Value::List(Arc::new(vec![Value::string("kai"), Value::string("mia")])),
    );
    act.set(s("char"), Value::string("kai"));
    act.set(s("user"), Value::string("mia"));
    act.set(s("self"), Value::string("kai"));
    act.set(s("own.mood"), Value::string("calm"));
    act.set(s("own.hp"), Value::Int(10));
    for (n, v) in [
        ("turn", 0),
        ("round", 0),
        ("elapsed", 0),
        ("hour", -1),
        ("weekday", -1),
    ] {
        act.set(s(n), Value::Int(v));
    }
    act.set(s("opening"), Value::string(""));
    for n in ["last.id", "last.author", "last.text"] {
        act.set(s(n), Value::string(""));
    }
    act.set(
        s("players"),
        Value::List(Arc::new(vec![Value::string("mia")])),
    );
    act.set(s("difficulty.preset"), Value::string("normal"));
    act.set(s("difficulty.damage"), Value::Double(1.5));
    act
}

fn eval(env: &Env, src: &str) -> Result<Value, EvalError> {
    let p = cel::compile(src, env).unwrap_or_else(|e| panic!("{src}: {e:?}"));
    p.eval(&initial(env), &mut NoHost)
}

#[test]
fn environment_variables_have_their_types() {
    let env = story();
    for (src, ty) in [
        ("state.trust", "map(string, double)"),
        ("state.trust[char]", "double"),
        ("state.kai.mood", "string"),
        ("scene.location", "string"),
        ("scene.present", "list(string)"),
        ("char + user + self + opening", "string"),
        ("own.hp", "int"),
        ("turn + round + elapsed + hour + weekday", "int"),
        ("last.id + last.author + last.text", "string"),
        ("players", "list(string)"),
        ("difficulty.preset", "string"),
        ("difficulty.damage", "double"),
    ] {
        let p = cel::compile(src, &env).unwrap_or_else(|e| panic!("{src}: {e:?}"));
        assert_eq!(p.result_type().to_string(), ty, "{src}");
    }
}

#[test]
fn environment_values_at_no_evaluation_point() {
    let env = story();
    for src in [
        "turn == 0 && round == 0 && elapsed == 0",
        "hour == -1 && weekday == -1",
        "opening == '' && last.text == '' && last.author == ''",
        "'mia' in players && size(players) == 1",
        "scene.present == ['kai', 'mia'] && scene.location == 'harbor'",
        "difficulty.damage * 2.0 == 3.0",
    ] {
        assert_eq!(eval(&env, src), Ok(Value::Bool(true)), "{src}");
    }
}

#[test]
fn keyed_state_reads() {
    let env = story();
    // trust.kai = 55 (number → double); bracket with the char variable.
    assert_eq!(eval(&env, "state.trust[char]"), Ok(Value::Double(55.0)));
    // `.char` is the literal key "char", absent: a runtime error.
    let e = eval(&env, "state.trust.char").unwrap_err();
    assert_eq!(e.kind, EvalErrorKind::NoSuchKey);
    assert_eq!(eval(&env, "state.trust.mia > 70"), Ok(Value::Bool(true)));
    assert_eq!(
        eval(&env, "state.trust[user] > 60 ? 'warm' : 'cold'"),
        Ok(Value::string("warm"))
    );
    assert_eq!(
        eval(&env, "has(state.trust.zed) || 'zed' in state.trust"),
        Ok(Value::Bool(false))
    );
    // An unbound slot (absent derived variable) errors; has() says false.
    assert_eq!(
        eval(&env, "state.kai.hp").unwrap_err().kind,
        EvalErrorKind::Unbound
    );
    assert_eq!(eval(&env, "has(state.kai.hp)"), Ok(Value::Bool(false)));
    assert_eq!(eval(&env, "has(state.kai.mood)"), Ok(Value::Bool(true)));
    // A condition that errors is false (Format 11.6).
    let p = cel::compile("state.kai.hp > 3", &env).unwrap();
    assert!(!p.eval_bool(&initial(&env), &mut NoHost));
    // `1 == 1.0` does not check, but a number variable compares with an int
    // literal by `<`/`>` (CEL's cross-type ordering).
    assert!(cel::compile("state.trust[char] == 55", &env).is_err());
    assert_eq!(eval(&env, "state.trust[char] >= 55"), Ok(Value::Bool(true)));
}

#[test]
fn objects_are_only_read_by_field() {
    let env = story();
    for src in [
        "state",
        "state.kai",
        "size(state)",
        "state.nobody",
        "state[char]",
        "state['kai']",
        "last.when",
    ] {
        let errs = cel::compile(src, &env).unwrap_err();
        assert_eq!(errs[0].kind, CelErrorKind::Type, "{src}");
    }
    // A string literal index on an object is field selection (Format 11.3).
    for src in [
        "state['trust']",
        "state['kai']['hp'] > 1",
        "has(state['kai'].hp)",
    ] {
        assert!(cel::compile(src, &env).is_ok(), "{src}");
    }
}

struct Recorder {
    keys: Vec<String>,
    rolls: i64,
}

impl Host for Recorder {
    fn hit(&mut self, keys: &[&str]) -> bool {
        self.keys.extend(keys.iter().map(|k| k.to_string()));
        keys.contains(&"sword")
    }
    fn roll(&mut self, notation: &str) -> Result<i64, EvalError> {
        self.rolls += 1;
        cel::parse_notation(notation).map(|d| i64::from(d.count) * 100)
    }
}

#[test]
fn hit_only_in_entry_conditions() {
    let env = story();
    let errs = cel::compile("hit('sword')", &env).unwrap_err();
    assert_eq!(errs[0].kind, CelErrorKind::Type);
    assert!(errs[0].message.contains("entry"), "{}", errs[0].message);
    let entry = story().with_hit(true);
    let p = cel::compile("hit('sword', 'axe') && hit(['bow'])", &entry).unwrap();
    let mut host = Recorder {
        keys: vec![],
        rolls: 0,
    };
    assert_eq!(p.eval(&initial(&entry), &mut host), Ok(Value::Bool(false)));
    assert_eq!(host.keys, ["sword", "axe", "bow"]);
    assert!(cel::compile("hit()", &entry).is_err());
    assert!(cel::compile("hit(1)", &entry).is_err());
}

#[test]
fn roll_goes_to_the_host() {
    let env = story();
    let p = cel::compile("roll('2d6') + roll('1d20+1')", &env).unwrap();
    assert_eq!(p.result_type(), &Type::Int);
    let mut host = Recorder {
        keys: vec![],
        rolls: 0,
    };
    assert_eq!(p.eval(&initial(&env), &mut host), Ok(Value::Int(300)));
    assert_eq!(host.rolls, 2);
    // roll() is never folded away, even with a constant argument.
    assert_eq!(p.eval(&initial(&env), &mut host), Ok(Value::Int(300)));
    assert_eq!(host.rolls, 4);
    // A literal with bad notation does not check (Format 11.5); bad notation
    // computed at runtime is a runtime error.
    assert!(cel::compile("roll('d6') > 0", &env).is_err());
    let bad = cel::compile("roll('d' + '6') > 0", &env).unwrap();
    assert!(!bad.eval_bool(&initial(&env), &mut host));
    // Without roll declared, it does not check.
    let plain = Env::new();
    assert!(cel::compile("roll('1d6')", &plain).is_err());
}

#[test]
fn the_cost_budget_ends_runaway_comprehensions() {
    let mut env = Env::new();
    env.declare("xs", Type::list(Type::Int));
    let mut act = Activation::new(&env);
    act.set(0, Value::List(Arc::new((0..100).map(Value::Int).collect())));
    // 100 × 100 × 100 = 1,000,000 iterations: over the default budget.
    let p = cel::compile("xs.all(a, xs.all(b, xs.all(c, a + b + c >= 0)))", &env).unwrap();
    let e = p.eval(&act, &mut NoHost).unwrap_err();
    assert_eq!(e.kind, EvalErrorKind::Budget);
    // 100 × 100 = 10,000 iterations (plus the outer 100) fit.
    let q = cel::compile("xs.all(a, xs.all(b, a + b >= 0))", &env).unwrap();
    assert_eq!(q.eval(&act, &mut NoHost), Ok(Value::Bool(true)));
    // A small explicit budget: 100 iterations of exists over 100 elements
    // cost 100; 99 is not enough.
    let r = cel::compile("xs.exists(x, x > 1000)", &env).unwrap();
    assert_eq!(
        r.eval_with_budget(&act, &mut NoHost, 100),
        Ok(Value::Bool(false))
    );
    assert_eq!(
        r.eval_with_budget(&act, &mut NoHost, 99).unwrap_err().kind,
        EvalErrorKind::Budget
    );
    // Doubling a list inside map: the built lists are charged too.
    let s = cel::compile("xs.map(a, xs + xs + xs).size() > 0", &env).unwrap();
    assert_eq!(
        s.eval_with_budget(&act, &mut NoHost, 1000)
            .unwrap_err()
            .kind,
        EvalErrorKind::Budget
    );
}

#[test]
fn errors_carry_positions() {
    let mut env = Env::new();
    env.declare("x", Type::Int);
    // Type error at the `+` (byte 7, column 8).
    let errs = cel::compile("x == 1 + 'a'", &env).unwrap_err();
    assert_eq!(errs[0].kind, CelErrorKind::Type);
    assert_eq!((errs[0].line, errs[0].column), (1, 8));
    assert_eq!(errs[0].span.start, 7);
    // Undeclared `y` on line 2, column 10 (columns count characters: é is one).
    let errs = cel::compile("x > 0 &&\n  'é' == y", &env).unwrap_err();
    assert_eq!((errs[0].line, errs[0].column), (2, 10));
    assert!(errs[0].message.contains("`y`"));
    // Syntax error at the end of `x ||`.
    let errs = cel::compile("x ||", &env).unwrap_err();
    assert_eq!(errs[0].kind, CelErrorKind::Syntax);
    assert_eq!((errs[0].line, errs[0].column), (1, 5));
    // A diagnostic places the inner position in the file.
    let d = errs[0].to_diagnostic("scenarios/a.yaml", "/events/0/when", Some((12, 11)));
    assert_eq!(d.code.as_str(), "CEL_SYNTAX");
    assert_eq!((d.location.line, d.location.column), (Some(12), Some(15)));
    // null, bytes, uint, timestamps and dyn() do not check.
    for src in [
        "null",
        "b'x'",
        "1u",
        "timestamp('2024-01-01T00:00:00Z')",
        "duration('1s')",
        "dyn(1)",
        "type(1)",
    ] {
        assert!(cel::compile(src, &env).is_err(), "{src}");
    }
}

#[test]
fn branches_are_observed() {
    let mut env = Env::new();
    env.declare("a", Type::Int);
    let p = cel::compile("a > 1 && (a > 5 ? true : a == 3)", &env).unwrap();
    assert_eq!(p.branches().len(), 4);
    let mut act = Activation::new(&env);
    act.set(0, Value::Int(3));
    let mut seen = Vec::new();
    let mut obs = |id: u32, v: Option<bool>| seen.push((id, v));
    assert_eq!(
        p.eval_observed(&act, &mut NoHost, &mut obs),
        Ok(Value::Bool(true))
    );
    // && left (true), ?: else arm (id 3), && right (true).
    assert_eq!(seen, [(0, Some(true)), (3, Some(true)), (1, Some(true))]);
}

#[test]
fn slots_are_listed_for_activations() {
    let env = story();
    let names: Vec<&str> = env.slots().map(|s| s.name.as_str()).collect();
    assert_eq!(
        &names[..5],
        [
            "state.trust",
            "state.met",
            "state.kai.mood",
            "state.kai.hp",
            "scene.location"
        ]
    );
    // The owner's `own` slots come after the story's shared ones (an
    // owner's environment extends the story's, Format 16.2).
    let own = names.iter().position(|n| n.starts_with("own.")).unwrap();
    assert_eq!(env.slot("difficulty.damage"), Some(own - 1));
    assert!(names[own..].iter().all(|n| n.starts_with("own.")));
}

fn troupe(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn command_line() {
    assert_eq!(
        troupe(&["cel", "check", "x[0] + 1", "--decl", "x=list(int)"]),
        (0, "int\n".into())
    );
    let (code, out) = troupe(&["cel", "check", "1 == 1.0"]);
    assert_eq!(code, 1);
    assert!(out.contains("CEL_TYPE: 1:3:"), "{out}");
    assert_eq!(
        troupe(&[
            "cel",
            "eval",
            "t > 60 && turn >= 3",
            "--var",
            "t=61",
            "--var",
            "turn=3"
        ]),
        (0, "true\n".into())
    );
    assert_eq!(
        troupe(&["cel", "eval", "m.a + 1.0", "--var", r#"m={"a": 1.5}"#]),
        (0, "2.5\n".into())
    );
    assert_eq!(troupe(&["cel", "eval", "1 / 0"]).0, 1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"expr": "1 + 1", "bindings": {}, "expect": {"value": {"int": "2"}}}"#,
            "\n",
            r#"{"expr": "1 + 1", "bindings": {}, "expect": {"value": {"int": "3"}}}"#,
            "\n",
            r#"{"expr": "x", "declarations": {"x": "int"}, "bindings": {"x": {"int": "4"}}, "expect": {"value": {"int": "4"}}}"#,
            "\n",
            r#"{"expr": "null", "bindings": {}, "expect": {"checkError": true}}"#,
            "\n"
        ),
    )
    .unwrap();
    let (code, out) = troupe(&["cel", "run", file.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.ends_with("3 passed, 1 failed\n"), "{out}");
}

#[test]
fn a_literal_pattern_that_is_not_re2_fails_to_check() {
    let env = troupe::internals::cel::Env::new();
    let errs = troupe::internals::cel::compile(r#""a".matches("(")"#, &env).unwrap_err();
    assert_eq!(errs[0].kind, troupe::internals::cel::CelErrorKind::Type);
    assert!(troupe::internals::cel::compile(r#""a".matches("a+")"#, &env).is_ok());
}

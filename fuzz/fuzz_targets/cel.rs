//! Parser + checker + evaluator on arbitrary text: no input may panic,
//! overflow the stack or run unbounded (the cost budget bounds loops).
#![no_main]

use libfuzzer_sys::fuzz_target;
use troupe::cel::{self, Activation, EvalError, Host, ObjectType, StoryDecls, Type, Value};

struct DiceHost(u64);

impl Host for DiceHost {
    fn hit(&mut self, keys: &[&str]) -> bool {
        keys.iter().any(|k| k.len() % 2 == 0)
    }
    fn roll(&mut self, notation: &str) -> Result<i64, EvalError> {
        self.0 += 1;
        cel::dice::roll(notation, 7, "m1", self.0)
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    let decls = StoryDecls {
        state: ObjectType::new("state")
            .field("trust", Type::map(Type::String, Type::Double))
            .field("hp", Type::Int)
            .field("kai", ObjectType::new("kai").field("mood", Type::String).into_type()),
        own: ObjectType::new("own").field("hp", Type::Int),
        difficulty_knobs: Some(vec!["damage".into()]),
    };
    let mut env = cel::troupe_env(&decls).with_hit(true);
    env.declare("xs", Type::list(Type::Int));
    env.declare("m", Type::map(Type::String, Type::Dyn));
    let Ok(program) = cel::compile(src, &env) else { return };
    let mut act = Activation::new(&env);
    for (i, slot) in env.slots().enumerate() {
        let v = match &slot.ty {
            Type::Int => Value::Int(i as i64 - 3),
            Type::Double => Value::Double(0.5 * i as f64),
            Type::String => Value::string("kai"),
            Type::Bool => Value::Bool(i % 2 == 0),
            Type::List(_) => Value::List(std::sync::Arc::new((0..100).map(Value::Int).collect())),
            _ => Value::from_json(&serde_json::json!({"kai": 1.5, "a": "b"})).unwrap_or(Value::Bool(true)),
        };
        act.set(i, v);
    }
    let _ = program.eval(&act, &mut DiceHost(0));
    let _ = program.result_type();
});

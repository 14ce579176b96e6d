//! Breaker: the hand-written CEL lexer and parser (issue 41 item 2) and
//! what runs on the trees it accepts (checker, lowering, evaluation, the
//! IR's serde of a program), at the deepest trees the parser lets through
//! (Format 11.1, 16: 96 levels of nesting, trees at most 200 high), on a
//! 2 MiB stack: the stack of the fuzz target and of tokio's threads, on
//! which `troupe serve` checks an uploaded pack. No input may panic or
//! overflow; every refusal is one plain CEL_SYNTAX/CEL_TYPE message.

use troupe::internals::cel::{self, Activation, Env, NoHost, Type, Value};

fn env() -> Env {
    let mut env = Env::new();
    env.declare("x", Type::Int)
        .declare("a", Type::list(Type::Int))
        .declare("m", Type::map(Type::String, Type::Int));
    env
}

fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

/// Deep but accepted expressions (each at most 96 levels of nesting and
/// a tree at most 200 high), of every construct.
fn deep_accepted() -> Vec<String> {
    let n = 95;
    let chain = |op: &str, k: usize| vec!["x"; k].join(op);
    vec![
        format!("{}x{}", "(".repeat(n), ")".repeat(n)),
        format!("size({}x{}) > 0", "[".repeat(n), "]".repeat(n)),
        format!("size({}1{}) > 0", "{'k':".repeat(n), "}".repeat(n)),
        format!("{}true", "!".repeat(4001)),
        format!("{}x", "-".repeat(4001)),
        format!("{}1", "x > 0 ? 1 : ".repeat(n)),
        format!("{}x{}", "int(".repeat(n), ")".repeat(n)),
        "a[0]".to_string(),
        format!("{}0{}", "a[".repeat(n), "]".repeat(n)),
        format!("{}true{}", "a.all(x, ".repeat(n), ")".repeat(n)),
        format!("size({}x{}) > 0", "a.map(x, ".repeat(n), ")".repeat(n)),
        format!(
            "size({}x{}) > 0",
            "a.filter(x, ".repeat(n),
            " > 0)".repeat(n)
        ),
        format!("{}true{}", "a.exists_one(x, ".repeat(n), ")".repeat(n)),
        chain(" + ", 200),
        chain(" * ", 200),
        format!("{} == x", chain(" - ", 199)),
        chain(" > 0 || x", 2000),
        // Nesting and a long chain at once: height close to 200.
        format!(
            "{}{}{}",
            "(x + ".repeat(90),
            chain(" + ", 100),
            ")".repeat(90)
        ),
        format!(
            "{}{}{}",
            "a.all(y, ".repeat(50),
            format!("{} > 0", chain(" + ", 140)),
            ")".repeat(50)
        ),
        format!("{}{}{}", "[".repeat(90), chain(" % ", 100), "]".repeat(90))
            .replace("[[", "[[")
            .to_string()
            + " == []",
        format!("{}1{}", "m['k'] + ".repeat(150), ""),
        format!("has(m.k{})", ""),
    ]
}

#[test]
fn the_deepest_accepted_trees_check_lower_evaluate_and_serialize_on_a_2_mib_stack() {
    on_small_stack(|| {
        let env = env();
        let mut act = Activation::new(&env);
        act.set(env.slot("x").unwrap(), Value::Int(1));
        act.set(
            env.slot("a").unwrap(),
            Value::from_json(&serde_json::json!([1])).unwrap(),
        );
        act.set(
            env.slot("m").unwrap(),
            Value::from_json(&serde_json::json!({"k": 1})).unwrap(),
        );
        for src in deep_accepted() {
            let p = match cel::compile(&src, &env) {
                Ok(p) => p,
                Err(e) => {
                    // A refusal is fine, as plain messages (the checker
                    // reports every type error).
                    assert!(!e.is_empty(), "{src}");
                    assert!(e.iter().all(|e| !e.to_string().contains("panick")), "{e:?}");
                    continue;
                }
            };
            let _ = p.eval(&act, &mut NoHost);
            // Written as the IR writes it (read back: see
            // breaker_ir::a_long_operator_chain_compiles_to_an_ir_that_reads_back).
            let _ = serde_json::to_string(&p).unwrap();
        }
    });
}

#[test]
fn hostile_text_is_one_plain_syntax_error_never_a_panic() {
    let cases: Vec<String> = vec![
        "".into(),
        "\0".into(),
        "a\0b".into(),
        "'\0'".into(),
        "\u{FEFF}1".into(),
        "ar\"\\\"".into(),
        "bar\"\\q\" + 'x'".into(),
        "xbr'\\'".into(),
        "'\\".into(),
        "r'\\".into(),
        "b'\\u0041'".into(),
        "'\\U0010FFFF' + '\\U00110000'".into(),
        "'\\uD83D\\uDE00'".into(),
        "'''''''".into(),
        "\"\"\"\\\"\"\"\"".into(),
        "1e99999999999999999999".into(),
        "0x".into(),
        "9".repeat(8192),
        format!("'{}", "\\x41".repeat(2000)),
        format!("{}1", "-".repeat(8191)),
        format!("{}1", "!-".repeat(4095)),
        format!("A{{{}}}", "f: 1, ".repeat(1300)),
        format!("{}1{}", "A{f: ".repeat(96), "}".repeat(96)),
        format!("A{{f: {}}}", "1 + ".repeat(2000)),
        format!("a{}", ".b".repeat(4000)),
        format!(".{}", "a.".repeat(4090)),
        format!("{}", "((((((((((".repeat(819)),
        "`a.b`".into(),
        "a.`b-c`".into(),
        "a.`b`()".into(),
        "has(a.`b`)".into(),
        "x.all(y, y)".into(),
        "[1].map(1, x)".into(),
        "[1].map(x, x, x, x)".into(),
    ];
    on_small_stack(move || {
        let env = env();
        for src in cases {
            match cel::compile(&src, &env) {
                Ok(_) => {}
                Err(errs) => {
                    assert_eq!(errs.len(), 1, "{src:?}: {errs:?}");
                    let m = errs[0].to_string();
                    assert!(
                        !m.is_empty() && !m.contains("Error") && !m.contains("panick"),
                        "{m}"
                    );
                }
            }
        }
    });
}

//! The body of every fuzz target, once: each `fuzz_targets/<name>.rs` calls
//! one of these on libFuzzer's input, and `tests/it/fuzz_regressions.rs`
//! replays the committed corpora (`fuzz/regressions/<name>/`) through the
//! same functions on every `cargo test`. A function returns normally for
//! any input; a panic, an overflowed stack or an unbounded run is a bug.
#![allow(dead_code)]

use troupe::internals::cel::{
    self, Activation, EvalError, Host, ObjectType, StoryDecls, Type, Value,
};
use troupe::internals::diag::{render_human, Sources};
use troupe::internals::template::{parse, render, Scope};
use troupe_import::{card, chat, CardContainer, RawCard};

/// The bundle the session target checks sessions against.
const BUNDLE: &str = include_str!("../examples/bundles/tiny.bundle.json");

/// A fuzz target's body: it runs one input and must not panic.
pub type Body = fn(&[u8]);

/// Every target by name, for the replay test.
pub const TARGETS: &[(&str, Body)] = &[
    ("cel", cel),
    ("cel_parse", cel_parse),
    ("load_json", load_json),
    ("load_yaml", load_yaml),
    ("session", session),
    ("package", package),
    ("template", template),
    ("card", card),
    ("chat", chat),
    ("model_answer", model_answer),
    ("cassette", cassette),
    ("mcp", mcp),
];

struct DiceHost(u64);

impl Host for DiceHost {
    fn hit(&mut self, keys: &[&str]) -> bool {
        keys.iter().any(|k| k.len() % 2 == 0)
    }
    fn roll(&mut self, notation: &str) -> Result<i64, EvalError> {
        self.0 += 1;
        cel::roll(notation, 7, "m1", self.0)
    }
}

/// CEL (Format 11): parser, checker and evaluator on arbitrary text; the
/// cost budget bounds loops.
pub fn cel(data: &[u8]) {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let decls = StoryDecls {
        state: ObjectType::new("state")
            .field("trust", Type::map(Type::String, Type::Double))
            .field("hp", Type::Int)
            .field(
                "kai",
                ObjectType::new("kai")
                    .field("mood", Type::String)
                    .into_type(),
            ),
        own: ObjectType::new("own").field("hp", Type::Int),
        difficulty_knobs: Some(vec!["damage".into()]),
    };
    let mut env = cel::troupe_env(&decls).with_hit(true);
    env.declare("xs", Type::list(Type::Int));
    env.declare("m", Type::map(Type::String, Type::Dyn));
    let Ok(program) = cel::compile(src, &env) else {
        return;
    };
    let mut act = Activation::new(&env);
    for (i, slot) in env.slots().enumerate() {
        let v = match &slot.ty {
            Type::Int => Value::Int(i as i64 - 3),
            Type::Double => Value::Double(0.5 * i as f64),
            Type::String => Value::string("kai"),
            Type::Bool => Value::Bool(i % 2 == 0),
            Type::List(_) => Value::List(std::sync::Arc::new((0..100).map(Value::Int).collect())),
            _ => Value::from_json(&serde_json::json!({"kai": 1.5, "a": "b"}))
                .unwrap_or(Value::Bool(true)),
        };
        act.set(i, v);
    }
    let _ = program.eval(&act, &mut DiceHost(0));
    let _ = program.result_type();
}

/// The CEL parser alone (Format 11.1; `cel/lex.rs`, `cel/parse.rs`) on
/// arbitrary bytes, invalid UTF-8 decoded lossily so that every input
/// reaches it, in a 2 MiB stack as a checking thread has: it never panics
/// nor overflows; an error has a short message; an accepted tree's spans
/// are ranges of the text on character boundaries.
pub fn cel_parse(data: &[u8]) {
    let src = String::from_utf8_lossy(data).into_owned();
    let run = move || match cel::parse(&src) {
        Ok(e) => check_spans(&e, &src),
        Err(errs) => {
            assert!(!errs.is_empty());
            for e in &errs {
                // One short sentence: a token it quotes is cut at 24 characters.
                assert!(
                    !e.message.is_empty() && e.message.len() < 512,
                    "{}",
                    e.message
                );
                assert!(e.span.start <= e.span.end && e.span.end <= src.len());
            }
        }
    };
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(run)
        .expect("a thread")
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p));
}

fn check_spans(e: &cel::Expr, src: &str) {
    use cel::ExprKind;
    assert!(
        src.get(e.span.clone()).is_some(),
        "{:?} in {} bytes",
        e.span,
        src.len()
    );
    match &e.kind {
        ExprKind::Select { operand, .. } => check_spans(operand, src),
        ExprKind::Call { target, args, .. } => {
            target.iter().for_each(|t| check_spans(t, src));
            args.iter().for_each(|a| check_spans(a, src));
        }
        ExprKind::List(items) => items.iter().for_each(|i| check_spans(i, src)),
        ExprKind::Map(entries) => entries.iter().for_each(|(k, v)| {
            check_spans(k, src);
            check_spans(v, src);
        }),
        ExprKind::Comprehension {
            range,
            pred,
            transform,
            ..
        } => {
            check_spans(range, src);
            pred.iter().for_each(|p| check_spans(p, src));
            transform.iter().for_each(|t| check_spans(t, src));
        }
        _ => {}
    }
}

/// The JSON loader (Format 2.2, 16), the bundle checks after it, and the
/// human renderer of what they report.
pub fn load_json(data: &[u8]) {
    let loaded = troupe::internals::load::parse_json("f.json", data);
    let mut diags = loaded.diagnostics;
    let mut sources = Sources::new();
    if let Some(doc) = &loaded.value {
        diags.extend(troupe::internals::check::check_bundle_document(doc));
        sources.add("f.json", doc.text.clone());
    }
    let _ = render_human(&diags, &sources);
}

/// The YAML loader (Format 2.2, 16.2) and a span lookup in what it read.
pub fn load_yaml(data: &[u8]) {
    let loaded = troupe::internals::load::parse_yaml("f.yaml", data);
    let mut sources = Sources::new();
    if let Some(doc) = &loaded.value {
        sources.add("f.yaml", doc.text.clone());
        let _ = doc.spans.locate("/a/0");
    }
    let _ = render_human(&loaded.diagnostics, &sources);
}

/// The session loader and checks (Format 12, 17.3) against
/// `examples/bundles/tiny.bundle.json`, then the engine on what passes.
pub fn session(data: &[u8]) {
    let Ok(bundle) = serde_json::from_str::<serde_json::Value>(BUNDLE) else {
        return;
    };
    let loaded = troupe::internals::load::parse_session("s.jsonl", data);
    let mut diags = loaded.diagnostics;
    if let Some(doc) = &loaded.value {
        diags.extend(troupe::internals::check::check_session_document(
            &bundle, doc,
        ));
        if !diags.iter().any(|d| d.is_error()) && doc.header.is_some() {
            if let Ok(engine) = troupe::internals::pipeline::compile_checked_session(&bundle, doc) {
                let n = engine.session.messages.len() as u32;
                for m in 0..n.min(64) {
                    let s = engine.state_at(m);
                    let _ = engine.flatten(&s);
                    let _ = engine.ending(&s);
                }
            }
        }
    }
    let mut sources = Sources::new();
    if let Ok(t) = std::str::from_utf8(data) {
        sources.add("s.jsonl", t.into());
    }
    let _ = render_human(&diags, &sources);
}

/// Package screening, loading and checking (Format 14).
pub fn package(data: &[u8]) {
    let _ = troupe::internals::load::screen_package("p.troupe", data);
    let loaded = troupe::internals::load::parse_package("p.troupe", data);
    if let Some(pkg) = &loaded.value {
        let _ = troupe::internals::check::check_package(
            pkg,
            &troupe::internals::compile::compiled_forms_match,
        );
    }
}

struct Fixed;

impl Scope for Fixed {
    fn user(&self) -> Option<&str> {
        Some("Sam")
    }
    fn char_id(&self) -> Option<&str> {
        Some("kai")
    }
    fn char_name(&self) -> Option<&str> {
        Some("Kai")
    }
    fn narrator(&self) -> &str {
        "Narrator"
    }
    fn narrator_text(&self) -> bool {
        false
    }
    fn owner(&self) -> Option<Option<&str>> {
        Some(Some("kai"))
    }
    fn value(&self, name: &str) -> Option<String> {
        name.len().is_multiple_of(3).then(|| "12.5".to_string())
    }
    fn seed(&self) -> (u64, &str) {
        (7, "m1")
    }
}

/// The macro parser and renderer (Format 10).
pub fn template(data: &[u8]) {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(t) = parse(src) {
        let _ = render(&t, src, &Fixed);
    }
}

/// Character card import (JSON, PNG, CHARX; docs/import.md), then the
/// bundle checks on what it made.
pub fn card(data: &[u8]) {
    if let Ok(raw) = troupe_import::read_card("c", data) {
        if let Ok(imported) = card::card_to_bundle(&raw) {
            let _ = troupe::internals::check::check_bundle(&imported.bundle);
        }
    }
}

/// SillyTavern chat import (docs/import.md) into a session of a fixed card.
pub fn chat(data: &[u8]) {
    let raw = RawCard {
        card: serde_json::json!({"spec": "chara_card_v2", "spec_version": "2.0",
            "data": {"name": "Aqua", "first_mes": "Hi {{user}}", "alternate_greetings": ["Yo"]}}),
        container: CardContainer::Json,
        assets: Vec::new(),
    };
    let Ok(imported) = card::card_to_bundle(&raw) else {
        return;
    };
    let target = chat::ChatTarget {
        bundle: &imported.bundle,
        character: &imported.character,
        scenario: &imported.scenario,
    };
    let _ = chat::chat_to_session("c.jsonl", data, &target);
}

/// The bundle the model-answer target validates answers against: a
/// `model` block with a step limit on a number, a bool, and a character's
/// int (Format 24.2).
const MODEL_BUNDLE: &str = r#"{"troupe": "0.1", "kind": "bundle",
  "characters": [{"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult",
    "variables": [{"id": "mood", "type": "int", "default": 5, "min": 0, "max": 10}]}],
  "scenarios": [{"id": "s", "name": "S", "cast": [{"character": "kai"}, {"seat": "p", "player": true}],
    "variables": [{"id": "price", "type": "number", "default": 10, "places": 2},
      {"id": "open", "type": "bool", "default": false},
      {"id": "seen", "type": "int", "keys": "*"}],
    "model": {"changes": {"price": {"step": 1.5}, "open": {}, "kai.mood": {"step": 2}, "seen.x": {"step": 3}},
      "emotions": ["calm", "angry"]}}]}"#;

thread_local! {
    static MODEL_ENGINE: Option<troupe::internals::engine::Engine> = serde_json::from_str(MODEL_BUNDLE)
        .ok()
        .and_then(|b| troupe::internals::pipeline::load(&b, None, None).ok());
}

/// The model runtime's answer parser (Format 24.4, 24.6): the text as a
/// Chat Completions body and as an answer validated against a scenario's
/// `model` block. Neither may panic, and a refusal is bounded whatever the
/// answer's size (at most 16 problems of at most 300 characters, then a
/// count).
pub fn model_answer(data: &[u8]) {
    use troupe::internals::runtime::chat::{read_answer, repair_text, validate};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = read_answer(text);
    MODEL_ENGINE.with(|engine| {
        let Some(engine) = engine else {
            panic!("the model bundle loads");
        };
        let state = engine.flatten(engine.initial());
        if let Err(problems) = validate(text, &engine.ir, &engine.ir.model.decl, &state) {
            assert!(problems.len() <= 17, "{} problems", problems.len());
            let repair = repair_text(&problems);
            assert!(repair.len() <= 17 * 4 * 301 + 200, "{} bytes", repair.len());
        }
    });
}

/// The cassette reader (Format 24.5, 16): a cassette's bytes parsed, then
/// a request answered from it and its nearest recorded request found.
pub fn cassette(data: &[u8]) {
    let Ok(mut c) = troupe::internals::runtime::chat::Cassette::parse("c.json", data) else {
        return;
    };
    let request = serde_json::json!({"model": "local", "messages": [
        {"role": "system", "content": "A"}, {"role": "user", "content": "Hi"}],
        "max_tokens": 512, "seed": 7});
    let _ = c.nearest(&request);
    let _ = c.answer(&request);
    let _ = c.nearest(&request);
    let _ = c.counts();
    let _ = c.to_text();
}

thread_local! {
    /// The MCP target's root: a fresh folder holding the tiny bundle as
    /// `b.json` (tools may write inside it; nothing outside).
    static MCP_ROOT: std::path::PathBuf = {
        let dir = std::env::temp_dir().join(format!("troupe-fuzz-mcp-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(dir.join("b.json"), BUNDLE);
        dir
    };
}

/// The MCP server's request handler (docs/mcp.md) on arbitrary lines after
/// a valid `initialize`: every tool, resource and protocol message through
/// the SDK, the input schemas, the root rule and the drain of answers at
/// the end of input. It must not panic, and it answers every request it
/// reads (a request never answered would hold the end of input).
pub fn mcp(data: &[u8]) {
    let mut input = Vec::with_capacity(data.len() + 256);
    input.extend_from_slice(
        br#"{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}}}
{"jsonrpc": "2.0", "method": "notifications/initialized"}
"#,
    );
    input.extend_from_slice(data);
    input.push(b'\n');
    MCP_ROOT.with(|root| {
        let _ = troupe_mcp::serve_bytes(root, &input);
    });
}

//! Turn fixtures (Format 13.8, 21.3): reading a fixture, running its turns
//! against a runtime, and comparing each turn result with `expect`.

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::coverage::{Hits, ScenarioModel};
use super::model::{Failure, Status, TestResult};
use super::runner::{Runtimes, Settings, TurnError, TurnResult};
use crate::changes::values::exact_decimal;
use crate::load::Document;

/// A fixture file (Format 13.8). Unknown members (extensions) are ignored;
/// the check has validated the shape.
#[derive(Debug, Clone, Deserialize)]
pub struct Fixture {
    /// The fixture's ID (its test name).
    pub fixture_id: String,
    /// The scenario it plays.
    pub scenario_id: String,
    /// The seed (0).
    #[serde(default, deserialize_with = "crate::model::de_int")]
    pub seed: u64,
    /// The difficulty preset.
    #[serde(default)]
    pub difficulty: Option<String>,
    /// `rules` (default), `fake` or `model`.
    #[serde(default)]
    pub runtime: Option<String>,
    /// `mocks.model`: the model runtime's answers in call order (Format
    /// 21.3, 24.8).
    #[serde(default)]
    pub mocks: Option<Mocks>,
    /// A cassette the model runtime replays (Format 21.3, 24.5), relative
    /// to the pack root, under `cassettes/`.
    #[serde(default)]
    pub cassette: Option<String>,
    /// The turns, in order.
    #[serde(default)]
    pub turns: Vec<Turn>,
    /// Static assertions.
    #[serde(default)]
    pub static_assertions: Vec<StaticAssertion>,
    /// `coverage.minimum`.
    #[allow(dead_code)] // part of the document's shape (Format 21); nothing reads it yet
    #[serde(default)]
    pub coverage: Option<CoverageMinimum>,
}

/// The cassette file a fixture names: a relative path under the pack's
/// `cassettes/` folder with no `..` (Format 13.9, 21.3).
fn cassette_path(root: &std::path::Path, rel: &str) -> Result<std::path::PathBuf, String> {
    if !crate::check::pack::fixtures::in_cassettes(rel) {
        return Err(format!(
            "the cassette `{rel}` is not a file under the pack's cassettes/ folder"
        ));
    }
    Ok(root.join(rel))
}

/// `mocks: {model}`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Mocks {
    /// The answers, in call order.
    #[serde(default)]
    pub model: Vec<Value>,
}

/// `coverage: {minimum}`.
#[derive(Debug, Clone, Deserialize)]
pub struct CoverageMinimum {
    /// The minimum percent, 0..100.
    #[allow(dead_code)] // part of the document's shape (Format 21); nothing reads it yet
    pub minimum: f64,
}

/// One static assertion as written.
#[derive(Debug, Clone, Deserialize)]
pub struct StaticAssertion {
    /// Its description (its test name when given).
    #[serde(default)]
    pub description: Option<String>,
    /// The path.
    pub path: String,
    /// The check.
    pub check: String,
}

/// One scripted turn.
#[derive(Debug, Clone, Deserialize)]
pub struct Turn {
    /// Its number (i + 1).
    #[allow(dead_code)] // part of the document's shape (Format 21); nothing reads it yet
    #[serde(default, deserialize_with = "crate::model::de_int")]
    pub turn: i64,
    /// The player's input.
    #[serde(default)]
    pub player_input: String,
    /// What the turn result must show.
    #[serde(default)]
    pub expect: Option<Expect>,
    /// A settings step instead of a turn (Format 8.9, 21.3): the host's
    /// new settings, between the turns around it.
    #[serde(default)]
    pub settings: Option<Value>,
}

/// A turn's expectations (Format 21.3).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Expect {
    /// Names that must be keys of `state_delta`.
    #[serde(default)]
    pub state_delta_contains: Option<Vec<String>>,
    /// `continue_session` / `end_session`.
    #[serde(default)]
    pub session_control: Option<String>,
    /// `ok` / `redirect` / `stop`.
    #[serde(default)]
    pub safety_status: Option<String>,
    /// The value `npc_emotion` must have.
    #[serde(default)]
    pub npc_emotion: Option<String>,
    /// A value `npc_emotion` must not have.
    #[serde(default)]
    pub npc_emotion_not: Option<String>,
    /// Exact state values at the turn's last message.
    #[serde(default)]
    pub state: Option<IndexMap<String, Value>>,
    /// Events/outcomes that must be among the firings (`[]`: nothing
    /// fires).
    #[serde(default)]
    pub fired: Option<Vec<String>>,
    /// Events/outcomes that must not be among the firings.
    #[serde(default)]
    pub not_fired: Option<Vec<String>>,
    /// The turn's rule (Format 18.2).
    #[serde(default)]
    pub rule: Option<String>,
    /// The result's `ended`.
    #[serde(default)]
    pub ended: Option<bool>,
    /// The result's `outcome`.
    #[serde(default)]
    pub outcome: Option<String>,
    /// Text the reply must contain.
    #[serde(default)]
    pub reply_contains: Option<String>,
    /// The turn's replies, one item per reply in order (Format 21.3).
    #[serde(default)]
    pub replies: Option<Vec<ReplyExpect>>,
}

/// One item of `expect.replies` (Format 21.3): what the reply at its
/// position must show.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ReplyExpect {
    /// Its author.
    #[serde(default)]
    pub by: Option<String>,
    /// Its rule.
    #[serde(default)]
    pub rule: Option<String>,
    /// Text it must contain.
    #[serde(default)]
    pub contains: Option<String>,
}

impl Fixture {
    /// Reads a fixture from its document value; `Err` says why not.
    pub fn from_value(v: &Value) -> Result<Fixture, String> {
        Fixture::deserialize(v).map_err(|e| format!("the fixture cannot be read: {e}"))
    }

    /// The runtime it asks for (`rules` by default).
    pub fn runtime(&self) -> &str {
        self.runtime.as_deref().unwrap_or("rules")
    }
}

/// Values equal as Format 18.6 says: same type and value, numbers by exact
/// decimal value, lists item by item.
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => match (exact_decimal(a), exact_decimal(b)) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| values_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => a == b,
    }
}

fn show(v: Option<&str>) -> String {
    match v {
        Some(s) => Value::String(s.to_string()).to_string(),
        None => "null".into(),
    }
}

/// Format 21.3 `reply_contains` and `replies[].contains`: a reply's text
/// `got` holds `want` (not `null`; code points, case-sensitive). `None`
/// when it does; else the failure's message about `subject`.
fn lacks(subject: &str, want: &str, got: Option<&str>) -> Option<String> {
    (!got.is_some_and(|t| t.contains(want))).then(|| {
        format!(
            "{subject} expected to contain {}, got {}",
            show(Some(want)),
            show(got)
        )
    })
}

/// Compares one turn result with its expectations; each failing field is a
/// failure (`turn 2: safety_status expected "ok", got "redirect"`).
/// `pointer` is the turn's `/turns/<i>/expect`.
pub fn compare(
    n: i64,
    e: &Expect,
    r: &TurnResult,
    state: &Map<String, Value>,
    pointer: &str,
) -> Vec<Failure> {
    let mut out = Vec::new();
    let mut fail =
        |field: &str, message: String, expected: Option<Value>, actual: Option<Value>| {
            out.push(Failure {
                message: format!("turn {n}: {message}"),
                pointer: Some(format!("{pointer}/{field}")),
                expected,
                actual,
                ..Failure::default()
            });
        };
    if let Some(names) = &e.state_delta_contains {
        for name in names {
            if !r.state_delta.contains_key(name) {
                fail(
                    "state_delta_contains",
                    format!("state_delta has no '{name}'"),
                    Some(Value::String(name.clone())),
                    Some(Value::Array(
                        r.state_delta
                            .keys()
                            .map(|k| Value::String(k.clone()))
                            .collect(),
                    )),
                );
            }
        }
    }
    // The expectations of one text each (Format 18.6): the field as written,
    // then what the turn gave (`null` when it gave nothing).
    for (field, want, got) in [
        (
            "session_control",
            &e.session_control,
            Some(r.session_control.as_str()),
        ),
        (
            "safety_status",
            &e.safety_status,
            Some(r.safety_status.as_str()),
        ),
        ("npc_emotion", &e.npc_emotion, r.npc_emotion.as_deref()),
        ("rule", &e.rule, r.rule.as_deref()),
    ] {
        if let Some(w) = want
            && got != Some(w.as_str())
        {
            fail(
                field,
                format!("{field} expected {}, got {}", show(Some(w)), show(got)),
                Some(Value::String(w.clone())),
                got.map(|g| Value::String(g.to_string())),
            );
        }
    }
    if let Some(not) = &e.npc_emotion_not
        && r.npc_emotion.as_deref() == Some(not.as_str())
    {
        fail(
            "npc_emotion_not",
            format!(
                "npc_emotion expected not {}, got {}",
                show(Some(not)),
                show(Some(not))
            ),
            None,
            Some(Value::String(not.clone())),
        );
    }
    if let Some(want) = &e.state {
        for (name, w) in want {
            match state.get(name) {
                Some(g) if values_equal(w, g) => {}
                Some(g) => fail(
                    &format!("state/{}", crate::diag::escape_token(name)),
                    format!("state.{name} expected {w}, got {g}"),
                    Some(w.clone()),
                    Some(g.clone()),
                ),
                None => fail(
                    &format!("state/{}", crate::diag::escape_token(name)),
                    format!("state.{name} expected {w}, got nothing (no such state entry)"),
                    Some(w.clone()),
                    None,
                ),
            }
        }
    }
    let got: Vec<&str> = r.firings.iter().map(|f| f.id()).collect();
    let got_json = || {
        Some(Value::Array(
            got.iter().map(|s| Value::String(s.to_string())).collect(),
        ))
    };
    if let Some(ids) = &e.fired {
        if ids.is_empty() && !got.is_empty() {
            fail(
                "fired",
                format!("fired expected nothing to fire, got [{}]", got.join(", ")),
                Some(Value::Array(Vec::new())),
                got_json(),
            );
        }
        for id in ids {
            if !got.contains(&id.as_str()) {
                fail(
                    "fired",
                    format!(
                        "fired expected '{id}' among the firings, got [{}]",
                        got.join(", ")
                    ),
                    Some(Value::String(id.clone())),
                    got_json(),
                );
            }
        }
    }
    for (k, id) in e.not_fired.iter().flatten().enumerate() {
        if got.contains(&id.as_str()) {
            fail(
                &format!("not_fired/{k}"),
                format!("not_fired expected '{id}' not to fire, but it fired"),
                None,
                got_json(),
            );
        }
    }
    if let Some(want) = e.ended
        && want != r.ended
    {
        fail(
            "ended",
            format!("ended expected {want}, got {}", r.ended),
            Some(Value::Bool(want)),
            Some(Value::Bool(r.ended)),
        );
    }
    if let Some(want) = &e.outcome
        && r.outcome.as_deref() != Some(want.as_str())
    {
        fail(
            "outcome",
            format!(
                "outcome expected {}, got {}",
                show(Some(want)),
                show(r.outcome.as_deref())
            ),
            Some(Value::String(want.clone())),
            r.outcome.clone().map(Value::String),
        );
    }
    if let Some(want) = &e.reply_contains
        && let Some(message) = lacks("reply", want, r.reply.as_deref())
    {
        fail(
            "reply_contains",
            message,
            Some(Value::String(want.clone())),
            r.reply.clone().map(Value::String),
        );
    }
    if let Some(want) = &e.replies {
        compare_replies(want, &r.replies, &mut fail);
    }
    out
}

/// `expect.replies` (Format 21.3): as many replies as items, each meeting
/// the item at its position.
fn compare_replies(
    want: &[ReplyExpect],
    got: &[crate::runtime::turn::ReplyRecord],
    fail: &mut impl FnMut(&str, String, Option<Value>, Option<Value>),
) {
    let text = |s: Option<&str>| s.map(|t| Value::String(t.to_string()));
    if want.len() != got.len() {
        let authors: Vec<&str> = got.iter().map(|g| &*g.author).collect();
        fail(
            "replies",
            format!(
                "replies expected {}, got {} [{}]",
                want.len(),
                got.len(),
                authors.join(", ")
            ),
            Some(Value::from(want.len())),
            Some(Value::from(got.len())),
        );
        return;
    }
    for (k, (w, g)) in want.iter().zip(got).enumerate() {
        for (field, want, got) in [
            ("by", &w.by, Some(&*g.author)),
            ("rule", &w.rule, g.rule.as_deref()),
        ] {
            if let Some(want) = want
                && got != Some(want.as_str())
            {
                fail(
                    &format!("replies/{k}/{field}"),
                    format!(
                        "reply {} {field} expected {}, got {}",
                        k + 1,
                        show(Some(want)),
                        show(got)
                    ),
                    text(Some(want)),
                    text(got),
                );
            }
        }
        if let Some(want) = &w.contains
            && let Some(message) = lacks(&format!("reply {}", k + 1), want, g.reply.as_deref())
        {
            fail(
                &format!("replies/{k}/contains"),
                message,
                text(Some(want)),
                text(g.reply.as_deref()),
            );
        }
    }
}

/// Runs a fixture's turns (Format 21.3) and returns its test result (the
/// coverage minimum is checked by the caller) and what it reached.
pub fn run_fixture(
    fixture: &Fixture,
    file: &str,
    doc: Option<&Document>,
    bundle: &Value,
    root: Option<&std::path::Path>,
    model: Option<&ScenarioModel>,
    runtimes: &dyn Runtimes,
) -> (TestResult, Hits) {
    let mut hits = Hits::default();
    hits.use_scenario(&fixture.scenario_id);
    let err = |reason: String| {
        TestResult::new(
            fixture.fixture_id.clone(),
            Some(file.to_string()),
            Status::Err,
        )
        .because(reason)
    };
    let model_cassette = match (&fixture.cassette, root) {
        (None, _) => None,
        (Some(rel), Some(root)) => match cassette_path(root, rel) {
            Err(e) => return (err(e), hits),
            Ok(p) => match crate::runtime::chat::Cassette::read(&p) {
                Ok(c) => Some(c),
                Err(e) => return (err(format!("MODEL_CASSETTE: {e}")), hits),
            },
        },
        (Some(_), None) => {
            return (
                err("a cassette is read from a pack directory; this run has none".into()),
                hits,
            )
        }
    };
    let settings = Settings {
        scenario: fixture.scenario_id.clone(),
        seed: fixture.seed,
        difficulty: fixture.difficulty.clone(),
        model_answers: fixture
            .mocks
            .as_ref()
            .map(|m| m.model.clone())
            .unwrap_or_default(),
        model_cassette,
    };
    let mut runner = match runtimes.start(fixture.runtime(), bundle, &settings) {
        Ok(r) => r,
        Err(reason) => {
            return (
                TestResult::new(
                    fixture.fixture_id.clone(),
                    Some(file.to_string()),
                    Status::Err,
                )
                .because(reason),
                hits,
            )
        }
    };
    let mut failures = Vec::new();
    let mut transcript = String::new();
    let mut last_turn = 0;
    let mut n = 0;
    for (i, t) in fixture.turns.iter().enumerate() {
        // A settings step (the host changes the settings, Format 8.9) or a
        // turn.
        let (label, done) = match &t.settings {
            Some(s) => (
                format!("settings step {}", i + 1),
                runner.change_settings(s).map(|()| None),
            ),
            None => {
                n += 1;
                // The state before, for the transcript's `old → new`.
                let before = runner.session().map(|_| runner.state());
                let r = runner.turn(&t.player_input);
                // The turn as `troupe run` prints it (Format 18.6).
                if let (Ok(r), Some(s), Some(before)) = (&r, runner.session(), &before) {
                    transcript.push_str(&crate::runtime::transcript::turn(
                        s,
                        &t.player_input,
                        before,
                        r,
                        true,
                    ));
                }
                (format!("turn {n}"), r.map(Some))
            }
        };
        if let (Ok(None), Some(settings)) = (&done, &t.settings) {
            transcript.push_str(&format!("\n{label}: settings {settings}\n"));
        }
        match done {
            Ok(None) => {}
            Ok(Some(r)) => {
                last_turn = n;
                if let Some(e) = &t.expect {
                    let state = runner.state();
                    failures.extend(compare(n, e, &r, &state, &format!("/turns/{i}/expect")));
                }
            }
            Err(TurnError::Ended(_)) => {
                failures.push(Failure {
                    message: format!("{label}: the session ended at turn {last_turn}"),
                    pointer: Some(format!("/turns/{i}")),
                    ..Failure::default()
                });
                break;
            }
            Err(TurnError::Other(reason)) => {
                return (
                    TestResult::new(
                        fixture.fixture_id.clone(),
                        Some(file.to_string()),
                        Status::Err,
                    )
                    .because(format!("{label}: {reason}")),
                    hits,
                );
            }
        }
    }
    // What the session evaluated (Format 21.6), and the entries the engine
    // finds active at each message it wrote.
    if let (Some(engine), Some(mut rec)) = (runner.engine(), runner.recorder()) {
        for m in 0..engine.session.messages.len() {
            engine.entries_at_observed(m as u32, Some(&mut rec));
        }
        hits.record(&fixture.scenario_id, model, &rec);
    }
    for f in &mut failures {
        f.file = Some(file.to_string());
        if let (Some(doc), Some(p)) = (doc, &f.pointer)
            && let Some(at) = doc.spans.locate(p)
        {
            f.line = Some(at.line);
            f.column = Some(at.column);
        }
    }
    let mut result =
        TestResult::from_failures(fixture.fixture_id.clone(), Some(file.to_string()), failures);
    result.transcript = transcript;
    (result, hits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result() -> TurnResult {
        TurnResult {
            turn: 1,
            messages: vec!["m2".into(), "m3".into()],
            rule: Some("rude".into()),
            reply: Some("Cheap? My prices are fair, Player.".into()),
            state_delta: json!({"patience": 50})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            firings: vec![crate::runtime::FiringRecord {
                event: Some("cross".into()),
                outcome: None,
                message: "m3".into(),
                signal: None,
            }],
            session_control: crate::runtime::SessionControl::ContinueSession,
            safety_status: crate::runtime::safety::Status::Ok,
            npc_emotion: None,
            ended: false,
            outcome: None,
            score: None,
            replies: Vec::new(),
            signals: Vec::new(),
            diagnostics: Vec::new(),
        }
    }

    /// Format 21.3's example: `fired: []`, `not_fired`, `rule` and
    /// `npc_emotion`.
    #[test]
    fn nothing_fired_not_fired_rule_and_emotion() {
        let state = Map::new();
        let e: Expect = serde_json::from_value(json!({"rule": "rude"})).unwrap();
        assert!(compare(1, &e, &result(), &state, "").is_empty());
        let msgs = |e: serde_json::Value| -> Vec<String> {
            let e: Expect = serde_json::from_value(e).unwrap();
            compare(1, &e, &result(), &state, "/turns/0/expect")
                .into_iter()
                .map(|f| format!("{} @ {}", f.message, f.pointer.unwrap_or_default()))
                .collect()
        };
        assert_eq!(
            msgs(json!({"fired": []})),
            vec!["turn 1: fired expected nothing to fire, got [cross] @ /turns/0/expect/fired"]
        );
        assert_eq!(
            msgs(json!({"not_fired": ["other", "cross"]})),
            vec!["turn 1: not_fired expected 'cross' not to fire, but it fired @ /turns/0/expect/not_fired/1"]
        );
        assert_eq!(
            msgs(json!({"rule": "greet"})),
            vec!["turn 1: rule expected \"greet\", got \"rude\" @ /turns/0/expect/rule"]
        );
        assert_eq!(
            msgs(json!({"npc_emotion": "warm"})),
            vec!["turn 1: npc_emotion expected \"warm\", got null @ /turns/0/expect/npc_emotion"]
        );
        let mut quiet = result();
        quiet.firings.clear();
        let e: Expect =
            serde_json::from_value(json!({"fired": [], "not_fired": ["cross"]})).unwrap();
        assert!(compare(1, &e, &quiet, &state, "").is_empty());
    }

    /// Format 21.3 `replies`, by hand: a turn answered by `vendor` (rule
    /// `rude`) and then a reaction by `guard` (rule `calm`, no text).
    #[test]
    fn replies_are_matched_one_by_one_in_order() {
        use crate::runtime::turn::ReplyRecord;
        use crate::runtime::turn_order::{Chosen, Why};
        let reply = |m: &str, by: &str, rule: &str, text: Option<&str>| ReplyRecord {
            message: m.into(),
            author: by.into(),
            rule: Some(rule.into()),
            reply: text.map(str::to_string),
            chosen: Chosen::because(Why::FirstPresent),
        };
        let mut r = result();
        r.replies = vec![
            reply(
                "m3",
                "vendor",
                "rude",
                Some("Cheap? My prices are fair, Player."),
            ),
            reply("m4", "guard", "calm", None),
        ];
        let state = Map::new();
        let msgs = |e: serde_json::Value| -> Vec<String> {
            let e: Expect = serde_json::from_value(e).unwrap();
            compare(2, &e, &r, &state, "/turns/1/expect")
                .into_iter()
                .map(|f| format!("{} @ {}", f.message, f.pointer.unwrap_or_default()))
                .collect()
        };
        let none: Vec<String> = Vec::new();
        assert_eq!(
            msgs(
                json!({"replies": [{"by": "vendor", "rule": "rude", "contains": "fair"}, {"by": "guard", "rule": "calm"}]})
            ),
            none
        );
        assert_eq!(msgs(json!({"replies": [{}, {}]})), none);
        assert_eq!(
            msgs(json!({"replies": [{}]})),
            vec!["turn 2: replies expected 1, got 2 [vendor, guard] @ /turns/1/expect/replies"]
        );
        assert_eq!(
            msgs(json!({"replies": []})),
            vec!["turn 2: replies expected 0, got 2 [vendor, guard] @ /turns/1/expect/replies"]
        );
        assert_eq!(
            msgs(json!({"replies": [{"by": "guard"}, {"rule": "rude", "contains": "x"}]})),
            vec![
                "turn 2: reply 1 by expected \"guard\", got \"vendor\" @ /turns/1/expect/replies/0/by",
                "turn 2: reply 2 rule expected \"rude\", got \"calm\" @ /turns/1/expect/replies/1/rule",
                "turn 2: reply 2 expected to contain \"x\", got null @ /turns/1/expect/replies/1/contains",
            ]
        );
        // No reply at all: only `replies: []` holds.
        assert!(compare(
            1,
            &serde_json::from_value(json!({"replies": []})).unwrap(),
            &result(),
            &state,
            ""
        )
        .is_empty());
    }

    /// Format 21.3's example.
    #[test]
    fn the_spec_example() {
        let state = json!({"scene.location": "", "patience": 50})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let e: Expect = serde_json::from_value(
            json!({"state": {"patience": 50}, "fired": ["cross"], "reply_contains": "fair", "safety_status": "ok"}),
        )
        .unwrap();
        assert!(compare(1, &e, &result(), &state, "/turns/0/expect").is_empty());
        let e: Expect = serde_json::from_value(json!({"state": {"patience": 60}})).unwrap();
        let f = compare(1, &e, &result(), &state, "/turns/0/expect");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].message, "turn 1: state.patience expected 60, got 50");
        assert_eq!(
            f[0].pointer.as_deref(),
            Some("/turns/0/expect/state/patience")
        );
        let e: Expect = serde_json::from_value(json!({"state": {"patience": 50.0}, "safety_status": "redirect", "npc_emotion_not": "x", "ended": true, "outcome": "win"})).unwrap();
        let msgs: Vec<String> = compare(2, &e, &result(), &state, "")
            .into_iter()
            .map(|f| f.message)
            .collect();
        assert_eq!(
            msgs,
            vec![
                "turn 2: safety_status expected \"redirect\", got \"ok\"",
                "turn 2: ended expected true, got false",
                "turn 2: outcome expected \"win\", got null",
            ]
        );
    }
}

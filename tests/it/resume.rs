//! Resuming a saved session (Format 18.10, issue 37 item 7): a session cut
//! after any step (a turn, a turn to a named character, an undo, a go-to,
//! a settings change) and resumed from its file alone, at the message the
//! cut session was at, goes on with the same bytes, states and turn
//! results as the session that was never interrupted.

use serde_json::{json, Value};
use troupe::{
    Code, ErrorKind, Pack, Proposal, ResumeOptions, Runtime, RuntimeChoice, SessionOptions,
    TurnContext,
};

const NEGOTIATION: &str = "examples/packs/everyday-negotiation";
const HARBOR: &str = "examples/packs/harbor-lights";
const MEETING: &str = "examples/packs/tenants-meeting";

/// What a host does to a session.
#[derive(Debug, Clone)]
enum Step {
    Turn(String),
    To(&'static str, &'static str),
    Undo,
    GoTo(&'static str),
    Settings(Value),
}

fn script(name: &str) -> Vec<Step> {
    let text = std::fs::read_to_string(format!("examples/scripts/{name}")).unwrap();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| Step::Turn(l.to_string()))
        .collect()
}

/// Applies `step`; what it answered, as JSON (a refusal or an ended
/// session is an answer too: the resumed session must give the same one).
fn apply(s: &mut troupe::Session, step: &Step) -> Value {
    match step {
        Step::Turn(t) => match s.turn(t) {
            Ok(r) => serde_json::to_value(r).unwrap(),
            Err(e) => json!({"error": format!("{:?}", e.kind())}),
        },
        Step::To(c, t) => match s.turn_to(c, t) {
            Ok(r) => serde_json::to_value(r).unwrap(),
            Err(e) => json!({"error": format!("{:?}", e.kind())}),
        },
        Step::Undo => json!(s.undo()),
        Step::GoTo(id) => json!(s.go_to(id)),
        Step::Settings(v) => match s.change_settings(v) {
            Ok(r) => json!({"message": r.message, "ended": r.ended}),
            Err(e) => json!({"error": format!("{:?}", e.kind())}),
        },
    }
}

/// Plays `steps` uninterrupted, then for every cut k plays the first k,
/// resumes the file at the cut session's current message, plays the rest
/// and compares answers, states and bytes. Returns the uninterrupted
/// session's answers.
fn same_bytes_at_every_cut(
    pack: &Pack,
    options: impl Fn() -> SessionOptions,
    steps: &[Step],
) -> Vec<Value> {
    let mut whole = pack.start(options()).unwrap();
    let answers: Vec<Value> = steps.iter().map(|s| apply(&mut whole, s)).collect();
    for k in 0..=steps.len() {
        let mut cut = pack.start(options()).unwrap();
        for s in &steps[..k] {
            apply(&mut cut, s);
        }
        let at = cut.current_id().map(str::to_string);
        let mut resumed = pack
            .resume_with(cut.jsonl(), {
                let mut o = ResumeOptions::default();
                o.at = at;
                o
            })
            .unwrap_or_else(|e| panic!("cut {k}: {e}"));
        assert_eq!(resumed.jsonl(), cut.jsonl(), "cut {k}: the file is kept");
        assert_eq!(resumed.current_id(), cut.current_id(), "cut {k}");
        assert_eq!(resumed.state(), cut.state(), "cut {k}: the state");
        assert_eq!(resumed.ended(), cut.ended(), "cut {k}: ended");
        for (i, s) in steps.iter().enumerate().skip(k) {
            assert_eq!(
                apply(&mut resumed, s),
                answers[i],
                "cut {k}, step {i}: {s:?}"
            );
        }
        assert_eq!(resumed.jsonl(), whole.jsonl(), "cut {k}: the same bytes");
        assert_eq!(resumed.state(), whole.state(), "cut {k}");
        assert_eq!(resumed.score(), whole.score(), "cut {k}");
    }
    answers
}

#[test]
fn negotiation_scripts_resume_at_every_cut() {
    let pack = Pack::open(NEGOTIATION).unwrap();
    for (name, seed) in [
        ("used-car-good-deal.txt", 0),
        ("used-car-walkout.txt", 3),
        ("used-car-fatigue.yaml", 7),
        ("used-car-safety.txt", 0),
    ] {
        let steps = if name.ends_with(".yaml") {
            let text = std::fs::read_to_string(format!("examples/scripts/{name}")).unwrap();
            text.lines()
                .filter_map(|l| l.trim().strip_prefix("- "))
                .map(|l| Step::Turn(l.to_string()))
                .collect()
        } else {
            script(name)
        };
        same_bytes_at_every_cut(&pack, || SessionOptions::default().seed(seed), &steps);
    }
}

/// The safety script stops the session: a resumed stopped session refuses
/// the next turn as the uninterrupted one does (Format 18.10 "Ended and
/// stopped"), and an undo then goes on in both.
#[test]
fn a_stopped_session_stays_stopped() {
    let pack = Pack::open(NEGOTIATION).unwrap();
    let mut steps = script("used-car-safety.txt");
    steps.extend([Step::Undo, Step::Turn("Hello again.".into())]);
    let answers = same_bytes_at_every_cut(&pack, SessionOptions::default, &steps);
    // The script's second line stops the session; its third is refused.
    assert_eq!(answers[1]["session_control"], "end_session");
    assert_eq!(answers[2], json!({"error": "Ended"}));
    assert_eq!(answers[3], json!(true));
    assert!(answers[4]["reply"].is_string());
}

/// A turn no rule answers writes the input alone (Format 18.5: no
/// proposal, no reply); that is not a stop (its verdict is ok), so the
/// resumed session goes on as the uninterrupted one does.
#[test]
fn an_unanswered_input_is_not_a_stop() {
    let bundle = json!({"troupe": "0.1", "kind": "bundle",
      "characters": [ch("greaves", "Greaves")],
      "scenarios": [{"id": "flat", "name": "The flat",
        "cast": [{"character": "greaves"}, {"seat": "player", "player": true}],
        "rules": [{"id": "damp", "keywords": ["damp"], "replies": ["The damp is fine."]}]}]});
    let pack = Pack::from_bundle(&bundle.to_string()).unwrap();
    let steps = vec![
        Step::Turn("hello".into()),
        Step::Turn("the damp?".into()),
        Step::Turn("nothing".into()),
        Step::Turn("damp again".into()),
    ];
    let answers = same_bytes_at_every_cut(&pack, SessionOptions::default, &steps);
    assert!(answers[0]["reply"].is_null(), "{}", answers[0]);
    assert_eq!(answers[1]["reply"], "The damp is fine.");
    assert!(answers[3]["reply"].is_string());
}

/// Branches (undo, go-to) and a settings change (Format 8.9) in the middle:
/// the branch point, the settings and the turn order come from the file.
#[test]
fn branches_and_settings_resume() {
    let pack = Pack::open(NEGOTIATION).unwrap();
    let steps = vec![
        Step::Turn("Good afternoon! It's a lovely car.".into()),
        Step::Turn("Let me think about it.".into()),
        Step::Settings(json!({"difficulty": "adversarial"})),
        Step::Turn("Let me think about it.".into()),
        Step::Undo,
        Step::Turn("I can offer 8,500 today, paid in full.".into()),
        Step::GoTo("m3"),
        Step::Turn("Hmm, I don't know.".into()),
        Step::Settings(json!({"difficulty": "hard"})),
        Step::Undo,
        Step::Turn("Could I see the service book?".into()),
        Step::Undo,
        Step::Undo,
        Step::Turn("Let's shake on it and sign the paperwork.".into()),
    ];
    same_bytes_at_every_cut(&pack, || SessionOptions::default().seed(11), &steps);
}

#[test]
fn harbor_scripts_resume_at_every_cut() {
    let pack = Pack::open(HARBOR).unwrap();
    for name in ["harbor-relight.txt", "harbor-truth.txt"] {
        same_bytes_at_every_cut(&pack, || SessionOptions::default().seed(5), &script(name));
    }
}

fn ch(id: &str, name: &str) -> Value {
    json!({"id": id, "name": name, "fictional": true, "age_band": "adult"})
}

/// Issue 37's landlord, neighbour and plumber (the property test's pack):
/// rules owned by each, reactions, the floor handed by a rule, a narrator
/// `reply_as`, under `strategy`.
fn ensemble(strategy: &str, allow_self: bool) -> Pack {
    let bundle = json!({"troupe": "0.1", "kind": "bundle",
    "characters": [ch("greaves", "Greaves"), ch("priya", "Priya"), ch("ozzy", "Ozzy")],
    "scenarios": [{"id": "flat", "name": "The flat",
      "turn_order": {"strategy": strategy, "max_replies_per_turn": 3,
                     "allow_self_responses": allow_self},
      "cast": [{"character": "greaves", "talkativeness": 60}, {"character": "priya"},
               {"character": "ozzy", "talkativeness": 20}, {"seat": "player", "player": true}],
      "rules": [
        {"id": "g-damp", "by": "greaves", "keywords": ["damp"], "replies": ["The damp is fine."]},
        {"id": "g-leave", "by": "greaves", "keywords": ["leave"],
         "changes": [{"leave": ["greaves"]}], "replies": ["I'm off."]},
        {"id": "g-any", "by": "greaves", "replies": ["Rent is due.", "Pay up.", "Mind the stairs."]},
        {"id": "p-damp", "by": "priya", "on": "reply", "keywords": ["damp", "rent"],
         "replies": ["Greaves, it is mould."]},
        {"id": "p-floor", "by": "priya", "keywords": ["pipes"],
         "changes": [{"set": {"scene.present": ["ozzy", "priya"]}}], "replies": ["Ask Ozzy."]},
        {"id": "p-any", "by": "priya", "replies": ["Hmm.", "Right.", "Go on."]},
        {"id": "o-back", "by": "ozzy", "keywords": ["back"],
         "changes": [{"enter": ["greaves"]}], "replies": ["Fetching him."]},
        {"id": "o-any", "by": "ozzy", "replies": ["Pipes are pipes.", "Spanner, please."]},
        {"id": "o-mould", "by": "ozzy", "on": "reply", "keywords": ["mould"],
         "replies": ["Mould is my trade."]},
        {"id": "knock", "reply_as": "narrator", "keywords": ["knock"], "priority": 5,
         "replies": ["Someone knocks."]}
      ]}]});
    Pack::from_bundle(&bundle.to_string()).unwrap()
}

/// Turn order (Format 18.9) is read from the path: the last speaker for
/// `natural`'s draw and `allow_self_responses`, round robin's successor,
/// the floor handed by a rule; draws are keyed by the seed and message ID.
#[test]
fn ensemble_turn_order_resumes_at_every_cut() {
    let words = [
        "hello", "damp", "leave", "pipes", "back", "knock", "Priya?", "@ozzy hi", "rent",
        "Greaves!",
    ];
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for (strategy, allow_self) in [
        ("natural", false),
        ("natural", true),
        ("round_robin", false),
        ("all", false),
    ] {
        let pack = ensemble(strategy, allow_self);
        for seed in 0..3u64 {
            let mut steps: Vec<Step> = (0..9)
                .map(|_| {
                    x = x
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    Step::Turn(words[(x >> 33) as usize % words.len()].to_string())
                })
                .collect();
            steps.insert(3, Step::To("priya", "And you?"));
            steps.insert(6, Step::Undo);
            steps.push(Step::GoTo("m2"));
            steps.push(Step::Turn("hello".into()));
            steps.push(Step::To("ozzy", "pipes"));
            same_bytes_at_every_cut(&pack, || SessionOptions::default().seed(seed), &steps);
        }
    }
}

/// A recorded session of the pack resumed at any of its messages, then one
/// input, writes what the whole file resumed and sent there (go-to) does.
#[test]
fn recorded_sessions_resume_at_every_message() {
    let pack = Pack::open(HARBOR).unwrap();
    for name in pack.recorded() {
        let text = std::fs::read_to_string(format!("{HARBOR}/sessions/{name}")).unwrap();
        let ids: Vec<String> = pack
            .recorded_history(name)
            .unwrap()
            .message_ids()
            .iter()
            .map(|s| s.to_string())
            .collect();
        for id in &ids {
            let mut at = pack
                .resume_with(&text, ResumeOptions::default().at(id.clone()))
                .unwrap();
            let mut whole = pack.resume(&text).unwrap();
            assert!(whole.go_to(id));
            assert_eq!(at.state(), whole.state(), "{name} at {id}");
            let a = apply(&mut at, &Step::Turn("Good evening.".into()));
            let b = apply(&mut whole, &Step::Turn("Good evening.".into()));
            assert_eq!(a, b, "{name} at {id}");
            assert_eq!(at.jsonl(), whole.jsonl(), "{name} at {id}");
            assert!(at.jsonl().starts_with(text.as_str()), "the file is kept");
        }
    }
}

/// What resume refuses (Format 18.10), with nothing written.
#[test]
fn resume_refuses_what_it_cannot_continue() {
    let pack = Pack::open(NEGOTIATION).unwrap();
    let mut s = pack.start(SessionOptions::default()).unwrap();
    s.turn("Hello").unwrap();
    let text = s.jsonl().to_string();
    // An unknown resume point: UNKNOWN_REF at `at`, with the closest ID.
    let e = pack
        .resume_with(&text, ResumeOptions::default().at("m9"))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Refused);
    assert_eq!(e.diagnostics()[0].code, Code::UnknownRef);
    assert_eq!(e.diagnostics()[0].location.pointer.as_deref(), Some("at"));
    // A session that does not conform: the check's diagnostics.
    let bad = text.replace("\"author\":\"player\"", "\"author\":\"nobody\"");
    assert_eq!(pack.resume(&bad).unwrap_err().kind(), ErrorKind::Invalid);
    // An ID the session would write later (3 messages, `m4` is next): ORDER.
    let renamed = text.replace("\"m3\"", "\"m4\"");
    let e = pack.resume(&renamed).unwrap_err();
    assert_eq!(
        e.diagnostics()[0].location.pointer.as_deref(),
        Some("message:m4")
    );
    assert_eq!(e.kind(), ErrorKind::Refused);
    assert_eq!(e.diagnostics()[0].code, Code::Order);
    // The fake runtime writes nothing, so it cannot go on with a file.
    let e = pack
        .resume_with(&text, ResumeOptions::default().runtime(RuntimeChoice::Fake))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Refused);
    // Another pack's session does not conform to this one.
    let harbor = Pack::open(HARBOR).unwrap();
    assert_eq!(harbor.resume(&text).unwrap_err().kind(), ErrorKind::Invalid);
}

/// With `out`, the file is written with the resumed lines first, then
/// every new line as it is written.
#[test]
fn resume_writes_the_file_first_when_asked() {
    let pack = Pack::open(NEGOTIATION).unwrap();
    let mut s = pack.start(SessionOptions::default()).unwrap();
    s.turn("Hello").unwrap();
    let dir = std::env::temp_dir().join(format!("troupe-resume-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("s.jsonl");
    let mut r = pack
        .resume_with(s.jsonl(), ResumeOptions::default().out(&out))
        .unwrap();
    r.turn("What's your best price?").unwrap();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), r.jsonl());
    let _ = std::fs::remove_dir_all(&dir);
}

/// An adapter (Format 18.7): its proposals carry a change, so the state
/// the resumed session starts from must be the recorded one.
struct Echo;

impl Runtime for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn propose(&mut self, ctx: &TurnContext<'_>) -> Option<Proposal> {
        Some(Proposal::adapter(
            Some(format!("You said: {}", ctx.input)),
            vec![json!({"add": {"patience": -1}})],
        ))
    }
}

/// Resume under an adapter (Format 18.10: the file is trusted, not
/// replayed): a session played by the adapter, cut after each turn and
/// resumed with the adapter, writes the uninterrupted session's bytes.
#[test]
fn an_adapter_session_resumes() {
    let pack = Pack::open(NEGOTIATION).unwrap();
    let inputs = ["Hello", "{{user}} here", "Let me think about it.", "Bye"];
    let mut whole = pack.start(SessionOptions::default().adapter(Echo)).unwrap();
    for i in inputs {
        whole.turn(i).unwrap();
    }
    assert_eq!(whole.state()["patience"], json!(56));
    for k in 0..=inputs.len() {
        let mut cut = pack.start(SessionOptions::default().adapter(Echo)).unwrap();
        for i in &inputs[..k] {
            cut.turn(i).unwrap();
        }
        let mut resumed = pack
            .resume_with(
                cut.jsonl(),
                ResumeOptions::default().runtime(RuntimeChoice::Adapter(Box::new(Echo))),
            )
            .unwrap();
        for i in &inputs[k..] {
            resumed.turn(i).unwrap();
        }
        assert_eq!(resumed.jsonl(), whole.jsonl(), "cut {k}");
        assert_eq!(resumed.state(), whole.state(), "cut {k}");
    }
}

/// Issue 37 item 9: the ensemble example's recorded session (natural order
/// with a draw, addressing by name and by an @-alias, reactions, an event at
/// a reaction, the narrator's `reply_as`, an outcome) is exactly what an
/// uninterrupted run of its inputs writes. Cut after any turn and resumed,
/// the rest of its inputs write the same bytes; resumed at any message
/// (Format 18.10 `--at`), an input writes what the uninterrupted session
/// sent back there (go-to) writes.
#[test]
fn the_ensemble_example_session_resumes_at_every_message() {
    let pack = Pack::open(MEETING).unwrap();
    let text = std::fs::read_to_string(format!("{MEETING}/sessions/letter.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let msgs: Vec<Value> = lines[1..]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let is_input = |m: &Value| m["author"] == "tenant";
    // (index in msgs, text) of every player input, in file order.
    let inputs: Vec<(usize, String)> = msgs
        .iter()
        .enumerate()
        .filter(|(_, m)| is_input(m))
        .map(|(i, m)| (i, m["parts"][0]["text"].as_str().unwrap().to_string()))
        .collect();
    let uninterrupted = || {
        let mut s = pack.start(SessionOptions::default()).unwrap();
        for (_, t) in &inputs {
            s.turn(t).unwrap();
        }
        s
    };
    assert_eq!(uninterrupted().jsonl(), text, "the recording is the run");
    let mut cuts = 0;
    for (k, m) in msgs.iter().enumerate() {
        let id = m["id"].as_str().unwrap();
        // A turn ends at this message: the rest of the inputs give the file.
        if msgs.get(k + 1).is_none_or(is_input) {
            let prefix: String = lines[..k + 2].iter().map(|l| format!("{l}\n")).collect();
            let mut s = pack.resume(&prefix).unwrap();
            for (_, t) in inputs.iter().filter(|(i, _)| *i > k) {
                s.turn(t).unwrap();
            }
            assert_eq!(s.jsonl(), text, "cut after {id}");
            cuts += 1;
        }
        let mut at = pack
            .resume_with(&text, ResumeOptions::default().at(id.to_string()))
            .unwrap();
        let mut whole = uninterrupted();
        assert!(whole.go_to(id));
        assert_eq!(at.state(), whole.state(), "at {id}");
        for input in ["Good evening.", "Ruth, what's in the log?"] {
            let a = apply(&mut at, &Step::Turn(input.into()));
            let b = apply(&mut whole, &Step::Turn(input.into()));
            assert_eq!(a, b, "at {id}");
        }
        assert_eq!(at.jsonl(), whole.jsonl(), "at {id}");
    }
    assert_eq!((msgs.len(), cuts), (13, 6), "m1 and the five turns");
}

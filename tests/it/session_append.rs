//! `Session::append_lines` (Format 18.10, issue 39): a live session goes on
//! with the lines another writer appended to its file, checking and
//! stepping only those, and becomes — byte for byte — the session that
//! resuming the whole file gives; a line that does not follow is refused
//! with the diagnostics resuming would give, and the session is unchanged.

use serde_json::{json, Value};
use troupe::{ErrorKind, Pack, ResumeOptions, Session, SessionOptions};

const NEGOTIATION: &str = "examples/packs/everyday-negotiation";
const MEETING: &str = "examples/packs/tenants-meeting";

/// What a writer does to its session.
enum Step {
    Turn(&'static str),
    Undo,
    GoTo(&'static str),
    Settings(Value),
}

fn apply(s: &mut Session, step: &Step) {
    match step {
        Step::Turn(t) => {
            let _ = s.turn(t);
        }
        Step::Undo => {
            s.undo();
        }
        Step::GoTo(id) => {
            s.go_to(id);
        }
        Step::Settings(v) => {
            let _ = s.change_settings(v);
        }
    }
}

/// The session `text` resumed whole at `at`.
fn resumed(pack: &Pack, text: &str, at: Option<&str>) -> Session {
    let mut o = ResumeOptions::default();
    o.at = at.map(str::to_string);
    pack.resume_with(text, o).unwrap()
}

/// `follower` caught up with `writer`: the lines it lacks, at the writer's
/// current message; then it is the whole file resumed there.
fn catch_up(pack: &Pack, follower: &mut Session, writer: &Session) -> usize {
    let new = &writer.jsonl()[follower.jsonl().len()..];
    let n = follower
        .append_lines(pack, new, writer.current_id())
        .unwrap_or_else(|e| panic!("{e}: {:?}", e.diagnostics()));
    let whole = resumed(pack, writer.jsonl(), writer.current_id());
    assert_eq!(follower.jsonl(), whole.jsonl());
    assert_eq!(follower.current_id(), whole.current_id());
    assert_eq!(follower.state(), whole.state());
    assert_eq!(follower.ended(), whole.ended());
    assert_eq!(follower.outcome(), whole.outcome());
    n
}

/// Two copies of one session take turns writing (each catches up with the
/// other's lines first): every catch-up gives the whole file resumed, and
/// a turn taken after it writes the bytes the resumed session writes.
fn ping_pong(pack_dir: &str, steps: &[Step]) {
    let pack = Pack::open(pack_dir).unwrap();
    let mut a = pack.start(SessionOptions::default().seed(3)).unwrap();
    let mut b = pack.start(SessionOptions::default().seed(3)).unwrap();
    assert_eq!(a.jsonl(), b.jsonl());
    let mut appended = 0;
    for (i, step) in steps.iter().enumerate() {
        let (writer, follower) = if i % 2 == 0 {
            (&mut a, &mut b)
        } else {
            (&mut b, &mut a)
        };
        let before = writer.jsonl().len();
        apply(writer, step);
        let lines = writer.jsonl()[before..].lines().count();
        let mut whole = resumed(&pack, writer.jsonl(), writer.current_id());
        // The follower is one step behind: it catches up, then both go on.
        appended += catch_up(&pack, follower, writer);
        let text = "I can offer 7,000 cash today.";
        let mut f = resumed(&pack, follower.jsonl(), follower.current_id());
        let _ = f.turn(text);
        let _ = whole.turn(text);
        assert_eq!(f.jsonl(), whole.jsonl(), "step {i}");
        assert!(appended >= lines);
    }
    assert_eq!(a.jsonl(), b.jsonl());
}

#[test]
fn appended_lines_give_the_session_the_whole_file_resumes() {
    ping_pong(
        NEGOTIATION,
        &[
            Step::Turn("Hello! What's your best price?"),
            Step::Turn("That is too much for me."),
            Step::Undo,
            Step::Turn("I can offer 7,000."),
            Step::Settings(json!({"difficulty": "hard"})),
            Step::GoTo("m3"),
            Step::Turn("What about 8,000?"),
            Step::Turn("Deal?"),
        ],
    );
    ping_pong(
        MEETING,
        &[
            Step::Turn("Ruth, what does the log say?"),
            Step::Turn("Thanks. Anyone else?"),
            Step::Undo,
            Step::Turn("Let's vote."),
        ],
    );
}

/// The follower's own turns between catch-ups are read by its checker: a
/// line of the writer whose parent is one of them is accepted.
#[test]
fn a_session_that_played_on_catches_up_again() {
    let pack = Pack::open(NEGOTIATION).unwrap();
    let mut a = pack.start(SessionOptions::default()).unwrap();
    a.turn("Hello!").unwrap();
    let mut b = pack.resume(a.jsonl()).unwrap();
    b.turn("What's your best price?").unwrap();
    assert_eq!(catch_up(&pack, &mut a, &b), 2);
    a.turn("Too much.").unwrap();
    assert_eq!(catch_up(&pack, &mut b, &a), 2);
    b.turn("7,000?").unwrap();
    assert_eq!(catch_up(&pack, &mut a, &b), 2);
    // No new line: only the resume point moves.
    b.undo();
    assert_eq!(catch_up(&pack, &mut a, &b), 0);
    assert_eq!(a.current_id(), b.current_id());
}

/// A diagnostic's code, pointer and line.
type Described = (String, Option<String>, Option<u32>);

/// The error's kind and each diagnostic, described.
fn described(e: &troupe::Error) -> (ErrorKind, Vec<Described>) {
    let v = serde_json::to_value(e.diagnostics()).unwrap();
    let diags = v
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                d.pointer("/location/pointer")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                d.pointer("/location/line")
                    .and_then(Value::as_u64)
                    .map(|l| l as u32),
            )
        })
        .collect();
    (e.kind(), diags)
}

/// Lines that do not follow `s`, made from the lines a turn would add to
/// it: (what, the lines, a code the refusal carries).
fn bad_lines(pack: &Pack, s: &Session) -> Vec<(&'static str, String, &'static str)> {
    let mut other = pack.resume(s.jsonl()).unwrap();
    other.turn("That is too much for me.").unwrap();
    let good = other.jsonl()[s.jsonl().len()..].to_string();
    let first: Value = serde_json::from_str(good.lines().next().unwrap()).unwrap();
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v = first.clone();
        f(&mut v);
        format!("{}\n", serde_json::to_string(&v).unwrap())
    };
    let second_line = format!("{}\n", s.jsonl().lines().nth(1).unwrap());
    vec![
        ("not JSON", "{\"id\": \"m9\",\n".to_string(), "PARSE"),
        ("an empty line", "\n".to_string(), "PARSE"),
        ("an ID used before", second_line, "DUPLICATE_ID"),
        (
            "an unknown parent",
            with(&|v| v["parent"] = json!("m77")),
            "ORDER",
        ),
        (
            "an unknown author",
            with(&|v| v["author"] = json!("ghost")),
            "UNKNOWN_REF",
        ),
        (
            "an unknown event",
            with(&|v| v["firings"] = json!([{"event": "no_such_event"}])),
            "UNKNOWN_REF",
        ),
        (
            "an ID the session writes later",
            with(&|v| v["id"] = json!("m40")),
            "ORDER",
        ),
        (
            "a good line, then a bad one",
            format!("{good}{{}}\n"),
            "SCHEMA",
        ),
        (
            "a bad line, then a bad JSON line",
            format!("{}{{\n", with(&|v| v["author"] = json!("ghost"))),
            "PARSE",
        ),
    ]
}

#[test]
fn a_line_that_does_not_follow_is_refused_and_changes_nothing() {
    let pack = Pack::open(NEGOTIATION).unwrap();
    let mut s = pack.start(SessionOptions::default()).unwrap();
    s.turn("Hello! What's your best price?").unwrap();
    // Once with a fresh checker, once after a first good catch-up.
    for warm in [false, true] {
        if warm {
            let mut s2 = pack.resume(s.jsonl()).unwrap();
            s2.turn("A first turn elsewhere.").unwrap();
            let n = s
                .append_lines(&pack, &s2.jsonl()[s.jsonl().len()..], None)
                .unwrap();
            assert_eq!(n, 2);
        }
        let text = s.jsonl().to_string();
        let (current, state) = (s.current_id().map(str::to_string), s.state());
        for (what, line, code) in bad_lines(&pack, &s) {
            let e = s.append_lines(&pack, &line, None).unwrap_err();
            let whole = pack.resume(&format!("{text}{line}")).unwrap_err();
            let (kind, diags) = described(&e);
            assert_eq!(
                (kind, &diags),
                (whole.kind(), &described(&whole).1),
                "{what}"
            );
            assert!(diags.iter().any(|d| d.0 == code), "{what}: {diags:?}");
            assert_eq!(s.jsonl(), text, "{what}");
            assert_eq!(s.current_id().map(str::to_string), current, "{what}");
            assert_eq!(s.state(), state, "{what}");
        }
        // A refusal leaves the session able to go on: the good lines follow.
        let mut w = pack.resume(&text).unwrap();
        w.turn("That is too much for me.").unwrap();
        assert_eq!(catch_up(&pack, &mut s, &w), 2);
        let at = s.current_id().map(str::to_string);
        let e = s.append_lines(&pack, "", Some("m99")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Refused);
        assert_eq!(s.current_id().map(str::to_string), at);
    }
}

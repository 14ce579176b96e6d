//! Snapshots (insta, in `snapshots/`) of the example sessions: the state at
//! every message, whether the story has ended, every rendered part and
//! summary, and who knows them (Format 7.4, 8.6, 9.3, 10.5, 12.5). Each
//! snapshot is reviewed as a behaviour change.

use std::path::Path;

use serde_json::{json, Value};
use troupe::internals::engine::Engine;

/// The engine over an example session (the internal open: the snapshots
/// read every message's parts rendered, which the API's `History` does not
/// offer).
fn open(bundle: &str, session: &str) -> Engine {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    match troupe::internals::open::open_engine(&root.join(bundle), Some(&root.join(session))) {
        Ok(e) => e,
        Err(d) => panic!("example does not load: {d:#?}"),
    }
}

fn walk(e: &Engine) -> Value {
    let mut out = vec![json!({"at": null, "state": Value::Object(e.flatten(e.initial()))})];
    for (m, msg) in e.session.messages.iter().enumerate() {
        let m = m as u32;
        let st = e.state_at(m);
        let parts: Vec<Value> = (0..msg.parts.len())
            .map(|i| {
                json!({
                    "text": e.render_part(m, i),
                    "known_by": e.knows_part(m, i),
                })
            })
            .collect();
        let mut entry = json!({
            "at": &*msg.id,
            "turn": st.turn,
            "round": st.round,
            "ended": e.ending(&st).map(|x| json!({"id": x.id, "outcome": x.outcome, "message": x.message})),
            "state": Value::Object(e.flatten(&st)),
            "parts": parts,
        });
        if msg.summary.is_some() {
            entry["summary"] = json!({
                "text": e.render_summary(m),
                "known_by": e.knows_summary(m),
            });
        }
        out.push(entry);
    }
    Value::Array(out)
}

fn snapshot(name: &str, value: &Value) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    settings.bind(|| insta::assert_snapshot!(name, text));
}

#[test]
fn harbor_lights_walkthrough() {
    let e = open(
        "examples/bundles/harbor-lights.bundle.json",
        "examples/bundles/sessions/harbor-lights.walkthrough.jsonl",
    );
    snapshot("harbor-lights-walkthrough", &walk(&e));
}

/// The ensemble example (issue 37 item 9): three characters, each saying
/// its own lines, under `natural` order with reactions (Format 18.9).
#[test]
fn tenants_meeting_letter() {
    let e = open(
        "examples/packs/tenants-meeting",
        "examples/packs/tenants-meeting/sessions/letter.jsonl",
    );
    snapshot("tenants-meeting-letter", &walk(&e));
}

#[test]
fn tiny_session() {
    let e = open(
        "examples/bundles/tiny.bundle.json",
        "examples/bundles/tiny.session.jsonl",
    );
    snapshot("tiny-session", &walk(&e));
}

/// at, turn, trust of mara/tobias/ines/ada, clues, avg_trust, present, ended.
type Row = (
    &'static str,
    i64,
    [i64; 4],
    i64,
    f64,
    &'static [&'static str],
    bool,
);

/// The hand-derived table of `examples/README.md` ("State along the main
/// path"): turn, trust of mara/tobias/ines/ada, clues, avg_trust, present.
#[test]
fn harbor_lights_matches_the_readme_table() {
    let e = open(
        "examples/bundles/harbor-lights.bundle.json",
        "examples/bundles/sessions/harbor-lights.walkthrough.jsonl",
    );
    let rows: &[Row] = &[
        (
            "m1",
            0,
            [30, 30, 30, 30],
            0,
            30.0,
            &["mara", "ines", "ada"],
            false,
        ),
        (
            "m4",
            2,
            [50, 30, 30, 30],
            0,
            36.7,
            &["mara", "ines", "ada"],
            false,
        ),
        (
            "m7",
            3,
            [50, 60, 30, 30],
            0,
            46.7,
            &["mara", "tobias", "ines", "ada"],
            false,
        ),
        (
            "m9",
            4,
            [50, 60, 30, 30],
            0,
            46.7,
            &["tobias", "ada"],
            false,
        ),
        (
            "m12",
            5,
            [50, 70, 50, 30],
            3,
            56.7,
            &["tobias", "ines", "ada"],
            false,
        ),
        (
            "m13",
            6,
            [50, 70, 60, 30],
            3,
            60.0,
            &["tobias", "ines", "ada"],
            true,
        ),
        (
            "m6b",
            2,
            [50, 30, 30, 30],
            1,
            36.7,
            &["mara", "ines", "ada"],
            false,
        ),
    ];
    for (at, turn, trust, clues, avg, present, ended) in rows {
        let m = e.session.find(at).unwrap();
        let st = e.state_at(m);
        let flat = e.flatten(&st);
        let num = |k: &str| flat.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
        assert_eq!(st.turn, *turn, "turn at {at}");
        for (who, t) in ["mara", "tobias", "ines", "ada"].iter().zip(trust) {
            assert_eq!(
                num(&format!("trust.{who}")),
                *t as f64,
                "trust.{who} at {at}"
            );
        }
        assert_eq!(num("clues"), *clues as f64, "clues at {at}");
        assert_eq!(num("avg_trust"), *avg, "avg_trust at {at}");
        assert_eq!(flat["scene.present"], json!(present), "present at {at}");
        assert_eq!(st.ending.is_some(), *ended, "ended at {at}");
    }
}

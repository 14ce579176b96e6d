//! The engine refuses non-conforming sessions with located diagnostics,
//! never a panic (Format 12.1, 8.5, 17.1): a session file read against its
//! pack through the API (`Pack::history_file`, checked and compiled).

use std::path::PathBuf;

use troupe::{Diagnostic, Pack};

const BUNDLE: &str = r#"{"troupe": "0.1", "kind": "bundle",
 "characters": [{"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult"},
                {"id": "ana", "name": "Ana", "fictional": true, "age_band": "adult"}],
 "scenarios": [{"id": "s", "name": "S",
   "cast": [{"character": "kai"}, {"character": "ana", "player": true}],
   "variables": [{"id": "gold", "type": "int"},
                 {"id": "rich", "type": "bool", "derived": "state.gold > 10"}]}]}"#;

const HEADER: &str = r#"{"troupe":"0.1","kind":"session","scenario":"s"}"#;

fn refuse(lines: &[&str]) -> Vec<Diagnostic> {
    let dir = tempfile::tempdir().unwrap();
    let bundle: PathBuf = dir.path().join("b.json");
    let session: PathBuf = dir.path().join("s.jsonl");
    std::fs::write(&bundle, BUNDLE).unwrap();
    let mut text = String::from(HEADER);
    for l in lines {
        text.push('\n');
        text.push_str(l);
    }
    std::fs::write(&session, text).unwrap();
    let pack = Pack::open(&bundle).unwrap_or_else(|e| panic!("{:?}", e.diagnostics()));
    match pack.history_file(&session) {
        Ok(_) => panic!("the engine accepted a non-conforming session"),
        Err(e) => e.diagnostics().to_vec(),
    }
}

fn has(diags: &[Diagnostic], code: &str, at: &str) -> bool {
    diags
        .iter()
        .any(|d| d.code.as_str() == code && d.location.pointer.as_deref() == Some(at))
}

#[test]
fn a_conforming_session_loads() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b.json"), BUNDLE).unwrap();
    let s = format!(
        "{HEADER}\n{{\"id\":\"1\",\"author\":\"ana\",\"changes\":[{{\"set\":{{\"gold\":11}}}}]}}\n"
    );
    std::fs::write(dir.path().join("s.jsonl"), s).unwrap();
    let pack = Pack::open(dir.path().join("b.json")).unwrap();
    let history = pack.history_file(dir.path().join("s.jsonl")).unwrap();
    let flat = history.state_at("1").unwrap();
    assert_eq!(flat["rich"], serde_json::json!(true));
}

#[test]
fn an_unknown_parent_is_order() {
    let d = refuse(&[
        r#"{"id":"1","author":"kai"}"#,
        r#"{"id":"2","parent":"9","author":"kai"}"#,
    ]);
    assert!(has(&d, "ORDER", "message:2/parent"), "{d:#?}");
}

#[test]
fn a_cycle_of_parents_is_order() {
    let d = refuse(&[
        r#"{"id":"a","parent":"b","author":"kai"}"#,
        r#"{"id":"b","parent":"a","author":"kai"}"#,
    ]);
    assert!(has(&d, "ORDER", "message:a/parent"), "{d:#?}");
}

#[test]
fn a_duplicate_id_is_duplicate_id() {
    let d = refuse(&[
        r#"{"id":"1","author":"kai"}"#,
        r#"{"id":"1","author":"kai"}"#,
    ]);
    assert!(has(&d, "DUPLICATE_ID", "message:1/id"), "{d:#?}");
}

#[test]
fn changes_to_undeclared_derived_or_with_wrong_types() {
    let d = refuse(&[
        r#"{"id":"1","author":"kai","changes":[{"set":{"nope":1}},{"set":{"rich":true}},{"set":{"gold":"x"}}]}"#,
    ]);
    assert!(
        has(&d, "UNKNOWN_VARIABLE", "message:1/changes/0/set/nope"),
        "{d:#?}"
    );
    assert!(
        has(&d, "DERIVED_SET", "message:1/changes/1/set/rich"),
        "{d:#?}"
    );
    assert!(
        has(&d, "TYPE_MISMATCH", "message:1/changes/2/set/gold"),
        "{d:#?}"
    );
}

#[test]
fn a_truncated_last_line_is_parse_and_earlier_lines_are_read() {
    let lines = [
        r#"{"id":"1","author":"kai"}"#,
        r#"{"id":"2","parent":"1","au"#,
    ];
    let d = refuse(&lines);
    assert!(d.iter().any(|d| d.code.as_str() == "PARSE"), "{d:#?}");
    let text = format!("{HEADER}\n{}\n{}", lines[0], lines[1]);
    let l = troupe::internals::load::parse_session("s.jsonl", text.as_bytes());
    assert_eq!(l.value.unwrap().len(), 1);
}

/// Format 16.2: a player's input is a message part that renders to itself,
/// so an input over 1 MiB is LIMIT and the turn is not taken — nothing
/// written, the session where it was — while 1 MiB exactly is a turn whose
/// session file reads back (16.1's line bound holds).
#[test]
fn an_input_over_the_rendering_budget_is_not_taken() {
    let pack = Pack::from_bundle(BUNDLE).unwrap();
    let mut s = pack.start(troupe::SessionOptions::default()).unwrap();
    let before = s.jsonl().to_string();
    let e = s.turn(&"x".repeat((1 << 20) + 1)).unwrap_err();
    assert_eq!(e.kind(), troupe::ErrorKind::Limit, "{e}");
    assert_eq!(e.diagnostics()[0].code.as_str(), "LIMIT");
    assert_eq!(s.jsonl(), before, "nothing written");
    s.turn(&"x".repeat(1 << 20)).unwrap();
    pack.history(s.jsonl()).unwrap();
}

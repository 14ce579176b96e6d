//! The `--json` and JUnit reports of `troupe test` (Format 21.2), pinned by
//! insta snapshots in `snapshots/testing/`, and the JUnit file checked
//! against the shape of the JUnit XSD that CI tools read.

use std::path::Path;

use quick_xml::events::Event;
use quick_xml::Reader;
use troupe::internals::testing::Installed;
use troupe::internals::testing::{run, Options, Quiet, Run};
use troupe::internals::testing::{to_json, to_junit, to_text};

fn run_pack(path: &str) -> Run {
    run(
        Path::new(path),
        &mut Options::default(),
        &Installed,
        &mut Quiet,
    )
    .unwrap()
}

fn pin(name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots/testing"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(name, text));
}

/// Checks the JUnit shape CI tools read (the Jenkins/Ant JUnit XSD):
/// `<testsuites>` of `<testsuite name tests failures errors skipped>` of
/// `<testcase classname name>` whose only children are `failure`, `error`
/// or `skipped` with a `message`; the counts add up; no time attributes.
fn check_junit_shape(xml: &str) {
    let mut reader = Reader::from_str(xml);
    let mut stack: Vec<String> = Vec::new();
    let mut suites = 0;
    let mut root_counts = [0usize; 4];
    let mut sums = [0usize; 4];
    let mut suite_counts = [0usize; 4];
    let mut suite_seen = [0usize; 4];
    let attrs = |e: &quick_xml::events::BytesStart<'_>| -> Vec<(String, String)> {
        e.attributes()
            .map(|a| {
                let a = a.unwrap();
                (
                    String::from_utf8(a.key.as_ref().to_vec()).unwrap(),
                    a.unescape_value().unwrap().into_owned(),
                )
            })
            .collect()
    };
    let count = |a: &[(String, String)], k: &str| -> usize {
        a.iter()
            .find(|(x, _)| x == k)
            .unwrap_or_else(|| panic!("no {k}"))
            .1
            .parse()
            .unwrap()
    };
    loop {
        let ev = reader.read_event().unwrap();
        let (start, empty) = match &ev {
            Event::Start(e) => (Some(e.clone()), false),
            Event::Empty(e) => (Some(e.clone()), true),
            _ => (None, false),
        };
        if let Some(e) = start {
            let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
            let a = attrs(&e);
            assert!(
                !a.iter().any(|(k, _)| k == "time" || k == "timestamp"),
                "no times: {a:?}"
            );
            let parent = stack.last().cloned().unwrap_or_default();
            match name.as_str() {
                "testsuites" => {
                    assert_eq!(parent, "");
                    assert!(a.contains(&("name".into(), "troupe test".into())));
                    root_counts = ["tests", "failures", "errors", "skipped"].map(|k| count(&a, k));
                }
                "testsuite" => {
                    assert_eq!(parent, "testsuites");
                    suites += 1;
                    assert!(a.iter().any(|(k, _)| k == "name"));
                    suite_counts = ["tests", "failures", "errors", "skipped"].map(|k| count(&a, k));
                    suite_seen = [0; 4];
                    for i in 0..4 {
                        sums[i] += suite_counts[i];
                    }
                }
                "testcase" => {
                    assert_eq!(parent, "testsuite");
                    assert!(a.iter().any(|(k, _)| k == "classname"));
                    assert!(a.iter().any(|(k, _)| k == "name"));
                    suite_seen[0] += 1;
                }
                "failure" | "error" | "skipped" => {
                    assert_eq!(parent, "testcase");
                    assert!(a.iter().any(|(k, _)| k == "message"));
                    let i = match name.as_str() {
                        "failure" => 1,
                        "error" => 2,
                        _ => 3,
                    };
                    suite_seen[i] += 1;
                }
                other => panic!("unexpected element {other}"),
            }
            if !empty {
                stack.push(name);
            }
        }
        match ev {
            Event::End(e) => {
                let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
                if name == "testsuite" {
                    assert_eq!(suite_seen, suite_counts, "counts of a suite");
                }
                stack.pop();
            }
            Event::Empty(e) if e.name().as_ref() == b"testsuite" => {
                panic!("a suite always has a test case")
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(suites, 6, "one suite per stage");
    assert_eq!(root_counts, sums, "testsuites counts are the sums");
}

#[test]
fn everyday_negotiation_reports() {
    let r = run_pack("examples/packs/everyday-negotiation");
    assert_eq!(r.exit_code, 0);
    pin("everyday-negotiation.json", &to_json(&r));
    let xml = to_junit(&r);
    check_junit_shape(&xml);
    pin("everyday-negotiation.junit.xml", &xml);
    let text = to_text(&r);
    // Stage 5 runs the three example playtests (all PASS; model_charm
    // replays its cassette, Format 22.3), the fixtures of the warm and hard
    // presets' knobs are two more, and the settings golden test (Format
    // 8.9) one more: 27 + 3 + 2 + 1 tests.
    assert!(
        text.ends_with("troupe test: 4 stages PASS, 2 SKIP; 33 tests, 33 PASS\n"),
        "{text}"
    );
    assert!(
        !text.contains('\x1b') && !text.contains('\r'),
        "no progress display in a report"
    );
}

#[test]
fn harbor_lights_reports() {
    let r = run_pack("examples/packs/harbor-lights");
    pin("harbor-lights.json", &to_json(&r));
    let xml = to_junit(&r);
    check_junit_shape(&xml);
    pin("harbor-lights.junit.xml", &xml);
}

/// The tutorial's pack (docs/tutorial.md): every stage that has tests
/// passes, and its recorded session re-plays as recorded.
#[test]
fn job_interview_reports() {
    let r = run_pack("examples/packs/job-interview");
    pin("job-interview.json", &to_json(&r));
    let text = to_text(&r);
    assert!(
        text.ends_with("troupe test: 4 stages PASS, 2 SKIP; 9 tests, 9 PASS\n"),
        "{text}"
    );
    assert!(text.contains("interview 100.0%"), "{text}");
}

/// The ensemble example (issue 37 item 9): every stage that has tests
/// passes, with every rule of the three characters reached.
#[test]
fn tenants_meeting_reports() {
    let r = run_pack("examples/packs/tenants-meeting");
    pin("tenants-meeting.json", &to_json(&r));
    let text = to_text(&r);
    assert!(
        text.ends_with("troupe test: 5 stages PASS, 1 SKIP; 10 tests, 10 PASS\n"),
        "{text}"
    );
    assert!(text.contains("tenants_meeting 100.0%"), "{text}");
}

#[test]
fn a_failing_run_reports_failures_with_locations() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("pack");
    troupe::internals::testing::init(&root).unwrap();
    let golden = root.join("tests/golden_first_meeting.yaml");
    let text = std::fs::read_to_string(&golden).unwrap();
    std::fs::write(
        &golden,
        text.replace("threshold=70", "threshold=60").replace(
            "      state: {trust: 80}\n      ended: false",
            "      state: {trust: 80}\n      ended: true",
        ),
    )
    .unwrap();
    let r = run(&root, &mut Options::default(), &Installed, &mut Quiet).unwrap();
    let shown = root.display().to_string();
    let json = to_json(&r).replace(&shown, "PACK");
    pin("failing.json", &json);
    let xml = to_junit(&r).replace(&shown, "PACK");
    check_junit_shape(&xml);
    pin("failing.junit.xml", &xml);
    pin("failing.txt", &to_text(&r).replace(&shown, "PACK"));
}

#[test]
fn junit_failure_messages_keep_one_failure_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("pack");
    troupe::internals::testing::init(&root).unwrap();
    let smoke = root.join("tests/smoke_first_meeting.yaml");
    let text = std::fs::read_to_string(&smoke).unwrap();
    std::fs::write(
        &smoke,
        text.replace(
            "      safety_status: ok\n",
            "      safety_status: stop\n      ended: true\n",
        ),
    )
    .unwrap();
    let r = run(&root, &mut Options::default(), &Installed, &mut Quiet).unwrap();
    let xml = to_junit(&r);
    check_junit_shape(&xml);
    let line = "<failure message=\"turn 1: safety_status expected &quot;stop&quot;, got &quot;ok&quot;&#10;turn 1: ended expected true, got false\">";
    assert!(xml.contains(line), "{xml}");
    // The attribute reads back with its line break.
    let mut reader = Reader::from_str(&xml);
    loop {
        match reader.read_event().unwrap() {
            Event::Start(e) if e.name().as_ref() == b"failure" => {
                let m = e.try_get_attribute("message").unwrap().unwrap();
                assert_eq!(
                    m.unescape_value().unwrap(),
                    "turn 1: safety_status expected \"stop\", got \"ok\"\nturn 1: ended expected true, got false"
                );
                break;
            }
            Event::Eof => panic!("no failure"),
            _ => {}
        }
    }
}

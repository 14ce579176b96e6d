//! `troupe test --junit FILE` (Format 21.2): JUnit XML as CI dashboards
//! read it: `<testsuites>` with one `<testsuite>` per stage and one
//! `<testcase>` per test; counts on every suite; no timestamps or times.

use std::borrow::Cow;

use quick_xml::events::attributes::Attribute;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use quick_xml::name::QName;
use quick_xml::Writer;

use crate::testing::model::{StageResult, Status, TestResult};
use crate::testing::stages::Run;

#[derive(Default, Clone, Copy)]
struct Counts {
    tests: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
}

impl Counts {
    fn add(&mut self, s: Status) {
        self.tests += 1;
        match s {
            Status::Fail => self.failures += 1,
            Status::Err => self.errors += 1,
            Status::Skip => self.skipped += 1,
            Status::Pass => {}
        }
    }
    fn attrs(self, e: &mut BytesStart<'_>) {
        e.push_attribute(("tests", self.tests.to_string().as_str()));
        e.push_attribute(("failures", self.failures.to_string().as_str()));
        e.push_attribute(("errors", self.errors.to_string().as_str()));
        e.push_attribute(("skipped", self.skipped.to_string().as_str()));
    }
}

/// The test cases of a stage: its tests, or one skipped case named after
/// the stage when it has none.
fn cases(stage: &StageResult) -> Vec<TestResult> {
    if stage.tests.is_empty() {
        let status = if stage.status == Status::Err {
            Status::Err
        } else {
            Status::Skip
        };
        let mut t = TestResult::new(stage.stage.as_str(), None, status);
        t.reason = stage.reason.clone().or_else(|| Some("no test".into()));
        vec![t]
    } else {
        stage.tests.clone()
    }
}

/// Pushes an attribute whose value keeps its line breaks: XML parsers
/// turn a literal newline in an attribute into a space, so `\n`, `\r` and
/// `\t` are written as character references.
fn push_text_attr(e: &mut BytesStart<'_>, key: &str, value: &str) {
    let escaped = super::xml_escape(value, &['\n', '\r', '\t'])
        .replace('\n', "&#10;")
        .replace('\r', "&#13;")
        .replace('\t', "&#9;");
    e.push_attribute(Attribute {
        key: QName(key.as_bytes()),
        value: Cow::Owned(escaped.into_bytes()),
    });
}

fn failure_text(t: &TestResult) -> String {
    t.failures
        .iter()
        .map(|f| f.message.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The JUnit XML of a run.
pub fn to_junit(run: &Run) -> String {
    let all: Vec<(&StageResult, Vec<TestResult>)> =
        run.stages.iter().map(|s| (s, cases(s))).collect();
    let mut total = Counts::default();
    for (_, cs) in &all {
        cs.iter().for_each(|t| total.add(t.status));
    }
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    let mut ok = w
        .write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))
        .is_ok();
    let mut root = BytesStart::new("testsuites");
    root.push_attribute(("name", "troupe test"));
    total.attrs(&mut root);
    ok &= w.write_event(Event::Start(root)).is_ok();
    for (stage, cs) in &all {
        let mut counts = Counts::default();
        cs.iter().for_each(|t| counts.add(t.status));
        let mut suite = BytesStart::new("testsuite");
        suite.push_attribute(("name", stage.stage.as_str()));
        counts.attrs(&mut suite);
        ok &= w.write_event(Event::Start(suite)).is_ok();
        for t in cs {
            let mut case = BytesStart::new("testcase");
            case.push_attribute(("classname", stage.stage.as_str()));
            case.push_attribute(("name", t.name.as_str()));
            let child = match t.status {
                Status::Pass => None,
                Status::Fail => Some(("failure", failure_text(t))),
                Status::Err => Some(("error", t.reason.clone().unwrap_or_default())),
                Status::Skip => Some(("skipped", t.reason.clone().unwrap_or_default())),
            };
            match child {
                None => ok &= w.write_event(Event::Empty(case)).is_ok(),
                Some((tag, message)) => {
                    ok &= w.write_event(Event::Start(case)).is_ok();
                    let mut el = BytesStart::new(tag);
                    push_text_attr(&mut el, "message", &message);
                    if tag == "failure" {
                        ok &= w.write_event(Event::Start(el)).is_ok();
                        ok &= w
                            .write_event(Event::Text(BytesText::new(&super::xml_chars(
                                &message,
                                &['\n', '\r', '\t'],
                            ))))
                            .is_ok();
                        ok &= w.write_event(Event::End(BytesEnd::new(tag))).is_ok();
                    } else {
                        ok &= w.write_event(Event::Empty(el)).is_ok();
                    }
                    ok &= w.write_event(Event::End(BytesEnd::new("testcase"))).is_ok();
                }
            }
        }
        ok &= w
            .write_event(Event::End(BytesEnd::new("testsuite")))
            .is_ok();
    }
    ok &= w
        .write_event(Event::End(BytesEnd::new("testsuites")))
        .is_ok();
    let mut s = String::from_utf8(w.into_inner()).unwrap_or_default();
    if !ok {
        s.clear();
    }
    s.push('\n');
    s
}

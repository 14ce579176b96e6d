//! `troupe test --html FILE` (Format 21.2): one self-contained HTML page
//! of a run, built from the same [`Run`] as the text, JSON and JUnit
//! reports: the stages and their tests, the coverage with its "not
//! reached" lists, each fixture's transcript and the scenario graphs as
//! inline SVG. One inline `<style>`, no script, no external reference, a
//! `Content-Security-Policy` that allows nothing but the inline style, and
//! every text of the pack or the run escaped ([`esc`]).

use std::fmt::Write as _;

use crate::testing::model::{StageName, Status};
use crate::testing::stages::Run;

/// Text escaped for HTML element content and quoted attribute values:
/// `&`, `<`, `>`, `"` and `'` as entities, control characters (but tab and
/// line feed) as spaces.
pub fn esc(s: &str) -> String {
    super::xml_escape(s, &['\t', '\n'])
}

const STYLE: &str = "body{font-family:DejaVu Sans,Verdana,Helvetica,Arial,sans-serif;margin:2em;color:#111827;max-width:80em}
h1{font-size:1.5em}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #d1d5db}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #d1d5db;padding:.25em .6em;text-align:left;vertical-align:top}
.PASS{color:#166534;font-weight:bold}.FAIL{color:#b91c1c;font-weight:bold}.SKIP{color:#92400e;font-weight:bold}.ERR{color:#7e22ce;font-weight:bold}
pre{background:#f3f4f6;padding:.6em;overflow-x:auto;white-space:pre-wrap}ul.missing li{font-family:monospace}
.graph{overflow-x:auto;border:1px solid #e5e7eb;margin:.5em 0}.note{color:#4b5563}";

fn status(s: Status) -> String {
    format!("<span class=\"{0}\">{0}</span>", s.as_str())
}

/// The HTML page of `run`. `graphs` holds, per scenario of the pack in
/// bundle order, its ID and its graph as SVG (Format 20.2), or why there
/// is none.
pub fn to_html(run: &Run, graphs: &Result<Vec<(String, String)>, String>) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n");
    let _ = writeln!(h, "<title>troupe test: {}</title>", esc(&run.pack));
    let _ = writeln!(h, "<style>\n{STYLE}\n</style>\n</head>\n<body>");
    let _ = writeln!(h, "<h1>troupe test: {}</h1>", esc(&run.pack));
    let _ = writeln!(
        h,
        "<p>status {} · exit code {}</p>\n<p>{}</p>",
        status(match run.exit_code {
            0 => Status::Pass,
            3 => Status::Err,
            _ => Status::Fail,
        }),
        run.exit_code,
        esc(&super::text::summary(&run.stages))
    );

    // Stages.
    h.push_str("<h2 id=\"stages\">Stages</h2>\n");
    for stage in &run.stages {
        let _ = writeln!(
            h,
            "<h3>{} {}</h3>",
            status(stage.status),
            esc(stage.stage.as_str())
        );
        if let Some(r) = &stage.reason {
            let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(r));
        }
        if !stage.diagnostics.is_empty() {
            h.push_str(
                "<table>\n<tr><th>code</th><th>severity</th><th>where</th><th>message</th></tr>\n",
            );
            for d in &stage.diagnostics {
                let mut at = d.location.file.clone().unwrap_or_default();
                if let (Some(l), Some(c)) = (d.location.line, d.location.column) {
                    let _ = write!(at, ":{l}:{c}");
                } else if let Some(p) = d.location.pointer.as_deref().filter(|p| !p.is_empty()) {
                    let _ = write!(at, " {p}");
                }
                let sev = if d.is_error() { "error" } else { "warning" };
                let _ = writeln!(
                    h,
                    "<tr><td>{}</td><td>{sev}</td><td>{}</td><td>{}</td></tr>",
                    esc(d.code.as_str()),
                    esc(&at),
                    esc(&d.message)
                );
            }
            h.push_str("</table>\n");
        }
        if !stage.tests.is_empty() {
            h.push_str("<table>\n<tr><th>status</th><th>test</th><th>file</th><th>reason and failures</th></tr>\n");
            for t in &stage.tests {
                let mut detail = String::new();
                if let Some(r) = &t.reason {
                    detail.push_str(&esc(r));
                }
                if !t.failures.is_empty() {
                    detail.push_str("<ul>");
                    for f in &t.failures {
                        let mut m = esc(&f.message);
                        if let Some(file) = &f.file {
                            let mut at = file.clone();
                            if let (Some(l), Some(c)) = (f.line, f.column) {
                                let _ = write!(at, ":{l}:{c}");
                            }
                            let _ = write!(m, " <span class=\"note\">[{}]</span>", esc(&at));
                        }
                        let _ = write!(detail, "<li>{m}</li>");
                    }
                    detail.push_str("</ul>");
                }
                if let Some(d) = &t.diff {
                    let _ = write!(detail, "<pre>{}</pre>", esc(d));
                }
                let _ = writeln!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{detail}</td></tr>",
                    status(t.status),
                    esc(&t.name),
                    esc(t.file.as_deref().unwrap_or(""))
                );
            }
            h.push_str("</table>\n");
        }
    }

    // Coverage.
    let c = &run.coverage;
    h.push_str("<h2 id=\"coverage\">Coverage</h2>\n");
    if c.scope != "all" {
        let _ = writeln!(
            h,
            "<p class=\"note\">coverage of {} only</p>",
            esc(&c.scope)
        );
    }
    if c.scenarios.is_empty() {
        h.push_str("<p class=\"note\">no scenario was run</p>\n");
    }
    for sc in &c.scenarios {
        let _ = writeln!(
            h,
            "<h3>{} · {:.1}%</h3>\n<table>\n<tr><th>kind</th><th>reached</th><th>total</th><th>not reached</th></tr>",
            esc(&sc.scenario),
            sc.percent
        );
        for (k, v) in &sc.kinds {
            let missing = if v.not_reached.is_empty() {
                String::new()
            } else {
                let items: Vec<String> = v
                    .not_reached
                    .iter()
                    .map(|m| format!("<li>{}</li>", esc(m)))
                    .collect();
                format!("<ul class=\"missing\">{}</ul>", items.join(""))
            };
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{missing}</td></tr>",
                esc(k),
                v.reached,
                v.total
            );
        }
        h.push_str("</table>\n");
    }
    if !c.without_tests.is_empty() {
        let items: Vec<String> = c
            .without_tests
            .iter()
            .map(|m| format!("<li>{}</li>", esc(m)))
            .collect();
        let _ = writeln!(
            h,
            "<p>without tests:</p>\n<ul class=\"missing\">{}</ul>",
            items.join("")
        );
    }

    // Transcripts.
    h.push_str("<h2 id=\"transcripts\">Fixture transcripts</h2>\n");
    let fixtures: Vec<_> = run
        .stages
        .iter()
        .filter(|s| s.stage == StageName::Fixtures)
        .flat_map(|s| s.tests.iter())
        .collect();
    if fixtures.is_empty() {
        h.push_str("<p class=\"note\">no fixture was run</p>\n");
    }
    for t in fixtures {
        let _ = writeln!(h, "<h3>{} {}</h3>", status(t.status), esc(&t.name));
        if t.transcript.is_empty() {
            h.push_str("<p class=\"note\">no turn was played</p>\n");
        } else {
            let _ = writeln!(
                h,
                "<pre>{}</pre>",
                esc(t.transcript.trim_start_matches('\n'))
            );
        }
    }

    // Graphs.
    h.push_str("<h2 id=\"graphs\">Scenario graphs</h2>\n");
    match graphs {
        Err(why) => {
            let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(why));
        }
        Ok(list) => {
            if list.is_empty() {
                h.push_str("<p class=\"note\">the pack has no scenario</p>\n");
            }
            for (id, svg) in list {
                let _ = writeln!(h, "<h3>{}</h3>\n<div class=\"graph\">", esc(id));
                // The SVG document without its XML declaration, inline.
                let body = svg
                    .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
                    .unwrap_or(svg);
                h.push_str(body);
                h.push_str("</div>\n");
            }
        }
    }
    h.push_str("</body>\n</html>\n");
    h
}

//! From documents to a compiled story and session: every check runs
//! first, and non-conforming input (Format 17.1) is refused with its
//! diagnostics. [`crate::pipeline`] makes an engine of the result.

use std::sync::Arc;

use serde_json::Value;

use crate::check;
use crate::compile::{compile_session, compile_story, SessionCompiler, SessionIr, StoryIr};
use crate::diag::{Code, Diagnostic};
use crate::load::{Document, SessionDoc, SpanIndex};
use crate::resolve::story::Story;

/// A document with no source text (values built in memory).
pub fn bare_document(file: &str, value: &Value) -> Document {
    Document {
        file: file.to_string(),
        text: Arc::from(""),
        value: value.clone(),
        spans: SpanIndex::default(),
        first_line: 1,
    }
}

/// Every check of a bundle and (optionally) a session, through the
/// checker's entry points (version, schemas, semantic checks; Format 17.2,
/// 17.3). Diagnostics in check order.
pub fn check_all(bundle: &Document, session: Option<&SessionDoc>) -> Vec<Diagnostic> {
    let mut out = check::run::check_bundle_document(bundle);
    if let Some(doc) = session {
        out.extend(check::run::check_session_document(&bundle.value, doc));
    }
    out
}

pub use crate::compile::Compiled;

fn refuse(d: Vec<Diagnostic>) -> Result<Compiled, Vec<Diagnostic>> {
    Err(d)
}

/// Checks and compiles (see [`crate::pipeline::load`], which makes an engine of it).
pub fn load(
    bundle: &Value,
    session: Option<(&Value, &[Value])>,
    scenario: Option<&str>,
) -> Result<Compiled, Vec<Diagnostic>> {
    let bdoc = bare_document("bundle", bundle);
    let sdoc = session.map(|(h, ms)| {
        SessionDoc::from_documents(
            "session",
            Some(bare_document("session", h)),
            ms.iter().map(|m| bare_document("session", m)).collect(),
        )
    });
    load_documents(&bdoc, sdoc.as_ref(), scenario)
}

/// Checks and compiles parsed documents (see [`crate::pipeline::load`]).
pub fn load_documents(
    bundle: &Document,
    session: Option<&SessionDoc>,
    scenario: Option<&str>,
) -> Result<Compiled, Vec<Diagnostic>> {
    let diags = check_all(bundle, session);
    if diags.iter().any(Diagnostic::is_error) {
        return refuse(diags);
    }
    match session {
        Some(doc) => compile_checked_session(&bundle.value, doc),
        None => compile_checked(&bundle.value, None, scenario),
    }
}

fn internal(m: String) -> Vec<Diagnostic> {
    vec![Diagnostic::error(
        Code::Internal,
        format!("cannot compile: {m}"),
    )]
}

/// Resolves and compiles the story a session header names (or scenario
/// `scenario`, else the first, without a session). No check runs here.
pub fn compile_story_for(
    bundle: &Value,
    header: Option<&Value>,
    scenario: Option<&str>,
) -> Result<(Story, StoryIr), Vec<Diagnostic>> {
    let mut sink = Vec::new();
    let story = match header {
        Some(h) => check::session::resolve_story(bundle, h, &mut sink),
        None => {
            let index = match scenario {
                Some(id) => crate::model::scenario_index(bundle, id),
                None => Some(0),
            };
            index.and_then(|i| crate::resolve::story::resolve(bundle, i, None, &mut sink))
        }
    };
    let Some(story) = story else {
        return Err(internal("the bundle has no such scenario".into()));
    };
    let ir = compile_story(&story).map_err(|e| internal(e.0))?;
    Ok((story, ir))
}

/// Checks the header of a session about to start against `bundle` and
/// compiles its story (Format 18.4): when `plain`, its players are plain
/// characters of the bundle and only the header is checked, else the
/// header is checked whole. Refused with the diagnostics when it does not
/// conform.
pub fn compile_start(
    bundle: &Value,
    header: &Value,
    plain: bool,
) -> Result<Compiled, Vec<Diagnostic>> {
    let diags = if plain {
        check::session::check_plain_header(bundle, header)
    } else {
        check::session::check_session(bundle, header, &[])
    };
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    compile_checked(bundle, Some((header.clone(), Vec::new())), None)
}

/// Compiles input that has passed its checks (no check runs here).
pub fn compile_checked(
    bundle: &Value,
    session: Option<(Value, Vec<Value>)>,
    scenario: Option<&str>,
) -> Result<Compiled, Vec<Diagnostic>> {
    let (story, ir) = compile_story_for(bundle, session.as_ref().map(|s| &s.0), scenario)?;
    let (sess, has) = match &session {
        Some((h, ms)) => (
            compile_session(&story, &ir, h, ms).map_err(|e| internal(e.0))?,
            true,
        ),
        None => (SessionIr::default(), false),
    };
    Ok(Compiled {
        story: ir,
        session: sess,
        has_session: has,
    })
}

/// Compiles a session that has passed its checks (no check runs here),
/// one line at a time: each message is parsed, lowered and dropped, so the
/// session's JSON values are never all held (Format 16.2). A session with
/// no header is refused (INTERNAL: its checks would have failed).
pub fn compile_checked_session(
    bundle: &Value,
    doc: &SessionDoc,
) -> Result<Compiled, Vec<Diagnostic>> {
    let Some(header) = &doc.header else {
        return Err(internal("the session has no header".into()));
    };
    let (story, ir) = compile_story_for(bundle, Some(&header.value), None)?;
    let mut lower = SessionCompiler::new(&story, &ir, &header.value).map_err(|e| internal(e.0))?;
    lower.reserve(doc.len());
    for m in doc.messages() {
        lower.push(&m.value).map_err(|e| internal(e.0))?;
    }
    let sess = lower.finish();
    Ok(Compiled {
        story: ir,
        session: sess,
        has_session: true,
    })
}

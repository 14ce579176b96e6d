//! From documents and files to an [`Engine`]: every check runs first, and
//! non-conforming input (Format 17.1) is refused with its diagnostics.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::{Engine, DEFAULT_STRIDE};
use crate::check::{self, SchemaKind, Schemas};
use crate::compile::{compile_session, compile_story, SessionIr};
use crate::diag::{Code, Diagnostic};
use crate::load::{Document, SpanIndex};

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

/// Every check of a bundle and (optionally) a session: schemas, then the
/// semantic checks (Format 17.2, 17.3). Diagnostics in check order.
pub fn check_all(bundle: &Document, session: Option<(&Document, &[Document])>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let schemas = Schemas::try_get().ok();
    if let Some(s) = schemas {
        out.extend(s.validate(SchemaKind::Bundle, bundle, ""));
    }
    out.extend(check::bundle::check_bundle(&bundle.value));
    if let Some((header, messages)) = session {
        if let Some(s) = schemas {
            out.extend(s.validate(SchemaKind::SessionHeader, header, "header"));
            for m in messages {
                let id = m.value.get("id").and_then(Value::as_str).unwrap_or("");
                out.extend(s.validate(SchemaKind::Message, m, &format!("message:{id}")));
            }
        }
        let values: Vec<Value> = messages.iter().map(|m| m.value.clone()).collect();
        out.extend(check::session::check_session(
            &bundle.value,
            &header.value,
            &values,
        ));
    }
    out
}

fn refuse(d: Vec<Diagnostic>) -> Result<Engine, Vec<Diagnostic>> {
    Err(d)
}

/// Checks and compiles (see [`Engine::load`]).
pub fn load(
    bundle: &Value,
    session: Option<(&Value, &[Value])>,
    scenario: Option<&str>,
) -> Result<Engine, Vec<Diagnostic>> {
    let bdoc = bare_document("bundle", bundle);
    let sdocs = session.map(|(h, ms)| {
        (
            bare_document("session", h),
            ms.iter()
                .map(|m| bare_document("session", m))
                .collect::<Vec<_>>(),
        )
    });
    load_documents(&bdoc, sdocs.as_ref().map(|(h, m)| (h, &m[..])), scenario)
}

/// Checks and compiles parsed documents (see [`Engine::load`]).
pub fn load_documents(
    bundle: &Document,
    session: Option<(&Document, &[Document])>,
    scenario: Option<&str>,
) -> Result<Engine, Vec<Diagnostic>> {
    let diags = check_all(bundle, session);
    if diags.iter().any(Diagnostic::is_error) {
        return refuse(diags);
    }
    compile_checked(
        &bundle.value,
        session.map(|(h, ms)| {
            (
                h.value.clone(),
                ms.iter().map(|m| m.value.clone()).collect::<Vec<_>>(),
            )
        }),
        scenario,
    )
}

/// Compiles input that has passed its checks (no check runs here).
pub fn compile_checked(
    bundle: &Value,
    session: Option<(Value, Vec<Value>)>,
    scenario: Option<&str>,
) -> Result<Engine, Vec<Diagnostic>> {
    let internal = |m: String| {
        vec![Diagnostic::error(
            Code::Schema,
            format!("cannot compile: {m}"),
        )]
    };
    let mut sink = Vec::new();
    let story = match &session {
        Some((h, _)) => check::session::resolve_story(bundle, h, &mut sink),
        None => {
            let index = match scenario {
                Some(id) => bundle
                    .get("scenarios")
                    .and_then(Value::as_array)
                    .and_then(|s| {
                        s.iter()
                            .position(|x| x.get("id").and_then(Value::as_str) == Some(id))
                    }),
                None => Some(0),
            };
            index.and_then(|i| check::story::resolve(bundle, i, None, &mut sink))
        }
    };
    let Some(story) = story else {
        return Err(internal("the bundle has no such scenario".into()));
    };
    let ir = compile_story(&story).map_err(|e| internal(e.0))?;
    let (sess, has) = match &session {
        Some((h, ms)) => (
            compile_session(&story, &ir, h, ms).map_err(|e| internal(e.0))?,
            true,
        ),
        None => (SessionIr::default(), false),
    };
    Ok(Engine::new(story, ir, sess, has, DEFAULT_STRIDE))
}

/// Reads a bundle file or a pack directory as a bundle value (a pack is
/// lowered, Format 13.10), with the diagnostics of reading and lowering.
pub fn read_bundle_or_pack(path: &Path) -> (Option<Document>, Vec<Diagnostic>) {
    if path.is_dir() {
        let scanned = crate::load::scan_pack(path);
        let mut diags = scanned.diagnostics;
        let Some(pack) = scanned.value else {
            return (None, diags);
        };
        let mut values = check::pack::lower::PackValues::new();
        if let Some(m) = &pack.manifest {
            values.insert("manifest.yaml".into(), m.value.clone());
        }
        for (p, (_, d)) in &pack.files {
            values.insert(p.clone(), d.value.clone());
        }
        let exists = |p: &str| pack.all_files.contains(p);
        let lowered = check::pack::lower::lower(&values, &exists);
        diags.extend(lowered.diagnostics);
        let doc = bare_document(&path.display().to_string(), &lowered.bundle);
        (Some(doc), diags)
    } else {
        let l = crate::load::read_bundle(path);
        (l.value, l.diagnostics)
    }
}

/// Opens a bundle (file or pack directory) and optionally a session file,
/// checks both, and compiles them. A session path that does not exist is
/// also looked for in the pack's `sessions/`.
pub fn open(bundle: &Path, session: Option<&Path>) -> Result<Engine, Vec<Diagnostic>> {
    let (bdoc, mut diags) = read_bundle_or_pack(bundle);
    let Some(bdoc) = bdoc else {
        return refuse(diags);
    };
    let sdoc = match session {
        Some(p) => {
            let p = if !p.exists() && bundle.is_dir() {
                bundle.join("sessions").join(p)
            } else {
                p.to_path_buf()
            };
            let l = crate::load::read_session(&p);
            diags.extend(l.diagnostics);
            match l.value {
                Some(s) => Some(s),
                None => return refuse(diags),
            }
        }
        None => None,
    };
    if diags.iter().any(Diagnostic::is_error) {
        return refuse(diags);
    }
    match &sdoc {
        Some(s) => {
            let Some(h) = &s.header else {
                return refuse(diags);
            };
            load_documents(&bdoc, Some((h, &s.messages)), None)
        }
        None => load_documents(&bdoc, None, None),
    }
    .map_err(|mut d| {
        diags.append(&mut d);
        diags
    })
}

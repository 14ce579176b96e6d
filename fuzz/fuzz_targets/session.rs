//! The session loader and checks (Format 12, 16) against the example
//! bundle, then the engine on what passes: no input may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use troupe::diag::render::{render_human, Sources};

const BUNDLE: &str = include_str!("../../examples/bundles/tiny.bundle.json");

fuzz_target!(|data: &[u8]| {
    let Ok(bundle) = serde_json::from_str::<serde_json::Value>(BUNDLE) else { return };
    let loaded = troupe::load::parse_session("s.jsonl", data);
    let mut diags = loaded.diagnostics;
    if let Some(doc) = &loaded.value {
        diags.extend(troupe::check::run::check_session_document(&bundle, doc));
        if !diags.iter().any(|d| d.is_error()) {
            if doc.header.is_some() {
                if let Ok(engine) = troupe::engine::load::compile_checked_session(&bundle, doc) {
                    let n = engine.session.messages.len() as u32;
                    for m in 0..n.min(64) {
                        let s = engine.state_at(m);
                        let _ = engine.flatten(&s);
                        let _ = engine.ending(&s);
                    }
                }
            }
        }
    }
    let mut sources = Sources::new();
    if let Ok(t) = std::str::from_utf8(data) {
        sources.add("s.jsonl", t.into());
    }
    let _ = render_human(&diags, &sources);
});

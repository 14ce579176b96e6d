//! The JSON loader (Format 2.2, 16) and the bundle checks after it, on
//! arbitrary bytes: no input may panic or run unbounded; every diagnostic
//! renders for a terminal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use troupe::diag::render::{render_human, Sources};

fuzz_target!(|data: &[u8]| {
    let loaded = troupe::load::parse_json("f.json", data);
    let mut diags = loaded.diagnostics;
    let mut sources = Sources::new();
    if let Some(doc) = &loaded.value {
        diags.extend(troupe::check::run::check_bundle_document(doc));
        sources.add("f.json", doc.text.clone());
    }
    let _ = render_human(&diags, &sources);
});

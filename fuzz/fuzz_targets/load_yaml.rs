//! The YAML loader (Format 2, 16) on arbitrary bytes: no input may panic,
//! overflow the stack or expand aliases without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use troupe::diag::render::{render_human, Sources};

fuzz_target!(|data: &[u8]| {
    let loaded = troupe::load::parse_yaml("f.yaml", data);
    let mut sources = Sources::new();
    if let Some(doc) = &loaded.value {
        sources.add("f.yaml", doc.text.clone());
        let _ = doc.spans.locate("/a/0");
    }
    let _ = render_human(&loaded.diagnostics, &sources);
});

//! Package screening and loading (Format 14) on arbitrary bytes: archive
//! traversal, sizes and entry counts are diagnostics, never a panic or an
//! unbounded inflation.
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::package(data));

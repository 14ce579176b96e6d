//! The macro parser and renderer (Format 10) on arbitrary text.
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::template(data));

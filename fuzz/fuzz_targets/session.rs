//! The session loader and checks (Format 12, 16) against the example
//! bundle, then the engine on what passes: no input may panic.
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::session(data));

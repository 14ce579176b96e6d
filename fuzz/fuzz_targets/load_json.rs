//! The JSON loader (Format 2.2, 16) and the bundle checks after it, on
//! arbitrary bytes: no input may panic or run unbounded; every diagnostic
//! renders for a terminal.
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::load_json(data));

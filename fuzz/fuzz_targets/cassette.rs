//! The cassette reader (Format 24.5, 16), then replay and the nearest
//! recorded request: no input may panic.
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::cassette(data));

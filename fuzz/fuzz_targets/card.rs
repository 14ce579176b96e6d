//! Character Card import from JSON, PNG and CHARX bytes (`docs/import.md`):
//! damaged containers and odd cards are diagnostics, never a panic.
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::card(data));

//! SillyTavern chat import (`docs/import.md` §7) against a fixed card, on
//! arbitrary bytes: no input may panic.
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::chat(data));

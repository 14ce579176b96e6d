//! The model runtime's answer parser and validation (Format 24.4, 24.6):
//! no answer or body may panic, and a refusal stays bounded.
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::model_answer(data));

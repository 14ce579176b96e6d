//! The YAML loader (Format 2, 16) on arbitrary bytes: no input may panic,
//! overflow the stack or expand aliases without bound.
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::load_yaml(data));

//! The CEL parser alone on arbitrary bytes: no input may panic or
//! overflow a 2 MiB stack; accepted trees have spans inside the text.
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::cel_parse(data));

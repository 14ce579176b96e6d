//! Parser + checker + evaluator on arbitrary text: no input may panic,
//! overflow the stack or run unbounded (the cost budget bounds loops).
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::cel(data));

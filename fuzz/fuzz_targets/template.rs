//! The macro parser and renderer (Format 10) on arbitrary text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use troupe::template::{parse, render, Scope};

struct Fixed;

impl Scope for Fixed {
    fn user(&self) -> Option<&str> {
        Some("Sam")
    }
    fn char_id(&self) -> Option<&str> {
        Some("kai")
    }
    fn char_name(&self) -> Option<&str> {
        Some("Kai")
    }
    fn narrator(&self) -> &str {
        "Narrator"
    }
    fn narrator_text(&self) -> bool {
        false
    }
    fn owner(&self) -> Option<Option<&str>> {
        Some(Some("kai"))
    }
    fn value(&self, name: &str) -> Option<String> {
        (name.len() % 3 == 0).then(|| "12.5".to_string())
    }
    fn seed(&self) -> (u64, &str) {
        (7, "m1")
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    if let Ok(t) = parse(src) {
        let _ = render(&t, src, &Fixed);
    }
});

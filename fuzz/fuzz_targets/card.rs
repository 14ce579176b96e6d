//! Character Card import from JSON, PNG and CHARX bytes (`docs/import.md`):
//! damaged containers and odd cards are diagnostics, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(raw) = troupe::import::read_card("c", data) {
        if let Ok(imported) = troupe::import::card::card_to_bundle(&raw) {
            let _ = troupe::check::bundle::check_bundle(&imported.bundle);
        }
    }
});

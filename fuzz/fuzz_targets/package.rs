//! Package screening and loading (Format 14) on arbitrary bytes: archive
//! traversal, sizes and entry counts are diagnostics, never a panic or an
//! unbounded inflation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = troupe::load::screen_package("p.troupe", data);
    let loaded = troupe::load::parse_package("p.troupe", data);
    if let Some(pkg) = &loaded.value {
        let _ = troupe::check::run::check_package(pkg);
    }
});

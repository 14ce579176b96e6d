//! Pack directories (Format 13): the checks that only a pack has (manifest
//! references, one ID per file kind, the safety policy's rating cap, test
//! fixtures). Lowering a pack to a bundle is the load stage's
//! ([`crate::load::lower`]).

pub mod checks;
pub mod fixtures;

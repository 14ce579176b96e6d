//! Pack directories (Format 13): lowering to a bundle, and the checks that
//! only a pack has (manifest references, one ID per file kind, the safety
//! policy's rating cap).

pub mod checks;
pub mod fixtures;
pub mod lower;
pub mod origin;

//! Testing packs (Format 21): `troupe test`'s stages, fixtures, static
//! assertions, snapshots of recorded sessions, coverage, reports, and the
//! `troupe init` scaffold.

pub mod assertions;
pub mod coverage;
pub mod docs;
pub mod explore;
pub mod fixtures;
pub mod graph;
#[cfg(feature = "pictures")]
pub mod graph_svg;
pub mod init;
pub mod model;
pub mod playtests;
pub mod replays;
pub mod report;
pub mod runner;
pub mod snapshots;
pub mod stages;

//! Stage 1: load. Untrusted bytes → documents that keep their source
//! locations (Format 2, 12.1, 13, 14, 16). Nothing here interprets the format
//! beyond what is needed to read it safely: schema and semantic checks are the
//! `check` stage's.
//!
//! Entry points: [`parse_json`], [`parse_yaml`], [`read_bundle`] (bundles),
//! [`parse_session`]/[`read_session`] (JSONL sessions), [`scan_pack`] (pack
//! directories), [`parse_package`]/[`read_package`] (`.troupe` archives),
//! [`check_version`], and [`normalize_ref`]/[`resolve_ref`]/
//! [`PackFiles::resolve_ref`] for `{ref: path}`. Every loader returns a
//! [`Loaded`]: a value when one could be read, and diagnostics. Bounds are in
//! [`limits`], the forbidden-file rules in [`forbidden`].

// Loaders return one `Diagnostic` as their error; it is not worth boxing.
#![allow(clippy::result_large_err)]

pub mod bundle;
pub mod compiled;
pub mod document;
pub mod forbidden;
pub mod json;
pub mod lazy;
pub mod limits;
pub mod loaded;
pub mod lower;
pub mod origin;
pub mod pack;
pub mod package;
pub mod refs;
pub mod session;
pub mod text;
pub mod version;
pub mod yaml;

pub use bundle::read_bundle;
pub use document::{Document, SpanIndex};
#[cfg(any(test, feature = "internals"))]
pub use document::{LineCol, PATH_LOOKUPS};
pub use json::parse_json;
pub use lazy::LazyBundle;
pub use loaded::Loaded;
pub use pack::{scan_pack, PackFileKind, PackFiles};
pub use package::{parse_package, read_package, screen_package, screen_package_view, PackageDoc};
pub use refs::normalize_ref;
#[cfg(any(test, feature = "internals"))]
pub use refs::resolve_ref;
pub use session::{parse_session, read_session, SessionDoc};
pub use version::check_version;
pub use yaml::parse_yaml;

//! The reports of a run (Format 21.2): readable text, one JSON document,
//! and JUnit XML for CI dashboards.

pub mod json;
pub mod junit;
pub mod text;

pub use json::to_json;
pub use junit::to_junit;
pub use text::to_text;

//! The reports of a run (Format 21.2): readable text, one JSON document,
//! JUnit XML for CI dashboards, and (feature `pictures`) one HTML page.

#[cfg(feature = "pictures")]
pub mod html;
pub mod json;
pub mod junit;
pub mod text;

pub use json::to_json;
pub use junit::to_junit;
pub use text::to_text;

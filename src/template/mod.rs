//! The macro language (Format 10): parsing author text with macros into a
//! [`Template`] once, ahead of time. Rendering is the engine's.

mod parse;

pub use parse::{parse, Macro, Node, Template, TemplateError};

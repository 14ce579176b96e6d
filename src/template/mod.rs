//! The macro language (Format 10): parsing author text with macros into a
//! [`Template`] once, ahead of time, and rendering it against a [`Scope`].

mod parse;
pub mod render;

pub use parse::{parse, Macro, Node, Template, TemplateError};
pub use render::{render, render_str, Scope};

//! The base of every stage: the one [`Diagnostic`] type and the stable
//! [`Code`]s (Format 17.2). Every stage reports problems with these; this
//! module imports no stage.

pub mod codes;
pub mod diagnostic;
pub mod render;
pub mod suggest;

pub use codes::Code;
pub use diagnostic::{escape_token, Diagnostic, Location, Severity};

//! The core's internals that Troupe's own crates beside it need and the
//! embedding API does not offer (issue 38 item 4: a curated list, never a
//! switch that makes every module public). Enabled by the feature
//! `internals`, which `troupe-import` turns on. **Not a stable interface**:
//! it changes with the core, whatever its version says.

/// Diagnostics (Format 17.2).
pub mod diag {
    pub use crate::diag::escape_token;
    pub use crate::diag::render::Sources;
    pub use crate::diag::suggest::one_of;
}

/// Reading input within the budgets (Format 16).
pub mod load {
    pub use crate::load::limits::{MAX_JSONL_LINE_BYTES, MAX_ZIP_ENTRIES};
    pub use crate::load::pack::partial_path;
    pub use crate::load::package::bad_name;
    pub use crate::load::text::read_bounded;
    pub use crate::load::{parse_json, parse_session, read_bundle, Document, SessionDoc};
    pub use crate::pipeline::compiled::bare_document;
}

/// The checks (Format 17) of documents already read, and of paths.
pub mod check {
    pub use crate::check::run::{check_bundle_document, check_session_document};
    pub use crate::open::check_paths;
}

/// The format's values (Format 3.2, 8.2).
pub mod model {
    pub use crate::model::{integer, RESERVED_IDS};
}

/// The macro language (Format 10): a template's parts.
pub mod template {
    pub use crate::template::{parse, Macro, Node};
}

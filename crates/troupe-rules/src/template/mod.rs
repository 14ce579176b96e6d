//! The macro language (Format 10): parsing author text with macros into a
//! [`Template`] once, ahead of time, and rendering it against a [`Scope`].

mod parse;
pub mod render;

pub use parse::{parse, Macro, Node, Template};
#[cfg(any(test, feature = "internals"))]
pub use render::render;
pub use render::Scope;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Templates parsed once and shared by text: the replies of a story's rules
/// are rendered turn after turn, in every session started from one compiled
/// story, and parse once. Parsing depends on the text alone (Format 10.1),
/// so one cache serves any story. At most [`TemplateCache::CAPACITY`]
/// texts are kept (a model's replies are each new); texts past it parse on
/// every use. A text that does not parse is remembered as `None`.
#[derive(Debug, Default)]
pub struct TemplateCache {
    parsed: Mutex<HashMap<Box<str>, Option<Arc<Template>>>>,
}

impl TemplateCache {
    /// How many texts are kept at most.
    pub const CAPACITY: usize = 1024;

    /// `text` parsed; `None` when it does not parse (it then renders as
    /// written, Format 10.1).
    pub fn get(&self, text: &str) -> Option<Arc<Template>> {
        if let Some(t) = self.parsed.lock().ok().and_then(|c| c.get(text).cloned()) {
            return t;
        }
        let t = parse(text).ok().map(Arc::new);
        if let Ok(mut cache) = self.parsed.lock()
            && cache.len() < Self::CAPACITY
        {
            cache.insert(text.into(), t.clone());
        }
        t
    }
}

//! The macro language (Format 10): parsing author text with macros into a
//! [`Template`] once, ahead of time, and rendering it against a [`Scope`].

mod parse;
pub mod render;

pub(crate) use parse::PARSES;
pub use parse::{parse, Macro, Node, Template, TemplateError};
#[cfg(any(test, feature = "internals"))]
pub use render::render;
pub use render::Scope;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::cel::parse::ParseCache;

/// [`parse`], answered by the active [`ParseCache`] when a scope is open on
/// this thread (then each text is parsed once across a pack's check, its
/// compile and its sessions: issue 41 item 2), else parsed afresh. Plain
/// text (no `{{`, no `\`) is one text node and never cached.
pub fn parse_shared(text: &str) -> Result<Arc<Template>, TemplateError> {
    match crate::cel::parse::active_scope() {
        Some(cache) if !render::is_plain_text(text) => cache.template(text),
        _ => parse(text).map(Arc::new),
    }
}

/// Templates parsed once and shared by text: the replies of a story's rules
/// are rendered turn after turn, in every session started from one compiled
/// story, and parse once. Parsing depends on the text alone (Format 10.1),
/// so one cache serves any story. At most [`TemplateCache::CAPACITY`]
/// texts are kept (a model's replies are each new); texts past it parse on
/// every use. A text that does not parse is remembered as `None`.
#[derive(Debug, Default)]
pub struct TemplateCache {
    parsed: Mutex<HashMap<Box<str>, Option<Arc<Template>>>>,
    /// The parse cache of the pack the story was compiled from, when it
    /// was compiled inside one ([`TemplateCache::within_parse_scope`]): the
    /// templates its check parsed are not parsed again. Only read: texts
    /// it does not hold are parsed here, within [`TemplateCache::CAPACITY`].
    pack: Option<Arc<ParseCache>>,
}

impl TemplateCache {
    /// How many texts are kept at most.
    pub const CAPACITY: usize = 1024;

    /// An empty cache that parses through the active [`ParseCache`] of
    /// this thread, if any (a story compiled from a checked pack: its
    /// sessions render the templates the check parsed, issue 41 item 2).
    pub fn within_parse_scope() -> TemplateCache {
        TemplateCache {
            parsed: Mutex::default(),
            pack: crate::cel::parse::active_scope(),
        }
    }

    /// `text` parsed; `None` when it does not parse (it then renders as
    /// written, Format 10.1).
    pub fn get(&self, text: &str) -> Option<Arc<Template>> {
        if let Some(t) = self.parsed.lock().ok().and_then(|c| c.get(text).cloned()) {
            return t;
        }
        let t = match self.pack.as_ref().and_then(|p| p.parsed_template(text)) {
            Some(checked) => checked.ok(),
            None => parse(text).ok().map(Arc::new),
        };
        if let Ok(mut cache) = self.parsed.lock()
            && cache.len() < Self::CAPACITY
        {
            cache.insert(text.into(), t.clone());
        }
        t
    }
}

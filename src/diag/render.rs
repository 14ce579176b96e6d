//! Rendering diagnostics for people (with source snippets) and as JSON.

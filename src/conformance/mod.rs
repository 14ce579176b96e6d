//! The conformance runner (placeholder).

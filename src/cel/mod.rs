//! CEL conditions (Format 11): parsing (the `cel` crate parser), a type checker, and an evaluator.

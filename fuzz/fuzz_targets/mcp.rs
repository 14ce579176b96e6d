//! The MCP server's request handler (docs/mcp.md): arbitrary JSON-RPC
//! lines after an `initialize`, served whole: no input may panic.
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::mcp(data));

//! The crate's integration tests, linked once (issue 38 item 6): one
//! module per area, each the file `tests/it/<module>.rs`. Run one area with
//! `cargo test --test it <module>::`, one test with
//! `cargo test --test it <module>::<test>`. The tests that compare the time
//! or memory of two input sizes are the other binary, `tests/bounds/`.

#[path = "../common/mod.rs"]
mod common;
// Helpers of the `troupe serve` suites (a server on a loopback port).
#[cfg(feature = "server")]
#[path = "../server_support/mod.rs"]
mod server_support;

mod api;
mod breaker_cel;
mod breaker_ir;
mod cel_conformance;
mod cel_suite;
mod cel_troupe;
mod check_examples;
mod check_fixtures;
mod check_jobs;
mod check_reach;
mod cli_check;
mod cli_runtime;
mod conformance;
mod dependency_facts;
mod docs_cli;
mod embed_example;
mod engine_bad_input;
mod engine_checkpoints;
mod engine_derived;
mod engine_turn_cost;
mod examples_snapshots;
mod explain_cli;
mod explore;
mod explore_speakers;
mod fuzz_regressions;
mod graph_cli;
mod hostile_cli;
mod import_cards;
mod import_chats;
mod import_hostile;
mod import_macros;
mod import_pack;
mod import_parity;
mod import_real;
mod import_states;
mod import_summary;
mod ir_compact;
mod ir_open;
mod json_documents;
mod load_hardening;
mod load_hostile;
mod load_real;
mod lore_activation;
mod lore_semantics;
mod mcp_stdio;
mod model_ensemble;
mod model_runtime;
mod package_integrity;
mod pictures;
mod playtest_checks;
mod playtest_model;
mod playtest_modes;
mod prompt_next;
mod resume;
mod runtime;
mod schemas;
// `troupe serve` over HTTP (docs/server.md): needs the server in the binary.
#[cfg(feature = "server")]
mod breaker_server;
#[cfg(feature = "server")]
mod server_api;
#[cfg(feature = "server")]
mod server_config;
#[cfg(feature = "server")]
mod server_delete;
#[cfg(feature = "server")]
mod server_idempotency;
#[cfg(feature = "server")]
mod server_idempotency_keys;
#[cfg(feature = "server")]
mod server_load;
#[cfg(feature = "server")]
mod server_model;
#[cfg(feature = "server")]
mod server_sessions;
#[cfg(feature = "server")]
mod server_turn_cost;
#[cfg(feature = "server")]
mod server_views;
mod session_append;
mod settings;
mod testing_broken;
mod testing_cli;
mod testing_coverage;
mod testing_reports;
mod testing_transcripts;
mod troupe_json;
mod validation_doc;
// The web page in headless Chromium (docs/web.md); skips without Chromium.
#[cfg(feature = "server")]
mod web_page;

//! [`schemas`] and [`output_schemas`]: the JSON Schemas of the format,
//! embedded in the library, for programs that hand them on (an editor
//! integration, an MCP server's resources) without reading the repository.

/// Every JSON Schema `troupe check` validates with (`schemas/README.md`):
/// pairs of a file name inside `schemas/` (`bundle.schema.json`,
/// `conformance/case.schema.json`, …) and the schema's text, in a fixed
/// order. The same texts `troupe schema NAME` prints.
///
/// ```
/// let all = troupe::schemas();
/// assert!(all.iter().any(|(file, text)| *file == "npc.schema.json" && text.contains("$id")));
/// ```
pub fn schemas() -> &'static [(&'static str, &'static str)] {
    crate::check::schema::SOURCES
}

/// The JSON Schemas of the `--json` documents of Format 20.1
/// (`schemas/output/<command>.schema.json`): pairs of the command
/// (`check`, `run`, `state`, `ended`, `knows`, `render`, `explain`,
/// `transcript`, `playtest`, `explore`) and
/// the schema's text.
///
/// ```
/// let (name, text) = troupe::output_schemas()[0];
/// assert_eq!(name, "check");
/// assert!(text.contains("output/check.schema.json"));
/// ```
pub fn output_schemas() -> &'static [(&'static str, &'static str)] {
    OUTPUT
}

const OUTPUT: &[(&str, &str)] = &[
    (
        "check",
        include_str!("../../../../schemas/output/check.schema.json"),
    ),
    (
        "run",
        include_str!("../../../../schemas/output/run.schema.json"),
    ),
    (
        "state",
        include_str!("../../../../schemas/output/state.schema.json"),
    ),
    (
        "ended",
        include_str!("../../../../schemas/output/ended.schema.json"),
    ),
    (
        "knows",
        include_str!("../../../../schemas/output/knows.schema.json"),
    ),
    (
        "render",
        include_str!("../../../../schemas/output/render.schema.json"),
    ),
    (
        "explain",
        include_str!("../../../../schemas/output/explain.schema.json"),
    ),
    (
        "transcript",
        include_str!("../../../../schemas/output/transcript.schema.json"),
    ),
    (
        "playtest",
        include_str!("../../../../schemas/output/playtest.schema.json"),
    ),
    (
        "explore",
        include_str!("../../../../schemas/output/explore.schema.json"),
    ),
];

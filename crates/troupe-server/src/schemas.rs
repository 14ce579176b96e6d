//! The body schemas of `/api/v1/openapi.json` (docs/server.md "API"):
//! what each operation takes (its JSON body and query parameters) and
//! answers. A view answers the `--json` document of its command, so its
//! schema *is* that command's output schema (`schemas/output/`, Format
//! 20.1), embedded under `components.schemas` with its `$id` and referred
//! to by that `$id`; the server's own documents (a pack, a session's
//! summary, the requests) are written here.

use serde_json::{json, Map, Value};

/// The `$id` of the output schema of `command` (`schemas/output/`).
fn output(command: &str) -> String {
    format!("https://troupe.dev/schemas/0.1/output/{command}.schema.json")
}

fn reference(to: &str) -> Value {
    json!({ "$ref": to })
}

fn component(name: &str) -> Value {
    reference(&format!("#/components/schemas/{name}"))
}

/// The schemas of one operation.
#[derive(Debug, Default)]
pub struct Operation {
    /// The JSON request body's schema.
    pub request: Option<Value>,
    /// The success answer's schema (JSON answers only).
    pub response: Option<Value>,
    /// Query parameters: name, schema, required.
    pub query: Vec<(&'static str, Value, bool)>,
}

fn string() -> Value {
    json!({"type": "string"})
}

fn flag() -> Value {
    json!({"type": "boolean"})
}

/// The schemas of `method path` (a route of `/api/v1/workspaces/{ws}`).
pub fn operation(method: &str, path: &str) -> Operation {
    let at = || ("at", string(), false);
    let mut op = Operation::default();
    match (method, path) {
        ("put", "/packs") => op.response = Some(component("Pack")),
        ("get", "/packs") => op.response = Some(component("PackList")),
        ("get", "/packs/{hash}") => op.response = Some(component("Pack")),
        ("post", "/packs:test") => {
            op.query = vec![
                (
                    "format",
                    json!({"enum": ["json", "text", "junit", "all"]}),
                    false,
                ),
                ("name", string(), false),
                ("test", string(), false),
            ];
            op.response = Some(json!({
                "description": "format=json: the `troupe test --json` report (Format 21); format=all: the three reports and the exit code.",
                "type": "object"
            }));
        }
        ("get", "/sessions") => {
            op.query = vec![
                ("cursor", string(), false),
                (
                    "limit",
                    json!({"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}),
                    false,
                ),
            ];
            op.response = Some(component("SessionList"));
        }
        ("post", "/sessions") => {
            op.request = Some(component("CreateSession"));
            op.response = Some(component("Session"));
        }
        ("post", "/sessions:resume") => {
            op.query = vec![
                ("pack", string(), true),
                at(),
                ("runtime", json!({"enum": ["rules", "model"]}), false),
                ("model", string(), false),
            ];
            op.response = Some(component("Session"));
        }
        ("get", "/sessions/{id}") => op.response = Some(component("Session")),
        ("delete", "/sessions/{id}") => {
            op.query = vec![
                ("expected", string(), false),
                ("lines", json!({"type": "integer", "minimum": 0}), false),
            ];
        }
        ("post", "/sessions/{id}/turns") => {
            op.request = Some(component("Turn"));
            op.response = Some(reference(&format!("{}#/$defs/turn", output("run"))));
        }
        ("post", "/sessions/{id}/undo") => {
            op.request = Some(component("Move"));
            op.response = Some(component("Session"));
        }
        ("post", "/sessions/{id}/goto") => {
            op.request = Some(component("Move"));
            op.response = Some(component("Session"));
        }
        ("post", "/sessions/{id}/settings") => {
            op.request = Some(component("Settings"));
            op.response = Some(component("SettingsResult"));
        }
        ("get", "/sessions/{id}/state") => {
            op.query = vec![at()];
            op.response = Some(reference(&output("state")));
        }
        ("get", "/sessions/{id}/ended") => {
            op.query = vec![at()];
            op.response = Some(reference(&output("ended")));
        }
        ("get", "/sessions/{id}/explain") => {
            op.query = vec![at()];
            op.response = Some(reference(&output("explain")));
        }
        ("get", "/sessions/{id}/knows") => {
            op.query = vec![
                ("message", string(), true),
                ("part", json!({"type": "integer", "minimum": 0}), false),
                ("summary", flag(), false),
            ];
            op.response = Some(reference(&output("knows")));
        }
        ("get", "/sessions/{id}/score") => {
            op.response = Some(json!({"oneOf": [
                {"type": "null"},
                reference(&format!("{}#/$defs/score", output("run")))
            ]}));
        }
        ("get", "/sessions/{id}/render") => {
            op.query = vec![
                ("text", string(), true),
                at(),
                ("char", string(), false),
                ("owner", string(), false),
                ("narrator", flag(), false),
                ("per_chat", flag(), false),
            ];
            op.response = Some(reference(&output("render")));
        }
        ("get", "/sessions/{id}/prompt") => {
            op.query = vec![
                at(),
                ("char", string(), false),
                ("model", string(), false),
                (
                    "structured",
                    json!({"enum": ["json_schema", "json_object", "none"]}),
                    false,
                ),
                (
                    "max_tokens",
                    json!({"type": "integer", "minimum": 1}),
                    false,
                ),
                ("temperature", json!({"type": "number"}), false),
            ];
            op.response = Some(component("ChatRequest"));
        }
        // The web page's routes (crates/troupe-server/src/web.rs, docs/web.md).
        ("get", "/packs/{hash}/scenarios") => op.response = Some(component("ScenarioChoices")),
        ("get", "/packs/{hash}/lines") => {
            op.query = vec![("scenario", string(), false)];
            op.response = Some(reference(&format!(
                "{}#/properties/alphabet/properties/lines",
                output("explore")
            )));
        }
        ("get", "/sessions/{id}/transcript") => {
            op.query = vec![at()];
            op.response = Some(reference(&output("transcript")));
        }
        ("get", "/sessions/{id}/next") => {
            op.query = vec![("text", string(), true), ("to", string(), false)];
            op.response = Some(component("NextSpeaker"));
        }
        ("get", "/sessions/{id}/plot.svg") => op.query = vec![at()],
        _ => {}
    }
    op
}

/// `components.schemas`: the server's own documents, the problem, and
/// every output schema under its command's name (`output_run`, …).
pub fn components() -> Map<String, Value> {
    let nullable = |t: &str| json!({"type": [t, "null"]});
    let mut all = Map::new();
    let mut put = |name: &str, schema: Value| {
        all.insert(name.to_string(), schema);
    };
    put(
        "Problem",
        json!({"type": "object", "required": ["type", "title", "status", "detail", "code"], "properties": {
            "type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"},
            "detail": {"type": "string"}, "code": {"type": "string"}, "current": {"type": "string"},
            "diagnostics": {"type": "array"}}}),
    );
    put(
        "Pack",
        json!({"type": "object", "required": ["hash", "kind", "size", "scenarios", "created"],
            "additionalProperties": false, "properties": {
            "hash": {"description": "SHA-256 of the uploaded bytes, hex", "type": "string", "pattern": "^[0-9a-f]{64}$"},
            "kind": {"enum": ["package", "bundle"]},
            "size": {"type": "integer", "minimum": 0},
            "scenarios": {"type": "array", "items": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}},
            "created": {"description": "seconds since the Unix epoch", "type": "integer"}}}),
    );
    put(
        "ScenarioChoices",
        json!({"description": "each scenario of a pack with what a session can choose (docs/web.md)",
            "type": "array", "items": {"type": "object",
            "required": ["id", "name", "description", "difficulty", "openings", "cast"],
            "additionalProperties": false, "properties": {
            "id": {"type": "string"}, "name": {"type": "string"},
            "description": nullable("string"),
            "difficulty": {"type": "object", "required": ["default", "options"], "additionalProperties": false,
                "properties": {"default": nullable("string"), "options": {"type": "array", "items": {"type": "string"}}}},
            "openings": {"type": "array", "items": {"type": "string"}},
            "cast": {"type": "array", "items": {"type": "object", "required": ["id", "name"], "additionalProperties": false,
                "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}}}}}),
    );
    put(
        "NextSpeaker",
        json!({"description": "who would say the first reply to a line (Format 18.9); the turn is not taken",
            "type": "object", "required": ["speaker", "input", "chosen"], "additionalProperties": false,
            "properties": {
            "speaker": {"description": "a character ID, or `narrator`", "type": "string"},
            "input": {"description": "the ID the input message would get (Format 18.4)", "type": "string"},
            "chosen": {"type": "object", "required": ["why"], "properties": {
                "why": {"type": "string"}, "name": {"type": "string"}, "draw": {"type": "integer", "minimum": 0}}}}}),
    );
    put(
        "PackList",
        json!({"type": "object", "required": ["packs"], "additionalProperties": false,
            "properties": {"packs": {"type": "array", "items": component("Pack")}}}),
    );
    put(
        "Session",
        json!({"type": "object", "required": ["id", "pack", "current", "ended", "outcome", "header", "opening"],
        "additionalProperties": false, "properties": {
        "id": {"type": "string"},
        "pack": {"type": "string"},
        "current": nullable("string"),
        "ended": {"type": "boolean"},
        "outcome": nullable("string"),
        "header": {"description": "the session file's header line (Format 18.8)", "type": "object"},
        "opening": {"description": "what fired at the opening root, as in `troupe run --json`", "oneOf": [
            {"type": "null"},
            reference(&format!("{}#/$defs/opening", output("run")))
        ]}}}),
    );
    put(
        "SessionList",
        json!({"description": "one page of a workspace's sessions, in ID order (docs/server.md \"API\")",
            "type": "object", "required": ["sessions", "next"], "additionalProperties": false, "properties": {
            "sessions": {"type": "array", "items": {"type": "object",
                "required": ["id", "pack", "scenario", "created", "messages", "current"],
                "additionalProperties": false, "properties": {
                "id": {"type": "string"},
                "pack": {"description": "the pack's hash", "type": "string"},
                "scenario": {"description": "its header's scenario (Format 18.8)", "type": ["string", "null"]},
                "created": {"description": "seconds since the Unix epoch", "type": "integer"},
                "messages": {"description": "the lines of its session file after the header", "type": "integer", "minimum": 0},
                "current": nullable("string")}}},
            "next": {"description": "`cursor` of the next page; null on the last", "type": ["string", "null"]}}}),
    );
    put(
        "CreateSession",
        json!({"type": "object", "required": ["pack"], "additionalProperties": false, "properties": {
            "pack": {"description": "the pack's hash", "type": "string"},
            "scenario": string(), "seed": {"type": "integer", "minimum": 0},
            "difficulty": string(), "opening": string(), "player_name": string(),
            "runtime": {"description": "`model`: played by the configured model named in `model` (docs/server.md \"Runtimes\")", "enum": ["rules", "model"]},
            "model": {"description": "with `runtime: model`: the name of a model of the server's configuration, never a URL", "type": "string"}}}),
    );
    put(
        "Turn",
        json!({"type": "object", "required": ["text"], "additionalProperties": false, "properties": {
            "text": string(),
            "as": {"description": "the player speaking (Format 18.5); not with `to`", "type": "string"},
            "to": {"description": "the character answering; not with `as`", "type": "string"},
            "expected": {"description": "the current message the client saw: 409 CONFLICT when it is not", "type": ["string", "null"]}}}),
    );
    put(
        "Move",
        json!({"type": "object", "additionalProperties": false, "properties": {
            "message": {"description": "goto: the message to make current", "type": "string"},
            "expected": {"type": ["string", "null"]}}}),
    );
    put(
        "Settings",
        json!({"description": "Format 8.9", "type": "object", "properties": {
            "difficulty": string(),
            "knobs": {"type": "object", "additionalProperties": {"type": "number"}},
            "expected": {"type": ["string", "null"]}}}),
    );
    put(
        "SettingsResult",
        json!({"type": "object", "required": ["message", "firings", "ended", "outcome"], "properties": {
            "message": nullable("string"),
            "firings": {"type": "array", "items": reference(&format!("{}#/$defs/firing", output("run")))},
            "ended": {"type": "boolean"},
            "outcome": nullable("string")}}),
    );
    put(
        "ChatRequest",
        json!({"description": "an OpenAI-compatible Chat Completions request body (Format 24.3)",
            "type": "object", "required": ["model", "messages"], "properties": {
            "model": string(),
            "messages": {"type": "array", "items": {"type": "object", "required": ["role", "content"],
                "properties": {"role": string(), "content": string()}}}}}),
    );
    for (name, text) in troupe::output_schemas() {
        if let Ok(schema) = serde_json::from_str::<Value>(text) {
            put(&format!("output_{name}"), schema);
        }
    }
    all
}

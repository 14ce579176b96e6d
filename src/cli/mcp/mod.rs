//! `troupe mcp [--root DIR]` (Format 20, docs/mcp.md): a Model Context
//! Protocol server over stdio, with the official Rust SDK (`rmcp`), pinned
//! to protocol revision 2025-06-18. It offers the library's answers as
//! tools (their `--json` documents as `structuredContent`) and the
//! specification, the codes and the schemas as resources.
//!
//! A client of the library's public API only: every library path is
//! `troupe::…`.

mod drain;
mod resources;
mod root;
mod tools;

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};

/// The one protocol revision this server speaks (docs/mcp.md): the first
/// with `outputSchema` and `structuredContent`.
pub const PROTOCOL: ProtocolVersion = ProtocolVersion::V_2025_06_18;

/// Arguments of `troupe mcp`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The folder every path argument is resolved in; paths outside it
    /// (also through `..` or symbolic links) are refused (default: the
    /// working directory).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// A tool with its compiled input validator.
struct Entry {
    tool: Tool,
    validator: jsonschema::Validator,
}

/// The server: the root and the tools.
struct Server {
    root: root::Root,
    tools: Arc<Vec<Entry>>,
}

fn json_object(v: Value) -> Arc<Map<String, Value>> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

impl Server {
    fn new(root: root::Root) -> Result<Server, String> {
        let mut entries = Vec::new();
        for d in tools::definitions() {
            let validator = jsonschema::options()
                .offline()
                .build(&d.input)
                .map_err(|e| {
                    format!("tool `{}`: its input schema does not compile: {e}", d.name)
                })?;
            let annotations = ToolAnnotations::with_title(d.title)
                .read_only(d.read_only)
                .destructive(false)
                .idempotent(true)
                .open_world(false);
            let tool = Tool::new(d.name, d.description, json_object(d.input))
                .with_title(d.title)
                .with_raw_output_schema(json_object(d.output))
                .with_annotations(annotations);
            entries.push(Entry { tool, validator });
        }
        Ok(Server {
            root,
            tools: Arc::new(entries),
        })
    }

    fn call(&self, request: CallToolRequestParams) -> Result<CallToolResult, ErrorData> {
        let Some(entry) = self.tools.iter().find(|e| e.tool.name == request.name) else {
            return Err(ErrorData::invalid_params(
                format!("no tool `{}`", request.name),
                None,
            ));
        };
        let args = Value::Object(request.arguments.unwrap_or_default());
        let problems: Vec<String> = entry
            .validator
            .iter_errors(&args)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if !problems.is_empty() {
            return Err(ErrorData::invalid_params(
                format!(
                    "the arguments of `{}` do not fit its input schema: {}",
                    request.name,
                    problems.join("; ")
                ),
                None,
            ));
        }
        let outcome = tools::call(&self.root, &request.name, args)
            .map_err(|tools::BadCall(m)| ErrorData::invalid_params(m, None))?;
        let mut result = if outcome.is_error {
            CallToolResult::structured_error(outcome.structured)
        } else {
            CallToolResult::structured(outcome.structured)
        };
        result.content = vec![ContentBlock::text(outcome.text)];
        Ok(result)
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_protocol_version(PROTOCOL)
        .with_server_info(
            Implementation::new("troupe", env!("CARGO_PKG_VERSION")).with_title("Troupe"),
        )
        .with_instructions(
            "Troupe checks, tests, compiles and steps scenario packs. Paths are relative to the \
             server's root. Tool results are the `--json` documents of the troupe commands; read \
             the specification by section at troupe://format/<N> and a diagnostic code at \
             troupe://validation/<CODE>.",
        )
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Owned(vec![PROTOCOL])
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.tools.iter().map(|e| e.tool.clone()).collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools
            .iter()
            .find(|e| e.tool.name == name)
            .map(|e| e.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call(request).map(CallToolResponse::from)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(
            resources::all()
                .into_iter()
                .map(|d| {
                    let size = d.text.len() as u64;
                    Resource::new(d.uri, d.name)
                        .with_description(d.description)
                        .with_mime_type(d.mime)
                        .with_size(size)
                })
                .collect(),
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(
            resources::TEMPLATES
                .iter()
                .map(|(uri, name, description)| {
                    ResourceTemplate::new(*uri, *name).with_description(*description)
                })
                .collect(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match resources::read(&request.uri) {
            Some(d) => Ok(ReadResourceResult::new(vec![
                ResourceContents::text(d.text, d.uri).with_mime_type(d.mime)
            ])
            .into()),
            None => Err(ErrorData::resource_not_found(
                format!("no resource `{}`", request.uri),
                None,
            )),
        }
    }
}

/// Runs the server until the client closes standard input; returns the
/// exit code (0; 2 for a root that is not a folder; 3 when the transport
/// fails).
pub fn run(args: Args) -> i32 {
    let dir = args.root.unwrap_or_else(|| PathBuf::from("."));
    let root = match root::Root::new(&dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("troupe mcp: {e}");
            return 2;
        }
    };
    // Relative paths the library is given (and its diagnostics show) are
    // relative to the root.
    if let Err(e) = std::env::set_current_dir(root.dir()) {
        eprintln!("troupe mcp: cannot enter the root: {e}");
        return 2;
    }
    let server = match Server::new(root) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("troupe mcp: {e}");
            return 3;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("troupe mcp: cannot start the runtime: {e}");
            return 3;
        }
    };
    runtime.block_on(async move {
        let service = match server.serve(drain::stdio()).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("troupe mcp: {e}");
                return 3;
            }
        };
        match service.waiting().await {
            Ok(_) => 0,
            Err(e) => {
                eprintln!("troupe mcp: {e}");
                3
            }
        }
    })
}

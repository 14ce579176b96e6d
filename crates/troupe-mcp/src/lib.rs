//! `troupe mcp [--root DIR]` (Format 20, docs/mcp.md): a Model Context
//! Protocol server over stdio, with the official Rust SDK (`rmcp`), pinned
//! to protocol revision 2025-06-18. It offers the library's answers as
//! tools (their `--json` documents as `structuredContent`) and the
//! specification, the codes and the schemas as resources.
//!
//! A client of the core's public API only: every library path is
//! `troupe::…`. A crate of its own (not a module of the binary) so that the
//! fuzz target of its request handler ([`serve_bytes`]) reaches it; the
//! command line only parses `--root` and calls [`run`].

mod drain;
mod resources;
mod root;
mod tools;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// A tool with its compiled input validator.
struct Entry {
    tool: Tool,
    validator: jsonschema::Validator,
}

/// The server: the root and the tools. Clones share the tools and the
/// turn of tool calls.
#[derive(Clone)]
struct Server {
    root: root::Root,
    tools: Arc<Vec<Entry>>,
    /// Held by the tool call running: calls run one at a time, in the
    /// order they arrive, off the thread that answers the protocol, so
    /// `ping`, `tools/list` and the resources are answered during a long
    /// call (docs/mcp.md).
    busy: Arc<tokio::sync::Mutex<()>>,
}

/// The most characters of one schema problem quoted in an error.
const MAX_PROBLEM_CHARS: usize = 300;

/// The JSON-RPC error code of a request the client cancelled (the one
/// LSP uses; MCP names none). The SDK writes no response to a cancelled
/// request, as the protocol says; this error is what the handler returns.
const CANCELLED: rmcp::model::ErrorCode = rmcp::model::ErrorCode(-32800);

fn cancelled_error() -> ErrorData {
    ErrorData::new(
        CANCELLED,
        "the request was cancelled (notifications/cancelled)",
        None,
    )
}

/// `work`'s output, or `None` when `cancelled` completes first.
async fn unless_cancelled<F, C>(work: F, cancelled: C) -> Option<F::Output>
where
    F: std::future::Future,
    C: std::future::Future<Output = ()>,
{
    use std::task::Poll;
    let mut work = std::pin::pin!(work);
    let mut cancelled = std::pin::pin!(cancelled);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = work.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        if cancelled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
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
            busy: Arc::default(),
        })
    }

    fn call(
        &self,
        request: CallToolRequestParams,
        cancelled: &AtomicBool,
    ) -> Result<CallToolResult, ErrorData> {
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
                // The validator's sentence quotes the value, which may be
                // the whole argument: cut, so an error is not as large as
                // the request.
                let e = e.to_string();
                let e = match e.char_indices().nth(MAX_PROBLEM_CHARS) {
                    Some((i, _)) => format!("{}…", &e[..i]),
                    None => e,
                };
                if at.is_empty() {
                    e
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
        let outcome = tools::call(&self.root, &request.name, args, cancelled)
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

    /// A tool call waits for the one before it, then runs on a blocking
    /// thread; after `notifications/cancelled` it returns at once (the SDK
    /// sends no response), and the work stops where the tool can stop
    /// (`run` before its next turn) before the next call starts.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let ct = context.ct.clone();
        let Some(turn) = unless_cancelled(self.busy.clone().lock_owned(), ct.cancelled()).await
        else {
            return Err(cancelled_error());
        };
        let flag = Arc::new(AtomicBool::new(false));
        let (server, stop) = (self.clone(), flag.clone());
        let work = tokio::task::spawn_blocking(move || {
            let _turn = turn;
            server.call(request, &stop)
        });
        match unless_cancelled(work, ct.cancelled()).await {
            Some(Ok(result)) => result.map(CallToolResponse::from),
            Some(Err(e)) => Err(ErrorData::internal_error(
                format!("the tool call stopped: {e}"),
                None,
            )),
            None => {
                flag.store(true, Ordering::Relaxed);
                Err(cancelled_error())
            }
        }
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

/// Runs the server on standard input and output until the client closes
/// standard input, with every path argument resolved in `root` (default:
/// the working directory, which the server enters); returns the exit code
/// (0; 2 for a root that is not a folder; 3 when the transport fails).
pub fn run(root: Option<PathBuf>) -> i32 {
    let dir = root.unwrap_or_else(|| PathBuf::from("."));
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
    let (input, output) = drain::stdio();
    serve_on(&runtime, server, input, output)
}

/// Serves the requests of `input` (JSON-RPC lines, as standard input
/// would give them) with every path resolved in `root`, and returns what
/// the server wrote (its standard output): the request handler whole, for
/// the fuzz target and tests. As [`run`] does, it enters `root` (the
/// process's working directory changes: the library is given paths
/// relative to the root). `None` when `root` is not a folder.
pub fn serve_bytes(root: &std::path::Path, input: &[u8]) -> Option<Vec<u8>> {
    let root = root::Root::new(root).ok()?;
    std::env::set_current_dir(root.dir()).ok()?;
    let server = Server::new(root).ok()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let out = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (input, output) = drain::wrap(
        std::io::Cursor::new(input.to_vec()),
        SharedBytes(out.clone()),
    );
    serve_on(&runtime, server, input, output);
    let bytes = out.lock().map(|b| b.clone()).unwrap_or_default();
    Some(bytes)
}

/// Bytes written by the server, shared with [`serve_bytes`].
struct SharedBytes(Arc<std::sync::Mutex<Vec<u8>>>);

impl tokio::io::AsyncWrite for SharedBytes {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if let Ok(mut b) = self.0.lock() {
            b.extend_from_slice(buf);
        }
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// Runs `server` on `input` and `output` until the input ends; the exit
/// code of [`run`].
fn serve_on<R, W>(
    runtime: &tokio::runtime::Runtime,
    server: Server,
    input: drain::HoldingReader<R>,
    output: drain::CountingWriter<W>,
) -> i32
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    runtime.block_on(async move {
        let service = match server.serve((input, output)).await {
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

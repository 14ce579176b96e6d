//! Every request read is answered before `troupe mcp` exits (docs/mcp.md;
//! issue 43 item 8). The MCP SDK stops reading at the end of standard input
//! and gives the calls still running a few seconds to answer; calls run one
//! at a time, so 3,000 calls piped from a file lost most of their answers.
//! Here standard input is wrapped so that its end is passed on only once
//! every request read (a JSON-RPC message with `id` and `method`) has had
//! its response written (a message with `id` and `result` or `error`) or
//! was cancelled (`notifications/cancelled`: the SDK writes no response to
//! a cancelled request, as the protocol says) — or when no response has
//! been written for [`STALL`], so a request the SDK never answers cannot
//! keep the server alive forever.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use serde::de::IgnoredAny;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How long the end of input waits with no response written before it is
/// passed on anyway.
pub const STALL: Duration = Duration::from_secs(120);

/// The longest line counted (the transport's own bound, docs/mcp.md);
/// a longer one is not a message the SDK reads.
const MAX_LINE: usize = 16 << 20;

/// The requests read and not yet answered, by ID (their JSON text).
#[derive(Default)]
struct Counts {
    pending: std::collections::HashSet<String>,
    /// Responses written: a change wakes the end of input.
    answered: u64,
    waker: Option<Waker>,
}

type Shared = Arc<Mutex<Counts>>;

/// What a JSON-RPC message holds, as far as counting goes.
#[derive(serde::Deserialize)]
struct Probe {
    id: Option<Box<serde_json::value::RawValue>>,
    method: Option<String>,
    params: Option<Box<serde_json::value::RawValue>>,
    result: Option<IgnoredAny>,
    error: Option<IgnoredAny>,
}

/// The `params` of `notifications/cancelled`.
#[derive(serde::Deserialize)]
struct Cancelled {
    #[serde(rename = "requestId")]
    request_id: Option<Box<serde_json::value::RawValue>>,
}

/// An ID as one text whatever its spelling (`2`, ` 2`).
fn id_text(raw: &serde_json::value::RawValue) -> String {
    serde_json::from_str::<serde_json::Value>(raw.get())
        .map(|v| v.to_string())
        .unwrap_or_else(|_| raw.get().to_string())
}

impl Probe {
    /// The ID of a request (a message with `id` and `method`).
    fn request(&self) -> Option<String> {
        self.method.as_ref()?;
        self.id.as_deref().map(id_text)
    }

    /// The ID a response answers (`id` with `result` or `error`).
    fn response(&self) -> Option<String> {
        if self.result.is_none() && self.error.is_none() {
            return None;
        }
        self.id.as_deref().map(id_text)
    }

    /// The request a `notifications/cancelled` cancels: the SDK sends no
    /// response for it (the protocol says none is sent), so it is no
    /// longer waited for.
    fn cancels(&self) -> Option<String> {
        if self.method.as_deref() != Some("notifications/cancelled") || self.id.is_some() {
            return None;
        }
        let c: Cancelled = serde_json::from_str(self.params.as_deref()?.get()).ok()?;
        c.request_id.as_deref().map(id_text)
    }
}

/// The ID of the request a line holds, when the SDK reads it as one: the
/// line is read as the SDK's transport reads it (one client message; a
/// batch, a known method with wrong `params`, an `id` that is not a string
/// or an integer are answered "Invalid request" with no ID, so they are
/// not waited for).
fn request_id(line: &[u8]) -> Option<String> {
    use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage};
    // Cheap first: most lines the SDK reads as requests have `id` and
    // `method`; only those are read as the SDK does.
    if !probes(line).iter().any(|p| p.request().is_some()) {
        return None;
    }
    match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(JsonRpcMessage::Request(r)) => serde_json::to_string(&r.id).ok(),
        _ => None,
    }
}

/// The messages of one line (a message, or a batch of them).
fn probes(line: &[u8]) -> Vec<Probe> {
    match line.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => serde_json::from_slice::<Probe>(line)
            .ok()
            .into_iter()
            .collect(),
        Some(b'[') => serde_json::from_slice::<Vec<Probe>>(line).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Splits what arrives into lines (keeping an unfinished one, bounded by
/// [`MAX_LINE`]) and hands each whole line to `each`.
#[derive(Default)]
struct Lines {
    partial: Vec<u8>,
    too_long: bool,
}

impl Lines {
    fn feed(&mut self, mut bytes: &[u8], each: &mut dyn FnMut(&[u8])) {
        while let Some(nl) = bytes.iter().position(|b| *b == b'\n') {
            self.push(&bytes[..nl]);
            if !self.too_long {
                each(&self.partial);
            }
            self.partial.clear();
            self.too_long = false;
            bytes = &bytes[nl + 1..];
        }
        self.push(bytes);
    }

    fn push(&mut self, bytes: &[u8]) {
        if self.too_long || self.partial.len() + bytes.len() > MAX_LINE {
            self.too_long = true;
            self.partial.clear();
        } else {
            self.partial.extend_from_slice(bytes);
        }
    }

    /// The last line, without a line feed after it (at the end of input).
    fn finish(&mut self, each: &mut dyn FnMut(&[u8])) {
        if !self.too_long && !self.partial.is_empty() {
            each(&self.partial);
        }
        self.partial.clear();
    }
}

/// Standard input that holds back its end until every request read is
/// answered (see the module).
pub struct HoldingReader<R> {
    inner: R,
    counts: Shared,
    lines: Lines,
    ended: bool,
    answered_seen: u64,
    stall: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// Standard output that counts the responses written.
pub struct CountingWriter<W> {
    inner: W,
    counts: Shared,
    lines: Lines,
}

/// The server's standard input and output, wrapped.
pub fn stdio() -> (
    HoldingReader<tokio::io::Stdin>,
    CountingWriter<tokio::io::Stdout>,
) {
    wrap(tokio::io::stdin(), tokio::io::stdout())
}

/// `reader` and `writer` wrapped together (see the module).
pub fn wrap<R, W>(reader: R, writer: W) -> (HoldingReader<R>, CountingWriter<W>) {
    let counts: Shared = Arc::default();
    (
        HoldingReader {
            inner: reader,
            counts: counts.clone(),
            lines: Lines::default(),
            ended: false,
            answered_seen: 0,
            stall: None,
        },
        CountingWriter {
            inner: writer,
            counts,
            lines: Lines::default(),
        },
    )
}

impl<R> HoldingReader<R> {
    fn count(&mut self, bytes: &[u8], last: bool) {
        let counts = self.counts.clone();
        let mut each = |line: &[u8]| {
            let Ok(mut c) = counts.lock() else {
                return;
            };
            if let Some(id) = request_id(line) {
                c.pending.insert(id);
            } else {
                for p in probes(line) {
                    if let Some(id) = p.cancels() {
                        c.pending.remove(&id);
                    }
                }
            }
        };
        self.lines.feed(bytes, &mut each);
        if last {
            self.lines.finish(&mut each);
        }
    }

    /// At the end of input: ready (the end is passed on) once every
    /// request is answered or nothing was answered for [`STALL`].
    fn poll_end(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let answered = {
            let Ok(mut c) = self.counts.lock() else {
                return Poll::Ready(Ok(()));
            };
            if c.pending.is_empty() {
                return Poll::Ready(Ok(()));
            }
            c.waker = Some(cx.waker().clone());
            c.answered
        };
        if self.stall.is_none() || answered != self.answered_seen {
            self.answered_seen = answered;
            self.stall = Some(Box::pin(tokio::time::sleep(STALL)));
        }
        match self.stall.as_mut().map(|s| s.as_mut().poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(Ok(())),
            _ => Poll::Pending,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for HoldingReader<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.ended {
            return this.poll_end(cx);
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let new = buf.filled()[before..].to_vec();
                if new.is_empty() {
                    this.ended = true;
                    this.count(&[], true);
                    return this.poll_end(cx);
                }
                this.count(&new, false);
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for CountingWriter<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            let mut answered = Vec::new();
            this.lines.feed(&buf[..n], &mut |line| {
                answered.extend(probes(line).iter().filter_map(Probe::response));
            });
            if !answered.is_empty() {
                if let Ok(mut c) = this.counts.lock() {
                    for id in &answered {
                        c.pending.remove(id);
                    }
                    c.answered += answered.len() as u64;
                    if let Some(w) = c.waker.take() {
                        w.wake();
                    }
                }
            }
        }
        r
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_responses_are_counted_by_line() {
        let mut lines = Lines::default();
        let mut seen = Vec::new();
        lines.feed(b"{\"id\":1,\"method\":\"ping\"}\n{\"me", &mut |l| {
            seen.push(probes(l).len())
        });
        lines.feed(
            b"thod\":\"x\"}\n[{\"id\":2,\"result\":{}}]\nnot json\n",
            &mut |l| seen.push(probes(l).len()),
        );
        assert_eq!(seen, [1, 1, 1, 0]);
        let p = probes(b"{\"id\":1,\"method\":\"ping\",\"params\":{}}");
        assert_eq!(p[0].request().as_deref(), Some("1"));
        assert_eq!(p[0].response(), None);
        let p = probes(b"[{\"id\": 1, \"result\": {}}]");
        assert_eq!(p[0].response().as_deref(), Some("1"));
        let p =
            probes(b"{\"method\":\"notifications/cancelled\",\"params\":{\"requestId\": \"a\"}}");
        assert_eq!(p[0].cancels().as_deref(), Some("\"a\""));
        assert_eq!(p[0].request(), None);
    }

    /// Found by the `mcp` fuzz target: a line with `id` and `method` that
    /// the SDK cannot read as a request (a batch, `params` that is not an
    /// object, an `id` that is an object, no `jsonrpc`) is answered
    /// "Invalid request" with no ID; counted as a request, it held the end
    /// of input for two minutes. Only what the SDK reads as a request is
    /// waited for.
    #[test]
    fn only_what_the_sdk_reads_as_a_request_is_waited_for() {
        let ok = br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
        assert_eq!(request_id(ok).as_deref(), Some("7"));
        let custom = br#"{"jsonrpc":"2.0","id":"x","method":"nope"}"#;
        assert_eq!(request_id(custom).as_deref(), Some("\"x\""));
        for bad in [
            &br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#[..],
            br#"{"jsonrpc":"2.0","id":3,"method":"ping","params":5}"#,
            br#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
            br#"{"id":4,"method":"ping"}"#,
        ] {
            assert_eq!(request_id(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}

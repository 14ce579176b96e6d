//! Every request read is answered before `troupe mcp` exits (docs/mcp.md;
//! issue 43 item 8). The MCP SDK stops reading at the end of standard input
//! and gives the calls still running a few seconds to answer; calls run one
//! at a time, so 3,000 calls piped from a file lost most of their answers.
//! Here standard input is wrapped so that its end is passed on only once
//! every request read (a JSON-RPC message with `id` and `method`) has had
//! its response written (a message with `id` and `result` or `error`) —
//! or when no response has been written for [`STALL`], so a request the
//! SDK never answers cannot keep the server alive forever.

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

#[derive(Default)]
struct Counts {
    requests: u64,
    answered: u64,
    waker: Option<Waker>,
}

type Shared = Arc<Mutex<Counts>>;

/// What a JSON-RPC message holds, as far as counting goes.
#[derive(serde::Deserialize)]
struct Probe {
    id: Option<IgnoredAny>,
    method: Option<IgnoredAny>,
    result: Option<IgnoredAny>,
    error: Option<IgnoredAny>,
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
        let mut n = 0u64;
        let mut each = |line: &[u8]| {
            n += probes(line)
                .iter()
                .filter(|p| p.id.is_some() && p.method.is_some())
                .count() as u64;
        };
        self.lines.feed(bytes, &mut each);
        if last {
            self.lines.finish(&mut each);
        }
        if let Ok(mut c) = self.counts.lock() {
            c.requests += n;
        }
    }

    /// At the end of input: ready (the end is passed on) once every
    /// request is answered or nothing was answered for [`STALL`].
    fn poll_end(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let answered = {
            let Ok(mut c) = self.counts.lock() else {
                return Poll::Ready(Ok(()));
            };
            if c.answered >= c.requests {
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
            let mut answered = 0u64;
            this.lines.feed(&buf[..n], &mut |line| {
                answered += probes(line)
                    .iter()
                    .filter(|p| p.id.is_some() && (p.result.is_some() || p.error.is_some()))
                    .count() as u64;
            });
            if answered > 0 {
                if let Ok(mut c) = this.counts.lock() {
                    c.answered += answered;
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
        assert!(p[0].id.is_some() && p[0].method.is_some() && p[0].result.is_none());
    }
}

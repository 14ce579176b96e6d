//! The server's log on stderr (docs/server.md "Start"): `tracing` lines
//! through one buffer, so that the line per request (`answered`) costs no
//! `write` of its own (docs/performance.md "Server", Run AL).
//!
//! - A warning or an error is written out at once, with everything
//!   buffered before it (the order of lines is kept).
//! - Other lines (the `answered` line per request, start and shutdown)
//!   wait in the buffer until it holds [`CAPACITY`] bytes, or for the
//!   flush [`flush_every`] makes every [`FLUSH_EVERY`], or for the flush at
//!   a clean shutdown ([`Log::flush`]).
//!
//! So a clean shutdown (SIGTERM, Ctrl-C) loses no line; a SIGKILL or a
//! power cut can lose the `answered` lines of the last [`FLUSH_EVERY`] at
//! most (at most [`CAPACITY`] bytes), never a warning or an error.

use std::io::{BufWriter, Stderr, Write};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// The buffer's size: about 50 `answered` lines.
pub const CAPACITY: usize = 8 * 1024;

/// How long an `answered` line may wait in the buffer.
pub const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// The buffered stderr ([module docs](self)); clones share the buffer.
#[derive(Clone)]
pub struct Log(Arc<Mutex<BufWriter<Stderr>>>);

impl Log {
    /// An empty buffer in front of stderr.
    pub fn new() -> Log {
        Log(Arc::new(Mutex::new(BufWriter::with_capacity(
            CAPACITY,
            std::io::stderr(),
        ))))
    }

    fn lock(&self) -> MutexGuard<'_, BufWriter<Stderr>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes out what the buffer holds (a clean shutdown's last step).
    pub fn flush(&self) {
        let _ = self.lock().flush();
    }
}

impl Default for Log {
    fn default() -> Log {
        Log::new()
    }
}

/// Flushes `log` every [`FLUSH_EVERY`] while the runtime runs.
pub async fn flush_every(log: Log) {
    let mut tick = tokio::time::interval(FLUSH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let mut b = log.lock();
        if !b.buffer().is_empty() {
            let _ = b.flush();
        }
    }
}

/// One line's writer: the buffer, locked while the line is written, and
/// whether the line is written out at once (a warning or an error).
pub struct Line<'a> {
    buf: MutexGuard<'a, BufWriter<Stderr>>,
    urgent: bool,
}

impl Write for Line<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.write(bytes)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.buf.flush()
    }
}

impl Drop for Line<'_> {
    fn drop(&mut self) {
        if self.urgent {
            let _ = self.buf.flush();
        }
    }
}

impl<'a> MakeWriter<'a> for Log {
    type Writer = Line<'a>;

    fn make_writer(&'a self) -> Line<'a> {
        Line {
            buf: self.lock(),
            urgent: true,
        }
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Line<'a> {
        Line {
            buf: self.lock(),
            urgent: urgent(meta.level()),
        }
    }
}

/// Whether a line of `level` is written out at once: a warning or an
/// error (`Level`s order by verbosity, ERROR < WARN < INFO).
fn urgent(level: &tracing::Level) -> bool {
    *level <= tracing::Level::WARN
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    #[test]
    fn warnings_and_errors_are_written_at_once_and_other_lines_wait() {
        assert!(urgent(&Level::ERROR) && urgent(&Level::WARN));
        assert!(!urgent(&Level::INFO) && !urgent(&Level::DEBUG) && !urgent(&Level::TRACE));
        // A line whose level is unknown is written at once.
        assert!(Log::new().make_writer().urgent);
    }
}

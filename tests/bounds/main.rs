//! The bound tests, linked once beside `tests/it/` (issue 38 item 6): each
//! compares the time or peak memory of two input sizes (or holds a run
//! under a memory bound). They run one at a time: every test first takes
//! [`serial`], so no bound test measures beside another one; and `cargo
//! test` runs this binary after `it`, never beside it. In-process work is
//! timed by [`ThreadCpu`], the CPU time of the test's own thread, not by
//! the wall clock; runs of the binary are measured by GNU time
//! (`tests/common/measured.rs`). Run one file's tests with
//! `cargo test --test bounds <module>::`.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

#[path = "../common/mod.rs"]
mod common;
#[cfg(feature = "server")]
#[path = "../server_support/mod.rs"]
mod server_support;

mod check_linear;
mod hostile_cli;
mod hostile_model;
mod keys_linear;
mod lore_linear;
mod mcp_stdio;
mod prompt_linear;
mod safety_linear;
#[cfg(feature = "server")]
mod server_bounds;

/// The one lock every bound test holds while it runs.
static SERIAL: Mutex<()> = Mutex::new(());

/// Takes [`SERIAL`] for the rest of the calling test. A test that failed
/// while holding it poisons it; the next test takes it all the same.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A point on the calling thread's CPU clock: what the work done on this
/// thread since then cost, whatever else the machine runs meanwhile
/// (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`; the wall clock where there is
/// no such clock).
pub struct ThreadCpu(Duration);

impl ThreadCpu {
    /// The thread's CPU time now.
    pub fn now() -> Self {
        Self(thread_cpu())
    }

    /// The thread's CPU time since [`ThreadCpu::now`].
    pub fn elapsed(&self) -> Duration {
        thread_cpu().saturating_sub(self.0)
    }
}

#[cfg(unix)]
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec for the call.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(r, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

#[cfg(not(unix))]
fn thread_cpu() -> Duration {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed()
}

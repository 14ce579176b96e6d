//! Runs of the `troupe` binary measured from outside the process:
//! `wait4`'s resource usage of the child gives its peak memory and CPU
//! time, which the bound tests compare between two input sizes.
#![cfg(unix)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_troupe");

/// One finished run of the binary.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// Peak resident memory, KiB.
    pub max_rss_kib: i64,
    /// User + system CPU time, seconds.
    pub cpu: f64,
}

/// Runs `troupe args…` (in `dir`, with `stdin`) and measures it with
/// `wait4`.
pub fn troupe_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Run {
    measure(dir, args, stdin, true)
}

/// [`troupe_in`] with no input, its standard output read and dropped as it
/// comes (`stdout` is empty): a child's peak memory as `wait4` reports it
/// includes the test process's own peak at the time of the spawn (Linux
/// keeps the larger of the two across `exec`), so a test that holds a large
/// output in memory raises the figures of every later run. Use it for runs
/// whose output is large and not needed.
pub fn troupe_dropping_stdout(dir: &Path, args: &[&str]) -> Run {
    measure(dir, args, None, false)
}

// The child is reaped by `wait4` (which also gives its resource usage),
// not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn measure(dir: &Path, args: &[&str], stdin: Option<&[u8]>, keep_stdout: bool) -> Run {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn troupe");
    let input = stdin.map(<[u8]>::to_vec).unwrap_or_default();
    let mut pipe = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        if keep_stdout {
            let _ = std::io::Read::read_to_end(&mut out, &mut s);
        } else {
            let _ = std::io::copy(&mut out, &mut std::io::sink());
        }
        s
    });
    let mut e = Vec::new();
    let _ = std::io::Read::read_to_end(&mut err, &mut e);
    let o = reader.join().unwrap();
    writer.join().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet reaped; the pointers are valid.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4");
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Run {
        code: if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            -1
        },
        stdout: String::from_utf8_lossy(&o).into_owned(),
        stderr: String::from_utf8_lossy(&e).into_owned(),
        max_rss_kib: usage.ru_maxrss,
        cpu: secs(usage.ru_utime) + secs(usage.ru_stime),
    }
}

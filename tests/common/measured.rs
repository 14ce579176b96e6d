//! Runs of the `troupe` binary measured from outside the process: GNU
//! time's report of the child's resource usage gives its peak memory and
//! CPU time, which the bound tests compare between two input sizes.
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

/// GNU time, the measuring parent of every run (see [`troupe_in`]).
const TIME: &str = "/usr/bin/time";

/// Runs `troupe args…` (in `dir`, with `stdin`) and measures it.
///
/// The child is started by GNU time, not by this process: a child that this
/// (large, multi-threaded) test process spawned directly would report this
/// process's own peak as its `ru_maxrss`, because Linux carries the peak of
/// the address space a process leaves at `exec` into its maximum (and
/// `posix_spawn` leaves the parent's). GNU time is small and forks, so the
/// figure it records is the binary's own peak.
pub fn troupe_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Run {
    measure(dir, args, stdin, true, &[])
}

/// [`troupe_in`] with no input and these environment variables set.
pub fn troupe_with_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    measure(dir, args, None, true, env)
}

/// [`troupe_in`] with no input, its standard output read and dropped as it
/// comes (`stdout` is empty): for runs whose output is large and not
/// needed, so the test process stays small.
pub fn troupe_dropping_stdout(dir: &Path, args: &[&str]) -> Run {
    measure(dir, args, None, false, &[])
}

fn measure(
    dir: &Path,
    args: &[&str],
    stdin: Option<&[u8]>,
    keep_stdout: bool,
    env: &[(&str, &str)],
) -> Run {
    assert!(
        Path::new(TIME).exists(),
        "{TIME} is missing: install the Debian package `time` (.ci/run does)"
    );
    let measured = tempfile::NamedTempFile::new().unwrap();
    let mut child = Command::new(TIME)
        .arg("-o")
        .arg(measured.path())
        .args(["-f", "%x %M %U %S", "--", BIN])
        .args(args)
        .current_dir(dir)
        // The binary's allocator (mimalloc) returns freed pages to the
        // system after a delay (10 ms by default), so its peak also counted
        // whatever was freed in the last moments, which depends on timing
        // and on how allocation sizes fall, not on what the run holds: the
        // same 10,000-turn run peaked 5 or 22 MiB above the 5,000-turn one
        // with the same heap peak (heaptrack). Pages are returned at once.
        .env("MIMALLOC_PURGE_DELAY", "0")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn troupe under GNU time");
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
    child.wait().expect("wait for GNU time");
    // One line `%x %M %U %S`, after a line "Command terminated by signal N"
    // when the binary was killed (then %x is not its exit status).
    let report = std::fs::read_to_string(measured.path()).unwrap();
    let signalled = report.contains("terminated by signal");
    let fields: Vec<&str> = report
        .lines()
        .last()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(fields.len(), 4, "GNU time's report: {report:?}");
    let number = |i: usize| -> f64 { fields[i].parse().expect("a number from GNU time") };
    Run {
        code: if signalled { -1 } else { number(0) as i32 },
        stdout: String::from_utf8_lossy(&o).into_owned(),
        stderr: String::from_utf8_lossy(&e).into_owned(),
        max_rss_kib: number(1) as i64,
        cpu: number(2) + number(3),
    }
}

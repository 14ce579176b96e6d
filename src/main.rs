//! The `troupe` command: a thin layer that wires library calls.
//!
//! `src/cli/` is this binary's client code, not a stage of the library: it
//! parses arguments (clap), calls the public API of the `troupe` library
//! (`troupe::…`, docs/embedding.md) and prints.

mod cli;

/// The binary's allocator: checking and compiling a pack builds and drops
/// many small JSON values and parse trees, which mimalloc serves faster than
/// the system allocator (docs/performance.md, Run I). The library leaves
/// the choice to its embedder.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // Output piped into a reader that stops early (`troupe state … | head`)
    // ends the process quietly, as for any Unix tool, instead of a write
    // error turning into a panic in `println!`.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread
    // starts has no other effect on the process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::process::exit(cli::run());
}

//! The `troupe` command: a thin layer that wires library calls (see `src/cli/`).

fn main() {
    std::process::exit(troupe::cli::run());
}

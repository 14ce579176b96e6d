//! `troupe plot BUNDLE SESSION [--vars A,B] [--at ID | --tree] [-o FILE]`
//! (Format 20.4): an SVG picture of a recorded session's variables over its
//! messages. The library draws it ([`troupe::pictures::plot`]); this file
//! only wires it.

use std::io::Write;
use std::path::PathBuf;

/// Arguments of `troupe plot`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A bundle file, a pack directory or a package.
    pub bundle: PathBuf,
    /// A session file (for a pack, also looked for in its `sessions/`).
    pub session: PathBuf,
    /// The variables to draw, by state name, comma separated (default: every
    /// int, number or bool variable).
    #[arg(long, value_delimiter = ',')]
    pub vars: Option<Vec<String>>,
    /// The last message of the path (default: the session's last message).
    #[arg(long, conflicts_with = "tree")]
    pub at: Option<String>,
    /// Draw every branch of the message tree.
    #[arg(long)]
    pub tree: bool,
    /// Write the SVG to FILE (temp file, then rename) instead of standard output.
    #[arg(short = 'o', long = "out")]
    pub out: Option<PathBuf>,
}

/// Runs `troupe plot`; returns the exit code.
pub fn run(args: Args) -> i32 {
    if let Some(out) = &args.out {
        if let Err(m) = troupe::files::refuse_inputs(
            &[out.as_path()],
            &[args.bundle.as_path(), args.session.as_path()],
        ) {
            eprintln!("troupe plot: refusing to write the plot: {m}");
            return 2;
        }
    }
    let history = match super::open_history(&args.bundle, Some(&args.session)) {
        Ok(h) => h,
        Err(code) => return code,
    };
    let opts = {
        let mut o = troupe::pictures::PlotOptions::default();
        o.vars = args.vars.map(|v| {
            v.into_iter()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        });
        o.at = args.at;
        o.tree = args.tree;
        o
    };
    let svg = match troupe::pictures::plot(&history, &opts) {
        Ok(s) => s,
        Err(e) => return super::report(&e),
    };
    match &args.out {
        None => {
            let mut out = std::io::stdout().lock();
            match out.write_all(svg.as_bytes()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    eprintln!("troupe plot: cannot write the plot: {e}");
                    3
                }
                _ => 0,
            }
        }
        Some(out) => match troupe::files::write_atomic(out, svg.as_bytes()) {
            Ok(()) => {
                println!("plot of {} → {}", history.scenario(), out.display());
                0
            }
            Err(e) => {
                eprintln!("troupe plot: {e}");
                3
            }
        },
    }
}

//! `troupe graph PACK [--scenario ID] [--format dot|mermaid] [-o FILE]`
//! (Format 20.2): prints or writes the scenario's wiring as a graph. The
//! library builds it ([`troupe::tools::graph`]); this file only wires it.

use std::path::{Path, PathBuf};

/// The text formats of `troupe graph`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Graphviz DOT.
    Dot,
    /// A Mermaid flowchart.
    Mermaid,
}

/// Arguments of `troupe graph`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A pack directory, a bundle or a package.
    pub pack: PathBuf,
    /// The scenario (default: the first).
    #[arg(long)]
    pub scenario: Option<String>,
    /// The output format: dot or mermaid (text only for now; no SVG).
    #[arg(long, value_enum, default_value = "dot")]
    pub format: Format,
    /// Write the graph to FILE (temp file, then rename) instead of standard output.
    #[arg(short = 'o', long = "out")]
    pub out: Option<PathBuf>,
}

/// Runs `troupe graph`; returns the exit code.
pub fn run(args: Args) -> i32 {
    // Format 16.3: an output that is an input (the pack, or a file in its
    // folder) is a usage error before anything runs.
    if let Some(out) = &args.out {
        if let Err(m) = troupe::files::refuse_inputs(&[out.as_path()], &[args.pack.as_path()]) {
            eprintln!("troupe graph: refusing to write the graph: {m}");
            return 2;
        }
    }
    let pack = match super::open_pack_api(&args.pack, troupe::OpenOptions::default()) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let format = match args.format {
        Format::Dot => troupe::tools::GraphFormat::Dot,
        Format::Mermaid => troupe::tools::GraphFormat::Mermaid,
    };
    let g = match troupe::tools::graph(&pack, args.scenario.as_deref(), format) {
        Ok(g) => g,
        Err(e) if e.diagnostics().is_empty() => {
            eprintln!("troupe graph: {e}");
            return 1;
        }
        Err(e) => {
            eprint!("{}", e.render());
            return 1;
        }
    };
    let text = g.text;
    match &args.out {
        None => {
            print!("{text}");
            0
        }
        Some(out) => match write_replacing(out, &text) {
            Ok(()) => {
                println!("graph of {} → {}", g.scenario, out.display());
                0
            }
            Err(e) => {
                eprintln!("troupe graph: cannot write {}: {e}", out.display());
                3
            }
        },
    }
}

/// Writes `text` to a temporary file beside `path`, then renames it over
/// `path`, so a failed write never leaves a half-written file.
fn write_replacing(path: &Path, text: &str) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "graph".into());
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

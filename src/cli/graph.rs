//! `troupe graph PACK [--scenario ID] [--format dot|mermaid|svg] [-o FILE]`
//! (Format 20.2): prints or writes the scenario's wiring as a graph. The
//! library builds and draws it ([`troupe::tools::graph`]); this file only
//! wires it.

use std::path::{Path, PathBuf};

/// The formats of `troupe graph`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Graphviz DOT.
    Dot,
    /// A Mermaid flowchart.
    Mermaid,
    /// An SVG picture, laid out and drawn by Troupe.
    Svg,
}

impl Format {
    /// The format `-o FILE` implies when `--format` is not given (Format
    /// 20.2): `.svg` SVG, `.mmd`/`.mermaid` Mermaid, else DOT.
    fn from_path(path: Option<&Path>) -> Format {
        let ext = path
            .and_then(|p| p.extension())
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("svg") => Format::Svg,
            Some("mmd" | "mermaid") => Format::Mermaid,
            _ => Format::Dot,
        }
    }
}

/// Arguments of `troupe graph`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A pack directory, a bundle or a package.
    pub pack: PathBuf,
    /// The scenario (default: the first).
    #[arg(long)]
    pub scenario: Option<String>,
    /// The output format: dot, mermaid or svg (default: from the `-o` file's
    /// extension, else dot).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
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
    let format = match args
        .format
        .unwrap_or_else(|| Format::from_path(args.out.as_deref()))
    {
        Format::Dot => troupe::tools::GraphFormat::Dot,
        Format::Mermaid => troupe::tools::GraphFormat::Mermaid,
        Format::Svg => troupe::tools::GraphFormat::Svg,
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
        Some(out) => match troupe::files::write_atomic(out, text.as_bytes()) {
            Ok(()) => {
                println!("graph of {} → {}", g.scenario, out.display());
                0
            }
            Err(e) => {
                eprintln!("troupe graph: {e}");
                3
            }
        },
    }
}

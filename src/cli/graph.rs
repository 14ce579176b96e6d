//! `troupe graph PACK [--scenario ID] [--format dot|mermaid] [-o FILE]`
//! (Format 20.2): prints or writes the scenario's wiring as a graph. The
//! library builds it ([`crate::testing::graph`]); this file only wires it.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::runtime::compiled::RuntimeIr;

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
    if let Some(out) = &args.out {
        if same_file(out, &args.pack) {
            eprintln!(
                "troupe graph: refusing to write the graph over the pack {}",
                args.pack.display()
            );
            return 1;
        }
    }
    let pack = match super::run::open_pack(&args.pack) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let ids: Vec<&str> = pack
        .bundle
        .get("scenarios")
        .and_then(Value::as_array)
        .map(|s| {
            s.iter()
                .filter_map(|x| x.get("id").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if let Some(id) = &args.scenario {
        if !ids.contains(&id.as_str()) {
            let hint = crate::diag::suggest::one_of(id, ids.iter().copied());
            eprintln!("troupe graph: the pack has no scenario `{id}`{hint}");
            return 1;
        }
    } else if ids.is_empty() {
        eprintln!("troupe graph: the pack has no scenario");
        return 1;
    }
    let (story, ir) = match crate::engine::load::compile_story_for(
        &pack.bundle,
        None,
        args.scenario.as_deref(),
    ) {
        Ok(x) => x,
        Err(d) => {
            eprint!(
                "{}",
                crate::diag::render::render_human(&d, &crate::diag::render::Sources::new())
            );
            return 1;
        }
    };
    let rt = match RuntimeIr::compile(&story, &ir, None) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("troupe graph: cannot compile the rules: {}", e.0);
            return 1;
        }
    };
    let g = crate::testing::graph::build(&ir, &rt);
    let text = match args.format {
        Format::Dot => g.to_dot(),
        Format::Mermaid => g.to_mermaid(),
    };
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

/// Whether `a` and `b` name the same file or folder (or the same path).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
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

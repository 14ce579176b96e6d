//! `troupe compile PACK -o OUT.troupe` (Format 14.4, 20): checks PACK and
//! writes the compiled package, or with `-o OUT.json` the checked bundle
//! (13.10: a pack directory lowered). A package given as PACK is compiled
//! from its checked `bundle.json`, never from its `ir.json`, so what is
//! written always passes `troupe check`.

use std::path::PathBuf;

/// Arguments of `troupe compile`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A pack directory, a bundle or a package.
    pub pack: PathBuf,
    /// The package to write (`.troupe`), or the bundle (`.json`).
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// Threads that check and compile the scenarios (default: the core
    /// count; 1: one thread). The package is the same whatever N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub jobs: Option<u16>,
}

/// What `-o` asks for, by its extension (Format 20).
enum Target {
    Package,
    Bundle,
}

/// Runs `troupe compile`; returns the exit code.
pub fn run(args: Args) -> i32 {
    let extension = args
        .out
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let yaml = matches!(extension.as_deref(), Some("yaml" | "yml"));
    let target = match extension.as_deref() {
        Some("json") => Target::Bundle,
        _ => Target::Package,
    };
    let kind = match target {
        Target::Package => troupe::files::OutputKind::Package,
        Target::Bundle => troupe::files::OutputKind::Json,
    };
    // Format 16.3: not an input, not an existing file of another kind.
    let out = [(args.out.as_path(), kind)];
    if let Err(msg) = troupe::files::check_outputs(&out, &[&args.pack]) {
        eprintln!("troupe compile: {msg}");
        return 2;
    }
    if yaml {
        eprintln!(
            "troupe compile: {} names a YAML file; compile writes a package (.troupe) or a bundle as JSON (.json)",
            args.out.display()
        );
        return 2;
    }
    let options = troupe::OpenOptions::default()
        .use_ir(false)
        .verify_ir(false)
        .jobs(args.jobs.map_or(0, usize::from));
    let pack = match super::open_pack_api(&args.pack, options) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let bytes = match target {
        Target::Bundle => {
            let mut text = serde_json::to_string_pretty(pack.bundle()).unwrap_or_default();
            text.push('\n');
            text.into_bytes()
        }
        Target::Package => match pack.compile() {
            Ok(b) => b,
            Err(e) => {
                eprintln!("troupe compile: {e}");
                return 3;
            }
        },
    };
    if let Err(e) = troupe::files::write_atomic(&args.out, &bytes) {
        eprintln!("troupe compile: {e}");
        return 3;
    }
    println!("compiled {} → {}", args.pack.display(), args.out.display());
    0
}

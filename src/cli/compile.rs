//! `troupe compile PACK -o OUT.troupe` (Format 14.4): checks PACK and
//! writes the compiled package. A package given as PACK is compiled from
//! its checked `bundle.json`, never from its `ir.json`, so what is written
//! always passes `troupe check`.

use std::path::PathBuf;

/// Arguments of `troupe compile`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A pack directory, a bundle or a package.
    pub pack: PathBuf,
    /// The package to write.
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
}

/// Runs `troupe compile`; returns the exit code.
pub fn run(args: Args) -> i32 {
    // Format 16.3: not an input, not an existing file other than a package.
    let out = [(args.out.as_path(), troupe::files::OutputKind::Package)];
    if let Err(msg) = troupe::files::check_outputs(&out, &[&args.pack]) {
        eprintln!("troupe compile: {msg}");
        return 2;
    }
    let options = troupe::OpenOptions {
        use_ir: false,
        verify_ir: false,
    };
    let pack = match super::open_pack_api(&args.pack, options) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let bytes = match pack.compile() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("troupe compile: {e}");
            return 3;
        }
    };
    if let Err(e) = troupe::files::write_atomic(&args.out, &bytes) {
        eprintln!("troupe compile: {e}");
        return 3;
    }
    println!("compiled {} → {}", args.pack.display(), args.out.display());
    0
}

//! `troupe explore PACK [--scenario ID] [--runs N] [--depth D] [--states MAX]
//! [--seed S] [--jobs N] [--json] [--witness DIR]` (Format 20.5): searches a scenario's
//! states, or plays seeded random playthroughs. The library explores
//! ([`troupe::tools::explore`]); this file only wires it and draws the
//! progress bar.

use std::io::IsTerminal;
use std::path::PathBuf;

use troupe::tools::{
    ExploreMode, ExploreSettings, EXPLORE_DEFAULT_DEPTH, EXPLORE_DEFAULT_STATES, EXPLORE_MAX_DEPTH,
    EXPLORE_MAX_RUNS, EXPLORE_MAX_STATES,
};

/// Arguments of `troupe explore`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A pack directory, a bundle or a package.
    pub pack: PathBuf,
    /// The scenario (default: the first).
    #[arg(long)]
    pub scenario: Option<String>,
    /// Play N seeded random playthroughs instead of searching.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=EXPLORE_MAX_RUNS))]
    pub runs: Option<u64>,
    /// At most D turns per path (1 … 1000).
    #[arg(long, default_value_t = EXPLORE_DEFAULT_DEPTH,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(EXPLORE_MAX_DEPTH)))]
    pub depth: u32,
    /// At most MAX distinct states (search; 1 … 1000000).
    #[arg(long, default_value_t = EXPLORE_DEFAULT_STATES,
          value_parser = clap::value_parser!(u64).range(1..=EXPLORE_MAX_STATES))]
    pub states: u64,
    /// The session seed, and the seed of the random choices.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Expand states on N threads (search; default: the cores available).
    /// The result is the same whatever N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub jobs: Option<u16>,
    /// Print one JSON document (Format 20.5).
    #[arg(long)]
    pub json: bool,
    /// Write each witness as a script into DIR.
    #[arg(long, value_name = "DIR")]
    pub witness: Option<PathBuf>,
}

/// Runs `troupe explore`; returns the exit code.
pub fn run(args: Args) -> i32 {
    if let Some(dir) = &args.witness {
        // Format 16.3: an output that is an input is a usage error.
        if let Err(m) = troupe::files::refuse_inputs(&[dir.as_path()], &[args.pack.as_path()]) {
            eprintln!("troupe explore: refusing to write witnesses: {m}");
            return 2;
        }
        if args.pack.is_dir() && inside(dir, &args.pack) {
            eprintln!(
                "troupe explore: refusing to write witnesses inside the pack {}",
                args.pack.display()
            );
            return 2;
        }
    }
    let pack = match super::open_pack_api(&args.pack, troupe::OpenOptions::default()) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let settings = {
        let mut o = ExploreSettings::default();
        o.scenario = args.scenario.clone();
        o.mode = match args.runs {
            Some(runs) => ExploreMode::Random { runs },
            None => ExploreMode::Search {
                states: args.states,
            },
        };
        o.depth = args.depth;
        o.seed = args.seed;
        o.jobs = args
            .jobs
            .map_or_else(troupe::tools::explore_default_jobs, usize::from);
        o
    };
    let total = args.runs.unwrap_or(args.states);
    let bar = indicatif::ProgressBar::new(total);
    if std::io::stderr().is_terminal() {
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {pos}/{len} {msg} [{elapsed}] {wide_bar}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.set_message(if args.runs.is_some() {
            "runs"
        } else {
            "states"
        });
    } else {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let result = troupe::tools::explore(&pack, Some(&args.pack), &settings, &mut |n| {
        if n % 64 == 0 {
            bar.set_position(n);
        }
    });
    bar.finish_and_clear();
    let mut e = match result {
        Ok(e) => e,
        Err(e) => {
            eprintln!("troupe explore: {e}");
            return if e.kind() == troupe::ErrorKind::Internal {
                3
            } else {
                1
            };
        }
    };
    if let Some(dir) = &args.witness {
        if let Err(err) = troupe::tools::write_witnesses(&mut e, dir) {
            eprintln!("troupe explore: {err}");
            return 3;
        }
    }
    if args.json {
        print!("{}", e.to_json());
    } else {
        print!("{}", troupe::escape_controls(&e.to_text()));
    }
    0
}

/// Whether `dir` (which may not exist yet) is `pack` or inside it, after
/// `..` and symbolic links of its nearest existing ancestor.
fn inside(dir: &std::path::Path, pack: &std::path::Path) -> bool {
    let Ok(pack) = pack.canonicalize() else {
        return false;
    };
    let mut rest = Vec::new();
    let mut at = dir.to_path_buf();
    loop {
        if let Ok(real) = at.canonicalize() {
            let mut full = real;
            full.extend(rest.iter().rev());
            return full.starts_with(&pack);
        }
        match (at.file_name().map(|n| n.to_os_string()), at.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                at = if parent.as_os_str().is_empty() {
                    std::path::PathBuf::from(".")
                } else {
                    parent.to_path_buf()
                };
            }
            _ => return false,
        }
    }
}

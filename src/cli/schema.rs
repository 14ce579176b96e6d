//! `troupe schema [NAME]`: prints one of the JSON Schemas Troupe checks
//! with (embedded in the binary, so editors can validate offline), or lists
//! their names.
//!
//! Exit codes: 0 printed; 2 no schema has that name.

/// Arguments of `troupe schema`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The schema: `scenario`, `npc`, `pack-test`, … (or its file name,
    /// `scenario.schema.json`); without it, the names are listed.
    pub name: Option<String>,
}

/// The name a schema is asked for by: its file name without
/// `.schema.json` (`conformance/case.schema.json` → `case`).
fn short(file: &str) -> &str {
    let base = file.rsplit('/').next().unwrap_or(file);
    base.strip_suffix(".schema.json").unwrap_or(base)
}

/// The embedded schema called `name` (short or file name): (file, text).
pub fn find(name: &str) -> Option<(&'static str, &'static str)> {
    troupe::schemas()
        .iter()
        .find(|(f, _)| short(f) == name || *f == name || f.rsplit('/').next() == Some(name))
        .copied()
}

/// Prints the schema or the list; returns the exit code.
pub fn run(args: Args) -> i32 {
    let Some(name) = &args.name else {
        for (f, _) in troupe::schemas() {
            println!("{}", short(f));
        }
        return 0;
    };
    match find(name) {
        Some((_, text)) => {
            print!("{text}");
            if !text.ends_with('\n') {
                println!();
            }
            0
        }
        None => {
            eprintln!(
                "troupe schema: no schema `{name}`{}",
                troupe::suggest(name, troupe::schemas().iter().map(|(f, _)| short(f)))
            );
            2
        }
    }
}

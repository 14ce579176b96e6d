//! `troupe knows BUNDLE SESSION [--at ID] (--part N | --summary) [--json]`
//! (Format 7.4, 12.5); `--at` defaults to the last message in file order,
//! as for `state`, `ended` and `explain` (`--message` is its older name).

/// Arguments of `troupe knows`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["part", "summary"])))]
pub struct Args {
    /// The pack, session and message (`--at`, default the last message in
    /// file order; `--message` is accepted as its older name).
    #[command(flatten)]
    pub at: super::SessionAt,
    /// The index of one of its parts.
    #[arg(long)]
    pub part: Option<usize>,
    /// The message's summary instead of a part.
    #[arg(long)]
    pub summary: bool,
}

/// Prints who knows the part or summary, in code point order.
pub fn run(args: Args) -> i32 {
    let (history, at) = match args.at.open() {
        Ok(x) => x,
        Err(code) => return code,
    };
    let what = match args.part {
        Some(p) if !args.summary => troupe::Knowable::Part(p),
        _ => troupe::Knowable::Summary,
    };
    let who = match history.knows(&at, what) {
        Ok(w) => w,
        Err(e) => return super::report(&e),
    };
    if args.at.json {
        println!("{}", serde_json::Value::from(who));
    } else if who.is_empty() {
        println!("nobody");
    } else {
        println!("{}", troupe::escape_controls(&who.join(", ")));
    }
    0
}

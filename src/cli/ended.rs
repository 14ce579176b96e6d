//! `troupe ended BUNDLE SESSION --at ID [--json]` (Format 9.3).

/// Arguments of `troupe ended`.
pub type Args = super::SessionAt;

/// Prints whether the story has ended at `--at`, and how.
pub fn run(args: Args) -> i32 {
    let (history, at) = match args.open() {
        Ok(x) => x,
        Err(code) => return code,
    };
    let view = match history.ended_at(&at) {
        Ok(v) => v,
        Err(e) => return super::report(&e),
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&view).unwrap_or_default()
        );
        return 0;
    }
    match view.ending {
        Some(e) if e.kind == "outcome" => println!(
            "ended: outcome `{}` (recorded at message {})",
            e.id, e.message
        ),
        Some(e) => println!(
            "ended: event `{}` (recorded at message {}); no outcome",
            e.id, e.message
        ),
        None => println!("not ended"),
    }
    0
}

//! `troupe ended BUNDLE SESSION --at ID [--json]` (Format 9.3).

use serde_json::json;

/// Arguments of `troupe ended`.
pub type Args = super::SessionAt;

/// Prints whether the story has ended at `--at`, and how.
pub fn run(args: Args) -> i32 {
    let (engine, m) = match args.open() {
        Ok(x) => x,
        Err(code) => return code,
    };
    let ending = engine.ending(&engine.state_at(m));
    if args.json {
        let out = json!({
            "at": args.at_id(&engine, m),
            "ended": ending.is_some(),
            "ending": ending.as_ref().map(|e| json!({
                "id": e.id, "kind": if e.outcome { "outcome" } else { "event" }, "message": e.message
            })),
            "outcome": ending.as_ref().filter(|e| e.outcome).map(|e| e.id.clone()),
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return 0;
    }
    match ending {
        Some(e) if e.outcome => println!(
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

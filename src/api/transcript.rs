//! [`transcript`]: a pack played line by line, as the document `troupe run
//! --json` prints (Format 20, 20.1), for programs that have the player's
//! lines in memory (an MCP client, a binding) rather than in a script file.

use serde_json::{json, Value};

use super::error::Result;
use super::pack::Pack;
use super::session::SessionOptions;

/// Plays `lines` as the first player, one turn each (Format 18.5), in a
/// session started with `options` (Format 18.4), until the lines run out
/// or a turn ends the session; the result is the `troupe run --json`
/// document of Format 20.1 (`schemas/output/run.schema.json`):
/// `{"opening": Opening | null, "turns": [TurnResult…], "unplayed": int,
/// "score": Score | null}`. Lines left when the session ends are not
/// played and counted in `unplayed`. Nothing is written unless
/// `options.out` names a session file.
///
/// Errors: [`crate::ErrorKind::Refused`] when the settings do not fit the
/// pack (an unknown scenario, preset or opening); a turn's error
/// ([`crate::ErrorKind::Limit`], [`crate::ErrorKind::Runtime`],
/// [`crate::ErrorKind::Io`]) stops the run and is returned.
///
/// ```
/// use troupe::{Pack, SessionOptions};
/// let pack = Pack::open("examples/packs/everyday-negotiation")?;
/// let doc = troupe::transcript(&pack, &["Hello Marco!", "I can offer 7,000."],
///                              SessionOptions::default().seed(7))?;
/// assert_eq!(doc["turns"].as_array().unwrap().len(), 2);
/// assert_eq!(doc["unplayed"], 0);
/// # Ok::<(), troupe::Error>(())
/// ```
pub fn transcript<S: AsRef<str>>(
    pack: &Pack,
    lines: &[S],
    options: SessionOptions,
) -> Result<Value> {
    let mut session = pack.start(options)?;
    let mut turns = Vec::with_capacity(lines.len());
    for line in lines {
        if session.ended() {
            break;
        }
        let result = session.turn(line.as_ref())?;
        turns.push(serde_json::to_value(&result).unwrap_or(Value::Null));
    }
    let unplayed = lines.len() - turns.len();
    Ok(json!({
        "opening": session.opening(),
        "turns": turns,
        "unplayed": unplayed,
        "score": session.score(),
    }))
}

//! Lore recursion is linear in its input (Format 5.7, 16.2; issue 43 item
//! 4): in a chain of entries where entry i's content holds entry i + 1's
//! key, each step adds one entry's content to the recursion buffer, and
//! the buffer's new text is scanned once for every entry's keys together
//! instead of every entry rescanning the whole growing buffer at every
//! step (cubic: about 8× the time for 2× the chain). Measured by
//! comparing two chain lengths (no absolute times): for 2× the chain a
//! linear activation takes about 2× (measured 2.45× in a debug build), a
//! quadratic one 4×, the cubic rescan 8× (measured 5.36×: its linear parts
//! weigh at this size); the bound (3.6×) sits between.

use std::time::Duration;

use crate::ThreadCpu;

use serde_json::{json, Value};

/// A bundle whose world (`recursion: true`) holds a chain of `n` entries:
/// entry i has key `link{i}z` and content naming `link{i+1}z` plus 300
/// bytes of filler, and a session whose one message names `link0z`.
fn chain(n: usize) -> (troupe::Pack, String) {
    let filler = "the road goes on and on ".repeat(12);
    let entries: Vec<Value> = (0..n)
        .map(|i| {
            json!({"id": format!("e{i}"), "keys": [format!("link{i}z")],
                   "content": format!("{filler} link{}z.", i + 1)})
        })
        .collect();
    let bundle = json!({
      "troupe": "0.1", "kind": "bundle",
      "characters": [{"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult"}],
      "worlds": [{"id": "w", "name": "W", "recursion": true, "entries": entries}],
      "scenarios": [{"id": "s", "name": "S", "worlds": ["w"], "cast": [{"character": "kai"}]}]
    });
    let pack = troupe::Pack::from_bundle(&bundle.to_string()).unwrap();
    let session = [
        json!({"troupe": "0.1", "kind": "session", "scenario": "s"}),
        json!({"id": "m1", "author": "kai", "parts": [{"type": "text", "text": "Follow link0z."}]}),
    ]
    .iter()
    .map(|v| v.to_string() + "\n")
    .collect();
    (pack, session)
}

/// The time of `explain` at m1 (the best of five, taken in turns with the
/// other size), after checking that the whole chain is active.
fn best(
    small: &(troupe::Pack, String),
    large: &(troupe::Pack, String),
    n: usize,
) -> (Duration, Duration) {
    let run = |(pack, session): &(troupe::Pack, String), want: usize| {
        let t = ThreadCpu::now();
        let history = pack.history(session).unwrap();
        let explained = history.explain("m1").unwrap();
        let took = t.elapsed();
        assert_eq!(explained.active, want);
        took
    };
    let (mut s, mut l) = (Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        s = s.min(run(small, n));
        l = l.min(run(large, 2 * n));
    }
    (s, l)
}

#[test]
fn a_recursion_chain_is_linear_in_its_length() {
    let _serial = crate::serial();
    let n = 400;
    let (small, large) = (chain(n), chain(2 * n));
    let (t1, t2) = best(&small, &large, n);
    let ratio = t2.as_secs_f64() / t1.as_secs_f64().max(1e-9);
    println!("{n}: {t1:?}, {}: {t2:?}, ratio {ratio:.2}", 2 * n);
    assert!(
        ratio < 3.6,
        "a chain of {} entries took {ratio:.2}× as long as one of {n}",
        2 * n
    );
}

/// The chain's hits are where Format 5.7 puts them: entry i + 1's key in
/// entry i's content in the buffer, at step i + 1.
#[test]
fn a_chain_entry_hits_in_the_content_before_it() {
    let _serial = crate::serial();
    let (pack, session) = chain(5);
    let history = pack.history(&session).unwrap();
    let explained = history.explain("m1").unwrap();
    assert_eq!(explained.active, 5);
    for e in &explained.entries {
        let i: usize = e.id[1..].parse().unwrap();
        assert_eq!(e.step, Some(i as u64), "{}", e.id);
        let hit = &e.hits[0];
        if i == 0 {
            assert_eq!(hit.message, "m1");
            assert_eq!((hit.start, hit.end), (7, 13));
        } else {
            assert_eq!(hit.entry.as_deref(), Some(format!("e{}", i - 1).as_str()));
            assert_eq!(hit.text, format!("link{i}z"));
            assert_eq!(hit.start, 289);
        }
    }
}

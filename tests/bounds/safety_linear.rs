//! Safety matching is linear in its terms (Format 19.2, 16.2; issue 43
//! item 5): one long term in a policy (here a category term of 20,000 or
//! 40,000 characters) must not make opening the story and taking a turn
//! quadratic — the term set was compiled to an Aho–Corasick DFA, whose
//! build follows failure links for every state and byte class. Measured by
//! comparing two term lengths (no absolute times): 2× the term takes about
//! 2× as long when linear (measured 1.6×: 10 ms and 16 ms in a debug
//! build), 4× when quadratic (the DFA: 1.6 s and 9.6 s, 5.9×); the bound
//! (3×) sits between.

use std::time::Duration;

use crate::ThreadCpu;

use serde_json::json;

/// A story whose policy (with both global rules) has one category whose
/// one term is `n` letters.
fn bundle(n: usize) -> String {
    json!({"troupe": "0.1", "kind": "bundle",
      "characters": [{"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult"}],
      "scenarios": [{"id": "s", "name": "S",
        "cast": [{"character": "kai"}, {"seat": "p", "player": true}],
        "openings": [{"id": "o", "text": "Hi.", "author": "kai"}],
        "rules": [{"id": "r", "keywords": ["hello"], "replies": ["Hey."]}],
        "safety": {"policy_id": "p", "content_rating_cap": "general",
          "global_rules": ["minor_safety", "crisis_support"],
          "categories": [{"id": "long", "action": "redirect", "terms": ["a".repeat(n)]}]}}]})
    .to_string()
}

/// Opens the story and takes one turn whose input holds the term (it is
/// redirected), returning the time it took.
fn one_turn(text: &str, term: usize) -> Duration {
    let t = ThreadCpu::now();
    let pack = troupe::Pack::from_bundle(text).unwrap();
    let mut session = pack.start(troupe::SessionOptions::default()).unwrap();
    let input = format!("hello {}", "a".repeat(term));
    let r = session.turn(&input).unwrap();
    let took = t.elapsed();
    assert_eq!(format!("{:?}", r.safety_status), "Redirect");
    took
}

#[test]
fn one_long_safety_term_is_linear() {
    let _serial = crate::serial();
    let n = 20_000;
    let (small, large) = (bundle(n), bundle(2 * n));
    let (mut t1, mut t2) = (Duration::MAX, Duration::MAX);
    // The fastest of many short runs: a burst of load on another core
    // slows some runs, never all of them.
    for _ in 0..15 {
        t1 = t1.min(one_turn(&small, n));
        t2 = t2.min(one_turn(&large, 2 * n));
    }
    let ratio = t2.as_secs_f64() / t1.as_secs_f64().max(1e-9);
    println!("{n}: {t1:?}, {}: {t2:?}, ratio {ratio:.2}", 2 * n);
    assert!(
        ratio < 3.0,
        "a term of {} characters took {ratio:.2}× as long as one of {n}",
        2 * n
    );
}

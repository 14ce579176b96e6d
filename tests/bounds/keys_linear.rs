//! Key matching is linear in the text (Format 5.4): a regular-expression
//! keyword whose match does not count (`/\d+/` after a letter) is not
//! searched again from every position inside it. Measured by comparing two
//! input sizes (no absolute times). For the key set alone the input grows
//! 8×: linear time grows 8×, retrying from every position 64×, and the bound
//! (22×, their geometric mean) leaves room for a loaded machine's noise, or
//! 2.75× what a plain linear pass over the same texts measured beside it
//! when the machine's load slows the larger text more; the
//! turn's input quadruples (linear 4×, quadratic 16×, bound 8×).

use std::time::Duration;

use crate::ThreadCpu;

use troupe::internals::keys::{KeyOptions, KeySet};
use troupe::{Pack, SessionOptions};

fn digits(n: usize) -> String {
    let mut s = String::from("a");
    s.extend(std::iter::repeat_n('7', n));
    s
}

/// The fastest of seven runs of `small` and of `large`, taken in turns so
/// that a burst of load on a shared machine slows both alike.
fn best(mut small: impl FnMut(), mut large: impl FnMut()) -> (Duration, Duration) {
    let time = |f: &mut dyn FnMut()| {
        let t = ThreadCpu::now();
        f();
        t.elapsed()
    };
    let (mut s, mut l) = (Duration::MAX, Duration::MAX);
    for _ in 0..7 {
        s = s.min(time(&mut small));
        l = l.min(time(&mut large));
    }
    (s, l)
}

#[test]
fn a_regex_key_that_does_not_count_is_linear() {
    let _serial = crate::serial();
    let set = KeySet::new([r"/\d+/"], KeyOptions::RUNTIME);
    let (small, large) = (digits(50_000), digits(400_000));
    assert!(!set.hits(&small) && !set.hits(&large));
    let (small, large) = (set.prepare(&small), set.prepare(&large));
    let (t1, t2) = best(|| assert!(!set.hits(&small)), || assert!(!set.hits(&large)));
    // The same texts read once by a plain linear pass, timed alike: on a
    // loaded machine the larger text's runs are slowed more (the caches are
    // shared), and that slows both measurements alike.
    let count = |t: &str| t.bytes().filter(u8::is_ascii_digit).count();
    let (b1, b2) = best(
        || assert_eq!(count(&small), 50_000),
        || assert_eq!(count(&large), 400_000),
    );
    let ratio = t2.as_secs_f64() / t1.as_secs_f64().max(1e-9);
    let linear = b2.as_secs_f64() / b1.as_secs_f64().max(1e-9);
    assert!(
        ratio < 22.0_f64.max(linear * 2.75),
        "400k/50k digits took {ratio:.2}× as long (a linear pass {linear:.2}×)"
    );
}

#[test]
fn a_turn_with_a_regex_keyword_is_linear() {
    let _serial = crate::serial();
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("digits.bundle.json");
    std::fs::write(
        &bundle,
        r#"{"troupe": "0.1", "kind": "bundle",
            "characters": [{"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult"},
                           {"id": "pat", "name": "Pat", "fictional": true, "age_band": "adult"}],
            "scenarios": [{"id": "s", "name": "S",
              "cast": [{"character": "kai"}, {"character": "pat", "player": true}],
              "rules": [{"id": "numbers", "keywords": ["/\\d+/"], "replies": ["A number!"]},
                        {"id": "any", "replies": ["Hm."]}]}]}"#,
    )
    .unwrap();
    let pack = Pack::open(&bundle).unwrap_or_else(|e| panic!("{:?}", e.diagnostics()));
    let turn = |input: &str| {
        let mut s = pack.start(SessionOptions::default()).unwrap();
        // `a777…`: the match follows a letter, so it does not count.
        assert_eq!(s.turn(input).unwrap().rule.as_deref(), Some("any"));
    };
    let (small, large) = (digits(50_000), digits(200_000));
    let (t1, t2) = best(|| turn(&small), || turn(&large));
    let ratio = t2.as_secs_f64() / t1.as_secs_f64().max(1e-9);
    assert!(ratio < 8.0, "200k/50k digits took {ratio:.2}× as long");
}

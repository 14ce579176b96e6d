//! Checking is linear in a scenario's cast and worlds (Format 16.2: time
//! bounded by a polynomial of degree one; the 16 table allows 65,534 cast
//! members and worlds per scenario). Every cast member and world owns a
//! variable and a condition, so each has its own CEL environment (11.3).
//! Measured by comparing two input sizes (no absolute times): quadrupling
//! the input must stay far from the 16× a quadratic check takes; the bound
//! (8×) leaves room for a loaded machine's noise.

use std::path::PathBuf;
use std::time::Duration;

use crate::ThreadCpu;

use serde_json::json;
use troupe::internals::check::check_paths;

/// A bundle with `n` cast members and `n` worlds in one scenario; each
/// owns an int variable, and each world has a lore entry whose `when` reads
/// its own and a cast member's variable.
fn bundle(n: usize) -> String {
    let characters: Vec<_> = (0..n)
        .map(|i| {
            json!({"id": format!("c{i}"), "name": "C", "fictional": true, "age_band": "adult",
                   "variables": [{"id": "mood", "type": "int", "default": 0}]})
        })
        .collect();
    let worlds: Vec<_> = (0..n)
        .map(|i| {
            json!({"id": format!("w{i}"), "name": "W",
                   "variables": [{"id": "heat", "type": "int", "default": 0}],
                   "entries": [{"id": "e", "keys": ["fire"], "content": "Hot.",
                                "when": format!("own.heat > 1 && state.c{i}.mood < 5")}]})
        })
        .collect();
    let cast: Vec<_> = (0..n)
        .map(|i| json!({"character": format!("c{i}")}))
        .collect();
    let world_ids: Vec<_> = (0..n).map(|i| format!("w{i}")).collect();
    json!({"troupe": "0.1", "kind": "bundle", "characters": characters, "worlds": worlds,
           "scenarios": [{"id": "s", "name": "S", "cast": cast, "worlds": world_ids}]})
    .to_string()
}

/// One check of `path`, which must conform, timed.
fn timed(path: &PathBuf) -> Duration {
    let t = ThreadCpu::now();
    let checked = check_paths(std::slice::from_ref(path));
    let d = t.elapsed();
    let errors: Vec<_> = checked
        .diagnostics
        .iter()
        .filter(|d| d.severity == troupe::Severity::Error)
        .map(|d| format!("{:?} {:?} {}", d.code, d.location, d.message))
        .take(3)
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    d
}

/// The fastest of five checks of `small` and of `large`, taken in turns so
/// that a burst of load on a shared machine slows both alike.
fn best(small: &PathBuf, large: &PathBuf) -> (Duration, Duration) {
    let (mut s, mut l) = (Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        s = s.min(timed(small));
        l = l.min(timed(large));
    }
    (s, l)
}

#[test]
fn checking_is_linear_in_cast_and_worlds() {
    let _serial = crate::serial();
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small.bundle.json");
    let large = dir.path().join("large.bundle.json");
    std::fs::write(&small, bundle(1_000)).unwrap();
    std::fs::write(&large, bundle(4_000)).unwrap();
    let (t1, t2) = best(&small, &large);
    let ratio = t2.as_secs_f64() / t1.as_secs_f64().max(1e-9);
    assert!(
        ratio < 8.0,
        "4,000 cast members and worlds took {ratio:.2}× as long as 1,000"
    );
}

/// A bundle with `n` cast members, all present, and a session of 40
/// messages, each with a public part and a part whispered to one member,
/// and every tenth with a summary whose audience lists the whole cast:
/// the knowledge the session checker keeps for SUMMARY_REVEALS (Format
/// 12.5) is bounded by the cast, and each part costs O(cast).
fn summarized(n: usize) -> (serde_json::Value, serde_json::Value, Vec<serde_json::Value>) {
    let characters: Vec<_> = (0..n)
        .map(
            |i| json!({"id": format!("c{i}"), "name": "C", "fictional": true, "age_band": "adult"}),
        )
        .collect();
    let cast: Vec<_> = (0..n)
        .map(|i| json!({"character": format!("c{i}")}))
        .collect();
    let everyone: Vec<_> = (0..n).map(|i| format!("c{i}")).collect();
    let bundle = json!({"troupe": "0.1", "kind": "bundle", "characters": characters,
        "scenarios": [{"id": "s", "name": "S", "cast": cast}]});
    let header = json!({"troupe": "0.1", "kind": "session", "scenario": "s"});
    let messages = (0..40)
        .map(|k| {
            let mut m = json!({"id": format!("m{k}"), "author": format!("c{}", k % n),
                "parts": [{"type": "text", "text": "hi"},
                          {"type": "text", "text": "psst", "audience": [format!("c{}", (k + 1) % n)]}]});
            if k > 0 {
                m["parent"] = json!(format!("m{}", k - 1));
            }
            if k % 10 == 9 {
                m["summary"] = json!({"text": "s", "audience": everyone});
            }
            m
        })
        .collect();
    (bundle, header, messages)
}

#[test]
fn checking_summaries_is_linear_in_the_cast() {
    let _serial = crate::serial();
    let time = |n: usize| {
        let (b, h, ms) = summarized(n);
        let refs: Vec<&serde_json::Value> = ms.iter().collect();
        let t = ThreadCpu::now();
        let ds = troupe::internals::check::check_session(&b, &h, &refs);
        let d = t.elapsed();
        // Every summary reveals a whisper to all but its three knowers.
        let reveals = ds
            .iter()
            .filter(|d| d.code == troupe::Code::SummaryReveals)
            .count();
        assert!(reveals >= 4 * (n - 3), "{reveals}");
        d
    };
    for n in [250usize, 500, 1000, 2000, 4000] {
        let mut b = Duration::MAX;
        for _ in 0..3 {
            b = b.min(time(n));
        }
        println!("n={n} {b:?}");
    }
    let (mut t1, mut t2) = (Duration::MAX, Duration::MAX);
    for _ in 0..3 {
        t1 = t1.min(time(500));
        t2 = t2.min(time(2_000));
    }
    let ratio = t2.as_secs_f64() / t1.as_secs_f64().max(1e-9);
    println!("500: {t1:?}, 2000: {t2:?}, ratio {ratio:.2}");
    assert!(
        ratio < 8.0,
        "2,000 cast members took {ratio:.2}× as long as 500"
    );
}

//! Derived variables are computed again only when one of their inputs
//! changed (Format 8.1; `troupe::internals::compile::DerivedInputs`): a derived variable
//! whose inputs did not change keeps its value, which is the value
//! computing it again would give. So a session, a search and a random
//! exploration give the same states, turns, session files and reports as
//! with every derived variable computed at every recompute (the engine's
//! behaviour before, kept for this comparison by
//! `troupe::internals::engine::with_every_recompute`).
//!
//! The test pack `tests/packs/derived-inputs` has a derived variable of each
//! kind of input (a plain variable, a keyed one, a `"*"` map, the scene,
//! `turn`, `char`, `roll()`, another derived variable, one that errors) and
//! events that read them and change their inputs within a message.

use std::path::PathBuf;

use troupe::internals::compile::DerivedInputs;
use troupe::internals::engine::with_every_recompute;
use troupe::internals::runtime::Inner;
use troupe::tools::{explore, ExploreMode, ExploreSettings};

fn pack(path: &str) -> troupe::Pack {
    troupe::Pack::open(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)).expect("opens")
}

const PACKS: [&str; 3] = [
    "tests/packs/derived-inputs",
    "examples/packs/harbor-lights",
    "examples/packs/tenants-meeting",
];

/// The inputs of the test pack's derived variables, read from their
/// programs (by hand from `scenarios/quay.yaml`; slots in the IR's layout).
#[test]
fn inputs_are_read_from_the_programs() {
    let p = pack("tests/packs/derived-inputs");
    let s = p.start(troupe::SessionOptions::default()).expect("starts");
    let ir = &s.inner().engine().ir;
    let slot = |name: &str| match &ir.vars[ir.var_index[name] as usize].layout {
        troupe::internals::compile::Layout::Single(s)
        | troupe::internals::compile::Layout::Open(s) => (*s, *s + 1),
        troupe::internals::compile::Layout::Fixed { first, keys } => {
            (*first, *first + keys.len() as u32)
        }
    };
    let of = |name: &str| -> &DerivedInputs {
        let d = ir.vars[ir.var_index[name] as usize]
            .derived
            .expect("derived");
        &ir.derived_inputs()[d as usize]
    };
    let plain = |slots: Vec<(u32, u32)>| DerivedInputs {
        slots,
        ..DerivedInputs::default()
    };
    assert_eq!(of("avg"), &plain(vec![slot("avg"), slot("trust")]));
    let high = of("high");
    assert!(!high.always && !high.point && !high.scene);
    assert!(high.reads_slot(slot("avg").0) && high.reads_slot(slot("score").0));
    assert!(!high.reads_slot(slot("trust").0), "only through avg");
    assert_eq!(of("noted"), &plain(vec![slot("noted"), slot("notes")]));
    let docks = of("at_docks");
    assert!(docks.scene && !docks.point && !docks.always);
    assert_eq!(docks.slots, vec![slot("at_docks")]);
    for name in ["late", "speaker"] {
        let x = of(name);
        assert!(x.point && !x.always && !x.scene, "{name}");
    }
    assert!(of("luck").always, "roll() is computed at every recompute");
    assert!(!of("ratio").always && of("ratio").reads_slot(slot("score").0));
}

/// Random scripts of the test pack's lines, from each opening and seed:
/// every turn's result, the state after it and the session file are those
/// of the same session with every derived variable computed every time.
#[test]
fn sessions_are_the_same_turn_by_turn() {
    let p = pack("tests/packs/derived-inputs");
    let lines = [
        "praise", "thanks", "docks", "note", "bring", "away", "twenty", "hmm",
    ];
    for opening in ["shore", "office"] {
        for seed in 0..12u64 {
            let options = || {
                troupe::SessionOptions::default()
                    .seed(seed)
                    .opening(opening)
            };
            let mut a = p.start(options()).expect("starts");
            let mut b = with_every_recompute(|| p.start(options())).expect("starts");
            assert_eq!(a.inner().state(), b.inner().state());
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            for turn in 0..10 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let line = lines[(x % lines.len() as u64) as usize];
                let ra = a.turn(line);
                let rb = with_every_recompute(|| b.turn(line));
                let (ra, rb) = match (ra, rb) {
                    (Ok(ra), Ok(rb)) => (ra, rb),
                    (Err(_), Err(_)) => break,
                    _ => panic!("{opening} seed {seed} turn {turn}: one session ended"),
                };
                assert_eq!(
                    serde_json::to_value(&ra).unwrap(),
                    serde_json::to_value(&rb).unwrap(),
                    "{opening} seed {seed} turn {turn} `{line}`"
                );
                assert_eq!(a.inner().state(), b.inner().state());
            }
            assert_eq!(a.jsonl(), b.jsonl());
        }
    }
}

/// A search and a random exploration (Format 20.5) report the same bytes.
#[test]
fn explorations_are_the_same() {
    for path in PACKS {
        let p = pack(path);
        let mut search = ExploreSettings::default();
        search.mode = ExploreMode::Search { states: 1500 };
        search.depth = 8;
        search.jobs = 1;
        let mut random = search.clone();
        random.mode = ExploreMode::Random { runs: 40 };
        for settings in [search, random] {
            let kept = explore(&p, None, &settings, &mut |_| {}).expect("explores");
            let every = with_every_recompute(|| explore(&p, None, &settings, &mut |_| {}))
                .expect("explores");
            assert_eq!(
                kept.to_json(),
                every.to_json(),
                "{path} {:?}",
                settings.mode
            );
        }
    }
}

//! The state at a message is the same whether it is replayed from the
//! nearest checkpoint, from the root, or met during a full replay (Format
//! 8.6): checkpoints change speed, never results.

#[path = "../../benches/common/mod.rs"]
mod common;

#[test]
fn checkpoints_never_change_a_state() {
    let text = common::session_jsonl(3000);
    let lines = common::parse_lines(&text);
    let bundle = common::bundle();
    let e = troupe::internals::pipeline::compile_checked(
        &bundle,
        Some((lines[0].clone(), lines[1..].to_vec())),
        None,
    )
    .expect("compiles");
    let deepest = e.session.messages.iter().map(|m| m.depth).max().unwrap();
    assert!(
        deepest > 2 * e.stride(),
        "the tree must be deeper than the stride"
    );
    let mut seen = 0;
    let mut visits = vec![0u32; e.session.messages.len()];
    e.replay_all(|m, st| {
        visits[m as usize] += 1;
        if m % 7 == 0 {
            assert_eq!(&e.state_at(m), st, "state_at differs at m{m}");
            assert_eq!(&e.state_at_from_root(m), st, "root replay differs at m{m}");
            seen += 1;
        }
    });
    assert!(seen > 400);
    // Every message once, whichever child is replayed first.
    assert!(visits.iter().all(|&v| v == 1), "each message visited once");
}

#[test]
fn the_generated_session_passes_its_checks() {
    let text = common::session_jsonl(500);
    let lines = common::parse_lines(&text);
    let bundle = common::bundle();
    let e = troupe::internals::pipeline::load(&bundle, Some((&lines[0], &lines[1..])), None);
    assert!(e.is_ok(), "{:#?}", e.err());
}

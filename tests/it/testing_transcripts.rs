//! `TestRun::transcripts` for a recorded session (Format 21.5) and a
//! playtest (22.5), what the web page's Tests view links their failures
//! to (issue 40 item 4), without a browser. The same breakage as
//! `web_page::a_failing_session_and_playtest_link_to_their_transcripts`,
//! derived by hand there: a session recorded and accepted under the
//! negotiation pack's own rules, its second reply then edited to "Sold!",
//! re-plays to the rules' reply "… 'For that money you can have the
//! hubcaps.'"; the playtest `scripted_close` with a goal `verify: "false"`
//! fails, and its session holds its first step "What a lovely car.".

use crate::common;
use troupe::tools::{run_tests, Quiet, Snapshots, StageName};

#[test]
fn a_failing_session_and_playtest_carry_their_transcripts() {
    let (_tmp, pack) = common::pack("everyday-negotiation");
    let dir = pack.display().to_string();
    let script = pack.with_file_name("lines.txt");
    std::fs::write(
        &script,
        "Good afternoon! It is a lovely car.\nI can offer 7,000 cash today.\n",
    )
    .unwrap();
    std::fs::create_dir_all(pack.join("sessions")).unwrap();
    let recorded = pack.join("sessions/deal.jsonl");
    let (code, out, err) = common::run(&[
        "run",
        &dir,
        "--script",
        &script.display().to_string(),
        "--out",
        &recorded.display().to_string(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let accepted = run_tests(&pack, None, Snapshots::AcceptAll, &mut Quiet).unwrap();
    assert_eq!(accepted.exit_code(), 0, "{}", accepted.to_text());
    // Passing, each carries its run: the recording (its re-play is the same).
    let all = accepted.transcripts();
    let session = all
        .iter()
        .find(|(s, n, _)| *s == StageName::Sessions && n == "deal.jsonl")
        .expect("the session's transcript");
    assert!(session.2.starts_with("As recorded:\n"), "{}", session.2);
    let text = std::fs::read_to_string(&recorded).unwrap();
    let reply = "'For that money you can have the hubcaps.'";
    assert_eq!(text.matches(reply).count(), 1, "{text}");
    std::fs::write(&recorded, text.replace(reply, "Sold!")).unwrap();
    let playtest = pack.join("playtests/scripted_close.yaml");
    let text = std::fs::read_to_string(&playtest).unwrap();
    let goal = "verify: \"state.deal_progress >= 80\"";
    assert!(text.contains(goal));
    std::fs::write(&playtest, text.replace(goal, "verify: \"false\"")).unwrap();
    let run = run_tests(&pack, None, Snapshots::Check, &mut Quiet).unwrap();
    assert_eq!(run.exit_code(), 1, "{}", run.to_text());
    let all = run.transcripts();
    let of = |stage: StageName, name: &str| {
        all.iter()
            .find(|(s, n, _)| *s == stage && n == name)
            .map(|(_, _, t)| t.clone())
            .unwrap_or_default()
    };
    let session = of(StageName::Sessions, "deal.jsonl");
    assert!(
        session.starts_with("Re-played under the current rules:\n"),
        "{session}"
    );
    for line in [
        "Good afternoon! It is a lovely car.",
        "I can offer 7,000 cash today.",
        reply,
    ] {
        assert!(session.contains(line), "{line:?}: {session}");
    }
    assert!(!session.contains("Sold!"), "{session}");
    let played = of(StageName::Playtests, "scripted_close");
    assert!(
        played.starts_with("scripted_close.jsonl:\n[m1] "),
        "{played}"
    );
    assert!(played.contains("] Ana: What a lovely car.\n"), "{played}");
    // Fixtures keep theirs, keyed by their own stage.
    assert!(!of(StageName::Fixtures, "golden_rules_deal").is_empty());
}

//! examples/embed.rs runs and prints what docs/embedding.md says it does,
//! so the example cannot rot.

#[path = "../../examples/embed.rs"]
#[allow(dead_code)]
mod embed;

#[test]
fn the_embedding_example_runs() {
    let text = embed::transcript().unwrap();
    assert_eq!(text.matches("\nYou: ").count(), 4, "{text}");
    assert!(
        text.contains("echo runtime: (echo) Is the price negotiable?"),
        "{text}"
    );
    assert!(
        text.contains("harbor-lights inn.jsonl at m3 (turn 1):"),
        "{text}"
    );
    assert!(text.contains("  trust.ines = 50\n"), "{text}");
}

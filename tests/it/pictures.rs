//! The pictures (issue 19 items 3–5): `troupe graph --format svg` (Format
//! 20.2 "SVG"), `troupe plot` (20.4) and `troupe test --html` (21.2). Every
//! SVG must parse and render with resvg to a non-empty image, hold the
//! labels derived by hand from the example packs, and be the same bytes
//! twice; the HTML page must be self-contained with every pack text
//! escaped; an output that is an input is exit 2 with nothing written.
//!
//! With `TROUPE_PICTURES_PNG=DIR` set, each rendered picture is also
//! written to DIR as PNG (to look at them).

use crate::common;

use std::path::{Path, PathBuf};

use common::{edit, pack, stdout, troupe};

fn example(name: &str) -> String {
    format!("{}/examples/packs/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn ok(args: &[&str]) -> String {
    let o = troupe(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    stdout(&o)
}

/// Parses `svg` with usvg and renders it with resvg; returns how many
/// pixels are not white. Writes `<name>.png` to `$TROUPE_PICTURES_PNG`.
fn render(svg: &str, name: &str) -> usize {
    let mut opt = resvg::usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let tree = resvg::usvg::Tree::from_str(svg, &opt).expect("the SVG parses");
    let size = tree.size().to_int_size();
    assert!(size.width() > 100 && size.height() > 100, "{size:?}");
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).expect("a pixmap");
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    if let Some(dir) = std::env::var_os("TROUPE_PICTURES_PNG") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        pixmap.save_png(dir.join(format!("{name}.png"))).unwrap();
    }
    pixmap
        .pixels()
        .iter()
        .filter(|p| p.alpha() > 0 && (p.red() < 240 || p.green() < 240 || p.blue() < 240))
        .count()
}

/// Every rule, event and outcome of `examples/packs/everyday-negotiation`
/// (its scenario file, read by hand), and its variables.
const NEGOTIATION_LABELS: &[&str] = &[
    "rule temper_flare",
    "rule walk_away_threat",
    "rule close_deal",
    "rule lowball_offer",
    "rule real_offer",
    "rule evidence",
    "rule candid_history",
    "rule guarded_history",
    "rule compliment",
    "rule stalling",
    "rule small_talk",
    "event dealer_warms_up",
    "event counter_offer",
    "event haggle_fatigue",
    "event patience_warning",
    "outcome success",
    "outcome failure",
    "signal warmed_up",
    "signal counter_offered",
    ">deal_progress<",
    ">impression<",
    ">patience<",
    ">internal_counter<",
    ">difficulty.patience<",
    ">END<",
];

#[test]
fn graph_svg_of_the_negotiation_pack_has_every_label_and_renders() {
    let svg = ok(&["graph", &example("everyday-negotiation"), "--format", "svg"]);
    assert!(svg.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "));
    for l in NEGOTIATION_LABELS {
        assert!(svg.contains(l), "no {l} in the SVG");
    }
    // The legend: one sample per node kind and per edge kind.
    for word in [
        "variable",
        "input",
        "opening",
        "rule",
        "event",
        "ending event",
        "outcome",
        "signal",
        ">set<",
        ">add<",
        ">reads<",
        ">raises<",
        ">ends<",
    ] {
        assert!(svg.contains(word), "legend lacks {word}");
    }
    // Each edge of the DOT text is an edge of the picture.
    let dot = ok(&["graph", &example("everyday-negotiation")]);
    let edges = dot.lines().filter(|l| l.contains(" -> ")).count();
    assert_eq!(svg.matches("<g class=\"edge ").count(), edges);
    // The edges of Format 20.2's example, each drawn with its kind.
    for e in [
        "deal_progress -reads-&gt; rule close_deal",
        "rule close_deal -add-&gt; deal_progress",
        "deal_progress -reads-&gt; outcome success",
        "outcome success -ends-&gt; END",
    ] {
        assert!(svg.contains(&format!("<title>{e}</title>")), "no edge {e}");
    }
    assert!(!svg.contains("<script") && !svg.contains("href=\"http"));
    assert!(render(&svg, "graph-everyday-negotiation") > 5_000);
    // Same bytes twice.
    let again = ok(&["graph", &example("everyday-negotiation"), "--format", "svg"]);
    assert_eq!(svg, again);
}

#[test]
fn graph_svg_of_every_example_pack_renders_the_same_twice() {
    for name in ["harbor-lights", "job-interview"] {
        let svg = ok(&["graph", &example(name), "--format", "svg"]);
        assert!(svg.contains("graph of scenario "), "{name}");
        assert!(render(&svg, &format!("graph-{name}")) > 5_000, "{name}");
        assert_eq!(svg, ok(&["graph", &example(name), "--format", "svg"]));
    }
    let svg = ok(&["graph", &example("harbor-lights"), "--format", "svg"]);
    for l in ["ending event", ">trust<", "opening arrival"] {
        assert!(svg.contains(l), "harbor-lights lacks {l}");
    }
}

#[test]
fn graph_dash_o_picks_the_format_from_the_extension() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let neg = example("everyday-negotiation");
    for (file, flag, start) in [
        ("g.svg", None, "<?xml"),
        ("g.dot", None, "digraph"),
        ("g.mmd", None, "flowchart LR"),
        ("h.svg", Some("dot"), "digraph"),
    ] {
        let out = p(file);
        let mut args = vec!["graph", &neg, "-o", out.to_str().unwrap()];
        if let Some(f) = flag {
            args.extend(["--format", f]);
        }
        ok(&args);
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.starts_with(start), "{file}: {}", &text[..40]);
    }
    // An output that is an input: exit 2, nothing written.
    let (_g, root) = pack("everyday-negotiation");
    let manifest = root.join("manifest.yaml");
    let before = std::fs::read(&manifest).unwrap();
    let o = troupe(&[
        "graph",
        root.to_str().unwrap(),
        "-o",
        manifest.to_str().unwrap(),
        "--format",
        "svg",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read(&manifest).unwrap(), before);
}

#[test]
fn plot_of_the_walkthrough_has_the_variables_and_the_ending() {
    let harbor = example("harbor-lights");
    let svg = ok(&["plot", &harbor, "walkthrough.jsonl"]);
    // The walkthrough's path to its last message (m13 and on): trust per
    // key, the lamp, the firings and the ending.
    for l in [
        "plot of scenario harbor_lights",
        "\ntrust\n",
        "trust.mara",
        "trust.tobias",
        "trust.ines",
        "\nlight_on\n",
        "event tobias_opens_up",
        "event ledger_clue",
        "END lamp_relit",
    ] {
        assert!(svg.contains(l), "the plot lacks {l}");
    }
    assert!(svg.contains("not drawn (not a number or bool): "));
    assert!(render(&svg, "plot-harbor-walkthrough") > 2_000);
    assert_eq!(svg, ok(&["plot", &harbor, "walkthrough.jsonl"]));

    // One variable, at a message: the path to m7 has not ended.
    let at = ok(&[
        "plot",
        &harbor,
        "walkthrough.jsonl",
        "--vars",
        "trust",
        "--at",
        "m7",
    ]);
    assert!(at.contains("path to m7") && at.contains("trust.tobias"));
    assert!(!at.contains("light_on") && !at.contains("END "));

    // Every branch.
    let tree = ok(&["plot", &harbor, "walkthrough.jsonl", "--tree"]);
    assert!(tree.contains("to m6b"), "the m5b branch is drawn");
    render(&tree, "plot-harbor-walkthrough-tree");

    // The other example session: an outcome ends it.
    let offer = ok(&["plot", &example("job-interview"), "offer.jsonl"]);
    assert!(offer.contains("END offer"), "the ending is marked");
    assert!(offer.contains("\nrapport\n"));
    render(&offer, "plot-job-interview-offer");

    // Misuse.
    let o = troupe(&["plot", &harbor, "walkthrough.jsonl", "--vars", "trusst"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("trust"));
    let o = troupe(&["plot", &harbor, "walkthrough.jsonl", "--at", "m3", "--tree"]);
    assert_eq!(o.status.code(), Some(2));
    let o = troupe(&["plot", &harbor, "walkthrough.jsonl", "--at", "nope"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn plot_refuses_to_overwrite_its_session() {
    let (_g, root) = pack("harbor-lights");
    let session = root.join("sessions/walkthrough.jsonl");
    let before = std::fs::read(&session).unwrap();
    let o = troupe(&[
        "plot",
        root.to_str().unwrap(),
        session.to_str().unwrap(),
        "-o",
        session.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read(&session).unwrap(), before);
    // A new file is written, atomically, and says so.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.svg");
    ok(&[
        "plot",
        root.to_str().unwrap(),
        "walkthrough.jsonl",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(std::fs::read_to_string(&out).unwrap().contains("<svg"));
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "no partial file is left");
}

fn html_of(root: &Path, out: &Path) -> String {
    let o = troupe(&[
        "test",
        root.to_str().unwrap(),
        "--html",
        out.to_str().unwrap(),
    ]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn html_report_has_stages_coverage_transcripts_and_the_graph() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.html");
    let page = html_of(Path::new(&example("everyday-negotiation")), &out);
    assert!(page.starts_with("<!DOCTYPE html>"));
    for stage in [
        "check",
        "static_assertions",
        "fixtures",
        "sessions",
        "playtests",
        "explore",
    ] {
        assert!(page.contains(&format!("</span> {stage}</h3>")), "{stage}");
    }
    assert!(page.contains("<h2 id=\"coverage\">Coverage</h2>"));
    assert!(page.contains("used_car_negotiation · "));
    // golden_rules_deal's transcript, as `troupe run` prints it: its first
    // turn's input, and Marco warming up after the two compliments (the
    // fixture's description).
    assert!(page.contains("Turn 1\n"));
    assert!(page.contains(": Good afternoon! It&apos;s a lovely car.\n"));
    assert!(page.contains("  event: dealer_warms_up (at m"));
    // The graph, inline, and nothing from outside the page.
    assert!(page.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(page.contains("rule close_deal"));
    assert!(!page.contains("<script") && !page.contains(" src="));
    assert_eq!(page.matches("href=").count(), 0);
    // Same bytes twice.
    let out2 = dir.path().join("again.html");
    assert_eq!(
        page,
        html_of(Path::new(&example("everyday-negotiation")), &out2)
    );
}

#[test]
fn html_report_lists_what_was_not_reached() {
    // A pack with a rule no test reaches: its "not reached" list names it.
    let (_g, root) = pack("everyday-negotiation");
    edit(
        &root,
        "scenarios/used_car_negotiation.yaml",
        "  - id: small_talk\n",
        "  - id: never_said\n    keywords: [\"xyzzy-never\"]\n    replies: [\"…\"]\n  - id: small_talk\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let page = html_of(&root, &dir.path().join("r.html"));
    assert!(
        page.contains("<ul class=\"missing\">"),
        "a not-reached list"
    );
    assert!(page.contains("never_said"), "the unreached rule is listed");
}

#[test]
fn html_report_escapes_what_the_pack_says() {
    let (_g, root) = pack("everyday-negotiation");
    edit(
        &root,
        "tests/golden_rules_deal.yaml",
        "player_input: Good afternoon! It's a lovely car.",
        "player_input: \"Good afternoon <script>alert('x')</script> & <img src=x onerror=alert(1)>\"",
    );
    let dir = tempfile::tempdir().unwrap();
    let page = html_of(&root, &dir.path().join("r.html"));
    assert!(!page.contains("<script"), "a script got through");
    assert!(!page.contains("<img"), "an element got through");
    assert!(page.contains("&lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt; &amp; &lt;img"));
}

#[test]
fn html_output_that_is_an_input_is_refused() {
    let (_g, root) = pack("everyday-negotiation");
    let fixture = root.join("tests/golden_rules_deal.yaml");
    let before = std::fs::read(&fixture).unwrap();
    let o = troupe(&[
        "test",
        root.to_str().unwrap(),
        "--html",
        fixture.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty(), "nothing ran");
    assert_eq!(std::fs::read(&fixture).unwrap(), before);
    // The same file as --junit and --html.
    let dir = tempfile::tempdir().unwrap();
    let both = dir.path().join("r.xml");
    let o = troupe(&[
        "test",
        root.to_str().unwrap(),
        "--html",
        both.to_str().unwrap(),
        "--junit",
        both.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!both.exists());
}

//! `docs/validation.md`'s examples are real output: the example of
//! "## Output" and every example block under "## The codes" is run, and
//! each diagnostic it shows must appear, as written, in what the command
//! prints. A block is linked to its input by the path of its `┌─` line
//! (`examples/broken/<entry>/…`: the entry is checked as
//! `examples/broken/README.md` says, a pack folder as is, a
//! bundle-and-session folder as its bundle then its session), or by a
//! one-line comment just before it, `<!-- run: troupe ARGS -->`, for a
//! command other than `troupe check`; `ARGS (in a temporary folder where
//! SETUP)` runs there, after this test has made what SETUP names (see
//! [`set_up`]: inputs that cannot be committed, a symbolic link loop or a
//! package, which is a ZIP archive). A block that no input can produce says
//! why in `<!-- not run: REASON -->`. The JSON example of "## Output" must
//! be what `troupe check --json` prints for the file it names.

use crate::common;

use std::path::Path;

use common::{packages, stdout, troupe};

const DOC: &str = "docs/validation.md";

/// One example block: the code of the `###` heading it is under (empty
/// outside "The codes"), the comment line just
/// before it (if any), its lines, and its line number in the document.
struct Example {
    code: String,
    comment: Option<String>,
    lines: Vec<String>,
    at: usize,
}

fn examples(doc: &str) -> Vec<Example> {
    let start = doc.find("\n## Output\n").expect("a `## Output` section");
    let end = doc[start..]
        .find("\n## In CI\n")
        .map_or(doc.len(), |e| start + e);
    let first_line = doc[..start].lines().count() + 1;
    let mut out = Vec::new();
    let mut code = String::new();
    let mut last: Option<String> = None;
    // The open block, and whether it is plain text (a fence with no
    // language): only those show output; a ```json block is skipped.
    let mut block: Option<(Example, bool)> = None;
    for (i, line) in doc[start..end].lines().enumerate() {
        if let Some((b, plain)) = block.as_mut() {
            if line == "```" {
                let (b, plain) = block.take().unwrap();
                if plain {
                    out.push(b);
                }
            } else if *plain {
                b.lines.push(line.to_string());
            }
            continue;
        }
        if let Some(h) = line.strip_prefix("### ") {
            code = h.split_whitespace().next().unwrap_or("").to_string();
        } else if line.starts_with("## ") {
            code = String::new();
        }
        if let Some(lang) = line.strip_prefix("```") {
            let e = Example {
                code: code.clone(),
                comment: last.clone().filter(|l| l.starts_with("<!--")),
                lines: Vec::new(),
                at: first_line + i,
            };
            block = Some((e, lang.is_empty()));
        }
        if !line.trim().is_empty() {
            last = Some(line.trim().to_string());
        }
    }
    assert!(block.is_none(), "{DOC}: an example block is not closed");
    out
}

/// The arguments of `troupe check` for `examples/broken/<entry>`.
fn check_args(entry: &Path) -> Vec<String> {
    let mut args = vec!["check".to_string()];
    if !entry.is_dir() || entry.join("manifest.yaml").exists() {
        args.push(entry.to_str().unwrap().to_string());
        return args;
    }
    let mut files: Vec<_> = std::fs::read_dir(entry)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort_by_key(|p| (p.extension().is_some_and(|e| e == "jsonl"), p.clone()));
    args.extend(files.iter().map(|p| p.to_str().unwrap().to_string()));
    args
}

/// What an example runs: `troupe` with these arguments, in the repository
/// or, with a setup, in a temporary folder.
struct Command {
    args: Vec<String>,
    setup: Option<String>,
}

/// Makes what `setup` names in `dir`: `Some(true)` when made,
/// `Some(false)` when it cannot be made on this system, `None` for a setup
/// this test does not know.
fn set_up(setup: &str, dir: &Path) -> Option<bool> {
    const TINY: &str = "examples/bundles/tiny.bundle.json";
    let compiled = |dir: &Path| {
        let o = troupe(&[
            "compile",
            TINY,
            "-o",
            dir.join("game.troupe").to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stdout(&o));
        let e = packages::entries(&std::fs::read(dir.join("game.troupe")).unwrap());
        // A change that keeps ir.json well-formed: `cups`' max 3 becomes 4.
        let ir = String::from_utf8(packages::get(&e, "ir.json").to_vec()).unwrap();
        let edited = ir.replacen(r#""max":"3""#, r#""max":"4""#, 1);
        assert_ne!(edited, ir, "the IR of {TINY} holds `\"max\":\"3\"`");
        (e, edited.into_bytes())
    };
    match setup {
        "x.json is a symbolic link to itself" => {
            // The OS's words for the loop are Linux's in the document.
            #[cfg(target_os = "linux")]
            std::os::unix::fs::symlink("x.json", dir.join("x.json")).unwrap();
            Some(cfg!(target_os = "linux"))
        }
        "game.troupe is examples/bundles/tiny.bundle.json compiled, then its ir.json edited" => {
            let (mut e, ir) = compiled(dir);
            packages::set(&mut e, "ir.json", ir);
            packages::write(dir, "game.troupe", &e);
            Some(true)
        }
        "game.troupe is examples/bundles/tiny.bundle.json compiled, then its ir.json edited, \
         its ir_hash fixed up and its ir.compact left out" => {
            let (mut e, ir) = compiled(dir);
            e.retain(|(n, _)| n != "ir.compact");
            packages::set(&mut e, "ir.json", ir);
            packages::fix_ir_hash(&mut e);
            packages::write(dir, "game.troupe", &e);
            Some(true)
        }
        _ => None,
    }
}

/// The command an example shows the output of, or why it is not run.
fn command(e: &Example) -> Result<Command, String> {
    if let Some(c) = &e.comment {
        let inner = c
            .strip_prefix("<!--")
            .and_then(|c| c.strip_suffix("-->"))
            .map(str::trim)
            .unwrap_or("");
        if let Some(run) = inner.strip_prefix("run: troupe ") {
            let (args, setup) = match run.split_once(" (in a temporary folder where ") {
                Some((args, setup)) => (
                    args,
                    Some(
                        setup
                            .strip_suffix(')')
                            .expect("a setup ends with `)`")
                            .to_string(),
                    ),
                ),
                None => (run, None),
            };
            let args = args.split_whitespace().map(String::from).collect();
            return Ok(Command { args, setup });
        }
        if let Some(why) = inner.strip_prefix("not run:") {
            return Err(why.trim().to_string());
        }
    }
    let path = e
        .lines
        .iter()
        .find_map(|l| l.split_once("┌─ ").map(|(_, p)| p.trim()))
        .unwrap_or_else(|| {
            panic!(
                "{DOC}:{}: the {} example names no input (no `┌─` line and no \
                 `<!-- run: troupe … -->` or `<!-- not run: … -->` before it)",
                e.at, e.code
            )
        });
    let file = path.split(':').next().unwrap();
    let rest = file.strip_prefix("examples/broken/").unwrap_or_else(|| {
        panic!(
            "{DOC}:{}: the {} example's input `{file}` is not in examples/broken/",
            e.at, e.code
        )
    });
    let entry = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/broken")
        .join(rest.split('/').next().unwrap());
    assert!(
        entry.exists(),
        "{DOC}:{}: the {} example's input {} does not exist",
        e.at,
        e.code,
        entry.display()
    );
    // The paths as the document shows them: relative to the repository,
    // where `troupe` runs.
    let root = format!("{}/", env!("CARGO_MANIFEST_DIR"));
    let args = check_args(&entry)
        .into_iter()
        .map(|a| a.strip_prefix(&root).map_or(a.clone(), String::from))
        .collect();
    Ok(Command { args, setup: None })
}

/// The diagnostics of a block: a new one starts at each `error[`/`warning[`
/// line; a block with none is one piece. Trailing blank lines are dropped.
fn pieces(lines: &[String]) -> Vec<String> {
    let mut out: Vec<Vec<&str>> = Vec::new();
    for l in lines {
        if out.is_empty() || l.starts_with("error[") || l.starts_with("warning[") {
            out.push(Vec::new());
        }
        out.last_mut().unwrap().push(l);
    }
    out.into_iter()
        .map(|mut p| {
            while p.last().is_some_and(|l| l.trim().is_empty()) {
                p.pop();
            }
            p.join("\n")
        })
        .filter(|p| !p.is_empty())
        .collect()
}

#[test]
fn every_example_of_the_codes_is_what_troupe_prints() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(DOC)).unwrap();
    let all = examples(&doc);
    let mut failures = Vec::new();
    let mut run = 0;
    let mut not_run = Vec::new();
    for e in &all {
        let Command { args, setup } = match command(e) {
            Ok(c) => c,
            Err(why) => {
                assert!(!why.is_empty(), "{DOC}:{}: `not run` needs a reason", e.at);
                not_run.push(format!("{} ({why})", e.code));
                continue;
            }
        };
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let dir = tempfile::tempdir().unwrap();
        let o = match &setup {
            None => troupe(&argv),
            Some(setup) => {
                let made = set_up(setup, dir.path());
                assert!(made.is_some(), "{DOC}:{}: unknown setup `{setup}`", e.at);
                if made == Some(false) {
                    not_run.push(format!("{} (setup `{setup}` not made here)", e.code));
                    continue;
                }
                std::process::Command::new(env!("CARGO_BIN_EXE_troupe"))
                    .args(&argv)
                    .current_dir(dir.path())
                    .stdin(std::process::Stdio::null())
                    .output()
                    .unwrap()
            }
        };
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        run += 1;
        for p in pieces(&e.lines) {
            let head = p.lines().next().unwrap();
            for sev in ["error[", "warning["] {
                if let Some(c) = head.strip_prefix(sev) {
                    let c = c.split(']').next().unwrap();
                    if !e.code.is_empty() && c != e.code {
                        failures.push(format!(
                            "{DOC}:{}: an example of {} shows a {c} diagnostic",
                            e.at, e.code
                        ));
                    }
                }
            }
            if !printed.contains(&p) {
                failures.push(format!(
                    "{DOC}:{}: the {} example is not what `troupe {}` prints.\n\
                     --- the document shows:\n{p}\n--- troupe printed:\n{printed}",
                    e.at,
                    e.code,
                    args.join(" ")
                ));
            }
        }
    }
    println!("ran {run} examples; not run: {not_run:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // A guard against a parser that finds nothing: the section holds one
    // example per code, and most are run.
    assert!(
        all.len() >= 40,
        "only {} examples found in {DOC}",
        all.len()
    );
    assert!(run >= 40, "only {run} examples were run");
}

#[test]
fn the_json_example_of_output_is_what_troupe_check_json_prints() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(DOC)).unwrap();
    let output = &doc[doc.find("\n## Output\n").expect("a `## Output` section")..];
    let start = output
        .find("\n```json\n")
        .expect("a JSON example in Output")
        + 9;
    let end = start + output[start..].find("\n```\n").unwrap();
    let shown: serde_json::Value = serde_json::from_str(&output[start..end]).unwrap();
    // The input is the file its one diagnostic names.
    let file = shown["diagnostics"][0]["file"].as_str().unwrap();
    let o = troupe(&["check", "--json", file]);
    let printed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        shown, printed,
        "{DOC}: the JSON example of `troupe check --json {file}`"
    );
}

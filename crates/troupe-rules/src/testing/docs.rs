//! `troupe docs PACK [--check]` (Format 20.3): the pack's reference
//! section of its `README.md`, generated from the checked pack between two
//! stable marker lines ([`BEGIN`], [`END`]). The author's text outside the
//! markers is kept byte for byte; a README without the markers gets the
//! section appended at its end, and a missing README is created.
//!
//! The section is rendered from the lowered, checked bundle (what
//! `troupe check` produces and `troupe compile` compiles, Format 14.4): the
//! compiled IR keeps no descriptions, conditions as written or rule
//! triggers, which a reader needs. The rendering depends on nothing but the
//! pack's files, so the output is deterministic.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::check::run::Checked;
use crate::diag::Diagnostic;
use crate::load::{scan_pack, PackFileKind, PackFiles};
use crate::model::fixture::Fixture;
use crate::model::items::{Category, Opening, Policy, Threshold, VarItem};
use crate::model::manifest::Manifest;
use crate::model::playtest::Playtest;
use crate::model::{read_list, Character, List, Scenario, World};
use crate::open::check_scanned_pack;

/// The line that opens the generated section (Format 20.3).
pub const BEGIN: &str = "<!-- troupe:docs:begin -->";
/// The line that closes the generated section (Format 20.3).
pub const END: &str = "<!-- troupe:docs:end -->";

/// Why the section could not be generated or placed.
#[derive(Debug, thiserror::Error)]
pub enum DocsError {
    /// The pack does not check (Format 17.1): nothing is generated.
    #[error("the pack does not conform (Format 17.1); no docs were generated")]
    Invalid(Vec<Diagnostic>, crate::diag::render::Sources),
    /// The README's markers are not one [`BEGIN`] line followed by one
    /// [`END`] line; the file is left as it is.
    #[error("{0}: {1}")]
    Markers(String, String),
    /// Reading or writing failed.
    #[error("cannot {0} {1}: {2}")]
    Io(&'static str, String, std::io::Error),
}

/// What `--check` found (Format 20.3).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// The README holds the current section.
    Current,
    /// The README lacks the section or holds a stale one: the unified diff
    /// from the README as it is to the README `troupe docs` would write.
    Stale(String),
}

/// The README path of a pack directory.
pub fn readme_path(pack: &Path) -> PathBuf {
    pack.join("README.md")
}

/// Generates the section (from [`BEGIN`] to [`END`], each on its own line,
/// ending with `\n`) for the pack directory `pack`.
pub fn generate(pack: &Path) -> Result<String, DocsError> {
    let mut checked = Checked::default();
    let scanned = check_scanned_pack(pack, scan_pack(pack), &mut checked);
    checked.finish_single();
    let valid = checked.is_valid(false);
    match scanned {
        Some((files, lowered)) if valid => Ok(render(&files, &lowered.bundle)),
        _ => Err(DocsError::Invalid(checked.diagnostics, checked.sources)),
    }
}

/// The README text with `section` in place: between the existing markers
/// (replacing what was there, the marker lines included), else appended at
/// the end after a blank line; `readme` `None` gives the section alone.
/// `Err` is why the markers cannot be used (a marker missing its partner,
/// a marker twice, or the end before the begin).
pub fn splice(readme: Option<&str>, section: &str) -> Result<String, String> {
    let Some(text) = readme else {
        return Ok(section.to_string());
    };
    // Byte offsets of each line's start and end (end includes the newline).
    let mut begins = Vec::new();
    let mut ends = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_end_matches(['\n', '\r']).trim();
        if trimmed == BEGIN {
            begins.push(at);
        } else if trimmed == END {
            ends.push(at + line.len());
        }
        at += line.len();
    }
    match (begins.as_slice(), ends.as_slice()) {
        ([], []) => {
            let mut out = text.to_string();
            if !out.is_empty() {
                if !out.ends_with('\n') {
                    out.push('\n');
                }
                if !out.ends_with("\n\n") {
                    out.push('\n');
                }
            }
            out.push_str(section);
            Ok(out)
        }
        ([b], [e]) if b < e => Ok(format!("{}{section}{}", &text[..*b], &text[*e..])),
        ([_], [_]) => Err(format!("`{END}` comes before `{BEGIN}`")),
        (b, e) if b.len() > 1 || e.len() > 1 => Err(format!(
            "the markers `{BEGIN}` and `{END}` must appear once each (found {} and {})",
            b.len(),
            e.len()
        )),
        ([], _) => Err(format!("`{END}` without `{BEGIN}`")),
        _ => Err(format!("`{BEGIN}` without `{END}`")),
    }
}

fn read_readme(path: &Path) -> Result<Option<String>, DocsError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(DocsError::Io("read", path.display().to_string(), e)),
    }
}

/// The README as it is (`None` when missing) and as `troupe docs` writes it.
pub fn expected(pack: &Path) -> Result<(Option<String>, String), DocsError> {
    let section = generate(pack)?;
    let path = readme_path(pack);
    let current = read_readme(&path)?;
    let new = splice(current.as_deref(), &section)
        .map_err(|m| DocsError::Markers(path.display().to_string(), m))?;
    Ok((current, new))
}

/// `troupe docs PACK --check`: compares, never writes.
pub fn check(pack: &Path) -> Result<Status, DocsError> {
    let (current, new) = expected(pack)?;
    if current.as_deref() == Some(new.as_str()) {
        return Ok(Status::Current);
    }
    let old = current.unwrap_or_default();
    let shown = readme_path(pack).display().to_string();
    let diff = similar::TextDiff::from_lines(old.as_str(), new.as_str())
        .unified_diff()
        .context_radius(3)
        .header(&shown, &format!("{shown} (troupe docs)"))
        .to_string();
    Ok(Status::Stale(diff))
}

/// `troupe docs PACK`: writes the README (temp file + rename) when it
/// differs; returns whether it was written.
pub fn write(pack: &Path) -> Result<bool, DocsError> {
    let (current, new) = expected(pack)?;
    if current.as_deref() == Some(new.as_str()) {
        return Ok(false);
    }
    let path = readme_path(pack);
    let tmp = pack.join(".README.md.troupe-tmp");
    let shown = path.display().to_string();
    std::fs::write(&tmp, new.as_bytes()).map_err(|e| DocsError::Io("write", shown.clone(), e))?;
    if let Err(e) = std::fs::rename(&tmp, &path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(DocsError::Io("write", shown, e));
    }
    Ok(true)
}

// ---------------------------------------------------------------- rendering

/// A table cell: one line, `|` escaped.
fn cell(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// A code span (for a table cell: call [`cell`] on it).
fn code(s: &str) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut ticks = 1;
    while s.contains(&"`".repeat(ticks)) {
        ticks += 1;
    }
    let fence = "`".repeat(ticks);
    if s.starts_with('`') || s.ends_with('`') {
        format!("{fence} {s} {fence}")
    } else {
        format!("{fence}{s}{fence}")
    }
}

/// A value as written: strings bare, everything else compact JSON.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn table(out: &mut String, head: &[&str], rows: &[Vec<String>]) {
    let _ = writeln!(out, "| {} |", head.join(" | "));
    let _ = writeln!(out, "|{}", head.iter().map(|_| "---|").collect::<String>());
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out.push('\n');
}

/// A condition: CEL as written, or a threshold in words and as written.
fn condition(v: Option<&Value>) -> String {
    match v {
        None => "—".into(),
        Some(Value::String(cel)) => cell(&code(cel)),
        Some(t) => {
            let th = Threshold::read(t);
            let var = th.variable.unwrap_or("");
            let at = th.threshold.map(plain).unwrap_or_default();
            let words = match th.kind.unwrap_or("") {
                "variable_above" => format!("{var} above {at}"),
                "variable_below" => format!("{var} below {at}"),
                "variable_equals" => format!("{var} equals {at}"),
                other => format!("{var} {other} {at}"),
            };
            cell(&format!("{words} ({})", code(&t.to_string())))
        }
    }
}

/// A change list (Format 8.5), one change after another.
fn changes(list: &[Value]) -> String {
    let items: Vec<String> = list
        .iter()
        .flat_map(|c| {
            c.as_object()
                .into_iter()
                .flatten()
                .map(|(op, arg)| match arg {
                    Value::Object(m) => m
                        .iter()
                        .map(|(name, val)| {
                            let val = plain(val);
                            if op == "add" && !val.starts_with('-') {
                                format!("{name} +{val}")
                            } else if op == "add" {
                                format!("{name} {val}")
                            } else {
                                format!("{name} = {val}")
                            }
                        })
                        .collect::<Vec<_>>()
                        .join(", "),
                    Value::Array(a) => {
                        format!(
                            "{op} {}",
                            a.iter().map(plain).collect::<Vec<_>>().join(", ")
                        )
                    }
                    other => format!("{op} {}", plain(other)),
                })
        })
        .collect();
    if items.is_empty() {
        "—".into()
    } else {
        cell(&code(&items.join("; ")))
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn description(d: Option<&str>) -> String {
    d.map(cell).unwrap_or_default()
}

/// One variable row; `prefix` is the owner's ID and `.` for a character's
/// or world's variable (Format 8.7).
fn variable_row(prefix: &str, v: &Value) -> Vec<String> {
    let v = VarItem::read(v);
    let id = v.id.unwrap_or("");
    let mut ty = v.ty.unwrap_or("").to_string();
    match v.keys {
        Some(Value::String(k)) => ty = format!("{ty}, keys {k}"),
        Some(Value::Array(a)) => {
            ty = format!(
                "{ty}, keys {}",
                a.iter().map(plain).collect::<Vec<_>>().join(", ")
            )
        }
        _ => {}
    }
    let bounds = match (v.min, v.max) {
        (None, None) => "—".to_string(),
        (min, max) => format!(
            "{} … {}",
            min.map(plain).unwrap_or_else(|| "−∞".into()),
            max.map(plain).unwrap_or_else(|| "+∞".into())
        ),
    };
    let bounds = match (v.places, bounds.as_str()) {
        (Some(p), "—") => format!("places {}", plain(p)),
        (Some(p), _) => format!("{bounds}, places {}", plain(p)),
        (None, _) => bounds,
    };
    let default = if let Some(d) = v.derived {
        format!("derived: {}", code(d))
    } else if let Some(k) = v.knob.and_then(Value::as_str) {
        format!("difficulty knob {}", code(k))
    } else if let Some(d) = v.default {
        code(&d.to_string())
    } else {
        "—".into()
    };
    vec![
        cell(&code(&format!("{prefix}{id}"))),
        cell(&ty),
        cell(&bounds),
        cell(&default),
        v.visibility.unwrap_or("visible").to_string(),
        description(v.description),
    ]
}

/// The character `id` of the bundle's characters.
fn character<'a>(characters: &'a [Character], id: &str) -> Option<&'a Character> {
    characters.iter().find(|c| c.id == id)
}

fn render(files: &PackFiles, bundle: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{BEGIN}");
    out.push_str(
        "<!-- Generated by `troupe docs` from the checked pack (Format 20.3): edit the pack, then run `troupe docs`; text between these markers is replaced. -->\n\n",
    );
    let manifest = files.manifest.as_ref().map(|d| Manifest::read(&d.value));
    let title = manifest
        .and_then(|m| m.name)
        .unwrap_or("This pack")
        .to_string();
    let _ = writeln!(out, "## {} — reference\n", title.trim());
    if let Some(m) = manifest {
        let mut facts = Vec::new();
        for (v, label) in [
            (m.pack_id, "pack"),
            (m.version, "version"),
            (m.license, "license"),
            (m.content_rating, "content rating"),
        ] {
            if let Some(v) = v {
                facts.push(format!("{label} {}", code(v)));
            }
        }
        if !facts.is_empty() {
            let _ = writeln!(out, "{}.\n", facts.join(", "));
        }
    }
    let characters: Vec<Character> = read_list(crate::model::characters(bundle))
        .into_iter()
        .map(|(_, c)| c)
        .collect();
    let worlds: Vec<World> = read_list(crate::model::worlds(bundle))
        .into_iter()
        .map(|(_, w)| w)
        .collect();
    // The bundle is checked, so each of its scenarios reads (Format 6), as
    // the checks read it: without the `extensions` no page shows.
    let scenarios: Vec<Scenario> = crate::model::scenarios(bundle)
        .iter()
        .filter_map(Scenario::read_checked)
        .collect();

    out.push_str("### Scenarios\n\n");
    let rows: Vec<Vec<String>> = scenarios
        .iter()
        .map(|sc| {
            vec![
                cell(&code(&sc.id)),
                cell(&sc.name),
                description(sc.description.as_deref()),
            ]
        })
        .collect();
    table(&mut out, &["scenario", "name", "description"], &rows);

    for sc in &scenarios {
        scenario(&mut out, sc, &characters, &worlds);
    }
    tests(&mut out, files);
    let _ = writeln!(out, "{END}");
    out
}

fn scenario(out: &mut String, sc: &Scenario, characters: &[Character], worlds: &[World]) {
    let _ = writeln!(out, "### Scenario {}: {}\n", code(&sc.id), sc.name.trim());
    if let Some(loc) = sc.scene.as_ref().and_then(|x| x.location.as_deref()) {
        let _ = writeln!(out, "Scene: {}.\n", loc.trim().trim_end_matches('.'));
    }

    out.push_str("#### Cast and seats\n\n");
    let mut cast_chars = Vec::new();
    let rows: Vec<Vec<String>> = sc
        .cast_entries()
        .map(|m| {
            if let Some(c) = m.character {
                cast_chars.push(c.to_string());
                let name = character(characters, c)
                    .map(|ch| {
                        let n = ch.name.as_str();
                        match ch.nickname.as_deref() {
                            Some(nick) if nick != n => format!("{n} ({nick})"),
                            _ => n.to_string(),
                        }
                    })
                    .unwrap_or_default();
                let played = if m.player { "a player" } else { "the runtime" };
                vec![
                    cell(&code(c)),
                    "character".into(),
                    cell(&name),
                    played.into(),
                ]
            } else {
                vec![
                    cell(&code(m.seat.unwrap_or(""))),
                    "seat".into(),
                    String::new(),
                    "a player".into(),
                ]
            }
        })
        .collect();
    table(out, &["member", "kind", "name", "played by"], &rows);

    let openings = sc.list(List::Openings);
    if !openings.is_empty() {
        out.push_str("#### Openings\n\n");
        let rows: Vec<Vec<String>> = openings
            .iter()
            .map(|raw| {
                let o = Opening::read(raw);
                vec![
                    cell(&code(o.id.unwrap_or(""))),
                    cell(o.author.unwrap_or("narrator")),
                    yes_no(o.group_only).into(),
                    changes(o.changes),
                ]
            })
            .collect();
        table(out, &["opening", "author", "group only", "changes"], &rows);
    }

    let mut vars: Vec<Vec<String>> = sc
        .list(List::Variables)
        .iter()
        .map(|v| variable_row("", v))
        .collect();
    for c in &cast_chars {
        if let Some(ch) = character(characters, c) {
            for v in &ch.variables {
                vars.push(variable_row(&format!("{c}."), v));
            }
        }
    }
    for w in &sc.worlds {
        let wid = match w {
            Value::String(x) => Some(x.as_str()),
            other => crate::model::id_of(other),
        };
        if let Some(world) = wid.and_then(|x| worlds.iter().find(|w| w.id == x)) {
            for v in &world.variables {
                vars.push(variable_row(&format!("{}.", wid.unwrap_or("")), v));
            }
        }
    }
    if !vars.is_empty() {
        out.push_str("#### Variables\n\n");
        table(
            out,
            &[
                "variable",
                "type",
                "bounds",
                "default",
                "visibility",
                "description",
            ],
            &vars,
        );
    }

    if !sc.events.is_empty() {
        out.push_str("#### Events\n\n");
        let rows: Vec<Vec<String>> = sc
            .event_items(List::Events)
            .map(|e| {
                vec![
                    cell(&code(e.id.unwrap_or(""))),
                    condition(e.when),
                    yes_no(e.repeat).into(),
                    changes(e.changes),
                    yes_no(e.end).into(),
                    e.signal.map(|x| cell(&code(x))).unwrap_or_default(),
                    description(e.description),
                ]
            })
            .collect();
        table(
            out,
            &[
                "event",
                "condition",
                "repeat",
                "changes",
                "ends the story",
                "signal",
                "description",
            ],
            &rows,
        );
    }

    if !sc.outcomes.is_empty() {
        out.push_str("#### Outcomes\n\nReaching an outcome ends the story.\n\n");
        let rows: Vec<Vec<String>> = sc
            .event_items(List::Outcomes)
            .map(|o| {
                vec![
                    cell(&code(o.id.unwrap_or(""))),
                    condition(o.when),
                    changes(o.changes),
                    description(o.description),
                ]
            })
            .collect();
        table(
            out,
            &["outcome", "condition", "changes", "description"],
            &rows,
        );
    }

    if !sc.rules.is_empty() {
        out.push_str("#### Rules\n\nThe rules runtime (Format 18) tries them by priority, highest first.\n\n");
        let rows: Vec<Vec<String>> = sc
            .rule_items()
            .map(|r| {
                let mut trigger = Vec::new();
                let kws = r.keywords.unwrap_or_default();
                if !kws.is_empty() {
                    trigger.push(format!(
                        "keywords {}",
                        kws.iter()
                            .map(|k| code(&plain(k)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                if let Some(p) = r.pattern {
                    trigger.push(format!("pattern {}", code(p)));
                }
                if let Some(w) = r.when {
                    trigger.push(format!("when {}", code(w)));
                }
                let trigger = if trigger.is_empty() {
                    "any input".to_string()
                } else {
                    trigger.join("; ")
                };
                vec![
                    cell(&code(r.id.unwrap_or(""))),
                    cell(&trigger),
                    r.priority.map(plain).unwrap_or_else(|| "0".into()),
                    changes(r.changes),
                    r.replies.len().to_string(),
                ]
            })
            .collect();
        table(
            out,
            &["rule", "trigger", "priority", "changes", "replies"],
            &rows,
        );
    }

    if sc.model.is_some() {
        model(out, sc);
    }

    if let Some(d) = sc.difficulty() {
        let default = d.default.unwrap_or("");
        let options = d.options;
        let mut knobs: Vec<&str> = Vec::new();
        for (_, values) in options.into_iter().flatten() {
            for k in values.as_object().into_iter().flatten().map(|(k, _)| k) {
                if !knobs.contains(&k.as_str()) {
                    knobs.push(k);
                }
            }
        }
        let _ = writeln!(
            out,
            "#### Difficulty\n\nThe default preset is {}.\n",
            code(default)
        );
        let mut head = vec!["preset".to_string()];
        head.extend(knobs.iter().map(|k| code(k)));
        let rows: Vec<Vec<String>> = options
            .into_iter()
            .flatten()
            .map(|(p, values)| {
                let mut row = vec![if p == default {
                    format!("{} (default)", code(p))
                } else {
                    code(p)
                }];
                row.extend(
                    knobs
                        .iter()
                        .map(|k| values.get(*k).map(plain).unwrap_or_else(|| "—".into())),
                );
                row.into_iter().map(|c| cell(&c)).collect()
            })
            .collect();
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        table(out, &head, &rows);
    }

    if let Some(p) = &sc.safety {
        out.push_str("#### Safety\n\n");
        let policy = Policy::read(p);
        let mut facts = Vec::new();
        if let Some(id) = policy.id {
            facts.push(format!("Policy {}", code(id)));
        }
        if let Some(cap) = policy.content_rating_cap {
            facts.push(format!("content rating cap {}", code(cap)));
        }
        let globals = policy.global_rules;
        if !globals.is_empty() {
            facts.push(format!(
                "global rules {}",
                globals
                    .iter()
                    .map(|g| code(&plain(g)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !facts.is_empty() {
            let _ = writeln!(out, "{}.\n", facts.join(", "));
        }
        let rows: Vec<Vec<String>> = Category::all(Some(p))
            .map(|c| {
                let mut matches = Vec::new();
                if !c.terms.is_empty() {
                    matches.push(format!("{} terms", c.terms.len()));
                }
                if !c.patterns.is_empty() {
                    matches.push(format!("{} patterns", c.patterns.len()));
                }
                vec![
                    cell(&code(c.id.unwrap_or(""))),
                    cell(c.action.unwrap_or("")),
                    cell(&matches.join(", ")),
                ]
            })
            .collect();
        if !rows.is_empty() {
            table(out, &["category", "action", "matches"], &rows);
        }
    }
}

/// What a language model may do under `--runtime model` (Format 24.2),
/// read as the model runtime reads it: the names it may change with their
/// step limits, the emotions, the instructions, lore budget and history.
fn model(out: &mut String, sc: &Scenario) {
    use crate::runtime::chat::ModelDecl;
    let decl = ModelDecl::read(sc.model.as_ref());
    out.push_str(
        "#### Model

",
    );
    if decl.changes.is_empty() {
        out.push_str(
            "Under `--runtime model` a model may change nothing.

",
        );
    } else {
        out.push_str(
            "Under `--runtime model` a model may change:

",
        );
        let rows: Vec<Vec<String>> = decl
            .changes
            .iter()
            .map(|(name, step)| {
                vec![
                    cell(&code(name)),
                    step.map_or_else(|| "no limit".into(), |d| d.normalize().to_string()),
                ]
            })
            .collect();
        table(out, &["state name", "step per turn"], &rows);
    }
    let emotions = if decl.emotions.is_empty() {
        "any".to_string()
    } else {
        decl.emotions
            .iter()
            .map(|e| code(e))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let instructions = if decl.prompt.is_some() {
        "the scenario's own (`model.prompt`)"
    } else {
        "the default"
    };
    let _ = writeln!(
        out,
        "Emotions: {}. Instructions: {instructions}. Lore budget: {} characters. History: {} messages.\n",
        cell(&emotions),
        decl.lore_budget,
        decl.history
    );
}

fn tests(out: &mut String, files: &PackFiles) {
    let fixtures: Vec<Vec<String>> = files
        .files
        .iter()
        .filter(|(_, (k, _))| *k == PackFileKind::Test)
        .map(|(rel, (_, doc))| {
            let f = Fixture::read(&doc.value);
            vec![
                cell(&code(f.fixture_id.unwrap_or(""))),
                cell(&code(rel)),
                cell(&code(f.scenario_id.unwrap_or(""))),
                cell(f.runtime.unwrap_or("rules")),
                f.difficulty.map(|d| cell(&code(d))).unwrap_or_default(),
                f.turn_count().to_string(),
                f.static_assertions.len().to_string(),
                description(f.description),
            ]
        })
        .collect();
    let playtests: Vec<Vec<String>> = files
        .files
        .iter()
        .filter(|(_, (k, _))| *k == PackFileKind::Playtest)
        .map(|(rel, (_, doc))| {
            let p = Playtest::read(&doc.value);
            vec![
                cell(&code(p.name.unwrap_or(""))),
                cell(&code(rel)),
                cell(p.mode.unwrap_or("")),
                p.summary.map(cell).unwrap_or_default(),
            ]
        })
        .collect();
    out.push_str("### Tests\n\nRun them with `troupe test .` (Format 21).\n\n");
    if fixtures.is_empty() && playtests.is_empty() && files.sessions.is_empty() {
        out.push_str("The pack has no tests yet.\n\n");
        return;
    }
    if !fixtures.is_empty() {
        table(
            out,
            &[
                "fixture",
                "file",
                "scenario",
                "runtime",
                "difficulty",
                "turns",
                "static assertions",
                "description",
            ],
            &fixtures,
        );
    }
    if !files.sessions.is_empty() {
        let _ = writeln!(
            out,
            "Recorded sessions, replayed against their snapshots: {}.\n",
            files
                .sessions
                .keys()
                .map(|k| code(k))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !playtests.is_empty() {
        table(out, &["playtest", "file", "mode", "summary"], &playtests);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECTION: &str = "<!-- troupe:docs:begin -->\nX\n<!-- troupe:docs:end -->\n";

    #[test]
    fn splice_appends_replaces_and_refuses() {
        assert_eq!(splice(None, SECTION).unwrap(), SECTION);
        assert_eq!(
            splice(Some("# T\n\ntext"), SECTION).unwrap(),
            format!("# T\n\ntext\n\n{SECTION}")
        );
        let placed = format!("# T\n\n{BEGIN}\nold\n{END}\n\nafter\n");
        assert_eq!(
            splice(Some(&placed), SECTION).unwrap(),
            format!("# T\n\n{SECTION}\nafter\n")
        );
        let twice = splice(Some(&placed), SECTION).unwrap();
        assert_eq!(splice(Some(&twice), SECTION).unwrap(), twice);
        assert!(splice(Some(&format!("{BEGIN}\n")), SECTION).is_err());
        assert!(splice(Some(&format!("{END}\n{BEGIN}\n")), SECTION).is_err());
        assert!(splice(Some(&format!("{BEGIN}\n{END}\n{BEGIN}\n{END}\n")), SECTION).is_err());
    }

    #[test]
    fn code_spans_survive_backticks_and_pipes() {
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(cell(&code("a || b")), "`a \\|\\| b`");
    }
}

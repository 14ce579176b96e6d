//! `troupe init DIR` (Format 21): a new pack that passes `troupe check`
//! and `troupe test` as scaffolded — a manifest, one scenario, an NPC, a
//! safety policy, a rubric, a smoke and a golden fixture — and a CI
//! workflow `.github/workflows/troupe.yml` that installs Troupe from a
//! pinned git commit (never by name from a package index) and runs both
//! commands, then `troupe docs . --check` (Format 20.3): the README gets its
//! generated section as written.

use std::path::Path;

/// The git URL Troupe was built from, when the build was told
/// (`TROUPE_GIT_URL` at build time); `None` otherwise.
pub const SOURCE_URL: Option<&str> = option_env!("TROUPE_GIT_URL");

/// The full commit Troupe was built from (`TROUPE_GIT_REV` at build time,
/// 40 hexadecimal digits); `None` otherwise.
pub const SOURCE_REV: Option<&str> = option_env!("TROUPE_GIT_REV");

/// What the workflow's `TROUPE_GIT` and `TROUPE_REV` are set to: the
/// build's source when it is known (a URL and a 40-digit commit), else
/// clearly marked placeholders that make the install step fail with a
/// plain message. The second value is false for placeholders.
pub fn pinned_source() -> (String, String, bool) {
    let rev_ok =
        SOURCE_REV.is_some_and(|r| r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit()));
    match (SOURCE_URL, rev_ok) {
        (Some(url), true) if !url.is_empty() => (
            url.to_string(),
            SOURCE_REV.unwrap_or_default().to_ascii_lowercase(),
            true,
        ),
        _ => (
            "PLACEHOLDER: the git URL of Troupe".into(),
            "PLACEHOLDER: a full 40-character commit of Troupe".into(),
            false,
        ),
    }
}

/// The local copies of the schemas `init` writes under `.troupe/schemas/`
/// (Format 13.9), so that editors validate the pack offline: each embedded
/// schema with its `$id` left out, so that its relative `$ref`s
/// (`defs.schema.json#/…`) resolve next to the copy. (pack-relative path,
/// text).
pub fn schema_copies() -> Vec<(String, String)> {
    crate::check::schema::SOURCES
        .iter()
        .filter(|(f, _)| !f.contains('/'))
        .map(|(f, text)| {
            let local: String = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("\"$id\""))
                .map(|l| format!("{l}\n"))
                .collect();
            (format!(".troupe/schemas/{f}"), local)
        })
        .collect()
}

/// The files of the scaffold: (pack-relative path, text), in write order.
pub fn files(pack_id: &str, name: &str) -> Vec<(&'static str, String)> {
    let (git, rev, _) = pinned_source();
    let f = |t: &str| {
        t.replace("{PACK_ID}", pack_id)
            .replace("{NAME}", name)
            .replace("{TROUPE_GIT}", &git)
            .replace("{TROUPE_REV}", &rev)
    };
    vec![
        ("manifest.yaml", f(MANIFEST)),
        ("scenarios/first_meeting.yaml", f(SCENARIO)),
        ("npcs/host.yaml", f(NPC)),
        ("safety/policy.yaml", f(SAFETY)),
        ("rubrics/rubric.yaml", f(RUBRIC)),
        ("tests/smoke_first_meeting.yaml", f(SMOKE)),
        ("tests/golden_first_meeting.yaml", f(GOLDEN)),
        ("README.md", f(README)),
        (".github/workflows/troupe.yml", f(WORKFLOW)),
    ]
}

/// A pack ID from a folder name: lower case, other characters as `_`,
/// under `local.` (`My Pack` → `local.my_pack`).
pub fn pack_id_for(dir: &Path) -> String {
    let base = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut id: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    id = id.trim_matches('_').to_string();
    if !id.starts_with(|c: char| c.is_ascii_lowercase()) {
        id = format!("pack_{id}");
    }
    format!("local.{}", id.trim_end_matches('_'))
}

/// Why `troupe init` did not write.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// The folder exists and is not empty.
    #[error("{0} exists and is not empty: `troupe init` writes only into a new or empty folder")]
    NotEmpty(String),
    /// Writing failed.
    #[error("cannot write {0}: {1}")]
    Io(String, std::io::Error),
    /// The README's generated section could not be written (Format 20.3).
    #[error("cannot generate the README section: {0}")]
    Docs(String),
    /// A file of the scaffold appeared while `troupe init` was writing
    /// (another process): it is never overwritten.
    #[error("{0} already exists: `troupe init` never overwrites a file")]
    Exists(String),
    /// A file could not be written through its temporary file (Format 16.3).
    #[error("{0}")]
    Output(#[from] crate::output::OutputError),
}

/// Writes the scaffold into `dir` (created; it must be new or empty). Each
/// file goes through [`crate::output::write_atomic`]; a file that exists is
/// never overwritten (`InitError::Exists`).
/// Returns the pack-relative paths written.
pub fn init(dir: &Path) -> Result<Vec<String>, InitError> {
    let shown = dir.display().to_string();
    if dir.exists() {
        let mut entries = std::fs::read_dir(dir).map_err(|e| InitError::Io(shown.clone(), e))?;
        if entries.next().is_some() {
            return Err(InitError::NotEmpty(shown));
        }
    }
    let id = pack_id_for(dir);
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "New pack".into());
    let mut written = Vec::new();
    let all = files(&id, &name)
        .into_iter()
        .map(|(r, t)| (r.to_string(), t))
        .chain(schema_copies());
    for (rel, text) in all {
        let path = dir.join(&rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| InitError::Io(parent.display().to_string(), e))?;
        }
        // Written whole or not at all (temporary file + rename, Format
        // 16.3), and never over a file that appeared meanwhile.
        if std::fs::symlink_metadata(&path).is_ok() {
            return Err(InitError::Exists(path.display().to_string()));
        }
        crate::output::write_atomic(&path, text.as_bytes())?;
        written.push(rel.to_string());
    }
    super::docs::write(dir).map_err(|e| InitError::Docs(e.to_string()))?;
    Ok(written)
}

const MANIFEST: &str = r#"# yaml-language-server: $schema=.troupe/schemas/manifest.schema.json
schema_version: "0.1"
pack_id: {PACK_ID}
name: "{NAME}"
version: "0.1.0"
description: A new Troupe pack. Replace this with what the pack is about.
license: CC-BY-4.0
content_rating: general
entry_scenarios:
  - scenarios/first_meeting.yaml
safety:
  policy: safety/policy.yaml
players:
  max: 1
"#;

const SCENARIO: &str = r#"# yaml-language-server: $schema=../.troupe/schemas/scenario.schema.json
schema_version: "0.1"
scenario_id: first_meeting
title: A first meeting
description: >-
  The player meets the host for the first time. Win the host's trust before
  their patience runs out.
npc:
  ref: npcs/host.yaml
rubric:
  ref: rubrics/rubric.yaml
opening:
  npc_says: Hello, {{user}}. Come in, sit down. What brings you here?
state:
  variables:
    trust:
      type: int
      default: 50
      min: 0
      max: 100
      visibility: visible
      description: How much the host trusts the player.
    patience:
      type: int
      knob: patience
      min: 0
      max: 100
      visibility: hidden
      description: >-
        How much more small talk the host will put up with; it starts at the
        difficulty preset's `patience` knob (standard 60, hard 30).
rules:
  - id: curious
    keywords: [curious, story, how]
    changes:
      - add: {trust: 15}
    replies:
      - "Curious, are you? I like that, {{user}}."
  - id: small_talk
    changes:
      - add: {patience: -5}
    replies:
      - "The host nods politely."
events:
  - id: host_relaxes
    description: The host trusts the player enough to speak freely.
    when:
      type: variable_above
      variable: trust
      threshold: 70
    repeat: false
ending_conditions:
  success:
    type: variable_above
    variable: trust
    threshold: 90
  failure:
    type: variable_below
    variable: patience
    threshold: 10
difficulty:
  default: standard
  options:
    standard:
      patience: 60
    hard:
      patience: 30
"#;

const NPC: &str = r#"# yaml-language-server: $schema=../.troupe/schemas/npc.schema.json
schema_version: "0.1"
npc_id: host
name: The Host
fictional: true
age_band: adult
persona: A fictional, courteous host who warms to guests who are honest and curious.
"#;

const SAFETY: &str = r#"# yaml-language-server: $schema=../.troupe/schemas/safety.schema.json
schema_version: "0.1"
policy_id: policy
content_rating_cap: general
categories:
  - id: threats
    action: stop
    terms:
      - I will hurt you
global_rules:
  - minor_safety
  - crisis_support
"#;

const RUBRIC: &str = r#"# yaml-language-server: $schema=../.troupe/schemas/rubric.schema.json
schema_version: "0.1"
rubric_id: rubric
title: A first meeting
criteria:
  - id: trust_won
    description: How far the player won the host's trust.
    weight: 1
    score: "double(state.trust) / 100.0"
"#;

const SMOKE: &str = r#"# yaml-language-server: $schema=../.troupe/schemas/pack-test.schema.json
schema_version: "0.1"
fixture_id: smoke_first_meeting
scenario_id: first_meeting
description: The pack loads and one ordinary first turn neither ends the session nor trips the safety policy.
runtime: fake
turns:
  - turn: 1
    player_input: Thank you for having me. I have heard a lot about this place.
    expect:
      state_delta_contains: [trust, patience]
      session_control: continue_session
      safety_status: ok
static_assertions:
  - description: The opening line is not empty
    path: opening.npc_says
    check: non_empty_string
  - description: The NPC is fictional
    path: npc.fictional
    check: "equals true"
"#;

const GOLDEN: &str = r#"# yaml-language-server: $schema=../.troupe/schemas/pack-test.schema.json
schema_version: "0.1"
fixture_id: golden_first_meeting
scenario_id: first_meeting
description: >-
  Under the rules runtime, curiosity wins the host over: trust 65, then 80 (the
  host relaxes), then 95, when the story ends in success. The static
  assertions check the event, endings, visibility and difficulty as wired.
seed: 42
difficulty: standard
runtime: rules
turns:
  - turn: 1
    player_input: I am curious how you came to run this place.
    expect:
      state: {trust: 65}
      reply_contains: Curious
      session_control: continue_session
      safety_status: ok
  - turn: 2
    player_input: What a story. Thank you for telling me.
    expect:
      fired: [host_relaxes]
      state: {trust: 80}
      ended: false
  - turn: 3
    player_input: Please, tell me how it began.
    expect:
      state: {trust: 95}
      ended: true
      outcome: success
      session_control: end_session
static_assertions:
  - description: The host relaxes once trust is above 70
    path: events[id=host_relaxes].when
    check: "type=variable_above AND variable=trust AND threshold=70"
  - description: The host relaxes only once
    path: events[id=host_relaxes].repeat
    check: "equals false"
  - description: Success targets trust
    path: ending_conditions.success
    check: "type=variable_above AND variable=trust"
  - description: Trust is visible to the player
    path: state.variables.trust.visibility
    check: "equals visible"
  - description: Hard difficulty lowers the host's patience
    path: scenario.difficulty.options.hard.patience
    check: "lt 60"
  - description: The scenario is an entry scenario
    path: manifest.entry_scenarios
    check: "contains scenarios/first_meeting.yaml"
"#;

const README: &str = r#"# {NAME}

A Troupe pack. Check it and run its tests:

    troupe check .
    troupe test .

`troupe test` runs the check, the static assertions and turns of the
fixtures in `tests/`, the recorded sessions in `sessions/` (against their
snapshots in `snapshots/`) and the playtests, and prints what no test has
reached yet. The reference below is generated from the pack by
`troupe docs .`; after changing the pack, run it again (CI runs
`troupe docs . --check`, which fails while it is stale).
"#;

const WORKFLOW: &str = r#"# Checks and tests the pack on every push and pull request.
#
# Troupe is installed from its source at one pinned commit, never by name from
# a public package index: a name there can belong to someone else (on crates.io
# the crate `troupe` is an unrelated library), and a pinned commit is the code
# you reviewed. TROUPE_GIT and TROUPE_REV were filled in from the troupe that
# wrote this file; to move to a newer Troupe, change TROUPE_REV to its commit.
name: troupe
on:
  push:
  pull_request:
env:
  TROUPE_GIT: "{TROUPE_GIT}"
  TROUPE_REV: "{TROUPE_REV}"
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: dtolnay/rust-toolchain@stable
      - name: Install Troupe (pinned source)
        run: |
          if ! printf '%s' "$TROUPE_REV" | grep -Eq '^[0-9a-f]{40}$' || [ -z "$TROUPE_GIT" ] || [ "${TROUPE_GIT#PLACEHOLDER}" != "$TROUPE_GIT" ]; then
            echo "Troupe's source is not pinned: set TROUPE_GIT to Troupe's git URL and TROUPE_REV to a full 40-character commit in .github/workflows/troupe.yml (the troupe that wrote this file did not know them)."
            exit 1
          fi
          cargo install --locked --git "$TROUPE_GIT" --rev "$TROUPE_REV" troupe-cli
      - name: Check the pack
        run: troupe check .
      - name: Test the pack
        run: troupe test . --junit troupe-junit.xml
      - name: Check the generated README section is current
        run: troupe docs . --check
      - name: Keep the test report
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: troupe-junit
          path: troupe-junit.xml
"#;

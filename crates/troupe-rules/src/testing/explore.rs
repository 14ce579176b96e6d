//! Exploration (Format 20.5): the input alphabet derived from a scenario,
//! a breadth-first search over distinct engine states with a checked,
//! shortest witness for every event, outcome, rule and speaker it reaches,
//! and
//! seeded random playthroughs counted with the coverage observer of
//! `troupe test` (21.6).
//!
//! Every turn is a turn of the rules runtime's [`Session`] (18.5), as
//! `troupe run` takes it; the search branches with [`Session::fork`], which
//! shares the session's messages and states (its path, made shareable with
//! [`Session::share_path`] when a node is kept) and never copies its text.

use std::collections::HashSet;

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;

use super::coverage::ScenarioModel;
use crate::compile::runtime::RuntimeIr;
use crate::keys::lower;
use crate::model::items::Category;
use crate::model::strings;
use crate::runtime::generator::choose;
use crate::runtime::{Opened, Options, Session};

/// The bounds of `--depth`, `--states` and `--runs` (Format 20.5).
pub const MAX_DEPTH: u32 = 1000;
/// The largest `--states`.
pub const MAX_STATES: u64 = 1_000_000;
/// The largest `--runs`.
pub const MAX_RUNS: u64 = 1_000_000;
/// The default `--depth`.
pub const DEFAULT_DEPTH: u32 = 12;
/// The default `--states`.
pub const DEFAULT_STATES: u64 = 10_000;
/// What the search may hold (Format 20.5): the sessions it keeps to
/// expand, the keys of the states it visited and its nodes, counted as it
/// goes; before a node would take it past this, the search stops with
/// LIMIT.
pub const MEMORY_BUDGET: usize = 256 << 20;

/// The budget a search holds to: [`MEMORY_BUDGET`]. With the `test-hooks`
/// feature (on in the repository's own tests and the `troupe` binary they
/// build, never in a release or an embedder's build), the environment
/// variable `TROUPE_TEST_EXPLORE_BUDGET_MIB` may lower it, so that the bound
/// test of Format 20.5's LIMIT reaches the budget in seconds rather than
/// minutes (`tests/bounds/hostile_cli.rs`); a value above 256 or not a
/// number is ignored.
fn memory_budget() -> usize {
    #[cfg(feature = "test-hooks")]
    if let Some(mib) = std::env::var("TROUPE_TEST_EXPLORE_BUDGET_MIB")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&mib| mib <= MEMORY_BUDGET >> 20)
    {
        return mib << 20;
    }
    MEMORY_BUDGET
}

/// What to do (Format 20.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// Breadth-first search bounded by depth and distinct states.
    Search {
        /// `--states`.
        states: u64,
    },
    /// `--runs N` seeded random playthroughs.
    Random {
        /// `--runs`.
        runs: u64,
    },
}

/// The settings of an exploration.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Settings {
    /// The scenario (`None`: the first).
    pub scenario: Option<String>,
    /// Search or random.
    pub mode: Mode,
    /// `--depth`: turns per path.
    pub depth: u32,
    /// `--seed`.
    pub seed: u64,
    /// `--jobs`: how many threads expand a search's states (at least 1;
    /// the result does not depend on it, Format 20.5).
    pub jobs: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            scenario: None,
            mode: Mode::Search {
                states: DEFAULT_STATES,
            },
            depth: DEFAULT_DEPTH,
            seed: 0,
            jobs: default_jobs(),
        }
    }
}

/// The default `--jobs`: the cores this process may use.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// A root choice: an opening and a difficulty preset (Format 20.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Root {
    /// The opening, or none.
    pub opening: Option<String>,
    /// The preset, or none.
    pub difficulty: Option<String>,
}

/// One line of the alphabet and what it was derived for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Line {
    /// The input.
    pub text: String,
    /// Its sources: `rule <id>`, `safety <id>`, `other`.
    #[serde(rename = "for")]
    pub sources: Vec<String>,
}

/// The choices of an exploration (Format 20.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Alphabet {
    /// The root choices, opening first.
    pub roots: Vec<Root>,
    /// The input lines, in order.
    pub lines: Vec<Line>,
    /// Rules and safety categories with no input derived.
    pub underived: Vec<String>,
}

/// A witness: a root and the inputs that reach an item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Witness {
    /// The root's opening.
    pub opening: Option<String>,
    /// The root's preset.
    pub difficulty: Option<String>,
    /// The inputs, one per turn.
    pub inputs: Vec<String>,
    /// The script file it was written to (`--witness`), if any.
    pub script: Option<String>,
}

/// Reached, unreachable, or not reached within the bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ItemStatus {
    /// A witness reaches it.
    Reached,
    /// The search exhausted the space without reaching it.
    Unreachable,
    /// The search stopped at a bound first.
    NotReached,
}

/// An event, outcome or rule and what the search found for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemResult {
    /// `event <id>`, `outcome <id>`, `rule <id>`.
    pub item: String,
    /// Its status.
    pub status: ItemStatus,
    /// Its witness when reached.
    pub witness: Option<Witness>,
    /// Why it can never happen, when the check proves it (an event or
    /// outcome whose condition never holds, Format 17.4, 17.6): then it is
    /// unreachable whatever the bounds.
    pub proof: Option<String>,
}

/// Why the search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StoppedBy {
    /// A node at depth D was left unexpanded.
    Depth,
    /// `--states` distinct states were visited.
    States,
}

/// The search's numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchReport {
    /// Distinct states visited (roots included).
    pub states: u64,
    /// The deepest level visited.
    pub depth: u32,
    /// True when no node was left to expand and no bound was hit.
    pub exhausted: bool,
    /// The bound that stopped it, if any.
    pub stopped_by: Option<StoppedBy>,
}

/// The bounds as given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Bound {
    /// `--depth`.
    pub depth: u32,
    /// `--states` (search).
    pub states: Option<u64>,
    /// `--runs` (random).
    pub runs: Option<u64>,
}

/// The counts of random mode: per coverage kind, per item label, in how
/// many runs it was reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// `--runs`.
    pub runs: u64,
    /// Kind → item label → runs.
    pub kinds: IndexMap<&'static str, IndexMap<String, u64>>,
}

/// The result of `troupe explore` (Format 20.5), its `--json` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Exploration {
    /// The pack as given.
    pub pack: String,
    /// The scenario explored.
    pub scenario: String,
    /// `search` or `random`.
    pub mode: &'static str,
    /// `--seed`.
    pub seed: u64,
    /// The bounds.
    pub bound: Bound,
    /// The alphabet.
    pub alphabet: Alphabet,
    /// The search's numbers (search only).
    pub search: Option<SearchReport>,
    /// Each event, outcome and rule (search only).
    pub items: Vec<ItemResult>,
    /// The counts (random only).
    pub counts: Option<Counts>,
}

// ---------------------------------------------------------------------
// Deriving inputs.

/// A string a regular expression matches, derived as Format 20.5 says;
/// `None` when it does not parse.
pub fn derive_from_regex(pattern: &str) -> Option<String> {
    use regex_syntax::hir::{Class, Hir, HirKind};
    fn class_char(c: &Class) -> Option<char> {
        match c {
            Class::Unicode(u) => {
                let has = |x: char| u.ranges().iter().any(|r| r.start() <= x && x <= r.end());
                ('0'..='9')
                    .chain('A'..='Z')
                    .chain('a'..='z')
                    .find(|&x| has(x))
                    .or_else(|| has(' ').then_some(' '))
                    .or_else(|| u.ranges().first().map(|r| r.start()))
            }
            Class::Bytes(b) => {
                let has = |x: u8| b.ranges().iter().any(|r| r.start() <= x && x <= r.end());
                (b'0'..=b'9')
                    .chain(b'A'..=b'Z')
                    .chain(b'a'..=b'z')
                    .find(|&x| has(x))
                    .or_else(|| has(b' ').then_some(b' '))
                    .or_else(|| b.ranges().first().map(|r| r.start()))
                    .filter(u8::is_ascii)
                    .map(char::from)
            }
        }
    }
    fn walk(h: &Hir, out: &mut String, budget: &mut usize) -> Option<()> {
        if *budget == 0 {
            return None;
        }
        *budget -= 1;
        match h.kind() {
            HirKind::Empty | HirKind::Look(_) => {}
            HirKind::Literal(l) => out.push_str(std::str::from_utf8(&l.0).ok()?),
            HirKind::Class(c) => out.push(class_char(c)?),
            HirKind::Repetition(r) => {
                for _ in 0..r.min.min(64) {
                    walk(&r.sub, out, budget)?;
                }
            }
            HirKind::Capture(c) => walk(&c.sub, out, budget)?,
            HirKind::Concat(v) => {
                for x in v {
                    walk(x, out, budget)?;
                }
            }
            HirKind::Alternation(v) => walk(v.first()?, out, budget)?,
        }
        Some(())
    }
    let hir = regex_syntax::ParserBuilder::new()
        .nest_limit(64)
        .build()
        .parse(pattern)
        .ok()?;
    let mut out = String::new();
    let mut budget = 4096;
    walk(&hir, &mut out, &mut budget)?;
    (out.len() <= 4096).then_some(out)
}

/// The line derived from a key (Format 5.4): plain text as written, a
/// `/pattern/flags` key through [`derive_from_regex`].
fn derive_from_key(key: &str) -> Option<String> {
    match crate::keys::key_form(key) {
        crate::keys::KeyForm::Plain(text) => Some(text.to_string()),
        crate::keys::KeyForm::Regex { pattern, flags } if flags.contains('i') => {
            derive_from_regex(&format!("(?i){pattern}"))
        }
        crate::keys::KeyForm::Regex { pattern, .. } => derive_from_regex(pattern),
    }
}

/// Whether `k` is a `/pattern/flags` key ([`crate::keys::key_form`]).
fn is_regex_key(k: &str) -> bool {
    matches!(crate::keys::key_form(k), crate::keys::KeyForm::Regex { .. })
}

fn printable(s: &str) -> bool {
    !s.is_empty() && !s.chars().any(|c| (c as u32) < 0x20)
}

/// Derives the alphabet's input lines (Format 20.5) of the scenario `sc`
/// (its bundle JSON) with its compiled rules and safety.
pub fn derive_lines(sc: &Value, rt: &RuntimeIr) -> (Vec<Line>, Vec<String>) {
    let mut lines: Vec<Line> = Vec::new();
    let mut underived = Vec::new();
    let add = |lines: &mut Vec<Line>, text: String, source: String| match lines
        .iter_mut()
        .find(|l| l.text == text)
    {
        Some(l) => l.sources.push(source),
        None => lines.push(Line {
            text,
            sources: vec![source],
        }),
    };
    // Which lines no keyword or pattern rule matches.
    let matched_by_some = |text: &str| {
        let lowered = lower(text);
        rt.rules.iter().any(|r| {
            (r.keywords.is_some() || r.pattern.is_some()) && r.matches_input(text, &lowered)
        })
    };
    let other = std::iter::once("hmm".to_string())
        .chain((2..=9).map(|n| format!("hmm {n}")))
        .find(|t| !matched_by_some(t));
    let mut fallbacks = Vec::new();
    for rule in &rt.rules {
        let source = format!("rule {}", rule.id);
        if rule.keywords.is_none() && rule.pattern.is_none() {
            fallbacks.push(source);
            continue;
        }
        // From the compiled rule's keys and pattern as written.
        let kw_line = rule.keywords.as_ref().map(|set| {
            let keys = set.keys();
            keys.iter()
                .find(|k| !is_regex_key(k))
                .map(|k| k.to_string())
                .or_else(|| keys.first().and_then(|k| derive_from_key(k)))
        });
        let pat_line = rule.pattern.as_ref().map(|p| derive_from_regex(p.source()));
        let text = match (kw_line, pat_line) {
            (Some(Some(k)), Some(Some(p))) => Some(format!("{k} {p}")),
            (Some(Some(k)), None) => Some(k),
            (None, Some(Some(p))) => Some(p),
            _ => None,
        };
        let ok = text.filter(|t| printable(t) && rule.matches_input(t, &lower(t)));
        match ok {
            Some(t) => add(&mut lines, t, source),
            None => underived.push(source),
        }
    }
    // Safety probes.
    for cat in Category::of(sc) {
        let Some(id) = cat.id else {
            continue;
        };
        let terms: Vec<&str> = strings(cat.terms).collect();
        let patterns: Vec<&str> = strings(cat.patterns).collect();
        let text = terms
            .iter()
            .find(|t| !is_regex_key(t))
            .map(|t| (*t).to_string())
            .or_else(|| terms.first().and_then(|t| derive_from_key(t)))
            .or_else(|| patterns.first().and_then(|p| derive_from_regex(p)));
        let source = format!("safety {id}");
        let ok = text.filter(|t| {
            printable(t) && rt.safety.verdict(t, false).matched.iter().any(|m| m == id)
        });
        match ok {
            Some(t) => add(&mut lines, t, source),
            None => underived.push(source),
        }
    }
    if let Some(o) = other {
        add(&mut lines, o.clone(), "other".into());
        for f in fallbacks {
            add(&mut lines, o.clone(), f);
        }
    } else {
        underived.extend(fallbacks);
    }
    (lines, underived)
}

// ---------------------------------------------------------------------
// Exploring.

fn options(scenario: &str, root: &Root, seed: u64) -> Options {
    Options {
        scenario: Some(scenario.to_string()),
        difficulty: root.difficulty.clone(),
        seed,
        opening: root.opening.clone(),
        ..Options::default()
    }
}

/// The key of a node (Format 20.5): what decides every later turn — its
/// root, how many messages it has written, whether a safety `stop`
/// happened and its state — as a 128-bit SipHash of their canonical form
/// ([`crate::engine::State::hash_canonical`]). In debug builds every key
/// is also kept in full — the canonical bytes the hash was computed over —
/// and a hash shared by two different keys panics.
fn key(s: &Session, root: usize) -> Key {
    use std::hash::Hasher;
    let mut h = Canonical {
        bytes: Vec::with_capacity(512),
    };
    h.write_usize(root);
    h.write_usize(s.message_count());
    h.write_u8(u8::from(s.stopped()));
    s.state().hash_canonical(&mut h);
    // One pass over the canonical bytes: SipHash reads them as one stream
    // however they were written, and a single write costs far less than
    // the many small writes of a state's slots.
    let mut sip = siphasher::sip128::SipHasher13::new();
    sip.write(&h.bytes);
    Key {
        hash: siphasher::sip128::Hasher128::finish128(&sip).as_u128(),
        #[cfg(debug_assertions)]
        full: h.bytes,
    }
}

/// The canonical form of a node's key (see [`key`]), collected before it
/// is hashed (and kept in full by debug builds).
struct Canonical {
    bytes: Vec<u8>,
}

impl std::hash::Hasher for Canonical {
    fn write(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
    }

    fn finish(&self) -> u64 {
        // Never called: `key` hashes the bytes itself.
        0
    }
}

/// A node's key (see [`key`]).
struct Key {
    hash: u128,
    #[cfg(debug_assertions)]
    full: Vec<u8>,
}

/// The keys of the states visited.
#[derive(Default)]
struct Seen {
    hashes: HashSet<u128>,
    #[cfg(debug_assertions)]
    full: std::collections::HashMap<u128, Vec<u8>>,
}

impl Seen {
    fn contains(&self, k: &Key) -> bool {
        let hit = self.hashes.contains(&k.hash);
        #[cfg(debug_assertions)]
        if let Some(full) = self.full.get(&k.hash) {
            assert_eq!(full, &k.full, "two search keys share a 128-bit hash");
        }
        hit
    }

    fn insert(&mut self, k: Key) {
        self.hashes.insert(k.hash);
        #[cfg(debug_assertions)]
        self.full.insert(k.hash, k.full);
    }

    fn len(&self) -> usize {
        self.hashes.len()
    }
}

/// The items of a scenario, in report order: events, outcomes, rules.
fn item_labels(s: &Session) -> Vec<String> {
    let ir = &s.engine().ir;
    let mut out: Vec<String> = ir
        .events
        .iter()
        .map(|e| format!("event {}", e.id))
        .collect();
    out.extend(ir.outcomes.iter().map(|o| format!("outcome {}", o.id)));
    // Rules in declaration order: the bundle order of the story.
    out
}

/// What a turn (or a root) reached: the firings' items, then the rules
/// (the turn's `rule` and each reply's, Format 20.5 and 21.6), then the
/// speaker of each reply ("X speaks"; the narrator is no item, so its
/// `speaker narrator` matches none).
fn reached_by(result: &crate::runtime::TurnResult) -> Vec<String> {
    let mut out: Vec<String> = result
        .firings
        .iter()
        .map(|f| match (&f.event, &f.outcome) {
            (Some(e), _) => format!("event {e}"),
            (_, Some(o)) => format!("outcome {o}"),
            _ => String::new(),
        })
        .collect();
    let rules = result
        .rule
        .as_deref()
        .into_iter()
        .chain(result.replies.iter().filter_map(|r| r.rule.as_deref()));
    for r in rules {
        let label = format!("rule {r}");
        if !out.contains(&label) {
            out.push(label);
        }
    }
    out.extend(
        result
            .replies
            .iter()
            .map(|r| format!("speaker {}", r.author)),
    );
    out
}

/// What fired at the root of a freshly started session, then its author
/// (Format 20.5: a root's speaker).
fn root_items(s: &Session) -> Vec<String> {
    let ir = &s.engine().ir;
    let Some(m) = s.engine().session.messages.first() else {
        return Vec::new();
    };
    let mut out: Vec<String> = m
        .firings
        .iter()
        .map(|f| match f {
            crate::compile::session::Fired::Event(i) => {
                format!("event {}", ir.events[*i as usize].id)
            }
            crate::compile::session::Fired::Outcome(i) => {
                format!("outcome {}", ir.outcomes[*i as usize].id)
            }
        })
        .collect();
    out.push(format!("speaker {}", ir.who_id(m.author)));
    out
}

/// The scenario chosen and its root sessions' settings.
struct Prepared {
    scenario: String,
    alphabet: Alphabet,
    items: Vec<String>,
}

fn prepare(opened: &Opened, settings: &Settings) -> Result<Prepared, String> {
    let bundle = opened.bundle.value();
    let ids: Vec<&str> = crate::model::scenario_ids(bundle).collect();
    let scenario = match &settings.scenario {
        Some(id) if ids.contains(&id.as_str()) => id.clone(),
        Some(id) => {
            return Err(format!(
                "the pack has no scenario `{id}`{}",
                crate::diag::suggest::one_of(id, ids.iter().copied())
            ))
        }
        None => ids
            .first()
            .map(|s| s.to_string())
            .ok_or("the pack has no scenario")?,
    };
    // A probe session: the compiled story and rules.
    let probe = Session::start_discarding(
        opened,
        &Options {
            scenario: Some(scenario.clone()),
            ..Options::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let ir = &probe.engine().ir;
    let group = ir.players.len() >= 2;
    let openings: Vec<Option<String>> = {
        let o: Vec<Option<String>> = ir
            .openings
            .iter()
            .filter(|o| group || !o.group_only)
            .map(|o| Some(o.id.to_string()))
            .collect();
        if o.is_empty() {
            vec![None]
        } else {
            o
        }
    };
    let presets: Vec<Option<String>> = match &ir.difficulty {
        Some(d) if !d.presets.is_empty() => {
            d.presets.iter().map(|(p, _)| Some(p.to_string())).collect()
        }
        _ => vec![None],
    };
    let mut roots = Vec::new();
    for o in &openings {
        for p in &presets {
            roots.push(Root {
                opening: o.clone(),
                difficulty: p.clone(),
            });
        }
    }
    let sc = crate::model::scenario(bundle, &scenario)
        .cloned()
        .unwrap_or(Value::Null);
    let (lines, underived) = derive_lines(&sc, &probe.rt);
    let mut items = item_labels(&probe);
    for r in crate::model::items::Rule::all(&sc) {
        if let Some(id) = r.id {
            items.push(format!("rule {id}"));
        }
    }
    // Speakers: each cast member no player plays, in cast order (21.6).
    items.extend(
        probe
            .engine()
            .ir
            .cast
            .iter()
            .filter(|c| !c.player)
            .map(|c| format!("speaker {}", c.id)),
    );
    Ok(Prepared {
        scenario,
        alphabet: Alphabet {
            roots,
            lines,
            underived,
        },
        items,
    })
}

/// What a visited state's key costs: its 128-bit hash in the set of seen
/// keys, with the set's own overhead.
const KEY_BYTES: usize = 32;

/// A visited node: its parent, the line that led to it, its root.
struct Node {
    parent: u32,
    line: u32,
    root: u32,
    depth: u32,
}

/// Runs an exploration (Format 20.5) of `opened` (checked), reporting
/// progress to `progress` (states visited or runs played so far). `model`
/// is the scenario's coverage model (random mode counts its items).
pub fn explore(
    opened: &Opened,
    model: Option<&ScenarioModel>,
    settings: &Settings,
    progress: &mut dyn FnMut(u64),
) -> Result<Exploration, Failure> {
    if settings.depth == 0 || settings.depth > MAX_DEPTH {
        return Err(format!("--depth must be 1 … {MAX_DEPTH}").into());
    }
    let prep = prepare(opened, settings)?;
    match settings.mode {
        Mode::Search { states } => {
            if states == 0 || states > MAX_STATES {
                return Err(format!("--states must be 1 … {MAX_STATES}").into());
            }
            search(opened, prep, settings, states, progress)
        }
        Mode::Random { runs } => {
            if runs == 0 || runs > MAX_RUNS {
                return Err(format!("--runs must be 1 … {MAX_RUNS}").into());
            }
            random(opened, prep, model, settings, runs, progress)
        }
    }
}

fn search(
    opened: &Opened,
    prep: Prepared,
    settings: &Settings,
    max_states: u64,
    progress: &mut dyn FnMut(u64),
) -> Result<Exploration, Failure> {
    let Prepared {
        scenario,
        alphabet,
        items,
    } = prep;
    let mut seen = Seen::default();
    let mut nodes: Vec<Node> = Vec::new();
    // Item (by index in `items`) → the node that first reached it.
    let mut first: Vec<u32> = vec![NOT_REACHED; items.len()];
    let mut index: Option<ItemIndex> = None;
    let lines = Lines {
        lines: &alphabet.lines,
        escaped: alphabet
            .lines
            .iter()
            .map(|l| std::sync::Arc::from(crate::runtime::turn::escape(&l.text).as_str()))
            .collect(),
    };
    // Each session kept to expand, with the bytes it holds.
    let mut frontier: Vec<(u32, Session, usize)> = Vec::new();
    let mut stopped_by = None;
    let mut deepest = 0;
    // What the search holds (Format 20.5's memory bound): kept sessions,
    // keys, nodes.
    let mut held: usize = 0;
    let budget = memory_budget();
    let over = |held: usize, states: usize, depth: u32| -> Failure {
        Failure::Refused(format!(
            "LIMIT: the search would hold more than {} MiB (sessions to expand and state keys) \
             after {states} states at depth {depth} (Format 20.5); lower --states or --depth",
            held.max(budget) >> 20
        ))
    };
    'roots: for (ri, root) in alphabet.roots.iter().enumerate() {
        let s = Session::start_discarding(opened, &options(&scenario, root, settings.seed))
            .map_err(|e| e.to_string())?;
        // A key holds its root's index: no two roots share one.
        let k = key(&s, ri);
        let bytes = s.held_bytes();
        held += KEY_BYTES + bytes + std::mem::size_of::<Node>();
        if held > budget {
            return Err(over(held, seen.len(), 0));
        }
        seen.insert(k);
        let node = Node {
            parent: u32::MAX,
            line: u32::MAX,
            root: ri as u32,
            depth: 0,
        };
        let index = index.get_or_insert_with(|| ItemIndex::new(&s, &items));
        let reached = index.of_labels(&root_items(&s));
        let ix = push_node(&mut nodes, &mut first, node, &reached);
        if !s.is_over() {
            let mut s = s;
            // Its forks share its path (O(1) each).
            s.share_path();
            frontier.push((ix, s, bytes));
        } else {
            held -= bytes;
        }
        progress(seen.len() as u64);
        if seen.len() as u64 >= max_states {
            stopped_by = Some(StoppedBy::States);
            break 'roots;
        }
    }
    let mut depth = 0u32;
    while stopped_by.is_none() && !frontier.is_empty() {
        if depth >= settings.depth {
            stopped_by = Some(StoppedBy::Depth);
            break;
        }
        depth += 1;
        let mut next = Vec::new();
        let level = std::mem::take(&mut frontier);
        let mut parents = level.into_iter().peekable();
        'level: while parents.peek().is_some() {
            // A chunk of parents is expanded on `jobs` threads; what their
            // children bring is then taken in the order of a one-thread
            // search, so the result never depends on `jobs`.
            let mut chunk = Vec::new();
            let mut ids = Vec::new();
            // The children in flight (about a parent's own part each, and a
            // live session's overhead) stay within IN_FLIGHT beside what
            // the search counts as held.
            let mut in_flight = 0usize;
            let per_parent = |b: usize| (b + CHILD_OVERHEAD).saturating_mul(alphabet.lines.len());
            while let Some((parent, s, parent_bytes)) = parents.next_if(|(_, _, b)| {
                chunk.is_empty() || (chunk.len() < CHUNK && in_flight + per_parent(*b) <= IN_FLIGHT)
            }) {
                in_flight += per_parent(parent_bytes);
                chunk.push((parent, s));
                ids.push((parent, parent_bytes));
            }
            let Some(index) = index.as_ref() else {
                break 'level;
            };
            let expanded = expand_all(chunk, &nodes, &lines, index, settings.jobs);
            for ((parent, parent_bytes), steps) in ids.into_iter().zip(expanded) {
                let root = nodes[parent as usize].root;
                // Whether a child kept shares the parent's path.
                let mut shared = false;
                for step in steps? {
                    let node = Node {
                        parent,
                        line: step.line,
                        root,
                        depth,
                    };
                    if seen.contains(&step.key) {
                        // A state seen before, reached by another way: kept
                        // (never expanded) only as the witness of what its
                        // turn reached first (a rule whose changes another
                        // rule's equal).
                        if step
                            .reached
                            .iter()
                            .any(|&r| first[r as usize] == NOT_REACHED)
                        {
                            push_node(&mut nodes, &mut first, node, &step.reached);
                        }
                        continue;
                    }
                    let add = KEY_BYTES + step.bytes + std::mem::size_of::<Node>();
                    if held + add > budget {
                        return Err(over(held + add, seen.len(), depth));
                    }
                    held += add;
                    seen.insert(step.key);
                    let ix = push_node(&mut nodes, &mut first, node, &step.reached);
                    deepest = depth;
                    if let Some(child) = step.going_on {
                        shared = true;
                        next.push((ix, child, step.bytes));
                    }
                    progress(seen.len() as u64);
                    if seen.len() as u64 >= max_states {
                        stopped_by = Some(StoppedBy::States);
                        break 'level;
                    }
                }
                // The parent was dropped once expanded: what it held is
                // free again, but for the turn it added when a child kept
                // shares it (still counted: the count never falls below
                // what the kept sessions hold).
                held -= if shared {
                    parent_bytes.min(std::mem::size_of::<Session>())
                } else {
                    parent_bytes
                };
            }
        }
        frontier = next;
    }
    drop(frontier);
    let exhausted = stopped_by.is_none();
    // What the check proves can never happen (17.4, 17.6) is unreachable
    // whatever the bounds; the search is still the authority for what it
    // reaches (a witness is replayed, a proof is not).
    let bundle = opened.bundle.value();
    let proofs = crate::model::scenario_index(bundle, &scenario)
        .map(|i| crate::check::reach::proved_impossible(bundle, i))
        .unwrap_or_default();
    let proof_of = |item: &str| {
        proofs
            .iter()
            .find(|(kind, id, _)| item.split_once(' ') == Some((kind, id.as_str())))
            .map(|(_, _, why)| why.clone())
    };
    let mut results = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let r = match Some(first[i]).filter(|&n| n != NOT_REACHED) {
            Some(n) => {
                let w = witness(&nodes, n, &alphabet);
                verify(opened, &scenario, settings.seed, &w, item)?;
                ItemResult {
                    item: item.clone(),
                    status: ItemStatus::Reached,
                    witness: Some(w),
                    proof: None,
                }
            }
            None => {
                let proof = proof_of(item);
                ItemResult {
                    item: item.clone(),
                    status: if exhausted || proof.is_some() {
                        ItemStatus::Unreachable
                    } else {
                        ItemStatus::NotReached
                    },
                    witness: None,
                    proof,
                }
            }
        };
        results.push(r);
    }
    Ok(Exploration {
        pack: opened.name.clone(),
        scenario,
        mode: "search",
        seed: settings.seed,
        bound: Bound {
            depth: settings.depth,
            states: Some(max_states),
            runs: None,
        },
        alphabet,
        search: Some(SearchReport {
            states: seen.len() as u64,
            depth: deepest,
            exhausted,
            stopped_by,
        }),
        items: results,
        counts: None,
    })
}

/// How many kept sessions a search expands at once: enough to keep every
/// thread busy, few enough that the children in flight stay small beside
/// the search's memory budget.
const CHUNK: usize = 256;

/// What the children of the parents expanded at once may hold, estimated
/// as a parent's bytes per line (the search's memory bound, Format 20.5,
/// counts kept sessions; these are dropped or kept within the chunk). At
/// 32 MiB a search of 50 one-keyword rules peaked at 104 MiB against
/// Format 16.2's 64 MiB aim (tests/bounds/hostile_cli.rs); at 1 MiB, 49
/// MiB with one thread and 54 with two, and a chunk still holds hundreds
/// of turns, enough to keep the threads busy (each child counted with
/// [`CHILD_OVERHEAD`]).
const IN_FLIGHT: usize = 1 << 20;

/// What a child in flight holds beyond its own part as
/// [`Session::held_bytes`] counts it (the allocations of a live session and
/// of its turn). Since forks share their path a parent's own part is one
/// turn, far less than what a child in flight takes: without this, chunks
/// grew to many parents and a search's peak grew with its alphabet (16 MiB
/// more from 50 to 200 one-keyword rules at `--states 500`,
/// tests/bounds/hostile_cli.rs).
const CHILD_OVERHEAD: usize = 4 << 10;

/// The alphabet's lines with each one's input text escaped once (Format
/// 18.5 step 1), as every turn of the search writes it.
struct Lines<'a> {
    lines: &'a [Line],
    escaped: Vec<std::sync::Arc<str>>,
}

/// What one alphabet line does from one kept session.
struct Step {
    /// The line's index.
    line: u32,
    /// The key of the state it leads to.
    key: Key,
    /// The items its turn reached (by index in the report's items).
    reached: Vec<u32>,
    /// The child, while the session goes on (its scratch released).
    going_on: Option<Session>,
    /// What the child holds (0 when the session ended).
    bytes: usize,
}

/// Steps every line from `parent` (Format 20.5): one child per line whose
/// turn is not refused, in line order.
fn expand(
    parent: &Session,
    root: usize,
    lines: &Lines,
    items: &ItemIndex,
) -> Result<Vec<Step>, Failure> {
    let mut steps = Vec::with_capacity(lines.lines.len());
    for (li, (line, escaped)) in lines.lines.iter().zip(&lines.escaped).enumerate() {
        let Some(mut child) = parent.fork() else {
            return Err(Failure::Refused(
                "the search needs the rules runtime".into(),
            ));
        };
        // The turn as `troupe run` takes it, without the result the search
        // never reads (Session::step).
        let Ok(result) = child.step(&line.text, escaped) else {
            // A refused turn (LIMIT) has no child.
            continue;
        };
        let reached = items.of_step(&result);
        let key = key(&child, root);
        let going_on = result.going_on;
        let bytes = if going_on { child.held_bytes() } else { 0 };
        steps.push(Step {
            line: li as u32,
            key,
            reached,
            going_on: going_on.then(|| {
                child.release_scratch();
                // Its forks share its path (O(1) each).
                child.share_path();
                child
            }),
            bytes,
        });
    }
    Ok(steps)
}

/// Expands each parent of `chunk` (consumed: a parent is dropped once
/// expanded) on up to `jobs` threads; the results are in the chunk's order.
fn expand_all(
    chunk: Vec<(u32, Session)>,
    nodes: &[Node],
    lines: &Lines,
    items: &ItemIndex,
    jobs: usize,
) -> Vec<Result<Vec<Step>, Failure>> {
    let root = |parent: u32| nodes[parent as usize].root as usize;
    let jobs = jobs.clamp(1, chunk.len().max(1));
    if jobs == 1 {
        return chunk
            .into_iter()
            .map(|(p, s)| expand(&s, root(p), lines, items))
            .collect();
    }
    let n = chunk.len();
    // Threads take the next parent as they finish one, so a slow parent
    // does not hold the others back.
    let queue = std::sync::Mutex::new(chunk.into_iter().enumerate());
    let mut out: Vec<Option<Result<Vec<Step>, Failure>>> = Vec::new();
    out.resize_with(n, || None);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let taken = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                        let Some((i, (p, s))) = taken else {
                            return done;
                        };
                        done.push((i, expand(&s, root(p), lines, items)));
                    }
                })
            })
            .collect();
        for w in workers {
            match w.join() {
                Ok(done) => {
                    for (i, r) in done {
                        out[i] = Some(r);
                    }
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    });
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Failure::Internal("a parent was not expanded".into()))))
        .collect()
}

fn witness(nodes: &[Node], n: u32, alphabet: &Alphabet) -> Witness {
    let mut inputs = Vec::new();
    let mut at = n;
    while nodes[at as usize].parent != u32::MAX {
        inputs.push(
            alphabet.lines[nodes[at as usize].line as usize]
                .text
                .clone(),
        );
        at = nodes[at as usize].parent;
    }
    inputs.reverse();
    debug_assert_eq!(inputs.len() as u32, nodes[n as usize].depth);
    let root = &alphabet.roots[nodes[n as usize].root as usize];
    Witness {
        opening: root.opening.clone(),
        difficulty: root.difficulty.clone(),
        inputs,
        script: None,
    }
}

/// Appends `node` to `nodes` and makes it the first to reach each item
/// (by index in the report's items) of `reached` not reached before;
/// returns its index.
fn push_node(nodes: &mut Vec<Node>, first: &mut [u32], node: Node, reached: &[u32]) -> u32 {
    let ix = nodes.len() as u32;
    nodes.push(node);
    for &r in reached {
        if first[r as usize] == NOT_REACHED {
            first[r as usize] = ix;
        }
    }
    ix
}

/// No node reached the item (yet).
const NOT_REACHED: u32 = u32::MAX;

/// The report's items by what reaches them (Format 20.5): an event, an
/// outcome, a rule, a speaker; each the item's index in the report's list,
/// `None` for what is no item (the narrator, a player).
struct ItemIndex {
    events: Vec<Option<u32>>,
    outcomes: Vec<Option<u32>>,
    rules: std::collections::HashMap<String, u32>,
    speakers: Vec<Option<u32>>,
    narrator: Option<u32>,
    labels: std::collections::HashMap<String, u32>,
}

impl ItemIndex {
    fn new(s: &Session, items: &[String]) -> ItemIndex {
        let labels: std::collections::HashMap<String, u32> = items
            .iter()
            .enumerate()
            .map(|(i, l)| (l.clone(), i as u32))
            .collect();
        let ir = &s.engine().ir;
        let of = |l: String| labels.get(&l).copied();
        ItemIndex {
            events: ir
                .events
                .iter()
                .map(|e| of(format!("event {}", e.id)))
                .collect(),
            outcomes: ir
                .outcomes
                .iter()
                .map(|o| of(format!("outcome {}", o.id)))
                .collect(),
            rules: items
                .iter()
                .enumerate()
                .filter_map(|(i, l)| Some((l.strip_prefix("rule ")?.to_string(), i as u32)))
                .collect(),
            speakers: ir
                .cast
                .iter()
                .map(|c| of(format!("speaker {}", c.id)))
                .collect(),
            narrator: of("speaker narrator".to_string()),
            labels,
        }
    }

    /// The items among `labels` (as [`reached_by`] and [`root_items`]
    /// write them).
    fn of_labels(&self, labels: &[String]) -> Vec<u32> {
        labels
            .iter()
            .filter_map(|l| self.labels.get(l).copied())
            .collect()
    }

    /// The items a turn of the search reached, as [`reached_by`] reads
    /// them from its result: its firings, its rule, its speakers.
    fn of_step(&self, st: &crate::runtime::turn::Stepped) -> Vec<u32> {
        use crate::compile::session::Fired;
        use crate::compile::Who;
        let mut out = Vec::new();
        for f in &st.firings {
            let i = match *f {
                Fired::Event(e) => self.events.get(e as usize).copied().flatten(),
                Fired::Outcome(o) => self.outcomes.get(o as usize).copied().flatten(),
            };
            out.extend(i);
        }
        for r in &st.rules {
            out.extend(self.rules.get(&**r).copied());
        }
        for w in &st.speakers {
            out.extend(match *w {
                Who::Cast(c) => self.speakers.get(c as usize).copied().flatten(),
                Who::Narrator => self.narrator,
            });
        }
        out
    }
}

/// Why an exploration gave no result (Format 20.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A bound out of range, an unknown scenario, a session that cannot
    /// start.
    Refused(String),
    /// A witness that does not replay to its item: a bug of the search.
    Internal(String),
}

impl From<String> for Failure {
    fn from(m: String) -> Failure {
        Failure::Refused(m)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Refused(m) => f.write_str(m),
            Failure::Internal(m) => write!(f, "internal error: {m}"),
        }
    }
}

/// Replays a witness in a new session (Format 20.5): its last turn, or
/// its root when it has no input, must reach `item`.
pub fn verify(
    opened: &Opened,
    scenario: &str,
    seed: u64,
    w: &Witness,
    item: &str,
) -> Result<(), Failure> {
    let root = Root {
        opening: w.opening.clone(),
        difficulty: w.difficulty.clone(),
    };
    let mut s =
        Session::start(opened, &options(scenario, &root, seed)).map_err(|e| e.to_string())?;
    let mut last = root_items(&s);
    for input in &w.inputs {
        let r = s.turn(input).map_err(|e| {
            Failure::Internal(format!("the witness of {item} does not replay: {e}"))
        })?;
        last = reached_by(&r);
    }
    if last.iter().any(|x| x == item) {
        Ok(())
    } else {
        Err(Failure::Internal(format!(
            "the witness of {item} does not reach it when replayed"
        )))
    }
}

fn random(
    opened: &Opened,
    prep: Prepared,
    model: Option<&ScenarioModel>,
    settings: &Settings,
    runs: u64,
    progress: &mut dyn FnMut(u64),
) -> Result<Exploration, Failure> {
    let Prepared {
        scenario,
        alphabet,
        items: _,
    } = prep;
    let none = ScenarioModel::default();
    let model = model.unwrap_or(&none);
    let mut counts: IndexMap<String, u64> = IndexMap::new();
    let seed = settings.seed;
    for i in 0..runs {
        let ri = choose(alphabet.roots.len(), &format!("explore:{seed}:{i}:root"));
        let root = &alphabet.roots[ri];
        let mut s = Session::start_recorded(opened, &options(&scenario, root, seed))
            .map_err(|e| e.to_string())?;
        for k in 1..=settings.depth {
            if s.is_over() || alphabet.lines.is_empty() {
                break;
            }
            let li = choose(alphabet.lines.len(), &format!("explore:{seed}:{i}:{k}"));
            if s.turn(&alphabet.lines[li].text).is_err() {
                break;
            }
        }
        if let Some(mut rec) = s.recorder() {
            let engine = s.engine();
            for m in 0..engine.session.messages.len() {
                engine.entries_at_observed(m as u32, Some(&mut rec));
            }
            let reached: HashSet<String> = model.reached(&rec).into_iter().collect();
            for key in reached {
                *counts.entry(key).or_default() += 1;
            }
        }
        progress(i + 1);
    }
    let mut kinds: IndexMap<&'static str, IndexMap<String, u64>> = IndexMap::new();
    for k in super::coverage::KINDS {
        kinds.insert(k, IndexMap::new());
    }
    for item in &model.items {
        if let Some(k) = kinds.get_mut(item.kind) {
            k.insert(
                item.label.clone(),
                counts.get(&item.key).copied().unwrap_or(0),
            );
        }
    }
    Ok(Exploration {
        pack: opened.name.clone(),
        scenario,
        mode: "random",
        seed,
        bound: Bound {
            depth: settings.depth,
            states: None,
            runs: Some(runs),
        },
        alphabet,
        search: None,
        items: Vec::new(),
        counts: Some(Counts { runs, kinds }),
    })
}

impl Exploration {
    /// The `--json` document (Format 20.5), ending with a newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// The text report (Format 20.5).
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "explore {} scenario {} ({}, seed {})",
            self.pack, self.scenario, self.mode, self.seed
        );
        let roots: Vec<String> = self
            .alphabet
            .roots
            .iter()
            .map(|r| {
                format!(
                    "({})",
                    root_name(r.opening.as_deref(), r.difficulty.as_deref())
                )
            })
            .collect();
        let _ = writeln!(o, "roots: {}", roots.join(", "));
        let _ = writeln!(o, "inputs:");
        for l in &self.alphabet.lines {
            let _ = writeln!(o, "  {:?}  ({})", l.text, l.sources.join(", "));
        }
        for u in &self.alphabet.underived {
            let _ = writeln!(o, "  no input derived: {u}");
        }
        if let Some(sr) = &self.search {
            let bound = format!(
                "depth {} / {} states",
                self.bound.depth,
                self.bound.states.unwrap_or(0)
            );
            let how = if sr.exhausted {
                "the search exhausted the space".to_string()
            } else {
                format!(
                    "stopped by {}",
                    match sr.stopped_by {
                        Some(StoppedBy::States) => "states",
                        _ => "depth",
                    }
                )
            };
            let _ = writeln!(
                o,
                "search: {} states, depth {} ({how})",
                sr.states, sr.depth
            );
            for it in &self.items {
                match (&it.status, &it.witness) {
                    (ItemStatus::Reached, Some(w)) => {
                        let _ = writeln!(
                            o,
                            "{}: reached in {} turn{} ({}): {}",
                            it.item,
                            w.inputs.len(),
                            if w.inputs.len() == 1 { "" } else { "s" },
                            root_name(w.opening.as_deref(), w.difficulty.as_deref()),
                            if w.inputs.is_empty() {
                                "(at the root)".to_string()
                            } else {
                                w.inputs.join(" / ")
                            }
                        );
                        if let Some(p) = &w.script {
                            let _ = writeln!(
                                o,
                                "  replay: troupe run {} --script {}",
                                shell_word(&self.pack),
                                shell_word(p)
                            );
                        }
                    }
                    (ItemStatus::Unreachable, _) => {
                        let _ = match &it.proof {
                            Some(why) => {
                                writeln!(o, "{}: unreachable (proved by the check: {why})", it.item)
                            }
                            None => writeln!(
                                o,
                                "{}: unreachable (the search exhausted the space: {} states)",
                                it.item, sr.states
                            ),
                        };
                    }
                    _ => {
                        let _ = writeln!(o, "{}: not reached within {bound} ({how})", it.item);
                    }
                }
            }
            // "Does everyone speak?" (Format 20.5): one line over the
            // speaker items, naming those not reached.
            let speakers: Vec<&ItemResult> = self
                .items
                .iter()
                .filter(|it| it.item.starts_with("speaker "))
                .collect();
            let silent: Vec<&str> = speakers
                .iter()
                .filter(|it| it.status != ItemStatus::Reached)
                .map(|it| &it.item["speaker ".len()..])
                .collect();
            let _ = match (speakers.len(), silent.len()) {
                (0, _) => Ok(()),
                (n, 0) => writeln!(o, "speakers: all {n} reached"),
                (n, k) => writeln!(
                    o,
                    "speakers: {} of {n} reached; not reached: {}",
                    n - k,
                    silent.join(", ")
                ),
            };
        }
        if let Some(c) = &self.counts {
            let _ = writeln!(o, "{} runs of at most {} turns", c.runs, self.bound.depth);
            for (kind, items) in &c.kinds {
                if items.is_empty() {
                    continue;
                }
                let _ = writeln!(o, "{kind}:");
                for (label, n) in items {
                    let _ = writeln!(o, "  {n:>7}  {label}");
                }
            }
        }
        o
    }
}

fn root_name(opening: Option<&str>, difficulty: Option<&str>) -> String {
    match (opening, difficulty) {
        (Some(o), Some(d)) => format!("{o}, {d}"),
        (Some(o), None) => o.to_string(),
        (None, Some(d)) => d.to_string(),
        (None, None) => "no opening".to_string(),
    }
}

/// The file name of an item's witness script: `outcome-success.yaml`
/// (Format 20.5).
pub fn script_name(item: &str) -> String {
    format!("{}.yaml", item.replacen(' ', "-", 1))
}

/// A witness as a YAML script with its root (Format 20, 20.5): the
/// scenario, the seed, the root's opening and preset, and the inputs, so
/// that `troupe run PACK --script FILE` replays it with no other flag.
/// Strings are written as JSON strings (valid YAML 1.2 flow scalars), so
/// no input can be read back as anything else.
pub fn script_text(scenario: &str, seed: u64, item: &str, w: &Witness) -> String {
    let q = |t: &str| serde_json::Value::from(t).to_string();
    let mut o = format!(
        "# The witness of {item} (troupe explore, Format 20.5).\n\
         # Replay: troupe run PACK --script THIS_FILE\n\
         scenario: {}\nseed: {seed}\n",
        q(scenario)
    );
    if let Some(op) = &w.opening {
        o.push_str(&format!("opening: {}\n", q(op)));
    }
    if let Some(d) = &w.difficulty {
        o.push_str(&format!("difficulty: {}\n", q(d)));
    }
    if w.inputs.is_empty() {
        o.push_str("inputs: []\n");
    } else {
        o.push_str("inputs:\n");
        for i in &w.inputs {
            o.push_str(&format!("  - {}\n", q(i)));
        }
    }
    o
}

/// `text` as one shell word: as it is when it holds only characters no
/// shell treats specially, else in single quotes.
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_alphanumeric() || "-_./,:=+@%".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derives_strings_from_patterns() {
        assert_eq!(
            derive_from_regex(r"\b[5-7],?[0-9]{3}\b").as_deref(),
            Some("5000")
        );
        assert_eq!(
            derive_from_regex(r"\b8,?[0-9]{3}\b").as_deref(),
            Some("8000")
        );
        assert_eq!(
            derive_from_regex(r"walk\s+away").as_deref(),
            Some("walk away")
        );
        assert_eq!(derive_from_regex(r"(deal|sign)").as_deref(), Some("deal"));
        assert_eq!(derive_from_regex(r"a.c").as_deref(), Some("a0c"));
        assert_eq!(derive_from_key("/nice(ly)?/").as_deref(), Some("nice"));
        assert_eq!(derive_from_key("hello").as_deref(), Some("hello"));
        assert_eq!(derive_from_regex("(").as_deref(), None);
    }
}

// ---------------------------------------------------------------------
// The exploration stage of `troupe test` (Format 20.5, 21.1 stage 6).

/// The manifest's `explore` settings (Format 20.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageSettings {
    /// `depth` (12).
    pub depth: u32,
    /// `states` (10000).
    pub states: u64,
    /// `seed` (0).
    pub seed: u64,
    /// `reachable` (`["outcomes"]`).
    pub reachable: Vec<String>,
    /// `unreachable`: items that must be reported unreachable.
    pub unreachable: Vec<String>,
}

impl StageSettings {
    /// From the manifest's `explore` settings (checked by its schema).
    pub fn from_explore(v: &crate::model::manifest::Explore<'_>) -> StageSettings {
        let list = |l: Option<&[Value]>| -> Option<Vec<String>> {
            l.map(|a| crate::model::strings(a).map(str::to_string).collect())
        };
        StageSettings {
            depth: v
                .depth
                .map_or(DEFAULT_DEPTH, |d| d.min(u64::from(MAX_DEPTH)) as u32),
            states: v.states.map_or(DEFAULT_STATES, |s| s.min(MAX_STATES)),
            seed: v.seed.unwrap_or(0),
            reachable: list(v.reachable).unwrap_or_else(|| vec!["outcomes".into()]),
            unreachable: list(v.unreachable).unwrap_or_default(),
        }
    }
}

/// Stage 6 of `troupe test` (Format 21.1): one test per entry scenario of
/// a pack whose manifest has `explore`; SKIP otherwise.
pub fn stage(pack: &crate::load::PackFiles, bundle: &Value) -> super::model::StageResult {
    use super::model::{Failure, StageName, StageResult, Status, TestResult};
    let manifest = crate::model::manifest::Manifest::of(pack.manifest.as_ref().map(|m| &m.value));
    let Some(cfg) = manifest.explore.as_ref().map(StageSettings::from_explore) else {
        return StageResult::whole(
            StageName::Explore,
            Status::Skip,
            "the manifest has no explore settings",
        );
    };
    let entries: Vec<(String, String)> = manifest
        .entries()
        .filter_map(|(_, p)| {
            let id = crate::model::manifest::scenario_id(&pack.files.get(p)?.1.value)?;
            Some((p.to_string(), id.to_string()))
        })
        .collect();
    let opened = Opened::from_checked(pack.root.display().to_string(), bundle.clone());
    let mut tests = Vec::new();
    for (file, id) in entries {
        let name = format!("explore {id}");
        let settings = Settings {
            scenario: Some(id.clone()),
            mode: Mode::Search { states: cfg.states },
            depth: cfg.depth,
            seed: cfg.seed,
            jobs: default_jobs(),
        };
        let e = match explore(&opened, None, &settings, &mut |_| {}) {
            Ok(e) => e,
            Err(err) => {
                tests.push(TestResult::new(name, Some(file), Status::Err).because(err.to_string()));
                continue;
            }
        };
        let bound = format!("depth {} and {} states", cfg.depth, cfg.states);
        let mut failures = Vec::new();
        for it in &e.items {
            let kind = match it.item.split(' ').next() {
                Some("event") => "events",
                Some("outcome") => "outcomes",
                Some("speaker") => "speakers",
                _ => "rules",
            };
            let listed = cfg.unreachable.contains(&it.item);
            if listed {
                if it.status != ItemStatus::Unreachable {
                    failures.push(Failure::new(match it.status {
                        ItemStatus::Reached => {
                            let n = it.witness.as_ref().map_or(0, |w| w.inputs.len());
                            format!(
                                "{} is listed as unreachable but is reached in {n} turn{}",
                                it.item,
                                if n == 1 { "" } else { "s" }
                            )
                        }
                        _ => format!(
                            "{} is listed as unreachable but the search did not exhaust the space within {bound}",
                            it.item
                        ),
                    }));
                }
                continue;
            }
            if cfg.reachable.iter().any(|k| k == kind) && it.status != ItemStatus::Reached {
                failures.push(Failure::new(match it.status {
                    ItemStatus::Unreachable => match &it.proof {
                        Some(why) => {
                            format!("{} is unreachable (proved by the check: {why})", it.item)
                        }
                        None => format!(
                            "{} is unreachable (the search exhausted the space)",
                            it.item
                        ),
                    },
                    _ => format!("{} is not reached within {bound}", it.item),
                }));
            }
        }
        for u in &cfg.unreachable {
            if !e.items.iter().any(|it| &it.item == u) {
                failures.push(Failure::new(format!(
                    "`{u}` in explore.unreachable names no event, outcome, rule or speaker of scenario {id}"
                )));
            }
        }
        let sr = e.search.as_ref();
        let reason = format!(
            "{} states, depth {}{}",
            sr.map_or(0, |s| s.states),
            sr.map_or(0, |s| s.depth),
            if sr.is_some_and(|s| s.exhausted) {
                ", exhausted"
            } else {
                ""
            }
        );
        let mut t = TestResult::from_failures(name, Some(file.clone()), failures);
        if t.status == Status::Pass {
            t = t.because(reason);
        }
        for f in &mut t.failures {
            f.file = Some("manifest.yaml".into());
            f.pointer = Some("/explore".into());
        }
        tests.push(t);
    }
    if tests.is_empty() {
        return StageResult::whole(
            StageName::Explore,
            Status::Skip,
            "the manifest names no entry scenario",
        );
    }
    StageResult::from_tests(StageName::Explore, tests)
}

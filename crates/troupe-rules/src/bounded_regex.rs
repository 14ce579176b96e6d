//! Regular-expression matching whose work is bounded whatever the pattern
//! and the text (Format 16.2, "a regular-expression search"). Every match
//! of a pattern against text (CEL `matches()`, a rule `pattern`, a safety
//! pattern) goes through [`Bounded::is_match`]; a `/pattern/` key
//! (`keys::KeySet`) asks it first whether a large search may run.
//!
//! A pattern is compiled once to a Thompson NFA of `states` states. A
//! search over `n` bytes is then:
//!
//! - **small** (`states × (n + 1) ≤` [`SMALL`]): exact, by the `regex`
//!   crate for a pattern compiled once and searched many times
//!   ([`Bounded::new_kept`]: its prefilters make an ordinary search
//!   cheaper), else by a lazily built DFA (its cache pooled and reused)
//!   or, should that give up, the PikeVM; any engine's work is at most
//!   about that product;
//! - **large**: a lazily built DFA with a fresh cache of [`CACHE`] bytes
//!   that gives up after [`CLEARS`] clears of it (so its work is linear in
//!   `n` plus a constant). When it gives up, or quits on a non-ASCII byte
//!   because the pattern has a Unicode word boundary, the PikeVM decides
//!   if `states × (n + 1) ≤` [`PIKE`]; otherwise the match is
//!   [`TooCostly`]. A fresh cache for each large search makes the outcome
//!   a function of the pattern and the text alone (deterministic).
//!
//! Without this, the `regex` crate falls back to the PikeVM for the whole
//! search when its lazy DFA gives up: 12.7 s for the 15-byte pattern
//! `a[a-z]{10000}b` against 100,000 `a`s (docs/performance.md, Run AX).

use regex_automata::hybrid::dfa::{Cache as DfaCache, DFA};
use regex_automata::nfa::thompson::pikevm::{Cache as PikeCache, PikeVM};
use regex_automata::nfa::thompson::{self, NFA};
use regex_automata::util::pool::Pool;
use regex_automata::util::syntax;
use regex_automata::{Input, MatchErrorKind};

/// The largest `states × (bytes + 1)` searched exactly whatever it costs
/// (at most about 3 ms of PikeVM on this machine).
pub const SMALL: u64 = 1 << 18;
/// The largest `states × (bytes + 1)` the PikeVM decides when the lazy DFA
/// of a large search cannot (at most about 50 ms).
pub const PIKE: u64 = 1 << 22;
/// The lazy DFA's cache, in bytes.
pub const CACHE: usize = 256 << 10;
/// Clears of the cache after which a large search gives up.
pub const CLEARS: usize = 3;

/// How a pattern is compiled: the regex crate's defaults, with these
/// flags and size bound.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// `i` (case-insensitive).
    pub case_insensitive: bool,
    /// `m` (multi-line).
    pub multi_line: bool,
    /// `s` (`.` matches a line feed).
    pub dot_matches_new_line: bool,
    /// The NFA's size bound in bytes.
    pub size_limit: usize,
    /// The nesting bound.
    pub nest_limit: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            case_insensitive: false,
            multi_line: false,
            dot_matches_new_line: false,
            size_limit: 1 << 20,
            nest_limit: 250,
        }
    }
}

/// A match whose work would exceed the bounds above: neither true nor
/// false.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooCostly;

type DfaPool = Pool<
    DfaCache,
    Box<dyn Fn() -> DfaCache + Send + Sync + std::panic::RefUnwindSafe + std::panic::UnwindSafe>,
>;
type PikePool = Pool<
    PikeCache,
    Box<dyn Fn() -> PikeCache + Send + Sync + std::panic::RefUnwindSafe + std::panic::UnwindSafe>,
>;

/// A compiled pattern (see the module's text).
pub struct Bounded {
    source: Box<str>,
    /// The `regex` crate's compilation of the same pattern, for small
    /// searches (its prefilters make an ordinary search cheaper), when the
    /// pattern is compiled once and searched many times.
    fast: Option<regex::Regex>,
    states: u64,
    dfa: DFA,
    pike: PikeVM,
    dfa_caches: DfaPool,
    pike_caches: PikePool,
}

impl std::fmt::Debug for Bounded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bounded")
            .field("states", &self.states)
            .finish()
    }
}

impl Bounded {
    /// Compiles `pattern` (RE2 syntax, Format 11.1). `Err`: its syntax, or
    /// an NFA over the size bound, as the regex crate says it.
    pub fn new(pattern: &str, o: Options) -> Result<Bounded, String> {
        let syntax = syntax::Config::new()
            .case_insensitive(o.case_insensitive)
            .multi_line(o.multi_line)
            .dot_matches_new_line(o.dot_matches_new_line)
            .nest_limit(o.nest_limit)
            .utf8(true)
            .unicode(true);
        let nfa = NFA::compiler()
            .syntax(syntax)
            .configure(
                thompson::Config::new()
                    .nfa_size_limit(Some(o.size_limit))
                    .utf8(true),
            )
            .build(pattern)
            .map_err(|e| e.to_string())?;
        let dfa = DFA::builder()
            .configure(
                DFA::config()
                    .cache_capacity(CACHE)
                    .skip_cache_capacity_check(true)
                    .minimum_cache_clear_count(Some(CLEARS))
                    .minimum_bytes_per_state(Some(10))
                    .unicode_word_boundary(true),
            )
            .build_from_nfa(nfa.clone())
            .map_err(|e| e.to_string())?;
        let pike = PikeVM::new_from_nfa(nfa.clone()).map_err(|e| e.to_string())?;
        let states = nfa.states().len() as u64;
        let (d, p) = (dfa.clone(), pike.clone());
        Ok(Bounded {
            source: pattern.into(),
            fast: None,
            states,
            dfa,
            pike,
            dfa_caches: Pool::new(Box::new(move || d.create_cache())),
            pike_caches: Pool::new(Box::new(move || p.create_cache())),
        })
    }

    /// [`Bounded::new`], also compiled by the `regex` crate for small
    /// searches (for a pattern searched many times: a pack's).
    pub fn new_kept(pattern: &str, o: Options) -> Result<Bounded, String> {
        let mut b = Bounded::new(pattern, o)?;
        b.fast = regex::RegexBuilder::new(pattern)
            .case_insensitive(o.case_insensitive)
            .multi_line(o.multi_line)
            .dot_matches_new_line(o.dot_matches_new_line)
            .size_limit(o.size_limit)
            .nest_limit(o.nest_limit)
            .build()
            .ok();
        Ok(b)
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The NFA's states (what a search costs per byte at worst).
    pub fn states(&self) -> u64 {
        self.states
    }

    /// `states × (bytes + 1)` for a text of `len` bytes.
    pub fn product(&self, len: usize) -> u64 {
        self.states.saturating_mul(len as u64 + 1)
    }

    /// Whether the pattern matches somewhere in `text` (an unanchored
    /// search), or [`TooCostly`].
    pub fn is_match(&self, text: &str) -> Result<bool, TooCostly> {
        let product = self.product(text.len());
        let input = Input::new(text).earliest(true);
        if product <= SMALL {
            if let Some(fast) = &self.fast {
                return Ok(fast.is_match(text));
            }
            let mut cache = self.dfa_caches.get();
            if let Ok(m) = self.dfa.try_search_fwd(&mut cache, &input) {
                return Ok(m.is_some());
            }
            return Ok(self.pike_match(&input));
        }
        let mut cache = self.dfa.create_cache();
        match self.dfa.try_search_fwd(&mut cache, &input) {
            Ok(m) => Ok(m.is_some()),
            Err(e) => match e.kind() {
                MatchErrorKind::GaveUp { .. } | MatchErrorKind::Quit { .. } if product <= PIKE => {
                    Ok(self.pike_match(&input))
                }
                _ => Err(TooCostly),
            },
        }
    }

    fn pike_match(&self, input: &Input<'_>) -> bool {
        let mut cache = self.pike_caches.get();
        self.pike.is_match(&mut cache, input.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn re(p: &str) -> Bounded {
        Bounded::new(p, Options::default()).unwrap()
    }

    #[test]
    fn ordinary_patterns_match_as_the_regex_crate_does() {
        for (p, t) in [
            (r"\b8,?[0-9]{3}\b", "I'll pay 8,500 for it"),
            (r"\b8,?[0-9]{3}\b", "I'll pay 18,500 for it"),
            (r"(?i)\bdeal\b", "ça fait un DEAL, d'accord"),
            (r"^\d$", "٣"),
            (r"\w+\s+\w+", "héllo wörld"),
            ("", ""),
            ("a^", "a"),
        ] {
            let want = regex::Regex::new(p).unwrap().is_match(t);
            assert_eq!(re(p).is_match(t), Ok(want), "{p} on {t}");
            let kept = Bounded::new_kept(p, Options::default()).unwrap();
            assert_eq!(kept.is_match(t), Ok(want), "{p} on {t}, kept");
            // The same text made large (40 KB) takes the large path.
            let big = format!("{}{t}", "x ".repeat(20_000));
            assert!(re(p).product(big.len()) > SMALL || re(p).states() < 8);
            let want = regex::Regex::new(p).unwrap().is_match(&big);
            assert_eq!(re(p).is_match(&big), Ok(want), "{p} on a large text");
        }
    }

    #[test]
    fn a_match_that_would_take_seconds_is_too_costly() {
        let p = re("a[a-z]{10000}b");
        assert_eq!(p.is_match(&"a".repeat(100_000)), Err(TooCostly));
        let kept = Bounded::new_kept("a[a-z]{10000}b", Options::default()).unwrap();
        assert_eq!(kept.is_match(&"a".repeat(100_000)), Err(TooCostly));
        // Small enough to decide: exact.
        assert_eq!(p.is_match(&"a".repeat(20)), Ok(false));
    }

    /// Format 16.2: an ordinary pattern over a 1 MiB ASCII text is searched
    /// by the lazy DFA (large path) without giving up.
    #[test]
    fn an_ordinary_pattern_over_a_mebibyte_is_decided() {
        let p = re(r"\b8,?[0-9]{3}\b");
        assert_eq!(p.states(), 13);
        let text = "I'll pay 7,999 now. ".repeat(52_429);
        assert!(text.len() >= 1 << 20 && p.product(text.len()) > PIKE);
        assert_eq!(p.is_match(&text), Ok(false));
        assert_eq!(p.is_match(&format!("{text} or 8,250")), Ok(true));
        assert_eq!(re("a[a-z]{10000}b").states(), 10_007);
    }

    #[test]
    fn a_unicode_word_boundary_on_non_ascii_text_is_decided_within_the_bound() {
        let p = re(r"\bkill\b");
        let text = format!("{} kill", "é".repeat(10_000));
        assert_eq!(p.is_match(&text), Ok(true));
    }
}

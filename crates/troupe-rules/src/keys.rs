//! Key matching (Format 5.4): the one matcher for lore keys (5.4), rule
//! keywords (18.2), `hit()` keys (11.4) and safety terms (19.2).
//!
//! A key is plain text, or `/pattern/flags` (an RE2 regular expression).
//! [`KeySet`] holds the keys of one list with the settings they are matched
//! with, and finds them in a text in one linear pass per kind of key: every
//! plain key at once with an Aho–Corasick automaton (overlapping
//! occurrences included), each regular expression with `find_iter`
//! (successive leftmost-first matches); the whole-word rule
//! ([`bounded`]) is checked around each occurrence, never by searching again
//! from every position. The checks compile keys with [`check_key`], the
//! same function the matcher builds them with, so a key that passes the
//! checks always compiles.
//!
//! ```
//! use troupe::internals::keys::{KeyOptions, KeySet};
//! let set = KeySet::new(["dragon", "/gold(en)?/"], KeyOptions::RUNTIME);
//! let text = set.prepare("Dragons? No, a DRAGON.");
//! assert!(set.hits(&text));
//! assert_eq!(set.first_hits(&text), vec![Some((15, 21)), None]);
//! ```

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use regex::{Regex, RegexBuilder};

use crate::bounded_regex::Bounded;
use serde::{Deserialize, Serialize};

/// How a list of keys is matched (Format 5.2, 5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeyOptions {
    /// Compare as written (`true`) or after lower-casing both sides.
    pub case_sensitive: bool,
    /// An occurrence counts only between non-word characters (`bounded`).
    pub whole_words: bool,
}

impl KeyOptions {
    /// `text` as keys matched with these options compare it: lower-cased
    /// (`lower`) unless case-sensitive.
    pub fn prepare<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if self.case_sensitive {
            Cow::Borrowed(text)
        } else {
            Cow::Owned(lower(text))
        }
    }

    /// Rule keywords, rule `hit()` and safety terms (Format 18.1, 18.2,
    /// 19.2): `case_sensitive` false, `whole_words` true.
    pub const RUNTIME: KeyOptions = KeyOptions {
        case_sensitive: false,
        whole_words: true,
    };
}

/// The two forms of a key (Format 5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyForm<'a> {
    /// Plain text, matched literally.
    Plain(&'a str),
    /// `/pattern/flags`: an RE2 regular expression with flags `i`, `m`, `s`.
    Regex {
        /// The pattern between the slashes.
        pattern: &'a str,
        /// The letters after the last `/`.
        flags: &'a str,
    },
}

/// Reads a key's form: `/pattern/flags` when the key starts with `/`, has
/// another `/` after at least one character, and only ASCII letters follow
/// the last `/` (a letter other than `i`, `m`, `s` is then an error of
/// [`check_key`]); plain text otherwise.
pub fn key_form(key: &str) -> KeyForm<'_> {
    let Some(rest) = key.strip_prefix('/') else {
        return KeyForm::Plain(key);
    };
    match rest.rfind('/') {
        Some(end) if end > 0 && rest[end + 1..].chars().all(|c| c.is_ascii_alphabetic()) => {
            KeyForm::Regex {
                pattern: &rest[..end],
                flags: &rest[end + 1..],
            }
        }
        _ => KeyForm::Plain(key),
    }
}

/// Lower-cases `text` character by character (Unicode `to_lowercase`), as
/// Format 5.4 compares keys and texts that are not case-sensitive.
pub fn lower(text: &str) -> String {
    // ASCII lower-cases to ASCII, byte for byte: the common case needs no
    // character decoding.
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// A word character of the whole-word rule (Format 5.4): Unicode
/// alphanumeric, or `_`.
pub fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A character of a script written without spaces between words (Format
/// 5.4): Han (CJK ideographs, including the iteration marks 々 〆 〇),
/// Hiragana or Katakana (including the prolonged sound mark ー and the
/// half-width forms). The whole-word rule always finds a word edge next to
/// one.
pub fn is_unspaced_char(c: char) -> bool {
    matches!(c,
        // Han: CJK radicals, iteration and number marks, ideographs (the
        // unified blocks, extensions A to H, compatibility ideographs).
        '\u{2E80}'..='\u{2FDF}'
        | '\u{3005}'..='\u{3007}'
        | '\u{3021}'..='\u{3029}'
        | '\u{3038}'..='\u{303B}'
        | '\u{3400}'..='\u{4DBF}'
        | '\u{4E00}'..='\u{9FFF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{20000}'..='\u{323AF}'
        // Hiragana, Katakana (with its phonetic extensions and the
        // half-width forms), kana supplements.
        | '\u{3041}'..='\u{309F}'
        | '\u{30A0}'..='\u{30FF}'
        | '\u{31F0}'..='\u{31FF}'
        | '\u{FF66}'..='\u{FF9F}'
        | '\u{1AFF0}'..='\u{1B16F}')
}

/// A Hangul character (Format 5.4): syllables, jamo (with their
/// extensions), compatibility and half-width jamo.
pub fn is_hangul_char(c: char) -> bool {
    matches!(c,
        '\u{1100}'..='\u{11FF}'
        | '\u{3131}'..='\u{318E}'
        | '\u{A960}'..='\u{A97F}'
        | '\u{AC00}'..='\u{D7A3}'
        | '\u{D7B0}'..='\u{D7FF}'
        | '\u{FFA0}'..='\u{FFDC}')
}

/// One edge of an occurrence under the whole-word rule (Format 5.4):
/// `outside` is the text's character next to the occurrence (`None` at the
/// start or end of the text), `inside` the occurrence's own character at
/// that edge (`None` for an empty occurrence). The edge is a word edge when
/// `outside` is absent or not a word character ([`is_word_char`]), when
/// either character is of a script written without spaces
/// ([`is_unspaced_char`]), or when both are Hangul ([`is_hangul_char`]:
/// Korean particles attach to the noun they follow). This function holds
/// the rule.
pub fn word_edge(outside: Option<char>, inside: Option<char>) -> bool {
    let Some(o) = outside else {
        return true;
    };
    !is_word_char(o)
        || is_unspaced_char(o)
        || inside.is_some_and(|i| is_unspaced_char(i) || (is_hangul_char(i) && is_hangul_char(o)))
}

/// The whole-word rule (Format 5.4): the occurrence at bytes
/// `start..end` of `text` counts when both its edges are word edges
/// ([`word_edge`]). It looks at four characters at most, so checking every
/// occurrence keeps matching linear in the text.
pub fn bounded(text: &str, start: usize, end: usize) -> bool {
    let before = text.get(..start).and_then(|s| s.chars().next_back());
    let after = text.get(end..).and_then(|s| s.chars().next());
    let inner = text.get(start..end).unwrap_or("");
    let first = inner.chars().next();
    let last = inner.chars().next_back();
    word_edge(before, first) && word_edge(after, last)
}

/// The regex builder of a `/pattern/flags` key with `options`: the flags,
/// and `i` unless the key is case-sensitive. Errors: an unknown flag.
fn regex_builder(
    key: &str,
    pattern: &str,
    flags: &str,
    options: KeyOptions,
) -> Result<RegexBuilder, String> {
    let mut b = RegexBuilder::new(pattern);
    b.size_limit(1 << 20)
        .case_insensitive(!options.case_sensitive);
    for f in flags.chars() {
        match f {
            'i' => b.case_insensitive(true),
            'm' => b.multi_line(true),
            's' => b.dot_matches_new_line(true),
            other => return Err(format!("key `{key}`: unknown regex flag `{other}`")),
        };
    }
    Ok(b)
}

/// The bounded matcher of a `/pattern/flags` key (see [`KeyRegex`]),
/// compiled with the same flags; `None` if it does not compile.
fn key_guard(pattern: &str, flags: &str, options: KeyOptions) -> Option<Bounded> {
    let o = crate::bounded_regex::Options {
        case_insensitive: !options.case_sensitive || flags.contains('i'),
        multi_line: flags.contains('m'),
        dot_matches_new_line: flags.contains('s'),
        ..Default::default()
    };
    Bounded::new(pattern, o).ok()
}

/// Compiles one `/pattern/flags` key as [`KeySet`] does.
fn compile_regex_key(
    key: &str,
    pattern: &str,
    flags: &str,
    options: KeyOptions,
) -> Result<Regex, String> {
    regex_builder(key, pattern, flags, options)?
        .build()
        .map_err(|e| format!("key `{key}` is not a valid regular expression: {e}"))
}

/// Checks that `key` compiles with `options` (Format 5.4): a plain key
/// always does; a `/pattern/flags` key must be a valid RE2 pattern with
/// known flags within the size bound. The error is a plain message (the
/// checks report it as SCHEMA at the key). This is the compilation the
/// matcher uses, so every key that passes it matches at run time.
pub fn check_key(key: &str, options: KeyOptions) -> Result<(), String> {
    match key_form(key) {
        KeyForm::Plain(_) => Ok(()),
        KeyForm::Regex { pattern, flags } => {
            compile_regex_key(key, pattern, flags, options).map(|_| ())
        }
    }
}

/// Compiles an RE2 pattern (a rule `pattern`, a safety category pattern:
/// Format 18.1, 19.2) for an unanchored, case-sensitive search (unless it
/// says `(?i)`). The checks and the runtime both compile with it.
pub fn compile_pattern(p: &str) -> Result<Regex, String> {
    RegexBuilder::new(p)
        .size_limit(PATTERN_SIZE_LIMIT)
        .build()
        .map_err(|e| format!("`{p}` is not a valid regular expression: {e}"))
}

/// Whether [`compile_pattern`] compiles `p`, and its message when it does
/// not (Format 18.1, 19.2: what the checks report), without building the
/// whole regular expression. [`compile_pattern`]'s fatal failures are a
/// syntax error and an NFA (forward, or reverse for the lazy DFA) over the
/// size limit; its prefilter, one-pass and full DFAs are optional and never
/// fail a build. So a build of the two NFAs under the same limit and
/// syntax that succeeds means [`compile_pattern`] succeeds; on any failure
/// the verdict and its message are [`compile_pattern`]'s own. The literal
/// extraction this skips was about two thirds of the check's cost of a
/// pattern like `\b8,?[0-9]{3}\b` (docs/performance.md, Run N).
pub fn check_pattern(p: &str) -> Result<(), String> {
    use regex_automata::meta;
    let config = meta::Config::new()
        .match_kind(regex_automata::MatchKind::LeftmostFirst)
        .utf8_empty(true)
        .nfa_size_limit(Some(PATTERN_SIZE_LIMIT))
        .auto_prefilter(false)
        .onepass(false)
        .dfa(false)
        .hybrid(true);
    let syntax = regex_automata::util::syntax::Config::new().utf8(true);
    match meta::Builder::new()
        .configure(config)
        .syntax(syntax)
        .build(p)
    {
        Ok(_) => Ok(()),
        Err(_) => compile_pattern(p).map(|_| ()),
    }
}

/// [`compile_pattern`]'s size limit (`RegexBuilder::size_limit`).
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// A pattern (a rule `pattern`, a safety category pattern: Format 18.1,
/// 19.2) held as its source and compiled the first time it is matched, so
/// reading a package's IR compiles no regular expression (Format 14.4).
/// It is compiled with [`compile_pattern`]'s syntax and size bound into
/// the bounded matcher of Format 16.2 ([`Bounded`]), once per
/// `LazyPattern`: every session of an opened pack shares its runtime part
/// (`Arc<RuntimeIr>`, `Arc<Safety>`), so the pattern is compiled once per
/// opened pack. Serialized as its source; read back (from an IR whose
/// hashes match: the compile that wrote it checked it), it is taken as it
/// is and compiled on first use, where one that does not compile matches
/// nothing.
pub struct LazyPattern {
    source: Arc<str>,
    built: OnceLock<Result<Bounded, String>>,
}

impl LazyPattern {
    /// A pattern compiled on first use.
    pub fn new(source: impl Into<Arc<str>>) -> LazyPattern {
        LazyPattern {
            source: source.into(),
            built: OnceLock::new(),
        }
    }

    /// A pattern compiled now; `Err` when [`compile_pattern`] refuses it.
    pub fn compiled(source: &str) -> Result<LazyPattern, String> {
        compile_pattern(source)?;
        let p = LazyPattern::new(source);
        p.regex()?;
        Ok(p)
    }

    /// The pattern as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The compiled expression (compiling it now if not yet).
    pub fn regex(&self) -> Result<&Bounded, String> {
        self.built
            .get_or_init(|| {
                let options = crate::bounded_regex::Options {
                    size_limit: PATTERN_SIZE_LIMIT,
                    ..Default::default()
                };
                Bounded::new_kept(&self.source, options).map_err(|e| {
                    compile_pattern(&self.source).err().unwrap_or_else(|| {
                        format!("`{}` is not a valid regular expression: {e}", self.source)
                    })
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Whether the pattern matches somewhere in `text`; a pattern that
    /// does not compile matches nothing (the checks refuse it first). A
    /// search over the bounds of Format 16.2 counts as `costly` says.
    pub fn is_match_or(&self, text: &str, costly: bool) -> bool {
        self.regex()
            .is_ok_and(|r| r.is_match(text).unwrap_or(costly))
    }

    /// [`LazyPattern::is_match_or`] with a search over the bounds as no
    /// match (a rule's pattern, Format 18.1).
    pub fn is_match(&self, text: &str) -> bool {
        self.is_match_or(text, false)
    }

    /// Checks without compiling that the pattern parses.
    pub fn validate_syntax(&self) -> Result<(), String> {
        regex_syntax::Parser::new()
            .parse(&self.source)
            .map(|_| ())
            .map_err(|e| format!("`{}` is not a valid regular expression: {e}", self.source))
    }
}

impl Clone for LazyPattern {
    fn clone(&self) -> Self {
        LazyPattern::new(self.source.clone())
    }
}

impl std::fmt::Debug for LazyPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LazyPattern").field(&self.source).finish()
    }
}

impl Serialize for LazyPattern {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.source)
    }
}

impl<'de> Deserialize<'de> for LazyPattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<LazyPattern, D::Error> {
        Ok(LazyPattern::new(String::deserialize(d)?))
    }
}

fn runtime_options() -> KeyOptions {
    KeyOptions::RUNTIME
}

/// Left out of `ir.json` (not of the binary form, which writes every field).
fn is_runtime(o: &KeyOptions) -> bool {
    *o == KeyOptions::RUNTIME && !crate::wire::writes_every_field()
}

/// The plain keys of a [`KeySet`] in one automaton, with the key index of
/// each automaton pattern; `None` without a non-empty plain key.
type Plain = Option<(AhoCorasick, Vec<usize>)>;

/// The regular-expression keys of a [`KeySet`], compiled, with their key
/// indices.
type Regexes = [(usize, KeyRegex)];

/// A regular-expression key compiled twice: by the regex crate, which
/// finds its occurrences, and by the bounded matcher (Format 16.2), which
/// first decides whether a large search may run at all.
struct KeyRegex {
    re: Regex,
    guard: Option<Bounded>,
}

impl KeyRegex {
    /// Whether the regex crate may search `text`: a small search always
    /// (it is bounded by states × bytes); a large one only when the
    /// bounded matcher finds a match (no match: no occurrence to find; too
    /// costly: no hit, Format 16.2).
    fn admits(&self, text: &str) -> bool {
        match &self.guard {
            Some(g) if g.product(text.len()) > crate::bounded_regex::SMALL => {
                g.is_match(text) == Ok(true)
            }
            _ => true,
        }
    }
}

/// The keys of one list (lore `keys` or `secondary_keys`, a rule's
/// `keywords`, a safety category's `terms`, a `hit()` call's arguments)
/// with the settings they are matched with (Format 5.4).
///
/// A set is compiled the first time it is used (or with
/// [`KeySet::build`]); it is serialized as its keys and settings.
#[derive(Serialize, Deserialize)]
pub struct KeySet {
    /// Read from `ir.compact`, ranges of its string table (no allocation
    /// per key).
    keys: Vec<crate::wire::TableStr>,
    /// Written only when not [`KeyOptions::RUNTIME`].
    #[serde(default = "runtime_options", skip_serializing_if = "is_runtime")]
    options: KeyOptions,
    /// Every regular-expression key, compiled, with its key index; an
    /// error names the first key that does not compile.
    #[serde(skip)]
    regexes: OnceLock<Result<Vec<(usize, KeyRegex)>, String>>,
    /// The plain keys (built apart from the regexes: a set matched through
    /// a [`KeyIndex`] never builds its own automaton).
    #[serde(skip)]
    plain: OnceLock<Result<Plain, String>>,
}

impl Clone for KeySet {
    fn clone(&self) -> Self {
        KeySet::new(self.keys.iter().cloned(), self.options)
    }
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeySet")
            .field("keys", &self.keys)
            .field("options", &self.options)
            .finish()
    }
}

impl PartialEq for KeySet {
    fn eq(&self, other: &Self) -> bool {
        self.keys == other.keys && self.options == other.options
    }
}

impl KeySet {
    /// A set of `keys` matched with `options`, compiled on first use.
    pub fn new<K: Into<crate::wire::TableStr>>(
        keys: impl IntoIterator<Item = K>,
        options: KeyOptions,
    ) -> Self {
        KeySet {
            keys: keys.into_iter().map(Into::into).collect(),
            options,
            regexes: OnceLock::new(),
            plain: OnceLock::new(),
        }
    }

    /// The keys as written, in list order.
    pub fn keys(&self) -> &[crate::wire::TableStr] {
        &self.keys
    }

    /// The settings.
    pub fn options(&self) -> KeyOptions {
        self.options
    }

    /// True when the set has no key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Compiles the set now (it is otherwise compiled on first use).
    /// Errors: the first key that does not compile (`check_key`).
    pub fn build(&self) -> Result<(), String> {
        self.built().map(|_| ())
    }

    /// Checks without compiling that every regular-expression key parses
    /// with known flags (what a loader of untrusted compiled data checks of
    /// a set it compiles lazily).
    pub fn validate_syntax(&self) -> Result<(), String> {
        for k in &self.keys {
            if let KeyForm::Regex { pattern, flags } = key_form(k) {
                let mut p = regex_syntax::ParserBuilder::new();
                p.case_insensitive(!self.options.case_sensitive);
                for f in flags.chars() {
                    match f {
                        'i' => p.case_insensitive(true),
                        'm' => p.multi_line(true),
                        's' => p.dot_matches_new_line(true),
                        other => return Err(format!("key `{k}`: unknown regex flag `{other}`")),
                    };
                }
                p.build()
                    .parse(pattern)
                    .map_err(|e| format!("key `{k}` is not a valid regular expression: {e}"))?;
            }
        }
        Ok(())
    }

    /// The compiled set: its plain keys and its regular expressions.
    fn built(&self) -> Result<(&Plain, &Regexes), String> {
        let regexes = self.regexes()?;
        let plain = self
            .plain
            .get_or_init(|| self.compile_plain())
            .as_ref()
            .map_err(Clone::clone)?;
        Ok((plain, regexes))
    }

    fn regexes(&self) -> Result<&Regexes, String> {
        self.regexes
            .get_or_init(|| {
                let mut out = Vec::new();
                for (i, k) in self.keys.iter().enumerate() {
                    if let KeyForm::Regex { pattern, flags } = key_form(k) {
                        let re = compile_regex_key(k, pattern, flags, self.options)?;
                        let guard = key_guard(pattern, flags, self.options);
                        out.push((i, KeyRegex { re, guard }));
                    }
                }
                Ok(out)
            })
            .as_ref()
            .map(Vec::as_slice)
            .map_err(Clone::clone)
    }

    /// The plain keys as compared (lower-cased unless case-sensitive), with
    /// their key indices; an empty key has no occurrence and is left out.
    fn plain_keys(&self) -> impl Iterator<Item = (usize, Cow<'_, str>)> {
        self.keys
            .iter()
            .enumerate()
            .filter_map(move |(i, k)| match key_form(k) {
                KeyForm::Plain("") | KeyForm::Regex { .. } => None,
                KeyForm::Plain(p) => Some((i, self.options.prepare(p))),
            })
    }

    fn compile_plain(&self) -> Result<Plain, String> {
        let (plain_ix, plain_keys): (Vec<usize>, Vec<Cow<'_, str>>) = self.plain_keys().unzip();
        if plain_keys.is_empty() {
            return Ok(None);
        }
        // A noncontiguous NFA, never the DFA the builder would pick for a
        // few keys: the DFA's build follows failure links for every state
        // and byte class, quadratic in one long key (a 10,000-character
        // safety term took seconds to compile, issue 43), while the NFA's
        // build is linear in the keys' bytes and its search linear in the
        // text (Format 16.2).
        let ac = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::NoncontiguousNFA))
            .build(plain_keys.iter().map(|k| k.as_bytes()))
            .map_err(|e| format!("the keys cannot be compiled: {e}"))?;
        Ok(Some((ac, plain_ix)))
    }

    /// Whether a regular-expression key hits `text` (prepared), given
    /// whether a plain key does (`plain`, found by a [`KeyIndex`]); false
    /// when a key does not compile, as [`KeySet::hits`].
    fn hits_beside_plain(&self, plain: bool, text: &str) -> bool {
        let Ok(regexes) = self.regexes() else {
            return false;
        };
        plain || regex_hits(regexes, self.options.whole_words, text)
    }

    /// The text as the set compares it: lower-cased (`lower`) unless the
    /// set is case-sensitive.
    pub fn prepare<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.options.prepare(text)
    }

    /// True when every key is plain text without a line feed: its
    /// occurrences in texts joined with `"\n"` are exactly its occurrences
    /// in each text (the line feed is not a word character, 5.4), so such a
    /// set can be matched one piece at a time (Format 5.7's recursion
    /// buffer).
    pub fn is_piecewise(&self) -> bool {
        self.keys
            .iter()
            .all(|k| matches!(key_form(k), KeyForm::Plain(p) if !p.contains('\n')))
    }

    /// Whether some key hits `text` (Format 5.4: it has a counted
    /// occurrence). `text` is already prepared ([`KeySet::prepare`]). A set
    /// that does not compile hits nothing (the checks refuse such keys).
    pub fn hits(&self, text: &str) -> bool {
        let Ok((plain, regexes)) = self.built() else {
            return false;
        };
        let ww = self.options.whole_words;
        if let Some((ac, _)) = plain {
            let found = ac
                .find_overlapping_iter(text)
                .any(|m| !ww || bounded(text, m.start(), m.end()));
            if found {
                return true;
            }
        }
        regex_hits(regexes, ww, text)
    }

    /// For each key, in list order, the byte range in `text` (already
    /// prepared) of its first counted occurrence (Format 5.4), if any.
    pub fn first_hits(&self, text: &str) -> Vec<Option<(usize, usize)>> {
        let mut out = vec![None; self.keys.len()];
        let Ok((plain, regexes)) = self.built() else {
            return out;
        };
        let ww = self.options.whole_words;
        if let Some((ac, ix)) = plain {
            let mut left = ix.len();
            // Occurrences of one key come in order of their starts.
            for m in ac.find_overlapping_iter(text) {
                let k = ix[m.pattern().as_usize()];
                if out[k].is_none() && (!ww || bounded(text, m.start(), m.end())) {
                    out[k] = Some((m.start(), m.end()));
                    left -= 1;
                    if left == 0 {
                        break;
                    }
                }
            }
        }
        for (k, kr) in regexes {
            if !kr.admits(text) {
                continue;
            }
            out[*k] = kr
                .re
                .find_iter(text)
                .find(|m| !ww || bounded(text, m.start(), m.end()))
                .map(|m| (m.start(), m.end()));
        }
        out
    }
}

/// Whether one of `regexes` has a counted occurrence in `text`: with
/// `whole_words`, a match is kept when [`bounded`] (successive
/// leftmost-first matches, one pass per expression).
fn regex_hits(regexes: &Regexes, whole_words: bool, text: &str) -> bool {
    regexes.iter().any(|(_, kr)| {
        kr.admits(text)
            && kr
                .re
                .find_iter(text)
                .any(|m| !whole_words || bounded(text, m.start(), m.end()))
    })
}

/// The plain keys of many [`KeySet`]s in shared Aho–Corasick automata (a
/// scenario's rule keywords, Format 18.2; one automaton per
/// [`KeyIndex::CHUNK`] distinct keys): one pass over a text per automaton
/// finds every set with a plain key hit, instead of one pass (and one
/// automaton) per set. Sets matched with other options than the index's are left out and
/// match on their own; a set's regular-expression keys are matched on their
/// own, only when `KeyScan::hits` asks about it.
///
/// ```
/// use troupe::internals::keys::{KeyIndex, KeyOptions, KeySet};
/// let sets = [
///     KeySet::new(["price", "cost"], KeyOptions::RUNTIME),
///     KeySet::new(["/\\d+ dollars/"], KeyOptions::RUNTIME),
///     KeySet::new(["cost"], KeyOptions::RUNTIME),
/// ];
/// let index = KeyIndex::new(sets.iter().map(Some), KeyOptions::RUNTIME);
/// let scan = index.scan("What does it COST? 300 dollars?");
/// assert!(scan.hits(0, &sets[0]));
/// assert!(scan.hits(1, &sets[1]));
/// assert!(scan.hits(2, &sets[2]));
/// ```
#[derive(Debug)]
pub struct KeyIndex {
    options: KeyOptions,
    /// Every distinct plain key (as compared) of the indexed sets, in
    /// automata of at most [`KeyIndex::CHUNK`] patterns each, with the
    /// number of the first pattern of each.
    automata: Vec<(usize, AhoCorasick)>,
    /// The sets holding automaton pattern `p` are
    /// `members[starts[p]..starts[p + 1]]`.
    starts: Vec<u32>,
    members: Vec<u32>,
    /// Per set: whether its plain keys are in the automaton.
    indexed: Vec<bool>,
}

impl KeyIndex {
    /// The most patterns one automaton holds. `aho-corasick` (1.1) moves
    /// match states to the front of its automaton with pairwise swaps whose
    /// bookkeeping is quadratic in the states when nearly every state
    /// matches (prefix-closed keys such as `word1`, `word14`, `word149`);
    /// automata of bounded size keep the build linear in the keys, at one
    /// pass over the input per automaton.
    pub const CHUNK: usize = 256;

    /// The index of `sets` (`None`: a place with no set, which never hits)
    /// matched with `options`. A set with other options, or when the
    /// combined automaton cannot be built, matches on its own.
    pub fn new<'a>(
        sets: impl IntoIterator<Item = Option<&'a KeySet>>,
        options: KeyOptions,
    ) -> Self {
        let mut patterns: std::collections::HashMap<Cow<'a, str>, usize> = Default::default();
        let mut holders: Vec<Vec<u32>> = Vec::new();
        let mut indexed = Vec::new();
        for (i, set) in sets.into_iter().enumerate() {
            let fits = set.is_some_and(|s| s.options == options);
            indexed.push(fits);
            let Some(set) = set.filter(|_| fits) else {
                continue;
            };
            for (_, key) in set.plain_keys() {
                let next = holders.len();
                let p = *patterns.entry(key).or_insert(next);
                if p == next {
                    holders.push(Vec::new());
                }
                if holders[p].last() != Some(&(i as u32)) {
                    holders[p].push(i as u32);
                }
            }
        }
        let mut keys: Vec<(Cow<'a, str>, usize)> = patterns.into_iter().collect();
        keys.sort_unstable_by_key(|(_, p)| *p);
        // A noncontiguous NFA builds several times faster than the DFA or
        // contiguous NFA the builder would pick, and a turn's input is
        // short: the index is built per opened story. For the same reason
        // no prefilter (about a sixth of the build) is built: it pays off
        // on long texts where keys are rare, and a turn scans one message.
        let mut automata = Vec::new();
        for (n, chunk) in keys.chunks(Self::CHUNK).enumerate() {
            match AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .kind(Some(AhoCorasickKind::NoncontiguousNFA))
                .prefilter(false)
                .build(chunk.iter().map(|(k, _)| k.as_bytes()))
            {
                Ok(ac) => automata.push((n * Self::CHUNK, ac)),
                Err(_) => {
                    indexed.iter_mut().for_each(|x| *x = false);
                    automata.clear();
                    break;
                }
            }
        }
        let mut starts = Vec::with_capacity(holders.len() + 1);
        let mut members = Vec::new();
        starts.push(0);
        for h in &holders {
            members.extend_from_slice(h);
            starts.push(members.len() as u32);
        }
        KeyIndex {
            options,
            automata,
            starts,
            members,
            indexed,
        }
    }

    /// The sets with a plain key hit in `input`, found in one pass over it
    /// (prepared as a set of the index's options prepares it,
    /// [`KeySet::prepare`]).
    pub fn scan<'t>(&self, input: &'t str) -> KeyScan<'_, 't> {
        let text = self.options.prepare(input);
        let mut hit = vec![0u64; self.indexed.len().div_ceil(64)];
        for (first, ac) in &self.automata {
            for m in ac.find_overlapping_iter(text.as_ref()) {
                let p = first + m.pattern().as_usize();
                let holders = &self.members[self.starts[p] as usize..self.starts[p + 1] as usize];
                if holders.iter().all(|&s| bit(&hit, s as usize)) {
                    continue;
                }
                if !self.options.whole_words || bounded(&text, m.start(), m.end()) {
                    for &s in holders {
                        hit[s as usize / 64] |= 1 << (s % 64);
                    }
                }
            }
        }
        KeyScan {
            index: self,
            input,
            text,
            hit,
        }
    }
}

/// Bit `i` of a set of bits held in words.
fn bit(words: &[u64], i: usize) -> bool {
    words[i / 64] >> (i % 64) & 1 == 1
}

/// What [`KeyIndex::scan`] found in one input.
#[derive(Debug)]
pub struct KeyScan<'i, 't> {
    index: &'i KeyIndex,
    input: &'t str,
    text: Cow<'t, str>,
    hit: Vec<u64>,
}

impl KeyScan<'_, '_> {
    /// The input as the index compared it ([`KeySet::prepare`] with the
    /// index's options).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The positions of the indexed sets with a plain key hit in the
    /// input, in order (a set's regular-expression keys are not looked at:
    /// for a set of plain keys only, exactly the sets that hit).
    pub fn plain_hits(&self) -> impl Iterator<Item = usize> + '_ {
        // Word by word, skipping empty words: the work is the words plus
        // the sets hit, not 64 bit tests per word.
        self.hit
            .iter()
            .enumerate()
            .filter(|(_, w)| **w != 0)
            .flat_map(|(k, &w)| {
                let mut rest = w;
                std::iter::from_fn(move || {
                    if rest == 0 {
                        return None;
                    }
                    let b = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    Some(k * 64 + b)
                })
            })
            .filter(|&i| self.index.indexed[i])
    }

    /// Whether `set`, the `i`-th set the index was built from, hits the
    /// scanned input: exactly [`KeySet::hits`] of the input prepared for
    /// it.
    pub fn hits(&self, i: usize, set: &KeySet) -> bool {
        if !self.index.indexed.get(i).copied().unwrap_or(false) {
            return set.hits(&set.prepare(self.input));
        }
        let plain = bit(&self.hit, i);
        set.hits_beside_plain(plain, &self.text)
    }
}

/// The first counted occurrences (Format 5.4) of the keys of many
/// [`KeySet`]s, found in one pass over a text: one Aho–Corasick automaton
/// over every distinct plain key of the sets, built once (the turn order's
/// names, Format 18.9, scanned per reply). For a set whose keys are all
/// plain and matched with the index's options, [`FirstHits::start`] gives
/// exactly what [`KeySet::first_hits`] gives for its keys; any other set is
/// not indexed ([`FirstHits::indexed`]) and is matched on its own.
#[derive(Debug)]
pub struct FirstHits {
    options: KeyOptions,
    /// Every distinct plain key (as compared) of the indexed sets.
    ac: Option<AhoCorasick>,
    /// The number of patterns of `ac`.
    patterns: usize,
    /// Per set: the pattern of each key ([`FirstHits::NONE`] for an empty
    /// key, which has no occurrence), or `None` when the set is not
    /// indexed.
    keys: Vec<Option<Vec<u32>>>,
}

impl FirstHits {
    /// No pattern, no occurrence.
    const NONE: u32 = u32::MAX;

    /// The index of `sets`, matched with `options`.
    pub fn new<'a>(sets: impl IntoIterator<Item = &'a KeySet>, options: KeyOptions) -> Self {
        let mut patterns: std::collections::HashMap<Cow<'a, str>, u32> = Default::default();
        let mut order: Vec<Cow<'a, str>> = Vec::new();
        let mut keys = Vec::new();
        for set in sets {
            let plain = set.options == options
                && set
                    .keys
                    .iter()
                    .all(|k| matches!(key_form(k), KeyForm::Plain(_)));
            if !plain {
                keys.push(None);
                continue;
            }
            let mut ids = vec![Self::NONE; set.keys.len()];
            for (i, key) in set.plain_keys() {
                let next = order.len() as u32;
                let p = *patterns.entry(key.clone()).or_insert(next);
                if p == next {
                    order.push(key);
                }
                ids[i] = p;
            }
            keys.push(Some(ids));
        }
        // A noncontiguous NFA, as [`KeySet`]'s own: its build is linear in
        // the keys' bytes whatever their length (issue 43).
        let ac = if order.is_empty() {
            None
        } else {
            match AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .kind(Some(AhoCorasickKind::NoncontiguousNFA))
                .build(order.iter().map(|k| k.as_bytes()))
            {
                Ok(ac) => Some(ac),
                Err(_) => {
                    keys.iter_mut().for_each(|k| *k = None);
                    None
                }
            }
        };
        FirstHits {
            options,
            ac,
            patterns: order.len(),
            keys,
        }
    }

    /// Whether set `i` is indexed: [`FirstHits::start`] answers for it.
    pub fn indexed(&self, i: usize) -> bool {
        self.keys.get(i).is_some_and(Option::is_some)
    }

    /// Scans `text` (prepared, [`KeySet::prepare`]) into `starts`: per
    /// pattern, the start of its first counted occurrence (`u32::MAX`:
    /// none). A text longer than `u32::MAX - 1` bytes is not scanned (no
    /// occurrence); callers scan messages, far shorter.
    pub fn scan(&self, text: &str, starts: &mut Vec<u32>) {
        starts.clear();
        starts.resize(self.patterns, Self::NONE);
        let Some(ac) = &self.ac else {
            return;
        };
        if text.len() >= Self::NONE as usize {
            return;
        }
        let ww = self.options.whole_words;
        let mut left = self.patterns;
        // Occurrences of one pattern come in order of their starts.
        for m in ac.find_overlapping_iter(text) {
            let p = m.pattern().as_usize();
            if starts[p] == Self::NONE && (!ww || bounded(text, m.start(), m.end())) {
                starts[p] = m.start() as u32;
                left -= 1;
                if left == 0 {
                    break;
                }
            }
        }
    }

    /// The start of the first counted occurrence of key `k` of set `i`
    /// (an indexed set) in the text [`FirstHits::scan`] scanned into
    /// `starts`.
    pub fn start(&self, starts: &[u32], i: usize, k: usize) -> Option<usize> {
        let p = *self.keys.get(i)?.as_ref()?.get(k)?;
        starts
            .get(p as usize)
            .filter(|&&s| s != Self::NONE)
            .map(|&s| s as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check's verdict on a pattern is [`compile_pattern`]'s, message
    /// included (Format 18.1, 19.2): valid patterns, syntax errors, an
    /// alternation of literals (which `regex` runs without an NFA) and
    /// patterns over the size limit, forward and as a literal alternation.
    #[test]
    fn check_pattern_agrees_with_compile_pattern() {
        let big_alternation = (0..40_000)
            .map(|i| format!("w{i:05}x"))
            .collect::<Vec<_>>()
            .join("|");
        let cases = [
            r"\b8,?[0-9]{3}\b",
            r"(?i)^h[a-z]+o w",
            "a|b|c",
            "(",
            "[z-a]",
            r"\p{Nope}",
            r"\w{1000}",
            r"(\w{100}){100}",
            "x{1001}{1001}",
            big_alternation.as_str(),
        ];
        for p in cases {
            assert_eq!(
                check_pattern(p),
                compile_pattern(p).map(|_| ()),
                "{}",
                &p[..p.len().min(40)]
            );
        }
    }

    /// [`FirstHits`] answers for each indexed set exactly what the set's
    /// own [`KeySet::first_hits`] answers (Format 5.4: first counted
    /// occurrence, whole words, case-insensitive, overlapping keys, keys
    /// shared between sets); a set with a regular-expression key or other
    /// options is not indexed.
    #[test]
    fn first_hits_index_agrees_with_each_set() {
        let sets = [
            KeySet::new(["@ines", "@inés", "@mara"], KeyOptions::RUNTIME),
            KeySet::new(["ines", "inés", "mara", ""], KeyOptions::RUNTIME),
            KeySet::new(["tobias", "toby", "mara"], KeyOptions::RUNTIME),
            KeySet::new(["to", "tobias keeper"], KeyOptions::RUNTIME),
            KeySet::new(["/k[a-z]+r/", "mara"], KeyOptions::RUNTIME),
            KeySet::new(
                ["Mara"],
                KeyOptions {
                    case_sensitive: true,
                    whole_words: false,
                },
            ),
        ];
        let index = FirstHits::new(&sets, KeyOptions::RUNTIME);
        assert_eq!(
            (0..sets.len())
                .map(|i| index.indexed(i))
                .collect::<Vec<_>>(),
            [true, true, true, true, false, false]
        );
        let texts = [
            "",
            "Mara? @Inés, ask mara and TOBY.",
            "marathon tobias_ tobias keeper, to tobias",
            "@mara@ines tobiastoby toby",
            "Ｍara 日本mara語 @ineses @ines",
        ];
        let mut starts = Vec::new();
        for t in texts {
            let text = lower(t);
            index.scan(&text, &mut starts);
            for (i, set) in sets.iter().enumerate().filter(|(i, _)| index.indexed(*i)) {
                let own: Vec<Option<usize>> = set
                    .first_hits(&text)
                    .iter()
                    .map(|h| h.map(|(s, _)| s))
                    .collect();
                let ours: Vec<Option<usize>> = (0..set.keys().len())
                    .map(|k| index.start(&starts, i, k))
                    .collect();
                assert_eq!(ours, own, "set {i} in {t:?}");
            }
        }
    }

    fn find(key: &str, cs: bool, ww: bool, text: &str) -> Option<(usize, usize)> {
        let set = KeySet::new(
            [key],
            KeyOptions {
                case_sensitive: cs,
                whole_words: ww,
            },
        );
        set.first_hits(&set.prepare(text))[0]
    }

    fn hits(key: &str, text: &str) -> bool {
        let set = KeySet::new([key], KeyOptions::RUNTIME);
        set.hits(&set.prepare(text))
    }

    #[test]
    fn lower_is_per_character_with_an_ascii_fast_path() {
        // Format 5.4: each character lower-cased on its own (`Σ` at a word
        // end stays `σ`, not the final form; `İ` becomes two characters).
        for t in ["Dragons? No, a DRAGON.", "ÀB ΟΔΟΣ İx", ""] {
            let by_char: String = t.chars().flat_map(char::to_lowercase).collect();
            assert_eq!(lower(t), by_char);
        }
        assert_eq!(lower("ΟΔΟΣ"), "οδοσ");
    }

    #[test]
    fn the_examples_of_format_5_4_and_19_2() {
        // "Dragons" is followed by `s`; "DRAGON" counts after lower-casing.
        assert_eq!(
            find("dragon", false, true, "Dragons? No, a DRAGON."),
            Some((15, 21))
        );
        assert_eq!(find("gold", false, true, "Dragons? No, a DRAGON."), None);
        assert!(hits("gore", "GORE!"));
        assert!(hits("blood bath", "a blood bath."));
        assert!(!hits("gore", "gored"));
        assert!(!hits("blood bath", "bloodbath"));
        assert!(hits("/nice(ly)?/", "That is NICELY done"));
        assert!(!hits("cheap", "Cheapest?"));
        assert!(hits("cheap", "Hello! Is this cheap?"));
    }

    #[test]
    fn plain_occurrences_overlap_regex_matches_follow_each_other() {
        assert_eq!(find("cat", false, true, "cats cat"), Some((5, 8)));
        assert_eq!(find("cat", false, false, "cats cat"), Some((0, 3)));
        // Key `aa`, text `aaa aa`: only the last two characters count.
        assert_eq!(find("aa", false, true, "aaa aa"), Some((4, 6)));
        assert_eq!(find("/aa/", false, true, "aaa aa"), Some((4, 6)));
        // `_` is a word character, punctuation is not; Unicode letters are.
        assert_eq!(find("sword", false, true, "my_sword"), None);
        assert_eq!(find("sword", false, true, "(sword)"), Some((1, 6)));
        assert_eq!(find("ka", false, true, "kaé"), None);
        // A regex match that does not count is not searched again inside.
        assert_eq!(find(r"/\d+/", false, true, "a123 45"), Some((5, 7)));
        assert_eq!(find(r"/\d+/", false, true, "a123"), None);
    }

    #[test]
    fn scripts_written_without_spaces_have_a_word_edge_at_every_character() {
        // The examples of Format 5.4 (SillyTavern#1685).
        assert_eq!(find("龙胆", false, true, "我是龙胆的主人"), Some((6, 12)));
        assert_eq!(
            find("東京", false, true, "明日は東京に行きます"),
            Some((9, 15))
        );
        assert_eq!(find("앨리스", false, true, "앨리스가"), Some((0, 9)));
        // Katakana next to Hiragana, Han next to Latin, Latin next to Han.
        assert!(hits("アリス", "アリスさん"));
        assert!(hits("alice", "我喜欢alice的猫"));
        assert!(hits("龙", "a龙b"));
        // Hangul inside Hangul at either edge; Hangul next to a Latin
        // letter or digit is not a word edge.
        assert!(hits("앨리스", "김앨리스"));
        assert!(!hits("앨리스", "앨리스a"));
        assert!(!hits("앨리스", "1앨리스"));
        assert!(hits("앨리스", "앨리스, 안녕"));
        // Substrings inside one unspaced run hit too (no dictionary).
        assert!(hits("东京", "去东京都"));
    }

    #[test]
    fn latin_whole_words_are_unchanged() {
        for (key, text, hit) in [
            ("dragon", "Dragons? No, a DRAGON.", true),
            ("dragon", "Dragons?", false),
            ("dragon", "my_dragon", false),
            ("dragon", "dragon2", false),
            ("dragon", "(dragon)", true),
            ("ka", "kaé", false),
            ("éa", "éa", true),
            ("straße", "die straßenbahn", false),
            ("!", "a!b", false),
            ("/d.g/", "a dog!", true),
            ("/d.g/", "adog", false),
        ] {
            assert_eq!(hits(key, text), hit, "{key} in {text}");
        }
        // The edge rule itself: only the outside character decides for
        // characters of spaced scripts.
        assert!(word_edge(None, Some('a')));
        assert!(word_edge(Some(' '), Some('a')));
        assert!(!word_edge(Some('b'), Some('a')));
        assert!(!word_edge(Some('b'), None));
        assert!(word_edge(Some('は'), None));
        assert!(!word_edge(Some('가'), None));
    }

    #[test]
    fn case_rules() {
        assert_eq!(find("Sword", true, true, "a sword"), None);
        assert_eq!(find("Sword", true, true, "a Sword"), Some((2, 7)));
        assert_eq!(find("SWORD", false, true, "a sWoRd"), Some((2, 7)));
        // A regex key gets `i` unless the set is case-sensitive.
        assert_eq!(find("/dr[a-z]+n/", false, false, "DRAGON"), Some((0, 6)));
        assert_eq!(find("/dr[a-z]+n/", true, false, "DRAGON"), None);
        assert_eq!(find("/dr[a-z]+n/i", true, false, "DRAGON"), Some((0, 6)));
    }

    #[test]
    fn forms_and_checks() {
        assert_eq!(key_form("/"), KeyForm::Plain("/"));
        assert_eq!(key_form("a/b/"), KeyForm::Plain("a/b/"));
        assert_eq!(key_form("//"), KeyForm::Plain("//"));
        assert_eq!(key_form("/a/b c"), KeyForm::Plain("/a/b c"));
        assert_eq!(
            key_form("/a/is"),
            KeyForm::Regex {
                pattern: "a",
                flags: "is"
            }
        );
        assert!(check_key("/(/", KeyOptions::RUNTIME).is_err());
        assert!(check_key("/a/q", KeyOptions::RUNTIME).is_err());
        assert!(check_key("plain (", KeyOptions::RUNTIME).is_ok());
        // What the check accepts compiles, and the reverse.
        let set = KeySet::new(["/(/"], KeyOptions::RUNTIME);
        assert!(set.build().is_err() && set.validate_syntax().is_err());
        assert!(!set.hits("("));
    }

    #[test]
    fn sets_report_each_key_and_empty_keys_never_hit() {
        let set = KeySet::new(["b", "", "/a./", "ab"], KeyOptions::RUNTIME);
        let t = set.prepare("xab b ab");
        assert_eq!(
            set.first_hits(&t),
            vec![Some((4, 5)), None, Some((6, 8)), Some((6, 8))]
        );
        assert!(set.hits(&t));
        assert!(!KeySet::new([""], KeyOptions::RUNTIME).hits("anything"));
    }

    #[test]
    fn an_index_scan_answers_as_each_set_would() {
        let cs = KeyOptions {
            case_sensitive: true,
            whole_words: false,
        };
        let sets = [
            Some(KeySet::new(["price", "cost"], KeyOptions::RUNTIME)),
            None,
            Some(KeySet::new(["cost", "cost"], KeyOptions::RUNTIME)),
            Some(KeySet::new(["/\\d+ dollars/", ""], KeyOptions::RUNTIME)),
            Some(KeySet::new(["co"], KeyOptions::RUNTIME)),
            Some(KeySet::new(["/(/", "cost"], KeyOptions::RUNTIME)),
            Some(KeySet::new(["COST"], cs)),
            Some(KeySet::new([""], KeyOptions::RUNTIME)),
            Some(KeySet::new(["ΣΑΣ", "a"], KeyOptions::RUNTIME)),
        ];
        let index = KeyIndex::new(sets.iter().map(Option::as_ref), KeyOptions::RUNTIME);
        for input in [
            "What does it COST? 300 dollars?",
            "costly price",
            "co-op",
            "σας a",
            "",
            "cost",
        ] {
            let scan = index.scan(input);
            for (i, set) in sets.iter().enumerate() {
                if let Some(set) = set {
                    assert_eq!(
                        scan.hits(i, set),
                        set.hits(&set.prepare(input)),
                        "set {i} on {input:?}"
                    );
                }
            }
        }
        // Spot checks of the expected answers, not only agreement.
        let scan = index.scan("What does it COST? 300 dollars?");
        assert!(scan.hits(0, sets[0].as_ref().unwrap()));
        assert!(scan.hits(3, sets[3].as_ref().unwrap()));
        assert!(!scan.hits(4, sets[4].as_ref().unwrap()));
        assert!(scan.hits(6, sets[6].as_ref().unwrap()));
        // A set with a key that does not compile hits nothing.
        assert!(!scan.hits(5, sets[5].as_ref().unwrap()));
    }
}

//! Deterministic safety (Format 19.1–19.4): a policy's categories and the
//! two global rules, compiled once; the verdict on a text.

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

use crate::keys::{compile_pattern, lower, KeyOptions, KeySet, LazyPattern};

/// A category's or verdict's action, least to most severe (Format 19.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Nothing happens.
    Allow,
    /// The text is replaced by a redirect text.
    Redirect,
    /// The session ends.
    Stop,
}

impl Action {
    fn parse(s: &str) -> Action {
        match s {
            "stop" => Action::Stop,
            "redirect" => Action::Redirect,
            _ => Action::Allow,
        }
    }
}

/// The safety status of a verdict or a turn (Format 18.5 step 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Status {
    /// No rule, or only `allow` rules, matched.
    Ok,
    /// A `redirect` rule matched and no `stop` rule.
    Redirect,
    /// A `stop` rule matched.
    Stop,
}

impl Status {
    /// The status's name as written in results.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Redirect => "redirect",
            Status::Stop => "stop",
        }
    }
}

/// The verdict on a text (Format 19.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// `ok`, `redirect` or `stop`.
    pub status: Status,
    /// For `redirect`: the redirect text, unrendered.
    pub redirect_text: Option<String>,
    /// The IDs of the matching rules, in rule order.
    pub matched: Vec<String>,
}

/// The crisis text of `crisis_support` (Format 19.3).
pub const CRISIS_TEXT: &str = "It sounds like you may be going through something really hard. This is a fictional scenario, and you deserve real support: please reach out to someone you trust, or contact a crisis line or your local emergency number. If you are in immediate danger, call your local emergency number now.";

/// The default redirect text (Format 19.4).
pub const DEFAULT_REDIRECT: &str = "Let's take the conversation in a different direction.";

const MINOR_ALONE: &[&str] = &[
    "loli",
    "lolicon",
    "shota",
    "shotacon",
    "jailbait",
    "pedo",
    "pedophile",
    "paedophile",
    "pedophilia",
    "paedophilia",
    "csam",
    "child porn",
    "child pornography",
];
const MINOR_TERMS: &[&str] = &[
    "child",
    "children",
    "kid",
    "kids",
    "minors",
    "underage",
    "under-age",
    "preteen",
    "pre-teen",
    "schoolgirl",
    "schoolboy",
    "little girl",
    "little boy",
    "toddler",
    "infant",
    "teenager",
    "teenage",
];
const MINOR_AGE: &str = r"(?i)\b(?:[0-9]|1[0-7])[ -]?(?:years?|yrs?|y/?o)\b";
const SEXUAL_TERMS: &[&str] = &[
    "sex",
    "sexual",
    "sexually",
    "sexy",
    "nude",
    "naked",
    "undress",
    "undressed",
    "undressing",
    "erotic",
    "porn",
    "seduce",
    "seduced",
    "seduction",
    "aroused",
    "intercourse",
    "orgasm",
    "fondle",
    "fondling",
    "grope",
    "groped",
    "molest",
    "molested",
];
const CRISIS_TERMS: &[&str] = &[
    "suicide",
    "suicidal",
    "kill myself",
    "killing myself",
    "end my life",
    "ending my life",
    "take my own life",
    "taking my own life",
    "want to die",
    "wanna die",
    "better off dead",
    "no reason to live",
    "self-harm",
    "self harm",
    "hurt myself",
    "hurting myself",
    "cut myself",
    "cutting myself",
    "overdose",
];

/// What kind of rule a [`SafetyRule`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Minor,
    Crisis,
    Category,
}

/// One rule of the verdict order: a global rule (with its extension
/// category merged in) or a policy category.
#[derive(Debug, Clone)]
pub struct SafetyRule {
    /// The rule's or category's ID.
    pub id: String,
    /// Its action (a global rule's is never weakened).
    pub action: Action,
    kind: Kind,
    /// The built-in terms of a global rule (matched alone).
    builtin: Option<&'static KeySet>,
    terms: KeySet,
    patterns: Vec<LazyPattern>,
    redirect_text: Option<String>,
}

impl SafetyRule {
    fn matches(&self, text: &str, lowered: &str, minor: &MinorLists) -> bool {
        let own = self.builtin.is_some_and(|b| b.hits(lowered))
            || self.terms.hits(lowered)
            || self.patterns.iter().any(|p| p.is_match_or(text, true));
        match self.kind {
            Kind::Minor => {
                own || (minor.minor.hits(lowered) || minor.age.is_match(text))
                    && minor.sexual.hits(lowered)
            }
            _ => own,
        }
    }
}

/// The fixed lists of the global rules (Format 19.3), compiled once per
/// process.
#[derive(Debug)]
struct MinorLists {
    alone: KeySet,
    minor: KeySet,
    age: Regex,
    sexual: KeySet,
    crisis: KeySet,
}

fn global_lists() -> &'static MinorLists {
    static LISTS: std::sync::OnceLock<MinorLists> = std::sync::OnceLock::new();
    LISTS.get_or_init(|| MinorLists {
        alone: KeySet::new(MINOR_ALONE.iter().copied(), KeyOptions::RUNTIME),
        minor: KeySet::new(MINOR_TERMS.iter().copied(), KeyOptions::RUNTIME),
        age: compile_pattern(MINOR_AGE).unwrap_or_else(|_| Regex::new("$^").expect("re")),
        sexual: KeySet::new(SEXUAL_TERMS.iter().copied(), KeyOptions::RUNTIME),
        crisis: KeySet::new(CRISIS_TERMS.iter().copied(), KeyOptions::RUNTIME),
    })
}

/// A scenario's compiled safety rules, in verdict order (Format 19.4).
#[derive(Debug, Clone)]
pub struct Safety {
    /// The rules: `minor_safety`, `crisis_support`, then the policy's other
    /// categories in list order.
    pub rules: Vec<SafetyRule>,
    /// The policy compiled (stored in the IR as written, Format 14.4), as
    /// its JSON text.
    policy: Option<crate::wire::JsonText>,
    /// Verdicts already given (a verdict depends on its text alone).
    memo: VerdictMemo,
}

/// The verdicts a [`Safety`] gave, by text and kind, so that a text said
/// again (an exploration's alphabet line, a stock reply) is not matched
/// again. Bounded: texts of at most [`VerdictMemo::MAX_TEXT`] bytes, at most
/// [`VerdictMemo::MAX_ENTRIES`] of each kind; a clone starts empty.
#[derive(Debug, Default)]
struct VerdictMemo(std::sync::Mutex<[std::collections::HashMap<Box<str>, Verdict>; 2]>);

impl VerdictMemo {
    const MAX_TEXT: usize = 1024;
    const MAX_ENTRIES: usize = 4096;

    fn get(&self, text: &str, reply: bool) -> Option<Verdict> {
        if text.len() > Self::MAX_TEXT {
            return None;
        }
        let memo = self.0.lock().ok()?;
        memo[usize::from(reply)].get(text).cloned()
    }

    fn put(&self, text: &str, reply: bool, v: &Verdict) {
        if text.len() > Self::MAX_TEXT {
            return;
        }
        if let Ok(mut memo) = self.0.lock() {
            let memo = &mut memo[usize::from(reply)];
            if memo.len() < Self::MAX_ENTRIES {
                memo.insert(Box::from(text), v.clone());
            }
        }
    }
}

impl Clone for VerdictMemo {
    fn clone(&self) -> Self {
        VerdictMemo::default()
    }
}

/// In the IR a safety matcher is stored as its policy and built when the
/// IR is read (Format 14.4). Its terms and patterns were compiled when the
/// package was compiled; read back from an IR whose hashes match they are
/// taken as they are and compiled on first use, where one that does not
/// compile matches nothing (a policy that is not of the IR's shape still
/// makes the IR unreadable, so the loader falls back to `bundle.json`).
impl serde::Serialize for Safety {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.policy.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Safety {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Safety, D::Error> {
        // The policy's text, and the safety matcher built from a view of
        // it: no JSON value is built, and in `ir.compact` the text is read
        // once (reading the view is its check as JSON).
        struct Policy;
        impl<'de> serde::de::Visitor<'de> for Policy {
            type Value = Safety;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a safety policy or nothing")
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<Safety, E> {
                Safety::build(&PolicyView::default(), Build::Trusted).map_err(E::custom)
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Safety, E> {
                self.visit_none()
            }
            fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Safety, D::Error> {
                let (kept, safety) = crate::wire::JsonText::deserialize_reading(d, |t| {
                    let view = serde_json::from_str::<PolicyView<'_>>(t)?;
                    Ok(Safety::build(&view, Build::Trusted))
                })?;
                let mut safety = safety.map_err(serde::de::Error::custom)?;
                safety.policy = Some(kept);
                Ok(safety)
            }
        }
        d.deserialize_option(Policy)
    }
}

/// What [`Safety::build`] reads of a policy (Format 19.1): its
/// categories' `id`, `action`, `terms`, `patterns` and `redirect_text`,
/// borrowed from the policy where its text allows. Read as leniently as
/// the JSON value was: a field of another type reads as absent (an empty
/// string or list), a list's elements that are not strings are skipped,
/// other fields are ignored. Read from a JSON value (a bundle's policy)
/// or from the IR's text of it alike.
#[derive(Debug, Default)]
struct PolicyView<'a> {
    categories: Vec<CategoryView<'a>>,
}

#[derive(Debug, Default)]
struct CategoryView<'a> {
    id: Option<std::borrow::Cow<'a, str>>,
    action: Option<std::borrow::Cow<'a, str>>,
    terms: Vec<std::borrow::Cow<'a, str>>,
    patterns: Vec<std::borrow::Cow<'a, str>>,
    redirect_text: Option<std::borrow::Cow<'a, str>>,
}

/// Lenient readers for [`PolicyView`]: each takes any JSON value and keeps
/// only what is of its shape.
mod lenient {
    use std::borrow::Cow;
    use std::fmt;
    use std::marker::PhantomData;

    use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

    use super::{CategoryView, PolicyView};

    /// What a lenient reader makes of one value.
    pub(super) trait Shape<'de>: Default {
        /// From a string.
        fn string(_s: Cow<'de, str>) -> Self {
            Self::default()
        }
        /// From a list.
        fn list<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Self::default())
        }
        /// From an object.
        fn object<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(Self::default())
        }
    }

    /// Reads any value as `T`'s shape.
    pub(super) struct Any<T>(pub PhantomData<T>);

    impl<'de, T: Shape<'de>> DeserializeSeed<'de> for Any<T> {
        type Value = T;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de, T: Shape<'de>> Visitor<'de> for Any<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_i64<E>(self, _: i64) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_u64<E>(self, _: u64) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_f64<E>(self, _: f64) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_unit<E>(self) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_none<E>(self) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_borrowed_str<E>(self, s: &'de str) -> Result<T, E> {
            Ok(T::string(Cow::Borrowed(s)))
        }
        fn visit_str<E>(self, s: &str) -> Result<T, E> {
            Ok(T::string(Cow::Owned(s.to_string())))
        }
        fn visit_string<E>(self, s: String) -> Result<T, E> {
            Ok(T::string(Cow::Owned(s)))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
            T::list(seq)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::object(map)
        }
    }

    /// A string, or nothing.
    impl<'de> Shape<'de> for Option<Cow<'de, str>> {
        fn string(s: Cow<'de, str>) -> Self {
            Some(s)
        }
    }

    /// A list's strings (other elements skipped); nothing for another value.
    impl<'de> Shape<'de> for Vec<Cow<'de, str>> {
        fn list<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
            while let Some(s) = seq.next_element_seed(Any::<Option<Cow<'de, str>>>(PhantomData))? {
                out.extend(s);
            }
            Ok(out)
        }
    }

    /// A list's categories (each element read as one).
    impl<'de> Shape<'de> for Vec<CategoryView<'de>> {
        fn list<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
            while let Some(c) = seq.next_element_seed(Any::<CategoryView<'de>>(PhantomData))? {
                out.push(c);
            }
            Ok(out)
        }
    }

    /// Reads the value of a field as `T`'s shape.
    fn field<'de, A: MapAccess<'de>, T: Shape<'de>>(map: &mut A) -> Result<T, A::Error> {
        map.next_value_seed(Any::<T>(PhantomData))
    }

    /// A category's fields; a field given twice counts as written last.
    impl<'de> Shape<'de> for CategoryView<'de> {
        fn object<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
            let mut c = CategoryView::default();
            while let Some(k) = map
                .next_key_seed(Any::<Option<Cow<'de, str>>>(PhantomData))?
                .map(Option::unwrap_or_default)
            {
                match &*k {
                    "id" => c.id = field(&mut map)?,
                    "action" => c.action = field(&mut map)?,
                    "terms" => c.terms = field(&mut map)?,
                    "patterns" => c.patterns = field(&mut map)?,
                    "redirect_text" => c.redirect_text = field(&mut map)?,
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(c)
        }
    }

    /// A policy's categories.
    impl<'de> Shape<'de> for PolicyView<'de> {
        fn object<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
            let mut p = PolicyView::default();
            while let Some(k) = map
                .next_key_seed(Any::<Option<Cow<'de, str>>>(PhantomData))?
                .map(Option::unwrap_or_default)
            {
                if k == "categories" {
                    p.categories = field(&mut map)?;
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(p)
        }
    }

    impl<'de> serde::Deserialize<'de> for PolicyView<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(Any::<PolicyView<'de>>(PhantomData))
        }
    }
}

/// How much of a policy's terms and patterns [`Safety::build`] compiles
/// now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Build {
    /// All of them (an error names the first that does not compile).
    Eager,
    /// Their syntax only; each is compiled on first use.
    Syntax,
    /// None: read from an IR whose hashes match (Format 14.4), they were
    /// compiled when the package was; each is compiled on first use.
    Trusted,
}

impl Safety {
    /// Compiles a policy (the scenario's `safety`, Format 6.7), or the
    /// global rules alone for `None`. A category with a global rule's ID
    /// extends that rule (its terms and patterns are added to the terms that
    /// hit alone; its action counts only when more severe; its
    /// `redirect_text` replaces the rule's). Every term and pattern is
    /// compiled now; one that does not compile is an error (the checks
    /// refuse it first), never skipped.
    pub fn compile(policy: Option<&Value>) -> Result<Safety, String> {
        Safety::compile_with(policy, true)
    }

    /// [`Safety::compile`] with `eager` false: terms and patterns are only
    /// checked for syntax now and compiled on first use (a package's IR,
    /// Format 14.4).
    pub fn compile_with(policy: Option<&Value>, eager: bool) -> Result<Safety, String> {
        use serde::Deserialize;
        let build = if eager { Build::Eager } else { Build::Syntax };
        let view = match policy {
            Some(p) => PolicyView::deserialize(p).map_err(|e| e.to_string())?,
            None => PolicyView::default(),
        };
        let mut safety = Safety::build(&view, build)?;
        safety.policy = policy.map(|p| crate::wire::JsonText::new(p.clone()));
        Ok(safety)
    }

    /// [`Safety::compile_with`] of a policy read as `view` (the policy
    /// itself is kept by the caller).
    fn build(view: &PolicyView<'_>, build: Build) -> Result<Safety, String> {
        let lists = global_lists();
        let mut minor = SafetyRule {
            id: "minor_safety".into(),
            action: Action::Stop,
            kind: Kind::Minor,
            builtin: Some(&lists.alone),
            terms: KeySet::new(Vec::<String>::new(), KeyOptions::RUNTIME),
            patterns: Vec::new(),
            redirect_text: None,
        };
        let mut crisis = SafetyRule {
            id: "crisis_support".into(),
            action: Action::Redirect,
            kind: Kind::Crisis,
            builtin: Some(&lists.crisis),
            terms: KeySet::new(Vec::<String>::new(), KeyOptions::RUNTIME),
            patterns: Vec::new(),
            redirect_text: Some(CRISIS_TEXT.into()),
        };
        let mut others = Vec::new();
        for c in &view.categories {
            let id = c.id.as_deref().unwrap_or("");
            let action = Action::parse(c.action.as_deref().unwrap_or(""));
            let terms: Vec<String> = c.terms.iter().map(|t| t.to_string()).collect();
            let patterns: Vec<LazyPattern> = c
                .patterns
                .iter()
                .map(|p| match build {
                    Build::Eager => LazyPattern::compiled(p),
                    Build::Syntax => {
                        let p = LazyPattern::new(&**p);
                        p.validate_syntax().map(|()| p)
                    }
                    Build::Trusted => Ok(LazyPattern::new(&**p)),
                })
                .collect::<Result<_, _>>()?;
            let redirect_text = c.redirect_text.as_deref().map(str::to_string);
            let target = match id {
                "minor_safety" => Some(&mut minor),
                "crisis_support" => Some(&mut crisis),
                _ => None,
            };
            match target {
                Some(rule) => {
                    let mut all: Vec<String> =
                        rule.terms.keys().iter().map(|k| k.to_string()).collect();
                    all.extend(terms);
                    rule.terms = KeySet::new(all, KeyOptions::RUNTIME);
                    rule.patterns.extend(patterns);
                    rule.action = rule.action.max(action);
                    if redirect_text.is_some() {
                        rule.redirect_text = redirect_text;
                    }
                }
                None => others.push(SafetyRule {
                    id: id.to_string(),
                    action,
                    kind: Kind::Category,
                    builtin: None,
                    terms: KeySet::new(terms, KeyOptions::RUNTIME),
                    patterns,
                    redirect_text,
                }),
            }
        }
        let mut rules = vec![minor, crisis];
        rules.extend(others);
        for r in &rules {
            match build {
                Build::Eager => r.terms.build()?,
                Build::Syntax => r.terms.validate_syntax()?,
                Build::Trusted => {}
            }
        }
        Ok(Safety {
            rules,
            policy: None,
            memo: VerdictMemo::default(),
        })
    }

    /// The verdict on `text` (Format 19.4); `reply` skips `crisis_support`.
    pub fn verdict(&self, text: &str, reply: bool) -> Verdict {
        if let Some(v) = self.memo.get(text, reply) {
            return v;
        }
        let v = self.verdict_of(text, reply);
        self.memo.put(text, reply, &v);
        v
    }

    fn verdict_of(&self, text: &str, reply: bool) -> Verdict {
        let lowered = lower(text);
        let mut status = Status::Ok;
        let mut redirect_text = None;
        let mut matched = Vec::new();
        for r in &self.rules {
            if reply && r.kind == Kind::Crisis {
                continue;
            }
            if !r.matches(text, &lowered, global_lists()) {
                continue;
            }
            matched.push(r.id.clone());
            match r.action {
                Action::Allow => {}
                Action::Redirect => {
                    status = status.max(Status::Redirect);
                    if redirect_text.is_none() {
                        redirect_text = Some(
                            r.redirect_text
                                .clone()
                                .unwrap_or_else(|| DEFAULT_REDIRECT.to_string()),
                        );
                    }
                }
                Action::Stop => status = Status::Stop,
            }
        }
        Verdict {
            status,
            redirect_text: (status == Status::Redirect)
                .then_some(redirect_text)
                .flatten(),
            matched,
        }
    }
}

#[cfg(test)]
mod policy_view_tests {
    use super::*;

    fn summary(s: &Safety) -> Vec<String> {
        s.rules
            .iter()
            .map(|r| {
                format!(
                    "{} {:?} {:?} {:?} {:?}",
                    r.id,
                    r.action,
                    r.terms.keys(),
                    r.patterns
                        .iter()
                        .map(LazyPattern::source)
                        .collect::<Vec<_>>(),
                    r.redirect_text
                )
            })
            .collect()
    }

    #[test]
    fn a_policy_reads_the_same_from_its_value_and_from_the_irs_text() {
        // Odd shapes read as the JSON value did: a field of another type
        // is absent, a list's non-strings are skipped, a field given
        // twice counts as written last, other fields are ignored.
        let text = r#"{"categories": [
            {"id": "violence", "action": "stop", "terms": ["kill", 3, "m\u00e9l\u00e9e", null],
             "patterns": ["\\bstab\\w*"], "redirect_text": "No.", "x-note": {"a": [1]}},
            {"id": 7, "action": ["stop"], "terms": "kill", "patterns": {"a": 1}},
            {"id": "crisis_support", "terms": ["t1"], "redirect_text": "Call.", "redirect_text": "Call us."},
            "not a category", 12.5
        ], "version": 2}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        let compiled = Safety::compile(Some(&value)).unwrap();
        let written = serde_json::to_string(&compiled).unwrap();
        assert_eq!(written, serde_json::to_string(&value).unwrap());
        let read: Safety = serde_json::from_str(&written).unwrap();
        assert_eq!(summary(&read), summary(&compiled));
        let s = summary(&compiled);
        assert_eq!(s.len(), 6, "{s:#?}");
        assert!(
            s[1].contains("\"t1\"") && s[1].contains("Some(\"Call us.\")"),
            "{s:#?}"
        );
        assert!(
            s[2].starts_with("violence Stop") && s[2].contains("\"mélée\""),
            "{s:#?}"
        );
        assert!(s[3].starts_with(" Allow []"), "{s:#?}");
        // Neither a policy nor categories: the global rules alone.
        for p in ["null", "[1]", r#"{"categories": 3}"#] {
            let read: Safety = serde_json::from_str(p).unwrap();
            assert_eq!(read.rules.len(), 2, "{p}");
        }
    }
}

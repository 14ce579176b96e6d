//! Deterministic safety (Format 19.1–19.4): a policy's categories and the
//! two global rules, compiled once; the verdict on a text.

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

use super::keys::{compile_keys, compile_pattern, lower, Key};

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
    terms: Vec<Key>,
    patterns: Vec<Regex>,
    redirect_text: Option<String>,
}

impl SafetyRule {
    fn matches(&self, text: &str, lowered: &str, minor: &MinorLists) -> bool {
        let own = self.terms.iter().any(|k| k.hits(lowered))
            || self.patterns.iter().any(|p| p.is_match(text));
        match self.kind {
            Kind::Minor => {
                own || (minor.minor.iter().any(|k| k.hits(lowered)) || minor.age.is_match(text))
                    && minor.sexual.iter().any(|k| k.hits(lowered))
            }
            _ => own,
        }
    }
}

#[derive(Debug, Clone)]
struct MinorLists {
    minor: Vec<Key>,
    age: Regex,
    sexual: Vec<Key>,
}

/// A scenario's compiled safety rules, in verdict order (Format 19.4).
#[derive(Debug, Clone)]
pub struct Safety {
    /// The rules: `minor_safety`, `crisis_support`, then the policy's other
    /// categories in list order.
    pub rules: Vec<SafetyRule>,
    minor: MinorLists,
}

fn strings(v: &Value, field: &str) -> Vec<String> {
    v.get(field)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

impl Safety {
    /// Compiles a policy (the scenario's `safety`, Format 6.7), or the
    /// global rules alone for `None`. A category with a global rule's ID
    /// extends that rule (its terms and patterns are added to the terms that
    /// hit alone; its action counts only when more severe; its
    /// `redirect_text` replaces the rule's).
    pub fn compile(policy: Option<&Value>) -> Safety {
        let mut minor = SafetyRule {
            id: "minor_safety".into(),
            action: Action::Stop,
            kind: Kind::Minor,
            terms: compile_keys(MINOR_ALONE.iter().copied()),
            patterns: Vec::new(),
            redirect_text: None,
        };
        let mut crisis = SafetyRule {
            id: "crisis_support".into(),
            action: Action::Redirect,
            kind: Kind::Crisis,
            terms: compile_keys(CRISIS_TERMS.iter().copied()),
            patterns: Vec::new(),
            redirect_text: Some(CRISIS_TEXT.into()),
        };
        let mut others = Vec::new();
        let categories = policy
            .and_then(|p| p.get("categories"))
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        for c in categories {
            let id = c.get("id").and_then(Value::as_str).unwrap_or("");
            let action = Action::parse(c.get("action").and_then(Value::as_str).unwrap_or(""));
            let terms = strings(c, "terms");
            let terms = compile_keys(terms.iter().map(String::as_str));
            let patterns: Vec<Regex> = strings(c, "patterns")
                .iter()
                .filter_map(|p| compile_pattern(p).ok())
                .collect();
            let redirect_text = c
                .get("redirect_text")
                .and_then(Value::as_str)
                .map(str::to_string);
            let target = match id {
                "minor_safety" => Some(&mut minor),
                "crisis_support" => Some(&mut crisis),
                _ => None,
            };
            match target {
                Some(rule) => {
                    rule.terms.extend(terms);
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
                    terms,
                    patterns,
                    redirect_text,
                }),
            }
        }
        let mut rules = vec![minor, crisis];
        rules.extend(others);
        Safety {
            rules,
            minor: MinorLists {
                minor: compile_keys(MINOR_TERMS.iter().copied()),
                age: compile_pattern(MINOR_AGE).unwrap_or_else(|_| Regex::new("$^").expect("re")),
                sexual: compile_keys(SEXUAL_TERMS.iter().copied()),
            },
        }
    }

    /// The verdict on `text` (Format 19.4); `reply` skips `crisis_support`.
    pub fn verdict(&self, text: &str, reply: bool) -> Verdict {
        let lowered = lower(text);
        let mut status = Status::Ok;
        let mut redirect_text = None;
        let mut matched = Vec::new();
        for r in &self.rules {
            if reply && r.kind == Kind::Crisis {
                continue;
            }
            if !r.matches(text, &lowered, &self.minor) {
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

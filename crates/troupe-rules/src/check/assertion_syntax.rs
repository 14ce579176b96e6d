//! Parsing static assertion paths and checks (Format 21.4) with the pest
//! grammar `grammar/assertion.pest`, into [`Path`] and [`Check`]. A text
//! that does not match is an [`AssertionSyntax`] error with the character
//! position (from 1) where parsing failed; [`check_fixture`] reports those
//! as ASSERTION_SYNTAX diagnostics of `troupe check` (Format 13.8). The
//! test runner (`crate::testing::assertions`) evaluates what parses.

use pest::error::{ErrorVariant, InputLocation};
use pest::iterators::Pair;
use pest::Parser;

/// The pest parser; its generated `Rule` enum carries no docs.
#[allow(missing_docs)]
mod grammar {
    #[derive(pest_derive::Parser)]
    #[grammar = "../../../grammar/assertion.pest"]
    pub(super) struct AssertionParser;
}
use grammar::{AssertionParser, Rule};

/// One selector after a step's name: `[n]` or `[k=v]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// `[n]`: item n (from 0) of a list.
    Index(usize),
    /// `[k=v]`: the first item that is an object whose member `k` has the text v.
    Filter(String, String),
}

/// One step of a path: a member name and its selectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The member name.
    pub name: String,
    /// The selectors, in order.
    pub selectors: Vec<Selector>,
}

/// A parsed path (`events[id=rush].when`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    /// The steps, at least one.
    pub steps: Vec<Step>,
}

/// The comparison of a `lt`/`lte`/`gt`/`gte` check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `lt`.
    Lt,
    /// `lte`.
    Lte,
    /// `gt`.
    Gt,
    /// `gte`.
    Gte,
}

/// A parsed check expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// `non_empty_string`.
    NonEmptyString,
    /// `min_length_1`.
    MinLength1,
    /// `equals v` (v decoded when written as a JSON string).
    Equals(String),
    /// `contains v`.
    Contains(String),
    /// `lt n` and friends; n is the number's text (a JSON number).
    Compare(Cmp, String),
    /// `k1=v1 AND k2=v2 …`.
    Fields(Vec<(String, String)>),
}

/// A path or check that does not match the grammar (ASSERTION_SYNTAX).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("position {position}: {expected}")]
pub struct AssertionSyntax {
    /// The character position (from 1) where parsing failed, in the text as
    /// written (before trimming).
    pub position: usize,
    /// What was expected there, in words (`` `]` expected ``).
    pub expected: String,
}

/// Parses a path (Format 21.4; no spaces anywhere).
pub fn parse_path(text: &str) -> Result<Path, AssertionSyntax> {
    let mut pairs =
        AssertionParser::parse(Rule::path_main, text).map_err(|e| syntax(text, 0, e))?;
    let mut steps = Vec::new();
    let main = pairs.next().into_iter().flat_map(Pair::into_inner);
    for path in main.filter(|p| p.as_rule() == Rule::path) {
        for step in path.into_inner().filter(|p| p.as_rule() == Rule::step) {
            steps.push(step_of(step));
        }
    }
    Ok(Path { steps })
}

fn step_of(step: Pair<'_, Rule>) -> Step {
    let mut name = String::new();
    let mut selectors = Vec::new();
    for p in step.into_inner() {
        match p.as_rule() {
            Rule::name => name = p.as_str().to_string(),
            // An index too large for usize selects nothing.
            Rule::index => {
                selectors.push(Selector::Index(p.as_str().parse().unwrap_or(usize::MAX)))
            }
            Rule::filter => {
                let mut k = String::new();
                let mut v = String::new();
                for q in p.into_inner() {
                    match q.as_rule() {
                        Rule::name => k = q.as_str().to_string(),
                        Rule::fvalue => v = q.as_str().to_string(),
                        _ => {}
                    }
                }
                selectors.push(Selector::Filter(k, v));
            }
            _ => {}
        }
    }
    Step { name, selectors }
}

/// Parses a check (Format 21.4); surrounding spaces are trimmed first.
pub fn parse_check(text: &str) -> Result<Check, AssertionSyntax> {
    let trimmed = text.trim_matches(' ');
    let lead = text.len() - text.trim_start_matches(' ').len();
    let pairs = AssertionParser::parse(Rule::check_main, trimmed)
        .map_err(|e| not_a_check(trimmed, lead).unwrap_or_else(|| syntax(text, lead, e)))?;
    let Some(check) = pairs.into_iter().next().and_then(|m| m.into_inner().next()) else {
        return Err(AssertionSyntax {
            position: 1,
            expected: "a check expected".into(),
        });
    };
    Ok(match check.as_rule() {
        Rule::non_empty_string => Check::NonEmptyString,
        Rule::min_length_1 => Check::MinLength1,
        Rule::equals => Check::Equals(first_value(check)),
        Rule::contains => Check::Contains(first_value(check)),
        Rule::compare => {
            let mut cmp = Cmp::Lt;
            let mut n = String::new();
            for p in check.into_inner() {
                match p.as_rule() {
                    Rule::cmp => {
                        cmp = match p.as_str() {
                            "lte" => Cmp::Lte,
                            "gt" => Cmp::Gt,
                            "gte" => Cmp::Gte,
                            _ => Cmp::Lt,
                        }
                    }
                    Rule::number => n = p.as_str().to_string(),
                    _ => {}
                }
            }
            Check::Compare(cmp, n)
        }
        _ => {
            let mut fields = Vec::new();
            for f in check.into_inner().filter(|p| p.as_rule() == Rule::field) {
                let mut k = String::new();
                let mut v = String::new();
                for p in f.into_inner() {
                    match p.as_rule() {
                        Rule::name => k = p.as_str().to_string(),
                        Rule::word => v = decoded(p),
                        _ => {}
                    }
                }
                fields.push((k, v));
            }
            Check::Fields(fields)
        }
    })
}

/// The text of the first `value` inside a check, decoded.
fn first_value(check: Pair<'_, Rule>) -> String {
    check
        .into_inner()
        .find(|p| p.as_rule() == Rule::value)
        .map(decoded)
        .unwrap_or_default()
}

/// A value or word: a JSON string decoded, else the text as written.
fn decoded(p: Pair<'_, Rule>) -> String {
    match p.into_inner().next() {
        Some(inner) if inner.as_rule() == Rule::json_string => {
            serde_json::from_str::<String>(inner.as_str())
                .unwrap_or_else(|_| inner.as_str().to_string())
        }
        Some(inner) => inner.as_str().to_string(),
        None => String::new(),
    }
}

fn syntax(text: &str, lead: usize, e: pest::error::Error<Rule>) -> AssertionSyntax {
    let byte = match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    } + lead;
    let position = text.get(..byte).map_or(byte, |t| t.chars().count()) + 1;
    let expected = match &e.variant {
        ErrorVariant::ParsingError { positives, .. } => expected_words(positives),
        ErrorVariant::CustomError { message } => message.clone(),
    };
    AssertionSyntax { position, expected }
}

fn expected_words(rules: &[Rule]) -> String {
    let mut words: Vec<&str> = rules.iter().map(|r| word(*r)).collect();
    words.dedup();
    if words.is_empty() {
        return "unexpected text".into();
    }
    format!("{} expected", words.join(" or "))
}

fn word(r: Rule) -> &'static str {
    match r {
        Rule::close_bracket => "`]`",
        Rule::open_bracket => "`[`",
        Rule::dot => "`.`",
        Rule::EOI => "the end",
        Rule::name | Rule::step | Rule::path => "a name",
        Rule::index => "an index",
        Rule::filter => "a filter `k=v`",
        Rule::fvalue => "a filter value",
        Rule::equals_sign => "`=`",
        Rule::value | Rule::text => "a value",
        Rule::word | Rule::wtext => "a value",
        Rule::number => "a number",
        Rule::json_string => "a JSON string",
        Rule::cmp => "a comparison",
        Rule::field | Rule::conj => "a check (`non_empty_string`, `min_length_1`, `equals v`, `contains v`, `lt n`, `k=v AND …`)",
        Rule::and => "`AND`",
        Rule::sp => "a space",
        _ => "a check (`non_empty_string`, `min_length_1`, `equals v`, `contains v`, `lt n`, `k=v AND …`)",
    }
}

/// The words a check begins with (Format 21.4 `check`, `cmp`).
const CHECK_WORDS: [&str; 8] = [
    "non_empty_string",
    "min_length_1",
    "equals",
    "contains",
    "lt",
    "lte",
    "gt",
    "gte",
];

/// A check that is no `conj` (it holds no `=`) and whose first word is
/// none of [`CHECK_WORDS`] fails at that word (Format 21.4): the word is
/// not a check, with the closest check word or the list of checks.
fn not_a_check(trimmed: &str, lead: usize) -> Option<AssertionSyntax> {
    if trimmed.contains('=') {
        return None;
    }
    let word = trimmed.split(' ').next().filter(|w| !w.is_empty())?;
    if CHECK_WORDS.contains(&word) {
        return None;
    }
    let expected = match crate::diag::suggest::closest(word, CHECK_WORDS) {
        Some(c) => format!("`{word}` is not a check; did you mean `{c}`?"),
        None => format!(
            "`{word}` is not a check; the checks are `non_empty_string`, `min_length_1`, \
             `equals v`, `contains v`, `lt n`, `lte n`, `gt n`, `gte n` and `k=v AND …`"
        ),
    };
    Some(AssertionSyntax {
        position: lead + 1,
        expected,
    })
}

/// ASSERTION_SYNTAX diagnostics of a fixture document (Format 13.8,
/// 21.4): one per `static_assertions[i].path` or `.check` that does not
/// parse, at `/static_assertions/<i>/path` (or `/check`), pointing inside
/// the string at the failing position. No file is set.
pub fn check_fixture(fixture: &serde_json::Value) -> Vec<crate::diag::Diagnostic> {
    use crate::diag::{Code, Diagnostic};
    let mut out = Vec::new();
    let fixture = crate::model::fixture::Fixture::read(fixture);
    for (i, a) in fixture.assertions().enumerate() {
        for (field, text) in a.texts() {
            let Some(text) = text else {
                continue;
            };
            let err = if field == "path" {
                parse_path(text).err()
            } else {
                parse_check(text).err()
            };
            if let Some(e) = err {
                out.push(
                    Diagnostic::error(
                        Code::AssertionSyntax,
                        format!(
                            "the {field} `{text}` does not parse: position {}: {}",
                            e.position, e.expected
                        ),
                    )
                    .at(format!("/static_assertions/{i}/{field}"))
                    .inside(1, e.position as u32),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Format 21.4: a check that is no `k=v` and begins with no check
    /// word fails at that word. By hand: `length 4` (no check is within
    /// a typo of `length`), `equal 5` (`equals` one letter away), and
    /// `  lenght` after two spaces (position 3).
    #[test]
    fn a_word_that_is_no_check_is_named() {
        let e = parse_check("length 4").unwrap_err();
        assert_eq!(e.position, 1);
        assert!(
            e.expected
                .starts_with("`length` is not a check; the checks are `non_empty_string`"),
            "{}",
            e.expected
        );
        let e = parse_check("equal 5").unwrap_err();
        assert_eq!(
            (e.position, e.expected.as_str()),
            (1, "`equal` is not a check; did you mean `equals`?")
        );
        assert_eq!(parse_check("  lenght").unwrap_err().position, 3);
        // A `k=v` conjunction still fails where its grammar does.
        assert_ne!(parse_check("type=x AND").unwrap_err().position, 1);
        assert!(parse_check("lte 33").is_ok());
    }

    #[test]
    fn paths_parse() {
        let p = parse_path("events[id=warming_up].when").unwrap();
        assert_eq!(p.steps.len(), 2);
        assert_eq!(
            p.steps[0].selectors,
            vec![Selector::Filter("id".into(), "warming_up".into())]
        );
        let p = parse_path("cast[0][1].$x").unwrap();
        assert_eq!(
            p.steps[0].selectors,
            vec![Selector::Index(0), Selector::Index(1)]
        );
        assert_eq!(p.steps[1].name, "$x");
    }

    #[test]
    fn the_spec_example_error_is_at_position_21() {
        let e = parse_path("events[id=warming_up").unwrap_err();
        assert_eq!(e.position, 21);
        assert_eq!(e.expected, "`]` expected");
        assert_eq!(parse_path("a..b").unwrap_err().position, 3);
        assert_eq!(parse_path("a b").unwrap_err().position, 2);
        assert_eq!(parse_path("").unwrap_err().position, 1);
    }

    #[test]
    fn checks_parse() {
        assert_eq!(
            parse_check(" non_empty_string ").unwrap(),
            Check::NonEmptyString
        );
        assert_eq!(
            parse_check("equals a b").unwrap(),
            Check::Equals("a b".into())
        );
        assert_eq!(
            parse_check("equals \"a b\"").unwrap(),
            Check::Equals("a b".into())
        );
        assert_eq!(
            parse_check("lte 33").unwrap(),
            Check::Compare(Cmp::Lte, "33".into())
        );
        assert_eq!(
            parse_check("lt -1.5e3").unwrap(),
            Check::Compare(Cmp::Lt, "-1.5e3".into())
        );
        assert_eq!(
            parse_check("type=variable_above AND variable = impression AND threshold=\"6 0\"")
                .unwrap(),
            Check::Fields(vec![
                ("type".into(), "variable_above".into()),
                ("variable".into(), "impression".into()),
                ("threshold".into(), "6 0".into())
            ])
        );
    }

    #[test]
    fn bad_checks_are_positioned() {
        let e = parse_check("lte abc").unwrap_err();
        assert_eq!(e.position, 5);
        assert!(e.expected.contains("a number"), "{e}");
        let e = parse_check("  lte 01").unwrap_err();
        assert_eq!(e.position, 8, "{e}");
        assert!(parse_check("equals").is_err());
        assert!(parse_check("a=b AND").is_err());
        assert!(parse_check("a=b OR c=d").is_err());
    }
}

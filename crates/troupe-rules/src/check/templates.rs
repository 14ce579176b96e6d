//! Template syntax in author text (Format 10): every text that macros render
//! must parse.

use crate::diag::{Code, Diagnostic};
use crate::template::{self, Macro, Node};

use crate::changes::resolve_target;
use crate::resolve::story::Story;

/// Parses `text` (found at `pointer`), a text of the story, and reports
/// TEMPLATE_SYNTAX with the position inside the text; gives back the parsed
/// template for the lints that read it ([`unknown_macros`]), so it is
/// parsed once: through the pack's parse cache ([`template::parse_shared`]),
/// which the compile and the sessions of the pack read again (issue 41
/// item 2).
pub fn check_template(
    text: &str,
    pointer: &str,
    out: &mut Vec<Diagnostic>,
) -> Option<std::sync::Arc<template::Template>> {
    reported(template::parse_shared(text), pointer, out)
}

/// [`check_template`] for a text the story's sessions never render from
/// its cache (a recorded session's messages, a playtest's lines): parsed
/// and dropped, so a long session file leaves nothing behind in the
/// pack's cache.
pub fn check_template_syntax(text: &str, pointer: &str, out: &mut Vec<Diagnostic>) {
    reported(template::parse(text), pointer, out);
}

/// The template, or TEMPLATE_SYNTAX at `pointer` and the place inside the
/// text.
fn reported<T>(
    parsed: Result<T, template::TemplateError>,
    pointer: &str,
    out: &mut Vec<Diagnostic>,
) -> Option<T> {
    match parsed {
        Ok(t) => Some(t),
        Err(e) => {
            out.push(
                Diagnostic::error(Code::TemplateSyntax, e.message)
                    .at(pointer)
                    .inside(e.line, e.column),
            );
            None
        }
    }
}

/// UNKNOWN_MACRO (Format 10.3, 17.4): each state-path macro of `text`, a
/// reply or opening text of the story's scenario (found at `pointer`),
/// that can never render because the path names no state of the story for
/// any author the text may have (10.5: char and owner are the author, the
/// owner is the scenario when the author is the narrator), so the macro is
/// always shown as written. `parsed` is `text` as [`check_template`]
/// parsed it.
pub fn unknown_macros(
    story: &Story,
    text: &str,
    parsed: &template::Template,
    pointer: &str,
    out: &mut Vec<Diagnostic>,
) {
    for node in &parsed.nodes {
        let Node::Macro(Macro::Path(segments), range) = node else {
            continue;
        };
        if renders_somewhere(story, segments) {
            continue;
        }
        let name = segments.join(".");
        let hint = crate::diag::suggest::did_you_mean(
            &name,
            story
                .variables
                .keys()
                .map(String::as_str)
                .chain(["scene.location", "scene.present"]),
        );
        let before = &text[..range.start];
        let line = before.matches('\n').count() as u32 + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u32 + 1;
        out.push(
            Diagnostic::error(
                Code::UnknownMacro,
                format!(
                    "`{}` names no state of this story, so it is shown as written{hint}",
                    &text[range.clone()]
                ),
            )
            .at(pointer)
            .inside(line, column),
        );
    }
}

/// Whether a state path can render for some author of a reply or opening
/// (Format 10.3, 10.5): a cast member (`char` and `own` both that member),
/// or the narrator (no char, `own` the scenario: a path with `char` is then
/// left as written by design).
fn renders_somewhere(story: &Story, segments: &[String]) -> bool {
    let resolves = |author: Option<&str>| {
        let mut name: Vec<&str> = Vec::with_capacity(segments.len());
        for (i, s) in segments.iter().enumerate() {
            match (s.as_str(), author) {
                ("char", Some(a)) => name.push(a),
                ("char", None) => return false,
                ("own", Some(a)) if i == 0 => name.push(a),
                ("own", None) if i == 0 => {}
                (s, _) => name.push(s),
            }
        }
        // `{{own}}` alone (the owner's bare ID) is no state name; it is
        // left to 10.3 step 3 and not judged here.
        name.is_empty() || resolve_target(story, &name.join(".")).is_ok()
    };
    resolves(None) || story.cast.iter().any(|m| resolves(Some(&m.character)))
}

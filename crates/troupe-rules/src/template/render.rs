//! Rendering parsed templates (Format 10). What names and paths mean comes
//! from a [`Scope`] the caller provides (the engine's state at a message);
//! this module only applies the rules of 10.2–10.3 and the calls.

use super::parse::{Macro, Node, Template};

/// What a template renders against (Format 10.2, 10.3, 10.5).
pub trait Scope {
    /// The display name of `user` (11.3); `None` when there is no user.
    fn user(&self) -> Option<&str>;
    /// The char's ID; `None` for no char.
    fn char_id(&self) -> Option<&str>;
    /// The char's display name; `None` for no char.
    fn char_name(&self) -> Option<&str>;
    /// The narrator's name (6.2).
    fn narrator(&self) -> &str;
    /// True when the text is for a narrator message (`{{char}}` with no char
    /// renders the narrator's name).
    fn narrator_text(&self) -> bool;
    /// The owner for `own`: `None` for no owner, `Some(None)` for the
    /// scenario (the segment is dropped), `Some(Some(id))` otherwise.
    fn owner(&self) -> Option<Option<&str>>;
    /// The formatted value (10.4) of a flattened state name, if it is one.
    fn value(&self, name: &str) -> Option<String>;
    /// The session seed and the message ID the text renders at (`""` for
    /// none), for `random`, `pick` and `roll`.
    fn seed(&self) -> (u64, &str);
    /// True when the text renders for lore scanning (Format 5.3): then
    /// `hidden_key` renders its arguments joined with `,` (10.6).
    fn scanning(&self) -> bool {
        false
    }
    /// The seed string of the `k`-th macro when it is a `pick` that is
    /// stable per session (Format 10.6: templates outside message parts);
    /// `None` for the message-seeded one.
    fn pick_seed(&self, k: u64) -> Option<String> {
        let _ = k;
        None
    }
}

/// The most bytes one template renders to (Format 16.2): a message part, a
/// summary, a reply, a `troupe render` result. Rendering stops there.
pub const RENDER_LIMIT: usize = 1 << 20;

/// A rendering that would exceed its byte budget; `partial` is the text up
/// to the last piece that fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLong {
    /// The budget, in bytes.
    pub limit: usize,
    /// What was rendered before the budget was reached.
    pub partial: String,
}

/// Renders `t`, parsed from `source`, in `scope` (Format 10). A macro that
/// cannot render is left exactly as written. At most [`RENDER_LIMIT`]
/// bytes: a longer result is cut at the last piece that fits (see
/// [`render_bounded`] to learn that it was).
#[cfg(any(test, feature = "internals"))]
pub fn render(t: &Template, source: &str, scope: &dyn Scope) -> String {
    render_bounded(t, source, scope, RENDER_LIMIT).unwrap_or_else(|e| e.partial)
}

/// [`render`] with a budget of `limit` bytes: `Err` as soon as the text
/// would grow past it, so memory stays bounded by the budget however the
/// macros expand.
pub fn render_bounded(
    t: &Template,
    source: &str,
    scope: &dyn Scope,
    limit: usize,
) -> Result<String, TooLong> {
    let mut out = String::with_capacity(source.len().min(limit));
    let mut k = 0u64;
    let push = |out: &mut String, piece: &str| -> Result<(), TooLong> {
        if out.len() + piece.len() > limit {
            return Err(TooLong {
                limit,
                partial: std::mem::take(out),
            });
        }
        out.push_str(piece);
        Ok(())
    };
    for node in &t.nodes {
        match node {
            Node::Text(s) => push(&mut out, s)?,
            Node::Macro(m, span) => {
                let written = source.get(span.clone()).unwrap_or("");
                match render_macro(m, k, scope) {
                    Some(s) => push(&mut out, &s)?,
                    None => push(&mut out, written)?,
                }
                k += 1;
            }
        }
    }
    Ok(out)
}

/// Whether `source` has no macro and no escape (no `{{`, no `\\`), so it
/// renders as written without parsing (Format 10.1).
pub fn is_plain_text(source: &str) -> bool {
    !source.contains("{{") && !source.contains('\\')
}

/// Parses and renders `source`; a template that does not parse renders as
/// written.
#[cfg(test)]
pub fn render_str(source: &str, scope: &dyn Scope) -> String {
    render_str_bounded(source, scope, RENDER_LIMIT).unwrap_or_else(|e| e.partial)
}

/// [`render_str`] with a budget of `limit` bytes (see [`render_bounded`]).
#[cfg(test)]
pub fn render_str_bounded(
    source: &str,
    scope: &dyn Scope,
    limit: usize,
) -> Result<String, TooLong> {
    // Text with no `{{` and no `\\` is one text node: it renders as written.
    if is_plain_text(source) {
        if source.len() > limit {
            return Err(TooLong {
                limit,
                partial: String::new(),
            });
        }
        return Ok(source.to_string());
    }
    match super::parse(source) {
        Ok(t) => render_bounded(&t, source, scope, limit),
        Err(_) if source.len() > limit => Err(TooLong {
            limit,
            partial: String::new(),
        }),
        Err(_) => Ok(source.to_string()),
    }
}

fn render_macro(m: &Macro, k: u64, scope: &dyn Scope) -> Option<String> {
    match m {
        Macro::User => Some(scope.user().unwrap_or("").to_string()),
        Macro::Char => match scope.char_name() {
            Some(n) => Some(n.to_string()),
            None if scope.narrator_text() => Some(scope.narrator().to_string()),
            None => None,
        },
        Macro::Narrator => Some(scope.narrator().to_string()),
        Macro::Comment => Some(String::new()),
        Macro::Path(segs) => {
            let mut parts: Vec<&str> = Vec::with_capacity(segs.len());
            for (i, s) in segs.iter().enumerate() {
                if s == "char" {
                    parts.push(scope.char_id()?);
                } else if i == 0 && s == "own" {
                    if let Some(o) = scope.owner()? {
                        parts.push(o);
                    }
                } else {
                    parts.push(s);
                }
            }
            scope.value(&parts.join("."))
        }
        Macro::Call { name, args } => call(name, args, k, scope),
    }
}

/// The calls (Format 10.6): `random`, `pick`, `roll`, `reverse`,
/// `hidden_key`; `comment` is parsed as [`Macro::Comment`]. An unknown call
/// or bad arguments leave the macro as written.
fn call(name: &str, args: &[String], k: u64, scope: &dyn Scope) -> Option<String> {
    let (seed, message) = scope.seed();
    match name {
        "random" | "pick" => {
            if args.is_empty() {
                return None;
            }
            let stable = (name == "pick").then(|| scope.pick_seed(k)).flatten();
            let mut g =
                generator(&stable.unwrap_or_else(|| format!("{seed}:{message}:{name}:{k}")));
            let i = ((u128::from(g.next_u64()) * args.len() as u128) >> 64) as usize;
            args.get(i).cloned()
        }
        "roll" => {
            let [notation] = args else { return None };
            let notation = if notation.starts_with(['d', 'D']) {
                format!("1{notation}")
            } else {
                notation.clone()
            };
            let seed_str = format!("{seed}:{message}:roll:{k}");
            let dice = crate::cel::dice::parse_notation(&notation).ok()?;
            let mut g = generator(&seed_str);
            let mut total = dice.modifier;
            for _ in 0..dice.count {
                let die = 1 + ((u128::from(g.next_u64()) * u128::from(dice.sides)) >> 64) as i64;
                total = total.saturating_add(die);
            }
            Some(total.to_string())
        }
        "reverse" => Some(args.join(",").chars().rev().collect()),
        "hidden_key" => Some(if scope.scanning() {
            args.join(",")
        } else {
            String::new()
        }),
        _ => None,
    }
}

fn generator(seed: &str) -> crate::cel::dice::SplitMix64 {
    crate::cel::dice::SplitMix64(crate::cel::dice::fnv1a64(seed.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct S {
        char: Option<(&'static str, &'static str)>,
        owner: Option<Option<&'static str>>,
        narrator_text: bool,
        values: HashMap<&'static str, &'static str>,
    }

    impl Scope for S {
        fn user(&self) -> Option<&str> {
            Some("Ana")
        }
        fn char_id(&self) -> Option<&str> {
            self.char.map(|c| c.0)
        }
        fn char_name(&self) -> Option<&str> {
            self.char.map(|c| c.1)
        }
        fn narrator(&self) -> &str {
            "The Chronicle"
        }
        fn narrator_text(&self) -> bool {
            self.narrator_text
        }
        fn owner(&self) -> Option<Option<&str>> {
            self.owner
        }
        fn value(&self, name: &str) -> Option<String> {
            self.values.get(name).map(|s| s.to_string())
        }
        fn seed(&self) -> (u64, &str) {
            (0, "m1")
        }
    }

    fn scope(char: bool) -> S {
        S {
            char: char.then_some(("kai", "Kai")),
            owner: Some(Some("kai")),
            narrator_text: false,
            values: [
                ("trust.kai", "3"),
                ("kai.mood", "0.5"),
                ("scene.location", "docks"),
            ]
            .into_iter()
            .collect(),
        }
    }

    #[test]
    fn the_format_10_3_example() {
        let s = scope(true);
        assert_eq!(render_str("{{ trust.char }}", &s), "3");
        assert_eq!(render_str("{{own.mood}}", &s), "0.5");
        assert_eq!(render_str("{{scene.location}}", &s), "docks");
        assert_eq!(render_str("{{trust.mo}}", &s), "{{trust.mo}}");
        let s = scope(false);
        assert_eq!(render_str("{{trust.char}}", &s), "{{trust.char}}");
        assert_eq!(render_str("{{ char }}!", &s), "{{ char }}!");
    }

    #[test]
    fn char_in_narrator_text_and_escapes() {
        let mut s = scope(false);
        s.narrator_text = true;
        assert_eq!(
            render_str("{{CHAR}} and {{user}}", &s),
            "The Chronicle and Ana"
        );
        assert_eq!(
            render_str(r"\{{user}} \\{{user}} a\b", &s),
            r"{{user}} \Ana a\b"
        );
    }

    #[test]
    fn calls_are_seeded_and_stable() {
        let s = scope(true);
        let a = render_str("{{pick: x, y, z}}", &s);
        assert_eq!(a, render_str("{{pick: x, y, z}}", &s));
        assert!(["x", "y", "z"].contains(&a.as_str()));
        assert_eq!(render_str("{{reverse: abc}}", &s), "cba");
        assert_eq!(render_str("a{{// note}}b{{hidden_key: k}}c", &s), "abc");
        assert_eq!(render_str("{{roll: 1d1+2}}", &s), "3");
        assert_eq!(render_str("{{nope: 1}}", &s), "{{nope: 1}}");
    }
}

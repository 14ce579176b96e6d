//! Rendering templates at a state (Format 10): the engine's
//! [`crate::template::Scope`].

use super::{Engine, State};
use crate::compile::format_decimal;
use crate::compile::{CastIx, NameRef, Val};
use crate::template::{self, Scope};

/// What a template is rendered for (Format 10.2, 10.3, 10.5).
#[derive(Debug, Clone, Copy, Default)]
pub struct RenderFor<'a> {
    /// The char's ID; `None` for no char.
    pub char: Option<&'a str>,
    /// The owner's ID (a character, world or the scenario); `None` for none.
    pub owner: Option<&'a str>,
    /// The text is for a narrator message.
    pub narrator: bool,
}

impl<'a> RenderFor<'a> {
    /// What a message part by `author` renders for (Format 10.5): char = the
    /// author and owner = the author, except for the narrator (`"narrator"`),
    /// whose text has no char and whose owner is the scenario `scenario`.
    pub fn message_part(author: &'a str, scenario: &'a str) -> Self {
        let narrator = author == "narrator";
        RenderFor {
            char: (!narrator).then_some(author),
            owner: Some(if narrator { scenario } else { author }),
            narrator,
        }
    }
}

struct MacroScope<'a> {
    engine: &'a Engine,
    state: &'a State,
    char: Option<(&'a str, String)>,
    owner: Option<Option<&'a str>>,
    narrator: bool,
    user: Option<String>,
    message: &'a str,
    /// Rendering for lore scanning (Format 5.3): `hidden_key` shows its
    /// arguments.
    scanning: bool,
    /// The template's source when `pick` is stable per session (10.6).
    stable: Option<&'a str>,
}

impl Engine {
    fn display(&self, id: &str) -> String {
        self.ir
            .cast
            .iter()
            .find(|c| &*c.id == id)
            .map_or_else(|| id.to_string(), |c| c.display.to_string())
    }

    fn user_name(&self, state: &State) -> Option<String> {
        let c: CastIx = state.user.or_else(|| self.ir.players.first().copied())?;
        Some(self.ir.cast.get(c as usize)?.display.to_string())
    }

    /// Formats a value as Format 10.4 says.
    pub fn format_value(&self, v: &Val) -> Option<String> {
        Some(match v {
            Val::Absent => return None,
            Val::Int(i) => i.to_string(),
            Val::Num(d) => format_decimal(*d),
            Val::Bool(b) => b.to_string(),
            Val::Str(s) => s.to_string(),
            Val::List(l) => l
                .iter()
                .filter_map(|i| self.format_value(i))
                .collect::<Vec<_>>()
                .join(", "),
            Val::Map(m) => m
                .iter()
                .filter_map(|(k, i)| Some(format!("{k}: {}", self.format_value(i)?)))
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    /// The formatted value of a flattened state name at `state`.
    pub fn lookup(&self, state: &State, name: &str) -> Option<String> {
        match self.ir.names.get(name) {
            Some(NameRef::Location) => Some(state.location.to_string()),
            Some(NameRef::Present) => Some(
                state
                    .present_members()
                    .map(|c| self.ir.cast[c as usize].display.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            Some(NameRef::Slot(s)) => self.format_value(state.slots.get(*s as usize)?),
            Some(NameRef::OpenKey(..)) => None,
            None => {
                // A key of a `"*"` map: `<variable>.<key>`.
                let (base, key) = name.rsplit_once('.')?;
                let v = self.ir.vars.iter().find(|v| &*v.name == base)?;
                let crate::compile::Layout::Open(s) = v.layout else {
                    return None;
                };
                let Val::Map(m) = state.slots.get(s as usize)? else {
                    return None;
                };
                self.format_value(m.get(key)?)
            }
        }
    }

    /// Renders `text` at `state` for `who` (Format 10), at most
    /// [`template::render::RENDER_LIMIT`] bytes (cut there; see
    /// [`Engine::render_checked`]).
    pub fn render(&self, text: &str, state: &State, who: RenderFor<'_>) -> String {
        self.render_checked(text, state, who)
            .unwrap_or_else(|e| e.partial)
    }

    /// [`Engine::render`], `Err` when the result would exceed
    /// [`template::render::RENDER_LIMIT`] bytes (Format 16.2: LIMIT).
    pub fn render_checked(
        &self,
        text: &str,
        state: &State,
        who: RenderFor<'_>,
    ) -> Result<String, template::render::TooLong> {
        self.render_limited(text, state, who, template::render::RENDER_LIMIT)
    }

    /// [`Engine::render_checked`] with a budget of `limit` bytes.
    pub fn render_limited(
        &self,
        text: &str,
        state: &State,
        who: RenderFor<'_>,
        limit: usize,
    ) -> Result<String, template::render::TooLong> {
        self.render_inner(text, state, who, limit, false, false)
    }

    /// [`Engine::render`] for a template outside message parts (Format
    /// 10.6: entry content, descriptions, a character's texts, a model's
    /// instructions): `pick` is stable per session, seeded by
    /// `"<seed>:pick:<k>:<template>"`.
    pub fn render_stable(&self, text: &str, state: &State, who: RenderFor<'_>) -> String {
        self.render_stable_checked(text, state, who)
            .unwrap_or_else(|e| e.partial)
    }

    /// [`Engine::render_stable`] with the budget of
    /// [`Engine::render_checked`]: what `troupe render --per-chat` prints.
    pub fn render_stable_checked(
        &self,
        text: &str,
        state: &State,
        who: RenderFor<'_>,
    ) -> Result<String, template::render::TooLong> {
        self.render_inner(
            text,
            state,
            who,
            template::render::RENDER_LIMIT,
            false,
            true,
        )
    }

    /// [`Engine::render`] for lore scanning (Format 5.3): the same text,
    /// except that `hidden_key` renders its arguments joined with `,`.
    pub fn render_for_scan(&self, text: &str, state: &State, who: RenderFor<'_>) -> String {
        self.render_inner(
            text,
            state,
            who,
            template::render::RENDER_LIMIT,
            true,
            false,
        )
        .unwrap_or_else(|e| e.partial)
    }

    /// [`Engine::render_for_scan`] with `pick` stable per session (10.6):
    /// an entry's content in the recursion buffer (5.7).
    pub fn render_stable_for_scan(&self, text: &str, state: &State, who: RenderFor<'_>) -> String {
        self.render_inner(text, state, who, template::render::RENDER_LIMIT, true, true)
            .unwrap_or_else(|e| e.partial)
    }

    /// The text of message `m` as lore scanning reads it (Format 5.3): each
    /// part rendered as 10.5 says, `hidden_key` showing its arguments,
    /// joined with `"\n"`.
    pub fn scan_text(&self, m: u32) -> String {
        let Some(msg) = self.session.messages.get(m as usize) else {
            return String::new();
        };
        if msg
            .parts
            .iter()
            .all(|p| template::render::is_plain_text(&p.text))
        {
            return self.session.text(m);
        }
        let state = self.state_at(m);
        let author = self.ir.who_id(msg.author).to_string();
        let who = RenderFor::message_part(&author, &self.ir.scenario);
        msg.parts
            .iter()
            .map(|p| self.render_for_scan(&p.text, &state, who))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn render_inner(
        &self,
        text: &str,
        state: &State,
        who: RenderFor<'_>,
        limit: usize,
        scanning: bool,
        stable: bool,
    ) -> Result<String, template::render::TooLong> {
        let owner = who.owner.map(|o| {
            if o == &*self.ir.scenario {
                None
            } else {
                Some(o)
            }
        });
        let message = state
            .at
            .and_then(|m| self.session.messages.get(m as usize))
            .map_or("", |m| &*m.id);
        let scope = MacroScope {
            engine: self,
            state,
            char: who.char.map(|c| (c, self.display(c))),
            owner,
            narrator: who.narrator,
            user: self.user_name(state),
            message,
            scanning,
            stable: stable.then_some(text),
        };
        let too_long = || template::render::TooLong {
            limit,
            partial: String::new(),
        };
        if template::render::is_plain_text(text) {
            return if text.len() > limit {
                Err(too_long())
            } else {
                Ok(text.to_string())
            };
        }
        match self.parsed_template(text) {
            Some(t) => template::render::render_bounded(&t, text, &scope, limit),
            None if text.len() > limit => Err(too_long()),
            None => Ok(text.to_string()),
        }
    }

    /// `text` parsed, from the engine's cache of the templates it has
    /// rendered (shared with the other sessions of its story); `None` when
    /// it does not parse (it then renders as written, Format 10.1).
    fn parsed_template(&self, text: &str) -> Option<std::sync::Arc<template::Template>> {
        self.templates.get(text)
    }

    /// Renders part `i` of message `m` at its own state (Format 10.5).
    pub fn render_part(&self, m: u32, i: usize) -> Option<String> {
        let msg = self.session.messages.get(m as usize)?;
        let text = msg.parts.get(i)?.text.clone();
        Some(self.render_message_text(m, &text))
    }

    /// Renders the summary of message `m` at its own state (Format 10.5).
    pub fn render_summary(&self, m: u32) -> Option<String> {
        let text = self
            .session
            .messages
            .get(m as usize)?
            .summary
            .as_ref()?
            .text
            .clone();
        Some(self.render_message_text(m, &text))
    }

    /// [`Engine::render_part`] given the state at `m` (as
    /// [`Engine::walk_path`] yields it), without computing it again.
    pub fn render_part_at(&self, m: u32, i: usize, state: &State) -> Option<String> {
        let msg = self.session.messages.get(m as usize)?;
        let text = msg.parts.get(i)?.text.clone();
        Some(self.render_message_text_at(m, &text, state))
    }

    fn render_message_text(&self, m: u32, text: &str) -> String {
        self.render_message_text_at(m, text, &self.state_at(m))
    }

    fn render_message_text_at(&self, m: u32, text: &str, state: &State) -> String {
        let msg = &self.session.messages[m as usize];
        let author = self.ir.who_id(msg.author).to_string();
        let who = RenderFor::message_part(&author, &self.ir.scenario);
        self.render(text, state, who)
    }
}

impl Scope for MacroScope<'_> {
    fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }
    fn char_id(&self) -> Option<&str> {
        self.char.as_ref().map(|c| c.0)
    }
    fn char_name(&self) -> Option<&str> {
        self.char.as_ref().map(|c| c.1.as_str())
    }
    fn narrator(&self) -> &str {
        &self.engine.ir.narrator
    }
    fn narrator_text(&self) -> bool {
        self.narrator
    }
    fn owner(&self) -> Option<Option<&str>> {
        self.owner
    }
    fn value(&self, name: &str) -> Option<String> {
        self.engine.lookup(self.state, name)
    }
    fn seed(&self) -> (u64, &str) {
        (self.engine.session.seed, self.message)
    }
    fn scanning(&self) -> bool {
        self.scanning
    }
    fn pick_seed(&self, k: u64) -> Option<String> {
        self.stable
            .map(|src| format!("{}:pick:{k}:{src}", self.engine.session.seed))
    }
}

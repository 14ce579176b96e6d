//! The host changes the settings between turns (Format 8.9): the runtime
//! checks them, writes a settings message by the narrator after the current
//! message, evaluates events and outcomes there, and continues from it.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use super::session::{RuntimeKind, Session, TurnError};
use super::turn::FiringRecord;
use crate::changes::settings::Declared;
use crate::compile::session::lower_settings;
use crate::compile::{MessageIr, Who};
use crate::diag::{Code, Diagnostic};

/// What a settings change did (Format 8.9).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SettingsResult {
    /// The ID of the settings message written; `None` under `fake`
    /// (nothing is written).
    pub message: Option<String>,
    /// The firings evaluated at the settings message, in order.
    pub firings: Vec<FiringRecord>,
    /// Whether the story is ended there (Format 9.3).
    pub ended: bool,
    /// The story's outcome there, if it ended by one.
    pub outcome: Option<String>,
}

impl Session {
    /// Changes the difficulty settings from now on (Format 8.9): `settings`
    /// is `{difficulty?: preset id, knobs?: {knob: number}}`. Writes the
    /// settings message `{"id", "parent", "author": "narrator", "settings"}`
    /// after the current message, evaluates events and outcomes at it
    /// (9.2) and makes it the current message, so later conditions read
    /// the new values while variables and recorded firings keep theirs.
    ///
    /// Errors, with nothing written: [`TurnError::Settings`] with
    /// SETTINGS_INVALID, SETTINGS_NOT_DECLARED or UNKNOWN_FIELD
    /// diagnostics located at `settings/…`; [`TurnError::Ended`] when the
    /// session has ended; [`TurnError::Io`] when the session file cannot
    /// be written. Under the fake runtime the settings are checked and
    /// nothing else happens.
    pub fn change_settings(&mut self, settings: &Value) -> Result<SettingsResult, TurnError> {
        let mut diags = Vec::new();
        let declared = self.engine.ir.difficulty.as_ref().map(|d| Declared {
            presets: d.presets.iter().map(|(p, _)| &**p).collect(),
            knobs: d.knobs.iter().map(|k| &**k).collect(),
        });
        crate::changes::settings::check_settings(
            declared.as_ref(),
            settings,
            "settings",
            &mut diags,
        );
        if !diags.is_empty() {
            return Err(TurnError::Settings(diags));
        }
        let nothing = SettingsResult {
            message: None,
            firings: Vec::new(),
            ended: false,
            outcome: None,
        };
        if self.kind == RuntimeKind::Fake {
            return Ok(nothing);
        }
        if self.is_over() {
            return Err(TurnError::Ended);
        }
        let change = lower_settings(&self.engine.ir, settings).map_err(|e| {
            TurnError::Settings(vec![
                Diagnostic::error(Code::SettingsInvalid, e).at("settings")
            ])
        })?;
        let parent = self.current;
        let depth = parent.map_or(0, |p| self.engine.session.messages[p as usize].depth + 1);
        let m = self.push(MessageIr {
            id: Arc::from(self.next_id().as_str()),
            parent,
            depth,
            author: Who::Narrator,
            hidden: false,
            opening: None,
            changes: Vec::new(),
            firings: Vec::new(),
            parts: Vec::new(),
            summary: None,
            time: None,
            settings: Some(change),
            chosen: None,
        });
        self.fire(m);
        self.current = Some(m);
        let mut written = Map::new();
        for k in ["difficulty", "knobs"] {
            if let Some(v) = settings.get(k) {
                written.insert(k.into(), v.clone());
            }
        }
        let line = self.line_with(m, &[], Some(&Value::Object(written)));
        self.writer.line(&line)?;
        Ok(SettingsResult {
            message: Some(self.engine.session.messages[m as usize].id.to_string()),
            firings: self.firing_records(m),
            ended: self.states[m as usize].ending.is_some(),
            outcome: self.outcome_at(m),
        })
    }
}

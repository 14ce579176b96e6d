//! What an import did (`docs/import.md` §11): what it created, with the IDs
//! later commands take (`--at`, `--character`), what it converted, what it
//! kept only as data and why, and its warnings (ADVISORY diagnostics: a
//! loss, or a guess the user should know of).

use serde_json::{json, Value};

use troupe::{Code, Diagnostic};

/// One thing an import created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    /// `character`, `scenario`, `seat`, `world`, `opening`, `variable` (a
    /// scenario variable for a card's macro variables), `entry`, `player`
    /// (a session's header character) or `message`.
    pub kind: &'static str,
    /// Its Troupe ID.
    pub id: String,
    /// Where in the input it came from (a JSON Pointer, `line:N`), if from
    /// one place.
    pub from: Option<String>,
}

/// A note on one place of the input: what was converted, or kept only as
/// data (and why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Where in the input (a JSON Pointer, or `line:N` for a chat line).
    pub at: String,
    /// What happened, in plain words.
    pub what: String,
}

/// The summary of one import.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// What was created, in creation order.
    pub created: Vec<Created>,
    /// What was converted into another Troupe form.
    pub converted: Vec<Note>,
    /// What was kept only as data (in `extensions`), with why.
    pub kept: Vec<Note>,
    /// Losses and guesses: ADVISORY warnings, located in the input.
    pub warnings: Vec<Diagnostic>,
}

impl Summary {
    /// Records a created thing.
    pub fn created(&mut self, kind: &'static str, id: &str, from: Option<&str>) {
        self.created.push(Created {
            kind,
            id: id.to_string(),
            from: from.map(str::to_string),
        });
    }

    /// Records a conversion at `at`.
    pub fn converted(&mut self, at: &str, what: impl Into<String>) {
        self.converted.push(Note {
            at: at.to_string(),
            what: what.into(),
        });
    }

    /// Records something kept only as data at `at`.
    pub fn kept(&mut self, at: &str, what: impl Into<String>) {
        self.kept.push(Note {
            at: at.to_string(),
            what: what.into(),
        });
    }

    /// Records a warning (ADVISORY) at `at`.
    pub fn warn(&mut self, at: &str, message: impl Into<String>) {
        self.warnings
            .push(Diagnostic::error(Code::Advisory, message.into()).at(at));
    }

    /// Adds another summary's items after this one's.
    pub fn extend(&mut self, other: Summary) {
        self.created.extend(other.created);
        self.converted.extend(other.converted);
        self.kept.extend(other.kept);
        self.warnings.extend(other.warnings);
    }

    /// True when something was lost or guessed (`--strict` fails then).
    pub fn has_loss(&self) -> bool {
        !self.warnings.is_empty()
    }

    /// The summary as a JSON document (`--json`, `docs/import.md` §11):
    /// `{created: [{kind, id, from?}], converted: [{at, what}],
    /// kept: [{at, what}], warnings: [Diagnostic]}` (a diagnostic as `troupe check
    /// --json` prints it).
    pub fn to_json(&self) -> Value {
        let notes = |v: &[Note]| -> Vec<Value> {
            v.iter()
                .map(|n| json!({"at": n.at, "what": n.what}))
                .collect()
        };
        json!({
            "created": self.created.iter().map(|c| {
                let mut o = json!({"kind": c.kind, "id": c.id});
                if let Some(f) = &c.from {
                    o["from"] = json!(f);
                }
                o
            }).collect::<Vec<_>>(),
            "converted": notes(&self.converted),
            "kept": notes(&self.kept),
            "warnings": self.warnings.iter().map(|d| serde_json::to_value(d).unwrap_or_default()).collect::<Vec<_>>(),
        })
    }

    /// The summary as text for a terminal: one line per created thing
    /// (messages counted, not listed), conversions and kept data under
    /// their headings. Warnings are printed apart, as diagnostics.
    pub fn to_text(&self) -> String {
        let mut out = String::from("created:\n");
        let messages: Vec<&Created> = self
            .created
            .iter()
            .filter(|c| c.kind == "message")
            .collect();
        for c in self.created.iter().filter(|c| c.kind != "message") {
            out.push_str(&format!("  {} {}", c.kind, c.id));
            if let Some(f) = &c.from {
                out.push_str(&format!(" (from {f})"));
            }
            out.push('\n');
        }
        if let (Some(first), Some(last)) = (messages.first(), messages.last()) {
            out.push_str(&format!(
                "  {} messages, {} … {}\n",
                messages.len(),
                first.id,
                last.id
            ));
        }
        for (title, notes) in [("converted", &self.converted), ("kept as data", &self.kept)] {
            if notes.is_empty() {
                continue;
            }
            out.push_str(&format!("{title}:\n"));
            for n in notes {
                out.push_str(&format!("  {}: {}\n", n.at, n.what));
            }
        }
        if !self.warnings.is_empty() {
            out.push_str(&format!("{} warning(s)\n", self.warnings.len()));
        }
        out
    }
}

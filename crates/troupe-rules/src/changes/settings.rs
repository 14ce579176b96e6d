//! The checks of a mid-session settings change (Format 8.9): a message's
//! `settings` or a fixture's settings step names presets and knobs the
//! scenario's `difficulty` declares, with number values.

use serde_json::Value;

use super::values::exact_decimal;
use crate::diag::{escape_token, Code, Diagnostic};
use crate::model::items::{Difficulty, Settings};

/// What a settings change is checked against (Format 6.5, 8.9): the preset
/// names and knob names of a scenario's difficulty, from the scenario as
/// written (the checks) or from its compiled form (a running session), so
/// both are judged by [`check_settings`] alike.
#[derive(Debug, Clone, Default)]
pub struct Declared<'a> {
    /// The presets, in written order.
    pub presets: Vec<&'a str>,
    /// The knobs (those of the first preset, Format 6.5).
    pub knobs: Vec<&'a str>,
}

impl<'a> Declared<'a> {
    /// The declarations of a written difficulty; `None` when its `options`
    /// are not an object (SCHEMA reports it).
    pub fn of(d: Difficulty<'a>) -> Option<Declared<'a>> {
        let options = d.options?;
        Some(Declared {
            presets: options.keys().map(String::as_str).collect(),
            knobs: options
                .values()
                .next()
                .and_then(Value::as_object)
                .map(|o| o.keys().map(String::as_str).collect())
                .unwrap_or_default(),
        })
    }
}

/// Checks `settings` against the scenario's difficulty (`None` when the
/// scenario has none), reporting at `base` (the pointer of the `settings`
/// field: `message:<id>/settings`, `/turns/<i>/settings`)
/// SETTINGS_INVALID, SETTINGS_NOT_DECLARED and UNKNOWN_FIELD as Format 8.9
/// says. Messages never quote a value.
pub fn check_settings(
    difficulty: Option<&Declared<'_>>,
    settings: &Value,
    base: &str,
    out: &mut Vec<Diagnostic>,
) {
    let at = |p: &str| format!("{base}{p}");
    let invalid = |out: &mut Vec<Diagnostic>, p: &str, msg: String| {
        out.push(Diagnostic::error(Code::SettingsInvalid, msg).at(at(p)));
    };
    let Some(obj) = settings.as_object() else {
        invalid(
            out,
            "",
            "settings must be an object with `difficulty`, `knobs` or both".into(),
        );
        return;
    };
    let given = Settings::read(obj);
    if given.difficulty.is_none() && given.knobs.is_none() {
        invalid(
            out,
            "",
            "settings change nothing: give `difficulty`, `knobs` or both".into(),
        );
    }
    for key in obj.keys() {
        if !Settings::FIELDS.contains(&key.as_str()) && !key.starts_with("x-") {
            out.push(
                Diagnostic::error(
                    Code::UnknownField,
                    format!("settings have no field `{key}` (only `difficulty` and `knobs`)"),
                )
                .at(at(&format!("/{}", escape_token(key)))),
            );
        }
    }
    let Some(declared) = difficulty else {
        if given.difficulty.is_some() || given.knobs.is_some() {
            out.push(
                Diagnostic::error(
                    Code::SettingsNotDeclared,
                    "the scenario has no difficulty, so it declares no settings to change",
                )
                .at(at("")),
            );
        }
        return;
    };
    if let Some(p) = given.difficulty {
        match p.as_str() {
            None => invalid(
                out,
                "/difficulty",
                "`difficulty` must be a preset ID (a string)".into(),
            ),
            Some(p) if !declared.presets.contains(&p) => out.push(
                Diagnostic::error(
                    Code::SettingsNotDeclared,
                    format!(
                        "the scenario's difficulty has no preset `{p}`{}",
                        crate::diag::suggest::one_of(p, declared.presets.iter().copied())
                    ),
                )
                .at(at("/difficulty")),
            ),
            Some(_) => {}
        }
    }
    if let Some(k) = given.knobs {
        let knobs = &declared.knobs;
        match k.as_object() {
            Some(m) if !m.is_empty() => {
                for (name, v) in m {
                    let here = format!("/knobs/{}", escape_token(name));
                    if name == "preset" || !knobs.contains(&name.as_str()) {
                        out.push(
                            Diagnostic::error(
                                Code::SettingsNotDeclared,
                                format!(
                                    "the scenario's difficulty has no knob `{name}`{}",
                                    crate::diag::suggest::one_of(name, knobs.iter().copied())
                                ),
                            )
                            .at(at(&here)),
                        );
                    } else if !v.is_number() || exact_decimal(v).is_none() {
                        invalid(
                            out,
                            &here,
                            format!("knob `{name}` must be set to a number within the decimal limits (Format 2.2)"),
                        );
                    }
                }
            }
            _ => invalid(
                out,
                "/knobs",
                "`knobs` must be a non-empty object of knob values".into(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn codes(d: Option<Value>, s: Value) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let declared = d.as_ref().and_then(|d| Declared::of(Difficulty::read(d)));
        check_settings(declared.as_ref(), &s, "message:3/settings", &mut out);
        out.into_iter()
            .map(|d| (d.code.to_string(), d.location.pointer.unwrap_or_default()))
            .collect()
    }

    fn diff() -> Option<Value> {
        Some(
            json!({"default": "standard", "options": {"standard": {"patience": 50}, "hard": {"patience": 25.5}}}),
        )
    }

    #[test]
    fn the_examples_of_8_9() {
        assert!(codes(diff(), json!({"difficulty": "hard"})).is_empty());
        assert!(codes(diff(), json!({"knobs": {"patience": 40}})).is_empty());
        assert_eq!(
            codes(diff(), json!({"knobs": {"speed": 1}})),
            [(
                "SETTINGS_NOT_DECLARED".into(),
                "message:3/settings/knobs/speed".into()
            )]
        );
        assert_eq!(
            codes(diff(), json!({"knobs": {"patience": "low"}})),
            [(
                "SETTINGS_INVALID".into(),
                "message:3/settings/knobs/patience".into()
            )]
        );
    }

    #[test]
    fn shapes_presets_and_no_difficulty() {
        assert_eq!(
            codes(
                diff(),
                json!({"difficulty": "easy", "knobs": {}, "note": 1, "x-a": 1})
            ),
            [
                ("UNKNOWN_FIELD".into(), "message:3/settings/note".into()),
                (
                    "SETTINGS_NOT_DECLARED".into(),
                    "message:3/settings/difficulty".into()
                ),
                ("SETTINGS_INVALID".into(), "message:3/settings/knobs".into()),
            ]
        );
        assert_eq!(
            codes(diff(), json!(7)),
            [("SETTINGS_INVALID".into(), "message:3/settings".into())]
        );
        assert_eq!(
            codes(diff(), json!({})),
            [("SETTINGS_INVALID".into(), "message:3/settings".into())]
        );
        assert_eq!(
            codes(None, json!({"difficulty": "hard"})),
            [("SETTINGS_NOT_DECLARED".into(), "message:3/settings".into())]
        );
        assert_eq!(
            codes(
                diff(),
                json!({"difficulty": 3, "knobs": {"preset": 1, "patience": 1e30}})
            ),
            [
                (
                    "SETTINGS_INVALID".into(),
                    "message:3/settings/difficulty".into()
                ),
                (
                    "SETTINGS_NOT_DECLARED".into(),
                    "message:3/settings/knobs/preset".into()
                ),
                (
                    "SETTINGS_INVALID".into(),
                    "message:3/settings/knobs/patience".into()
                ),
            ]
        );
    }
}

//! Changes against a story's declarations (Format 8.5): every `set` and `add`
//! names a declared, non-derived variable with a value of its type, and every
//! `enter`/`leave` names cast members.

use serde_json::Value;

use super::story::Story;
use super::values::{check_scalar, check_value, is_int};
use crate::diag::{escape_token, Code, Diagnostic};
use crate::model::{ScalarType, VarType};

/// What a state name in a change refers to (Format 8.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target<'s> {
    /// `scene.location`.
    Location,
    /// `scene.present`.
    Present,
    /// A whole variable.
    Variable(&'s str),
    /// One key of a keyed variable.
    Key(&'s str, String),
}

/// Resolves a state name written in a change to its target, or explains why
/// it names nothing (UNKNOWN_VARIABLE).
pub fn resolve_target<'s>(story: &'s Story, name: &str) -> Result<Target<'s>, String> {
    match name {
        "scene.location" => return Ok(Target::Location),
        "scene.present" => return Ok(Target::Present),
        _ => {}
    }
    if let Some((k, decl)) = story.variables.get_key_value(name) {
        if decl.is_keyed() {
            return Err(format!(
                "`{name}` is keyed: name one key, such as `{name}.<key>` (Format 8.4)"
            ));
        }
        return Ok(Target::Variable(k.as_str()));
    }
    if let Some((base, key)) = name.rsplit_once('.') {
        if let Some((k, decl)) = story.variables.get_key_value(base) {
            if decl.is_keyed() {
                match decl.fixed_keys(&story.cast) {
                    Some(keys) if !keys.iter().any(|x| x == key) => {
                        return Err(format!(
                            "`{base}` has no key `{key}`{}",
                            crate::diag::suggest::one_of(key, keys.iter().map(String::as_str))
                        ));
                    }
                    None if !crate::check::ids::is_id(key) => {
                        return Err(format!(
                            "`{key}` is not a valid key of `{base}`: keys follow the ID grammar"
                        ));
                    }
                    _ => {}
                }
                return Ok(Target::Key(k.as_str(), key.to_string()));
            }
            return Err(format!("`{base}` is not a keyed variable"));
        }
    }
    let hint = crate::diag::suggest::did_you_mean(
        name,
        story
            .variables
            .keys()
            .map(String::as_str)
            .chain(["scene.location", "scene.present"]),
    );
    Err(format!(
        "no variable `{name}` is declared in this story{hint}"
    ))
}

/// Checks a list of changes; `base` is the pointer of the list
/// (`/scenarios/0/events/1/changes`, `message:m3/changes`).
pub fn check_changes(story: &Story, changes: &[Value], base: &str, out: &mut Vec<Diagnostic>) {
    for (i, change) in changes.iter().enumerate() {
        let Some(obj) = change.as_object() else {
            continue; // SCHEMA
        };
        for (op, body) in obj {
            let at = format!("{base}/{i}/{op}");
            match op.as_str() {
                "set" | "add" => {
                    let Some(map) = body.as_object() else {
                        continue;
                    };
                    for (name, value) in map {
                        let ptr = format!("{at}/{}", escape_token(name));
                        check_one(story, op == "add", name, value, &ptr, out);
                    }
                }
                "enter" | "leave" => {
                    let Some(list) = body.as_array() else {
                        continue;
                    };
                    for (k, id) in list.iter().enumerate() {
                        if let Some(id) = id.as_str() {
                            if !story.cast_ref_ok(id) {
                                out.push(
                                    Diagnostic::error(
                                        Code::UnknownRef,
                                        format!("`{id}` is not a member of the cast"),
                                    )
                                    .at(format!("{at}/{k}")),
                                );
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

fn check_one(
    story: &Story,
    add: bool,
    name: &str,
    value: &Value,
    ptr: &str,
    out: &mut Vec<Diagnostic>,
) {
    let target = match resolve_target(story, name) {
        Ok(t) => t,
        Err(why) => {
            out.push(Diagnostic::error(Code::UnknownVariable, why).at(ptr));
            return;
        }
    };
    let mismatch = |msg: String| Diagnostic::error(Code::TypeMismatch, msg).at(ptr);
    match target {
        Target::Location => {
            if add {
                out.push(mismatch(
                    "`add` applies to int and number variables only".into(),
                ));
            } else if !value.is_string() {
                out.push(mismatch("`scene.location` takes a string".into()));
            }
        }
        Target::Present => {
            if add {
                out.push(mismatch(
                    "`add` applies to int and number variables only".into(),
                ));
                return;
            }
            let Some(list) = value.as_array() else {
                out.push(mismatch(
                    "`scene.present` takes a list of character IDs".into(),
                ));
                return;
            };
            for (k, id) in list.iter().enumerate() {
                match id.as_str() {
                    Some(id) if story.cast_ref_ok(id) => {}
                    Some(id) => out.push(
                        Diagnostic::error(
                            Code::UnknownRef,
                            format!("`{id}` is not a member of the cast"),
                        )
                        .at(format!("{ptr}/{k}")),
                    ),
                    None => out.push(mismatch(
                        "`scene.present` takes a list of character IDs".into(),
                    )),
                }
            }
        }
        Target::Variable(var) | Target::Key(var, _) => {
            let Some(decl) = story.variables.get(var) else {
                return;
            };
            if decl.is_derived() {
                out.push(
                    Diagnostic::error(
                        Code::DerivedSet,
                        format!("`{var}` is derived from other state and cannot be changed"),
                    )
                    .at(ptr),
                );
                return;
            }
            let Some(ty) = decl.ty else { return };
            let whole_keyed = matches!(target, Target::Variable(_)) && decl.is_keyed();
            if add {
                let numeric = match ty {
                    VarType::Scalar(ScalarType::Int) => Some(ScalarType::Int),
                    VarType::Scalar(ScalarType::Number) => Some(ScalarType::Number),
                    _ => None,
                };
                match numeric {
                    Some(_) if whole_keyed => out.push(mismatch(format!(
                        "`add` needs one key of `{var}`, such as `{var}.<key>`"
                    ))),
                    Some(ScalarType::Int) if !is_int(value) => out.push(mismatch(format!(
                        "`{var}` is an int: `add` needs an integer"
                    ))),
                    Some(s) => {
                        if let Err(e) = check_scalar(s, value) {
                            out.push(mismatch(e));
                        }
                    }
                    None => out.push(mismatch(format!(
                        "`add` applies to int and number variables; `{var}` is {ty}"
                    ))),
                }
            } else if whole_keyed {
                let VarType::Scalar(s) = ty else {
                    out.push(mismatch(format!(
                        "keyed variable `{var}` needs a scalar type"
                    )));
                    return;
                };
                match value.as_object() {
                    Some(map) => {
                        let fixed = decl.fixed_keys(&story.cast);
                        for (k, v) in map {
                            if let Some(keys) = &fixed {
                                if !keys.contains(k) {
                                    out.push(
                                        Diagnostic::error(
                                            Code::UnknownVariable,
                                            format!("`{var}` has no key `{k}`"),
                                        )
                                        .at(format!("{ptr}/{}", escape_token(k))),
                                    );
                                    continue;
                                }
                            }
                            if let Err(e) = check_scalar(s, v) {
                                out.push(mismatch(e).at(format!("{ptr}/{}", escape_token(k))));
                            }
                        }
                    }
                    None => out.push(mismatch(format!(
                        "`{var}` is keyed: set it with an object of keys, or set one key"
                    ))),
                }
            } else if let Err((item, e)) = check_value(ty, value) {
                out.push(
                    Diagnostic::error(Code::TypeMismatch, e)
                        .at(format!("{ptr}{item}")),
                );
            }
        }
    }
}

//! Changes against a story's declarations (Format 8.5): every `set` and `add`
//! names a declared, non-derived variable with a value of its type, and every
//! `enter`/`leave` names cast members; a settings change names a preset and
//! knobs (8.9). A base module, like `model` and `diag`: the checks judge an
//! author's changes through [`Decls`] of the resolved story
//! ([`crate::resolve::story::Story`]), the runtime a model adapter's through
//! the compiled story's ([`crate::compile::StoryIr`]), by this one code; it
//! imports no stage.

pub mod settings;
pub mod values;

use serde_json::Value;

use crate::diag::{escape_token, Code, Diagnostic};
use crate::model::{ScalarType, VarType};
use values::{check_scalar, check_value, is_int};

/// The declarations changes are checked and resolved against (Format 8.1,
/// 8.4, 6.4): the checked story's ([`crate::resolve::story::Story`]) or the
/// compiled story's ([`crate::compile::StoryIr`]). Both answer alike for
/// the same story.
pub trait Decls {
    /// The variable whose state name is `name` (`gold`, `kai.mood`).
    fn var(&self, name: &str) -> Option<VarView<'_>>;
    /// Every variable's state name, in declaration order.
    fn var_names(&self) -> Box<dyn Iterator<Item = &str> + '_>;
    /// Whether `id` may be named as a cast reference (Format 6.4): a member,
    /// a seat of the scenario (filled or not).
    fn cast_ref_ok(&self, id: &str) -> bool;
    /// The IDs a cast reference may name, in cast order: the choices an
    /// UNKNOWN_REF lists or suggests from.
    fn cast_refs(&self) -> Vec<&str>;
}

/// UNKNOWN_REF at `at`: `id` is not a member of the story's cast, with the
/// closest member or the list of them.
fn not_in_cast<D: Decls + ?Sized>(story: &D, id: &str, at: String) -> Diagnostic {
    let hint = crate::diag::suggest::one_of(id, story.cast_refs());
    Diagnostic::error(
        Code::UnknownRef,
        format!("`{id}` is not a member of the cast{hint}"),
    )
    .at(at)
}

/// A variable's declaration as changes see it.
#[derive(Debug, Clone)]
pub struct VarView<'a> {
    /// Its state name, as the declarations hold it.
    pub name: &'a str,
    /// Its type (`None`: declared with an unknown type, already reported).
    pub ty: Option<VarType>,
    /// Its keys (Format 8.4).
    pub keys: Keyed<'a>,
    /// Whether it is derived (8.1): never changed.
    pub derived: bool,
}

/// The keys of a variable (Format 8.4).
#[derive(Debug, Clone)]
pub enum Keyed<'a> {
    /// Not keyed.
    No,
    /// A fixed key set (`keys: [..]` or `keys: cast`), in order.
    Fixed(Vec<&'a str>),
    /// A `"*"` map: any key of the ID grammar.
    Open,
}

impl VarView<'_> {
    /// True for a keyed variable of any kind.
    pub fn is_keyed(&self) -> bool {
        !matches!(self.keys, Keyed::No)
    }
}

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
pub fn resolve_target<'s, D: Decls + ?Sized>(
    story: &'s D,
    name: &str,
) -> Result<Target<'s>, String> {
    match name {
        "scene.location" => return Ok(Target::Location),
        "scene.present" => return Ok(Target::Present),
        _ => {}
    }
    if let Some(decl) = story.var(name) {
        if decl.is_keyed() {
            return Err(format!(
                "`{name}` is keyed: name one key, such as `{name}.<key>` (Format 8.4)"
            ));
        }
        return Ok(Target::Variable(decl.name));
    }
    if let Some((base, key)) = name.rsplit_once('.')
        && let Some(decl) = story.var(base)
    {
        let k = decl.name;
        if decl.is_keyed() {
            match &decl.keys {
                Keyed::Fixed(keys) if !keys.contains(&key) => {
                    return Err(format!(
                        "`{base}` has no key `{key}`{}",
                        crate::diag::suggest::one_of(key, keys.iter().copied())
                    ));
                }
                Keyed::Open if !crate::model::is_id(key) => {
                    return Err(format!(
                        "`{key}` is not a valid key of `{base}`: keys follow the ID grammar"
                    ));
                }
                _ => {}
            }
            return Ok(Target::Key(k, key.to_string()));
        }
        return Err(format!("`{base}` is not a keyed variable"));
    }
    let hint = crate::diag::suggest::did_you_mean(
        name,
        story.var_names().chain(["scene.location", "scene.present"]),
    );
    Err(format!(
        "no variable `{name}` is declared in this story{hint}"
    ))
}

/// Checks a list of changes; `base` is the pointer of the list
/// (`/scenarios/0/events/1/changes`, `message:m3/changes`).
pub fn check_changes<D: Decls + ?Sized>(
    story: &D,
    changes: &[Value],
    base: &str,
    out: &mut Vec<Diagnostic>,
) {
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
                        if let Some(id) = id.as_str()
                            && !story.cast_ref_ok(id)
                        {
                            out.push(not_in_cast(story, id, format!("{at}/{k}")));
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

fn check_one<D: Decls + ?Sized>(
    story: &D,
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
                    Some(id) => out.push(not_in_cast(story, id, format!("{ptr}/{k}"))),
                    None => out.push(mismatch(
                        "`scene.present` takes a list of character IDs".into(),
                    )),
                }
            }
        }
        Target::Variable(var) | Target::Key(var, _) => {
            let Some(decl) = story.var(var) else {
                return;
            };
            if decl.derived {
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
                        for (k, v) in map {
                            if let Keyed::Fixed(keys) = &decl.keys
                                && !keys.contains(&k.as_str())
                            {
                                out.push(
                                    Diagnostic::error(
                                        Code::UnknownVariable,
                                        format!("`{var}` has no key `{k}`"),
                                    )
                                    .at(format!("{ptr}/{}", escape_token(k))),
                                );
                                continue;
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
                out.push(Diagnostic::error(Code::TypeMismatch, e).at(format!("{ptr}{item}")));
            }
        }
    }
}

/// The scalar type of the value a state name holds (Format 8.2):
/// `scene.location` a string; `None` for `scene.present`, a list or an
/// unknown name.
pub fn scalar_of<D: Decls + ?Sized>(story: &D, name: &str) -> Option<ScalarType> {
    let var = match resolve_target(story, name).ok()? {
        Target::Location => return Some(ScalarType::String),
        Target::Present => return None,
        Target::Variable(v) | Target::Key(v, _) => v,
    };
    match story.var(var)?.ty? {
        VarType::Scalar(s) => Some(s),
        _ => None,
    }
}

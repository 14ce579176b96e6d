//! Lowering change lists (Format 8.5) to [`ChangeIr`]: state names resolved
//! to variables and slots, `set` values read exactly and normalized once.

use std::sync::Arc;

use serde_json::Value;

use super::ir::{cast_index, CastIr, CastIx, ChangeIr, Layout, StoryIr, VarIr};
use super::value::{scalar_from_json, JsonView, Val};
use crate::changes::{resolve_target, Decls, Target};
use crate::model::{ScalarType, VarType};
use crate::resolve::story::Story;

/// What a change list is lowered against.
pub struct ChangeScope<'a> {
    /// The declarations state names resolve against, as the checks resolve
    /// them: the checked story's, or the compiled story's
    /// ([`ChangeScope::of_ir`]).
    pub decls: &'a dyn Decls,
    /// The compiled variables.
    pub vars: &'a [VarIr],
    /// State name → variable index.
    pub by_name: &'a foldhash::HashMap<Arc<str>, u32>,
    /// The cast, in cast order.
    pub cast: &'a [CastIr],
}

impl<'a> ChangeScope<'a> {
    /// The scope of a compiled story: its variables, their index and cast.
    pub fn of(story: &'a Story, ir: &'a StoryIr) -> Self {
        ChangeScope {
            decls: story,
            vars: &ir.vars,
            by_name: &ir.var_index,
            cast: &ir.cast,
        }
    }

    /// The scope of a compiled story alone (a story read from `ir.json`,
    /// or a session's changes proposed by a model adapter, Format 14.4,
    /// 18.7): state names resolve against the compiled declarations.
    pub fn of_ir(ir: &'a StoryIr) -> Self {
        ChangeScope {
            decls: ir,
            vars: &ir.vars,
            by_name: &ir.var_index,
            cast: &ir.cast,
        }
    }

    /// A state name's target (Format 8.7), as the checks resolve it.
    fn resolve(&self, name: &str) -> Result<Target<'a>, String> {
        resolve_target(self.decls, name)
    }

    fn cast_list<'j>(&self, v: impl JsonView<'j>) -> Result<Vec<CastIx>, String> {
        let ids = v.items().ok_or("expected a list of character IDs")?;
        let mut out = Vec::with_capacity(ids.size_hint().0);
        for id in ids {
            out.extend(cast_ref(self.decls, self.cast, id.as_str().unwrap_or(""))?);
        }
        Ok(out)
    }
}

/// The cast index a cast reference names (Format 6.4): a member by its
/// character ID, or the member filling the seat of that ID; `None` for a
/// seat this story leaves unfilled (the reference names no one).
pub fn cast_ref(decls: &dyn Decls, cast: &[CastIr], id: &str) -> Result<Option<CastIx>, String> {
    if let Some(c) = cast_index(cast, id) {
        return Ok(Some(c));
    }
    if let Some(c) = cast.iter().position(|c| c.seat.as_deref() == Some(id)) {
        return Ok(Some(c as CastIx));
    }
    if decls.cast_ref_ok(id) {
        Ok(None)
    } else {
        Err(format!("`{id}` is not a member of the cast"))
    }
}

/// Lowers a list of changes. Errors are plain messages: the input was
/// checked first, so an error here means it was not conforming.
pub fn lower_changes(scope: &ChangeScope<'_>, changes: &[Value]) -> Result<Vec<ChangeIr>, String> {
    lower_changes_in(scope, changes.iter())
}

/// [`lower_changes`] of a list read through any [`JsonView`] (a list of
/// `serde_json::Value`, or the borrowed view of its text that the IR's
/// soundness check reads, Format 14.4): written once for both.
pub fn lower_changes_in<'j, J: JsonView<'j>>(
    scope: &ChangeScope<'_>,
    changes: impl Iterator<Item = J>,
) -> Result<Vec<ChangeIr>, String> {
    let mut out = Vec::new();
    lower_changes_into(scope, changes, &mut out)?;
    Ok(out)
}

/// [`lower_changes_in`] appending to `out` (a check that lowers many
/// lists reuses one vector).
pub fn lower_changes_into<'j, J: JsonView<'j>>(
    scope: &ChangeScope<'_>,
    changes: impl Iterator<Item = J>,
    out: &mut Vec<ChangeIr>,
) -> Result<(), String> {
    for change in changes {
        let obj = change.members().ok_or("a change must be an object")?;
        for (op, body) in obj {
            match op {
                "set" | "add" => {
                    let map = body.members().ok_or("expected an object")?;
                    for (name, value) in map {
                        lower_one(scope, op == "add", name, value, out)?;
                    }
                }
                "enter" => out.push(ChangeIr::Enter(scope.cast_list(body)?)),
                "leave" => out.push(ChangeIr::Leave(scope.cast_list(body)?)),
                other => return Err(format!("unknown change `{other}`")),
            }
        }
    }
    Ok(())
}

fn lower_one<'j>(
    scope: &ChangeScope<'_>,
    add: bool,
    name: &str,
    value: impl JsonView<'j>,
    out: &mut Vec<ChangeIr>,
) -> Result<(), String> {
    let target = scope.resolve(name)?;
    match target {
        Target::Location if !add => {
            let s = value.as_str().ok_or("`scene.location` takes a string")?;
            out.push(ChangeIr::Location(Arc::from(s)));
        }
        Target::Present if !add => out.push(ChangeIr::Present(scope.cast_list(value)?)),
        Target::Location | Target::Present => {
            return Err("`add` applies to int and number variables only".into())
        }
        Target::Variable(v) => {
            let vi = *scope.by_name.get(v).ok_or("unknown variable")?;
            let var = &scope.vars[vi as usize];
            if var.derived.is_some() {
                return Err(format!("`{v}` is derived"));
            }
            match &var.layout {
                Layout::Single(slot) => {
                    let slot = *slot;
                    if add {
                        out.push(ChangeIr::Add {
                            var: vi,
                            slot,
                            amount: amount(var.ty, value)?,
                        });
                    } else {
                        let val = Val::from_json(var.ty, value)
                            .ok_or_else(|| format!("value for `{v}` has the wrong type"))?;
                        out.push(ChangeIr::Set {
                            var: vi,
                            slot,
                            value: var.norm.value(var.ty, val),
                        });
                    }
                }
                _ if add => return Err(format!("`add` needs one key of `{v}`")),
                _ => {
                    // A keyed variable set with an object: each key in written
                    // order (keys not written keep their values).
                    let map = value
                        .members()
                        .ok_or_else(|| format!("`{v}` is keyed: set it with an object"))?;
                    for (k, item) in map {
                        set_key(scope, vi, k, item, false, out)?;
                    }
                }
            }
        }
        Target::Key(v, key) => {
            let vi = *scope.by_name.get(v).ok_or("unknown variable")?;
            if scope.vars[vi as usize].derived.is_some() {
                return Err(format!("`{v}` is derived"));
            }
            set_key(scope, vi, &key, value, add, out)?;
        }
    }
    Ok(())
}

fn scalar_of(ty: VarType) -> Option<ScalarType> {
    match ty {
        VarType::Scalar(s) => Some(s),
        _ => None,
    }
}

fn amount<'j>(ty: VarType, value: impl JsonView<'j>) -> Result<Val, String> {
    match ty {
        VarType::Scalar(s @ (ScalarType::Int | ScalarType::Number)) => {
            scalar_from_json(s, value).ok_or_else(|| "the amount has the wrong type".into())
        }
        _ => Err("`add` applies to int and number variables only".into()),
    }
}

fn set_key<'j>(
    scope: &ChangeScope<'_>,
    vi: u32,
    key: &str,
    value: impl JsonView<'j>,
    add: bool,
    out: &mut Vec<ChangeIr>,
) -> Result<(), String> {
    let var = &scope.vars[vi as usize];
    let s = scalar_of(var.ty).ok_or("a keyed variable has a scalar type")?;
    let val = if add {
        amount(var.ty, value)?
    } else {
        let v = scalar_from_json(s, value).ok_or("the value has the wrong type")?;
        var.norm.scalar(s, v)
    };
    match &var.layout {
        Layout::Fixed { first, keys } => {
            let i = keys
                .iter()
                .position(|k| &**k == key)
                .ok_or_else(|| format!("`{}` has no key `{key}`", var.name))?;
            let slot = first + i as u32;
            out.push(if add {
                ChangeIr::Add {
                    var: vi,
                    slot,
                    amount: val,
                }
            } else {
                ChangeIr::Set {
                    var: vi,
                    slot,
                    value: val,
                }
            });
        }
        Layout::Open(slot) => {
            let key: Arc<str> = Arc::from(key);
            out.push(if add {
                ChangeIr::AddOpen {
                    var: vi,
                    slot: *slot,
                    key,
                    amount: val,
                }
            } else {
                ChangeIr::SetOpen {
                    var: vi,
                    slot: *slot,
                    key,
                    value: val,
                }
            });
        }
        Layout::Single(_) => return Err(format!("`{}` is not keyed", var.name)),
    }
    Ok(())
}

//! The type checker (Format 11.2): resolves every name against an [`Env`],
//! deduces every expression's type with CEL's rules (type parameters,
//! unification, `dyn` for mixed literals) and resolves each call to one of
//! the subset's overloads. Its output, [`TExpr`], is what `program.rs` lowers.
//!
//! Objects (`state`, `last`, ...) resolve at compile time: a chain of field
//! selections ending at a non-object field becomes one slot read.

use std::sync::Arc;

use super::env::Env;
use super::error::{CelError, CelErrorKind};
use super::parse::{Expr, ExprKind, MacroKind};
use super::types::{ObjectType, Type};
use super::value::Value;

/// Arithmetic operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ArithOp {
    /// `+` (numbers, strings, lists).
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`.
    Div,
    /// `%` (ints).
    Rem,
}

/// Comparison operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CmpOp {
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

impl CmpOp {
    /// The operator with its operands swapped: `a < b` is `b > a`.
    pub fn flipped(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            other => other,
        }
    }

    /// The operator of the negation: `!(a < b)` is `a >= b` (for values
    /// that compare; CEL's NaN aside).
    pub fn negated(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Ge,
            CmpOp::Le => CmpOp::Gt,
            CmpOp::Gt => CmpOp::Le,
            CmpOp::Ge => CmpOp::Lt,
            CmpOp::Eq => CmpOp::Ne,
            CmpOp::Ne => CmpOp::Eq,
        }
    }

    /// The operator as written in CEL (`<=`).
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// Functions other than operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Func {
    /// `size(x)` / `x.size()`.
    Size,
    /// `int(x)`.
    ToInt,
    /// `double(x)`.
    ToDouble,
    /// `string(x)`.
    ToString,
    /// `bool(x)`.
    ToBool,
    /// `s.contains(t)`.
    Contains,
    /// `s.startsWith(t)`.
    StartsWith,
    /// `s.endsWith(t)`.
    EndsWith,
    /// `s.matches(re)` / `matches(s, re)`.
    Matches,
    /// `hit(...)` (entry conditions).
    Hit,
    /// `roll(notation)`.
    Roll,
}

/// A checked expression: names resolved, calls resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct TExpr {
    /// What the node does.
    pub kind: TKind,
    /// Byte span in the source.
    pub span: std::ops::Range<usize>,
}

/// Checked node kinds.
#[derive(Debug, Clone, PartialEq)]
pub enum TKind {
    /// A literal.
    Const(Value),
    /// A slot read (a variable or an object's leaf field).
    Slot(usize),
    /// `has(obj.field)` on an object: whether the slot is bound.
    SlotBound(usize),
    /// A comprehension variable, by de Bruijn index (0 = innermost).
    Local(usize),
    /// A reference to an object (only ever the operand of a select).
    Object(String),
    /// `!x`.
    Not(Box<TExpr>),
    /// `-x`.
    Neg(Box<TExpr>),
    /// Arithmetic.
    Arith(ArithOp, Box<TExpr>, Box<TExpr>),
    /// Comparison.
    Cmp(CmpOp, Box<TExpr>, Box<TExpr>),
    /// `a && b`.
    And(Box<TExpr>, Box<TExpr>),
    /// `a || b`.
    Or(Box<TExpr>, Box<TExpr>),
    /// `c ? a : b`.
    Cond(Box<TExpr>, Box<TExpr>, Box<TExpr>),
    /// `a[i]`.
    Index(Box<TExpr>, Box<TExpr>),
    /// `a in b`.
    In(Box<TExpr>, Box<TExpr>),
    /// `m.f` or `has(m.f)` on a map (or `dyn`).
    Select(Box<TExpr>, Arc<str>, bool),
    /// A function call (receiver first for receiver calls).
    Call(Func, Vec<TExpr>),
    /// A list literal.
    List(Vec<TExpr>),
    /// A map literal.
    Map(Vec<(TExpr, TExpr)>),
    /// A macro.
    Comprehension {
        /// Which macro.
        kind: MacroKind,
        /// The list or map.
        range: Box<TExpr>,
        /// Predicate.
        pred: Option<Box<TExpr>>,
        /// Transform (map).
        transform: Option<Box<TExpr>>,
    },
}

/// Checker-internal types: [`Type`] plus type variables and an error type
/// that unifies with everything (so one mistake is reported once).
#[derive(Debug, Clone, PartialEq)]
enum Ty {
    Bool,
    Int,
    Double,
    String,
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    Dyn,
    Object(Arc<ObjectType>),
    Var(usize),
    Error,
}

impl Ty {
    fn from_type(t: &Type) -> Ty {
        match t {
            Type::Bool => Ty::Bool,
            Type::Int => Ty::Int,
            Type::Double => Ty::Double,
            Type::String => Ty::String,
            Type::Dyn => Ty::Dyn,
            Type::List(e) => Ty::List(Box::new(Ty::from_type(e))),
            Type::Map(k, v) => Ty::Map(Box::new(Ty::from_type(k)), Box::new(Ty::from_type(v))),
            Type::Object(o) => Ty::Object(o.clone()),
        }
    }
    fn list(e: Ty) -> Ty {
        Ty::List(Box::new(e))
    }
    fn map(k: Ty, v: Ty) -> Ty {
        Ty::Map(Box::new(k), Box::new(v))
    }
}

/// Checks `expr` against `env`; returns the checked tree and its type.
pub fn check(expr: &Expr, source: &str, env: &Env) -> Result<(TExpr, Type), Vec<CelError>> {
    let mut c = Checker {
        env,
        source,
        subst: Vec::new(),
        scopes: Vec::new(),
        errors: Vec::new(),
    };
    let (t, ty) = c.expr(expr);
    if let Ty::Object(o) = c.resolve(&ty) {
        c.error(
            expr,
            format!("`{}` is an object: read one of its fields", o.name),
        );
    }
    if c.errors.is_empty() {
        let ty = c.finalize(&ty);
        Ok((t, ty))
    } else {
        Err(c.errors)
    }
}

struct Checker<'a> {
    env: &'a Env,
    source: &'a str,
    subst: Vec<Option<Ty>>,
    scopes: Vec<(String, Ty)>,
    errors: Vec<CelError>,
}

fn op_name(func: &str) -> &str {
    match func {
        "_+_" => "+",
        "_-_" => "-",
        "_*_" => "*",
        "_/_" => "/",
        "_%_" => "%",
        "-_" => "unary -",
        "!_" => "!",
        "_==_" => "==",
        "_!=_" => "!=",
        "_<_" => "<",
        "_<=_" => "<=",
        "_>_" => ">",
        "_>=_" => ">=",
        "_&&_" => "&&",
        "_||_" => "||",
        "_?_:_" => "?:",
        "_[_]" => "[]",
        "@in" => "in",
        other => other,
    }
}

impl Checker<'_> {
    fn error(&mut self, at: &Expr, message: impl Into<String>) {
        self.errors.push(CelError::new(
            CelErrorKind::Type,
            message,
            self.source,
            at.span.clone(),
        ));
    }

    fn fresh(&mut self) -> Ty {
        self.subst.push(None);
        Ty::Var(self.subst.len() - 1)
    }

    /// Follows variable bindings at the top of `t`.
    fn resolve(&self, t: &Ty) -> Ty {
        let mut t = t.clone();
        for _ in 0..1000 {
            match t {
                Ty::Var(v) => match self.subst.get(v).and_then(Option::as_ref) {
                    Some(b) => t = b.clone(),
                    None => return t,
                },
                _ => return t,
            }
        }
        Ty::Error
    }

    fn occurs(&self, v: usize, t: &Ty) -> bool {
        match self.resolve(t) {
            Ty::Var(w) => v == w,
            Ty::List(e) => self.occurs(v, &e),
            Ty::Map(k, x) => self.occurs(v, &k) || self.occurs(v, &x),
            _ => false,
        }
    }

    fn unify(&mut self, a: &Ty, b: &Ty) -> bool {
        let (a, b) = (self.resolve(a), self.resolve(b));
        match (&a, &b) {
            (Ty::Error, _) | (_, Ty::Error) => true,
            (Ty::Var(x), Ty::Var(y)) if x == y => true,
            (Ty::Var(x), t) | (t, Ty::Var(x)) => {
                if self.occurs(*x, t) {
                    return false;
                }
                self.subst[*x] = Some(t.clone());
                true
            }
            (Ty::Dyn, _) | (_, Ty::Dyn) => true,
            (Ty::List(x), Ty::List(y)) => self.unify(x, y),
            (Ty::Map(k1, v1), Ty::Map(k2, v2)) => self.unify(k1, k2) && self.unify(v1, v2),
            (Ty::Object(x), Ty::Object(y)) => Arc::ptr_eq(x, y) || x == y,
            _ => a == b,
        }
    }

    /// Unifies or leaves the substitution untouched.
    fn try_unify(&mut self, a: &Ty, b: &Ty) -> bool {
        let saved = self.subst.clone();
        if self.unify(a, b) {
            true
        } else {
            self.subst = saved;
            false
        }
    }

    /// The type of a literal element after `prev`: `prev` when they unify,
    /// `dyn` otherwise (CEL's mixed aggregate literals).
    fn join(&mut self, prev: Ty, cur: &Ty) -> Ty {
        if self.try_unify(&prev, cur) {
            prev
        } else {
            Ty::Dyn
        }
    }

    fn finalize_ty(&self, t: &Ty, depth: u32) -> Type {
        if depth > 256 {
            return Type::Dyn;
        }
        match self.resolve(t) {
            Ty::Bool => Type::Bool,
            Ty::Int => Type::Int,
            Ty::Double => Type::Double,
            Ty::String => Type::String,
            Ty::List(e) => Type::list(self.finalize_ty(&e, depth + 1)),
            Ty::Map(k, v) => Type::map(
                self.finalize_ty(&k, depth + 1),
                self.finalize_ty(&v, depth + 1),
            ),
            Ty::Object(o) => Type::Object(o),
            Ty::Dyn | Ty::Var(_) | Ty::Error => Type::Dyn,
        }
    }

    fn finalize(&self, t: &Ty) -> Type {
        self.finalize_ty(t, 0)
    }

    fn show(&self, t: &Ty) -> String {
        match self.resolve(t) {
            Ty::Object(o) => format!("object `{}`", o.name),
            _ => self.finalize(t).to_string(),
        }
    }

    fn texpr(kind: TKind, e: &Expr) -> TExpr {
        TExpr {
            kind,
            span: e.span.clone(),
        }
    }

    fn expr(&mut self, e: &Expr) -> (TExpr, Ty) {
        match &e.kind {
            ExprKind::Bool(b) => (Self::texpr(TKind::Const(Value::Bool(*b)), e), Ty::Bool),
            ExprKind::Int(i) => (Self::texpr(TKind::Const(Value::Int(*i)), e), Ty::Int),
            ExprKind::Double(d) => (Self::texpr(TKind::Const(Value::Double(*d)), e), Ty::Double),
            ExprKind::String(s) => (
                Self::texpr(TKind::Const(Value::String(s.clone())), e),
                Ty::String,
            ),
            ExprKind::Unsupported(msg) => {
                self.error(e, *msg);
                (Self::texpr(TKind::Const(Value::Bool(false)), e), Ty::Error)
            }
            ExprKind::Ident(name) => self.ident(e, name),
            ExprKind::Select {
                operand,
                field,
                test,
            } => self.select(e, operand, field, *test),
            ExprKind::Call { func, target, args } => self.call(e, func, target.as_deref(), args),
            ExprKind::List(items) => {
                let mut elem: Option<Ty> = None;
                let mut out = Vec::with_capacity(items.len());
                for it in items {
                    let (t, ty) = self.value_expr(it);
                    out.push(t);
                    elem = Some(match elem {
                        None => ty,
                        Some(prev) => self.join(prev, &ty),
                    });
                }
                let elem = match elem {
                    Some(t) => t,
                    None => self.fresh(),
                };
                (Self::texpr(TKind::List(out), e), Ty::list(elem))
            }
            ExprKind::Map(entries) => {
                let (mut kt, mut vt): (Option<Ty>, Option<Ty>) = (None, None);
                let mut out = Vec::with_capacity(entries.len());
                for (k, v) in entries {
                    let (tk, tyk) = self.value_expr(k);
                    match self.resolve(&tyk) {
                        Ty::List(_) | Ty::Map(..) => {
                            self.error(k, format!("a map key cannot be a {}", self.show(&tyk)))
                        }
                        _ => {}
                    }
                    let (tv, tyv) = self.value_expr(v);
                    out.push((tk, tv));
                    kt = Some(match kt {
                        None => tyk,
                        Some(p) => self.join(p, &tyk),
                    });
                    vt = Some(match vt {
                        None => tyv,
                        Some(p) => self.join(p, &tyv),
                    });
                }
                let k = match kt {
                    Some(t) => t,
                    None => self.fresh(),
                };
                let v = match vt {
                    Some(t) => t,
                    None => self.fresh(),
                };
                (Self::texpr(TKind::Map(out), e), Ty::map(k, v))
            }
            ExprKind::Comprehension {
                kind,
                var,
                range,
                pred,
                transform,
            } => self.comprehension(e, *kind, var, range, pred.as_deref(), transform.as_deref()),
        }
    }

    /// An expression used as a value: objects are refused.
    fn value_expr(&mut self, e: &Expr) -> (TExpr, Ty) {
        let (t, ty) = self.expr(e);
        if let Ty::Object(o) = self.resolve(&ty) {
            self.error(
                e,
                format!("`{}` is an object: read one of its fields", o.name),
            );
            return (t, Ty::Error);
        }
        (t, ty)
    }

    fn ident(&mut self, e: &Expr, name: &str) -> (TExpr, Ty) {
        if let Some(pos) = self.scopes.iter().rposition(|(n, _)| n == name) {
            let ty = self.scopes[pos].1.clone();
            let depth = self.scopes.len() - 1 - pos;
            return (Self::texpr(TKind::Local(depth), e), ty);
        }
        match self.env.lookup(name) {
            Some(Type::Object(o)) => (
                Self::texpr(TKind::Object(name.to_string()), e),
                Ty::Object(o.clone()),
            ),
            Some(t) => match self.env.slot(name) {
                Some(slot) => (Self::texpr(TKind::Slot(slot), e), Ty::from_type(t)),
                None => {
                    self.error(e, format!("`{name}` has no slot"));
                    (Self::texpr(TKind::Const(Value::Bool(false)), e), Ty::Error)
                }
            },
            None => {
                let what = if name == "hit" || name == "roll" {
                    format!("`{name}` is a function: call it")
                } else {
                    format!("undeclared reference to `{name}`")
                };
                self.error(e, what);
                (Self::texpr(TKind::Const(Value::Bool(false)), e), Ty::Error)
            }
        }
    }

    fn select(&mut self, e: &Expr, operand: &Expr, field: &str, test: bool) -> (TExpr, Ty) {
        let (top, oty) = self.expr(operand);
        self.select_typed(e, top, oty, field, test)
    }

    /// Selects `field` from an operand already checked as `top` of type
    /// `oty` (`x.field`, and `x["field"]` on an object, Format 11.3).
    fn select_typed(
        &mut self,
        e: &Expr,
        top: TExpr,
        oty: Ty,
        field: &str,
        test: bool,
    ) -> (TExpr, Ty) {
        match self.resolve(&oty) {
            Ty::Object(o) => {
                let TKind::Object(prefix) = &top.kind else {
                    self.error(e, "objects can only be read by name");
                    return (top, Ty::Error);
                };
                let Some(fty) = o.fields.get(field) else {
                    self.error(
                        e,
                        format!(
                            "`{}` has no field `{field}`{}",
                            o.name,
                            crate::diag::suggest::did_you_mean(
                                field,
                                o.fields.keys().map(String::as_str)
                            )
                        ),
                    );
                    return (top, Ty::Error);
                };
                let name = format!("{prefix}.{field}");
                if let Type::Object(inner) = fty {
                    if test {
                        return (Self::texpr(TKind::Const(Value::Bool(true)), e), Ty::Bool);
                    }
                    return (
                        Self::texpr(TKind::Object(name), e),
                        Ty::Object(inner.clone()),
                    );
                }
                let Some(slot) = self.env.slot(&name) else {
                    self.error(e, format!("`{name}` has no slot"));
                    return (top, Ty::Error);
                };
                if test {
                    (Self::texpr(TKind::SlotBound(slot), e), Ty::Bool)
                } else {
                    (Self::texpr(TKind::Slot(slot), e), Ty::from_type(fty))
                }
            }
            Ty::Map(_, v) => {
                let ty = if test { Ty::Bool } else { *v };
                (
                    Self::texpr(TKind::Select(Box::new(top), Arc::from(field), test), e),
                    ty,
                )
            }
            Ty::Dyn | Ty::Error | Ty::Var(_) => {
                let ty = if test { Ty::Bool } else { Ty::Dyn };
                (
                    Self::texpr(TKind::Select(Box::new(top), Arc::from(field), test), e),
                    ty,
                )
            }
            other => {
                self.error(
                    e,
                    format!(
                        "`.{field}` cannot select from a value of type {}",
                        self.show(&other)
                    ),
                );
                (top, Ty::Error)
            }
        }
    }

    fn comprehension(
        &mut self,
        e: &Expr,
        kind: MacroKind,
        var: &str,
        range: &Expr,
        pred: Option<&Expr>,
        transform: Option<&Expr>,
    ) -> (TExpr, Ty) {
        let (trange, rty) = self.value_expr(range);
        let var_ty = match self.resolve(&rty) {
            Ty::List(el) => *el,
            Ty::Map(k, _) => *k,
            Ty::Dyn | Ty::Error => Ty::Dyn,
            other => {
                self.error(
                    range,
                    format!(
                        "a {} cannot be iterated: use a list or map",
                        self.show(&other)
                    ),
                );
                Ty::Error
            }
        };
        self.scopes.push((var.to_string(), var_ty.clone()));
        let tpred = pred.map(|p| {
            let (t, ty) = self.value_expr(p);
            if !self.unify(&ty, &Ty::Bool) {
                self.error(
                    p,
                    format!("the condition must be a bool, not {}", self.show(&ty)),
                );
            }
            Box::new(t)
        });
        let mut result = Ty::Bool;
        let ttrans = transform.map(|f| {
            let (t, ty) = self.value_expr(f);
            result = Ty::list(ty);
            Box::new(t)
        });
        self.scopes.pop();
        if kind == MacroKind::Filter {
            result = Ty::list(var_ty);
        }
        (
            Self::texpr(
                TKind::Comprehension {
                    kind,
                    range: Box::new(trange),
                    pred: tpred,
                    transform: ttrans,
                },
                e,
            ),
            result,
        )
    }

    fn call(&mut self, e: &Expr, func: &str, target: Option<&Expr>, args: &[Expr]) -> (TExpr, Ty) {
        // Logical operators first: both operands must be bool.
        if let ("_&&_" | "_||_", None, [a, b]) = (func, target, args) {
            let (ta, tya) = self.value_expr(a);
            let (tb, tyb) = self.value_expr(b);
            for (x, ty) in [(a, &tya), (b, &tyb)] {
                if !self.unify(ty, &Ty::Bool) {
                    self.error(
                        x,
                        format!(
                            "`{}` needs bool operands, not {}",
                            op_name(func),
                            self.show(ty)
                        ),
                    );
                }
            }
            let k = if func == "_&&_" {
                TKind::And(Box::new(ta), Box::new(tb))
            } else {
                TKind::Or(Box::new(ta), Box::new(tb))
            };
            return (Self::texpr(k, e), Ty::Bool);
        }
        // On the object types of the environment, `x["name"]` with a string
        // literal is `x.name` (Format 11.3): `state["old-town"].alarm`.
        let mut first: Option<(TExpr, Ty)> = None;
        if let ("_[_]", None, [obj, key]) = (func, target, args)
            && let ExprKind::String(field) = &key.kind
        {
            let (tobj, oty) = self.expr(obj);
            if let Ty::Object(_) = self.resolve(&oty) {
                return self.select_typed(e, tobj, oty, field, false);
            }
            first = Some((tobj, oty));
        }
        let mut targs = Vec::with_capacity(args.len() + 1);
        let mut tys = Vec::with_capacity(args.len() + 1);
        if let Some(t) = target {
            let (x, ty) = self.value_expr(t);
            targs.push(x);
            tys.push(ty);
        }
        for (i, a) in args.iter().enumerate() {
            let typed = if i == 0 { first.take() } else { None };
            let (x, ty) = match typed {
                Some(t) => t,
                None => self.value_expr(a),
            };
            targs.push(x);
            tys.push(ty);
        }
        if tys.iter().any(|t| self.resolve(t) == Ty::Error) {
            return (Self::texpr(TKind::Const(Value::Bool(false)), e), Ty::Error);
        }
        let recv = target.is_some();
        let Some(overloads) = self.overloads(func, recv, tys.len()) else {
            let msg = match (func, recv) {
                ("hit", false) if !self.env.allow_hit => {
                    "`hit()` is only available in entry conditions".to_string()
                }
                ("roll", false) if !self.env.allow_roll => {
                    "`roll()` is not available here".to_string()
                }
                (f, true) => format!("undeclared method `.{f}()` with {} argument(s)", args.len()),
                (f, false) if f.starts_with('_') || f.starts_with('@') || f.starts_with('!') => {
                    format!("`{}` is not available", op_name(f))
                }
                (f, false) => format!(
                    "undeclared function `{f}()` with {} argument(s)",
                    args.len()
                ),
            };
            self.error(e, msg);
            return (Self::texpr(TKind::Const(Value::Bool(false)), e), Ty::Error);
        };
        // Try each overload; keep the bindings of a single match.
        let mut matched: Vec<(Vec<Option<Ty>>, Ty, usize)> = Vec::new();
        for (i, (params, result)) in overloads.into_iter().enumerate() {
            let saved = self.subst.clone();
            if params.len() == tys.len()
                && params.iter().zip(tys.iter()).all(|(p, a)| self.unify(a, p))
            {
                matched.push((self.subst.clone(), result, i));
            }
            self.subst = saved;
        }
        let (ty, which) = match matched.len() {
            0 => {
                let shown: Vec<String> = tys.iter().map(|t| self.show(t)).collect();
                let name = op_name(func);
                let msg = if func.starts_with('_')
                    || func.starts_with('@')
                    || func.starts_with('!')
                    || func == "-_"
                {
                    format!("`{name}` cannot be applied to ({})", shown.join(", "))
                } else if recv {
                    format!(
                        "no overload of `.{name}()` for receiver {} and arguments ({})",
                        shown[0],
                        shown[1..].join(", ")
                    )
                } else {
                    format!(
                        "no overload of `{name}()` for arguments ({})",
                        shown.join(", ")
                    )
                };
                self.error(e, msg);
                return (Self::texpr(TKind::Const(Value::Bool(false)), e), Ty::Error);
            }
            1 => {
                let (subst, result, i) = matched.pop().expect("one match");
                self.subst = subst;
                (result, i)
            }
            _ => {
                // Several overloads fit (a `dyn` argument): the result is
                // their common type, or `dyn`.
                let first = self.finalize(&matched[0].1);
                let same = matched.iter().all(|(s, r, _)| {
                    let saved = std::mem::replace(&mut self.subst, s.clone());
                    let f = self.finalize(r);
                    self.subst = saved;
                    f == first && !first.contains_dyn()
                });
                (
                    if same { matched[0].1.clone() } else { Ty::Dyn },
                    matched[0].2,
                )
            }
        };
        let kind = self.build(func, which, targs);
        // A literal pattern that is not valid RE2 fails to check (Format 11.1).
        if let TKind::Call(Func::Matches, args) = &kind
            && let Some(TExpr {
                kind: TKind::Const(Value::String(p)),
                ..
            }) = args.get(1)
            && let Err(err) = super::eval::check_regex(p)
        {
            self.error(e, err.message);
        }
        // So does a literal argument of `roll()` that is not dice notation
        // within the bounds (Format 11.5).
        if let TKind::Call(Func::Roll, args) = &kind
            && let Some(TExpr {
                kind: TKind::Const(Value::String(n)),
                ..
            }) = args.first()
            && let Err(err) = super::dice::parse_notation(n)
        {
            self.error(e, err.message.into_owned());
        }
        (Self::texpr(kind, e), ty)
    }

    /// The overloads of a function: parameter types (receiver first) and
    /// result. `None` when the function is not declared.
    fn overloads(&mut self, func: &str, recv: bool, argc: usize) -> Option<Vec<(Vec<Ty>, Ty)>> {
        use Ty::{Bool as B, Double as D, Int as I, String as S};
        let two = |a: Ty, b: Ty, r: Ty| (vec![a, b], r);
        let one = |a: Ty, r: Ty| (vec![a], r);
        Some(match (func, recv) {
            ("_+_", false) => {
                let a = self.fresh();
                vec![
                    two(I, I, I),
                    two(D, D, D),
                    two(S, S, S),
                    two(Ty::list(a.clone()), Ty::list(a.clone()), Ty::list(a)),
                ]
            }
            ("_-_" | "_*_" | "_/_", false) => vec![two(I, I, I), two(D, D, D)],
            ("_%_", false) => vec![two(I, I, I)],
            ("-_", false) => vec![one(I, I), one(D, D)],
            ("!_", false) => vec![one(B, B)],
            ("_==_" | "_!=_", false) => {
                let a = self.fresh();
                vec![two(a.clone(), a, B)]
            }
            ("_<_" | "_<=_" | "_>_" | "_>=_", false) => vec![
                two(B, B, B),
                two(I, I, B),
                two(D, D, B),
                two(S, S, B),
                two(I, D, B),
                two(D, I, B),
            ],
            ("_?_:_", false) => {
                let a = self.fresh();
                vec![(vec![B, a.clone(), a.clone()], a)]
            }
            ("_[_]", false) => {
                let (a, k, v) = (self.fresh(), self.fresh(), self.fresh());
                vec![
                    two(Ty::list(a.clone()), I, a),
                    two(Ty::map(k.clone(), v.clone()), k, v),
                ]
            }
            ("@in", false) => {
                let (a, b) = (self.fresh(), self.fresh());
                vec![
                    two(a.clone(), Ty::list(a.clone()), B),
                    two(a.clone(), Ty::map(a, b), B),
                ]
            }
            ("size", _) => {
                let (a, k, v) = (self.fresh(), self.fresh(), self.fresh());
                vec![one(S, I), one(Ty::list(a), I), one(Ty::map(k, v), I)]
            }
            ("int", false) => vec![one(I, I), one(D, I), one(S, I)],
            ("double", false) => vec![one(D, D), one(I, D), one(S, D)],
            ("string", false) => vec![one(S, S), one(I, S), one(D, S), one(B, S)],
            ("bool", false) => vec![one(B, B), one(S, B)],
            ("contains" | "startsWith" | "endsWith" | "matches", true) => vec![two(S, S, B)],
            ("matches", false) => vec![two(S, S, B)],
            ("hit", false) if self.env.allow_hit => {
                if argc == 0 {
                    return None;
                }
                vec![
                    (vec![S; argc], B),
                    (
                        {
                            let mut v = vec![Ty::list(S)];
                            v.truncate(argc);
                            v
                        },
                        B,
                    ),
                ]
            }
            ("roll", false) if self.env.allow_roll => vec![one(S, I)],
            _ => return None,
        })
    }

    fn build(&self, func: &str, which: usize, mut args: Vec<TExpr>) -> TKind {
        let pop2 = |args: &mut Vec<TExpr>| {
            let b = args.pop();
            let a = args.pop();
            match (a, b) {
                (Some(a), Some(b)) => (Box::new(a), Box::new(b)),
                _ => (Box::new(const_false()), Box::new(const_false())),
            }
        };
        match func {
            "_+_" | "_-_" | "_*_" | "_/_" | "_%_" => {
                let op = match func {
                    "_+_" => ArithOp::Add,
                    "_-_" => ArithOp::Sub,
                    "_*_" => ArithOp::Mul,
                    "_/_" => ArithOp::Div,
                    _ => ArithOp::Rem,
                };
                let (a, b) = pop2(&mut args);
                TKind::Arith(op, a, b)
            }
            "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => {
                let op = match func {
                    "_==_" => CmpOp::Eq,
                    "_!=_" => CmpOp::Ne,
                    "_<_" => CmpOp::Lt,
                    "_<=_" => CmpOp::Le,
                    "_>_" => CmpOp::Gt,
                    _ => CmpOp::Ge,
                };
                let (a, b) = pop2(&mut args);
                TKind::Cmp(op, a, b)
            }
            "-_" => TKind::Neg(Box::new(args.pop().unwrap_or_else(const_false))),
            "!_" => TKind::Not(Box::new(args.pop().unwrap_or_else(const_false))),
            "_?_:_" => {
                let (a, b) = pop2(&mut args);
                let c = args.pop().unwrap_or_else(const_false);
                TKind::Cond(Box::new(c), a, b)
            }
            "_[_]" => {
                let (a, b) = pop2(&mut args);
                TKind::Index(a, b)
            }
            "@in" => {
                let (a, b) = pop2(&mut args);
                TKind::In(a, b)
            }
            _ => {
                let f = match func {
                    "size" => Func::Size,
                    "int" => Func::ToInt,
                    "double" => Func::ToDouble,
                    "string" => Func::ToString,
                    "bool" => Func::ToBool,
                    "contains" => Func::Contains,
                    "startsWith" => Func::StartsWith,
                    "endsWith" => Func::EndsWith,
                    "matches" => Func::Matches,
                    "hit" => Func::Hit,
                    _ => Func::Roll,
                };
                let _ = which;
                TKind::Call(f, args)
            }
        }
    }
}

fn const_false() -> TExpr {
    TExpr {
        kind: TKind::Const(Value::Bool(false)),
        span: 0..0,
    }
}

/// The environment slots a checked expression reads.
pub fn slot_reads(e: &TExpr, out: &mut Vec<usize>) {
    match &e.kind {
        TKind::Slot(s) | TKind::SlotBound(s) => out.push(*s),
        TKind::Const(_) | TKind::Local(_) | TKind::Object(_) => {}
        TKind::Not(a) | TKind::Neg(a) | TKind::Select(a, _, _) => slot_reads(a, out),
        TKind::Arith(_, a, b)
        | TKind::Cmp(_, a, b)
        | TKind::And(a, b)
        | TKind::Or(a, b)
        | TKind::Index(a, b)
        | TKind::In(a, b) => {
            slot_reads(a, out);
            slot_reads(b, out);
        }
        TKind::Cond(a, b, c) => {
            slot_reads(a, out);
            slot_reads(b, out);
            slot_reads(c, out);
        }
        TKind::Call(_, args) | TKind::List(args) => args.iter().for_each(|a| slot_reads(a, out)),
        TKind::Map(entries) => entries.iter().for_each(|(k, v)| {
            slot_reads(k, out);
            slot_reads(v, out);
        }),
        TKind::Comprehension {
            range,
            pred,
            transform,
            ..
        } => {
            slot_reads(range, out);
            if let Some(p) = pred {
                slot_reads(p, out);
            }
            if let Some(t) = transform {
                slot_reads(t, out);
            }
        }
    }
}

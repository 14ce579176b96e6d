//! CEL types of Troupe's subset (Format 11.1): bool, int, double, string,
//! `list(T)`, `map(K, V)`, `dyn` (only where CEL deduces it) and objects
//! (the environment's `state`, `scene`, `last`, ...: Format 11.3).

use std::fmt;
use std::sync::Arc;

use indexmap::IndexMap;

/// A CEL type.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Type {
    /// `bool`.
    Bool,
    /// `int` (64-bit signed).
    Int,
    /// `double` (IEEE 754 binary64).
    Double,
    /// `string` (Unicode text).
    String,
    /// `list(T)`.
    List(Box<Type>),
    /// `map(K, V)`.
    Map(Box<Type>, Box<Type>),
    /// `dyn`: any type. Never declared by Troupe; deduced for `[]` (`list(dyn)`)
    /// and mixed literals.
    Dyn,
    /// An object with named fields, resolved at compile time (Format 11.3):
    /// only its fields can be read (`state.trust`), never the object itself.
    Object(Arc<ObjectType>),
}

/// The shape of an object-typed variable: a name (for messages) and its
/// fields in declaration order.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct ObjectType {
    /// The object's name as shown in messages (`state`, `last`).
    pub name: String,
    /// Fields, in declaration order.
    pub fields: IndexMap<String, Type>,
}

impl ObjectType {
    /// An empty object type called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            fields: IndexMap::new(),
        }
    }

    /// Adds (or replaces) a field; returns `self` for chaining.
    pub fn field(mut self, name: impl Into<String>, ty: Type) -> Self {
        self.fields.insert(name.into(), ty);
        self
    }

    /// Wraps the object type into a [`Type`].
    pub fn into_type(self) -> Type {
        Type::Object(Arc::new(self))
    }
}

/// A type string that is not a type of the subset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a CEL type of Troupe's subset (bool, int, double, string, list(T), map(K, V), dyn)")]
pub struct TypeParseError {
    /// The text that failed to parse.
    pub text: String,
}

impl Type {
    /// `list(elem)`.
    pub fn list(elem: Type) -> Type {
        Type::List(Box::new(elem))
    }

    /// `map(key, value)`.
    pub fn map(key: Type, value: Type) -> Type {
        Type::Map(Box::new(key), Box::new(value))
    }

    /// Parses CEL type syntax: `bool`, `int`, `double`, `string`, `dyn`,
    /// `list(T)`, `map(K, V)` (spaces allowed around tokens).
    pub fn parse(text: &str) -> Result<Type, TypeParseError> {
        let err = || TypeParseError {
            text: text.to_string(),
        };
        let mut p = TypeParser { s: text, depth: 0 };
        let ty = p.ty().ok_or_else(err)?;
        if p.s.trim().is_empty() {
            Ok(ty)
        } else {
            Err(err())
        }
    }

    /// True for `dyn` anywhere inside the type.
    pub fn contains_dyn(&self) -> bool {
        match self {
            Type::Dyn => true,
            Type::List(e) => e.contains_dyn(),
            Type::Map(k, v) => k.contains_dyn() || v.contains_dyn(),
            _ => false,
        }
    }
}

struct TypeParser<'a> {
    s: &'a str,
    depth: u32,
}

impl TypeParser<'_> {
    fn eat(&mut self, tok: &str) -> bool {
        let t = self.s.trim_start();
        if let Some(rest) = t.strip_prefix(tok) {
            self.s = rest;
            true
        } else {
            false
        }
    }

    fn word(&mut self) -> &str {
        let t = self.s.trim_start();
        let end = t
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(t.len());
        let (w, rest) = t.split_at(end);
        self.s = rest;
        w
    }

    fn ty(&mut self) -> Option<Type> {
        self.depth += 1;
        if self.depth > 64 {
            return None;
        }
        let ty = match self.word() {
            "bool" => Type::Bool,
            "int" => Type::Int,
            "double" => Type::Double,
            "string" => Type::String,
            "dyn" => Type::Dyn,
            "list" => {
                if !self.eat("(") {
                    return None;
                }
                let e = self.ty()?;
                if !self.eat(")") {
                    return None;
                }
                Type::list(e)
            }
            "map" => {
                if !self.eat("(") {
                    return None;
                }
                let k = self.ty()?;
                if !self.eat(",") {
                    return None;
                }
                let v = self.ty()?;
                if !self.eat(")") {
                    return None;
                }
                Type::map(k, v)
            }
            _ => return None,
        };
        self.depth -= 1;
        Some(ty)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Bool => f.write_str("bool"),
            Type::Int => f.write_str("int"),
            Type::Double => f.write_str("double"),
            Type::String => f.write_str("string"),
            Type::Dyn => f.write_str("dyn"),
            Type::List(e) => write!(f, "list({e})"),
            Type::Map(k, v) => write!(f, "map({k}, {v})"),
            Type::Object(o) => write!(f, "object `{}`", o.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_types() {
        for s in [
            "bool",
            "int",
            "double",
            "string",
            "dyn",
            "list(int)",
            "map(string, list(double))",
        ] {
            assert_eq!(Type::parse(s).unwrap().to_string(), s);
        }
        assert_eq!(
            Type::parse(" map( int ,string ) ").unwrap(),
            Type::map(Type::Int, Type::String)
        );
        for bad in ["", "uint", "list(int", "map(int)", "list(int))", "bytes"] {
            assert!(Type::parse(bad).is_err(), "{bad}");
        }
        let deep = format!("{}int{}", "list(".repeat(100), ")".repeat(100));
        assert!(Type::parse(&deep).is_err());
    }
}

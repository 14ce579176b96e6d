//! Variable types (Format 8.2): `int`, `number`, `bool`, `string`,
//! `list(T)` and `map(string, T)` with a scalar `T`.

use std::fmt;

/// A scalar variable type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ScalarType {
    /// A 64-bit signed integer.
    Int,
    /// An exact decimal (`rust_decimal`), rounded to the variable's places.
    Number,
    /// `true` or `false`.
    Bool,
    /// A UTF-8 string.
    String,
}

/// A variable's declared type (Format 8.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum VarType {
    /// One scalar value.
    Scalar(ScalarType),
    /// `list(T)`.
    List(ScalarType),
    /// `map(string, T)`.
    Map(ScalarType),
}

impl ScalarType {
    fn parse(text: &str) -> Option<Self> {
        Some(match text.trim() {
            "int" => ScalarType::Int,
            "number" => ScalarType::Number,
            "bool" => ScalarType::Bool,
            "string" => ScalarType::String,
            _ => return None,
        })
    }

    /// The type's name as written in the format.
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::Int => "int",
            ScalarType::Number => "number",
            ScalarType::Bool => "bool",
            ScalarType::String => "string",
        }
    }
}

impl VarType {
    /// Parses `int`, `list(string)`, `map(string, int)`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let t = text.trim();
        if let Some(inner) = t.strip_prefix("list(").and_then(|r| r.strip_suffix(')')) {
            return ScalarType::parse(inner).map(VarType::List);
        }
        if let Some(inner) = t.strip_prefix("map(").and_then(|r| r.strip_suffix(')')) {
            let (k, v) = inner.split_once(',')?;
            if k.trim() != "string" {
                return None;
            }
            return ScalarType::parse(v).map(VarType::Map);
        }
        ScalarType::parse(t).map(VarType::Scalar)
    }

    /// True for `int` and `number`, the types `add`, `min` and `max` apply to.
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            VarType::Scalar(ScalarType::Int) | VarType::Scalar(ScalarType::Number)
        )
    }
}

impl fmt::Display for VarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VarType::Scalar(s) => f.write_str(s.name()),
            VarType::List(s) => write!(f, "list({})", s.name()),
            VarType::Map(s) => write!(f, "map(string, {})", s.name()),
        }
    }
}

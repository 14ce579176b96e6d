//! Values against declared types (Format 8.2): does a JSON value fit a
//! variable's type?

use std::str::FromStr;

use rust_decimal::Decimal;
use serde_json::Value;

use crate::model::{ScalarType, VarType};

/// Reads a JSON number as an exact decimal from its source text (Format 2.2:
/// at most 28 significant digits). `None` for a non-number or one that does
/// not fit.
pub fn exact_decimal(v: &Value) -> Option<Decimal> {
    let Value::Number(n) = v else { return None };
    let text = n.to_string();
    Decimal::from_str(&text)
        .or_else(|_| Decimal::from_scientific(&text))
        .ok()
}

/// True when `v` is a JSON integer that fits an i64.
pub fn is_int(v: &Value) -> bool {
    matches!(v, Value::Number(n) if n.as_i64().is_some() && !n.to_string().contains(['.', 'e', 'E']))
}

/// Checks a value against a scalar type; `Err` says what is wrong.
pub fn check_scalar(ty: ScalarType, v: &Value) -> Result<(), String> {
    let ok = match ty {
        ScalarType::Int => is_int(v),
        ScalarType::Number => exact_decimal(v).is_some(),
        ScalarType::Bool => v.is_boolean(),
        ScalarType::String => v.is_string(),
    };
    if ok {
        Ok(())
    } else if ty == ScalarType::Number && v.is_number() {
        Err(format!(
            "{v} does not fit an exact decimal (at most 28 significant digits)"
        ))
    } else if ty == ScalarType::Int && v.is_number() {
        let text = v.to_string();
        if text.contains(['.', 'e', 'E']) {
            Err(format!(
                "{text} is not an integer: write int values without a fraction or exponent"
            ))
        } else {
            Err(format!("{text} does not fit a 64-bit integer"))
        }
    } else {
        Err(format!("expected {}, found {}", ty.name(), kind_of(v)))
    }
}

/// Checks a value against a whole variable type.
pub fn check_value(ty: VarType, v: &Value) -> Result<(), String> {
    match ty {
        VarType::Scalar(s) => check_scalar(s, v),
        VarType::List(s) => match v {
            Value::Array(items) => items.iter().try_for_each(|i| check_scalar(s, i)),
            _ => Err(format!("expected {ty}, found {}", kind_of(v))),
        },
        VarType::Map(s) => match v {
            Value::Object(m) => m.values().try_for_each(|i| check_scalar(s, i)),
            _ => Err(format!("expected {ty}, found {}", kind_of(v))),
        },
    }
}

/// A short name for the JSON kind of a value, for messages.
pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) if is_int(v) => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ints_are_integers_only() {
        assert!(check_scalar(ScalarType::Int, &json!(5)).is_ok());
        let one_point_zero: Value = serde_json::from_str("1.0").unwrap();
        assert!(check_scalar(ScalarType::Int, &one_point_zero).is_err());
        let big: Value = serde_json::from_str("9223372036854775808").unwrap();
        assert!(check_scalar(ScalarType::Int, &big).is_err());
    }

    #[test]
    fn numbers_are_exact() {
        let v: Value = serde_json::from_str("12345678901234567.89").unwrap();
        assert_eq!(
            exact_decimal(&v).unwrap().to_string(),
            "12345678901234567.89"
        );
        let e: Value = serde_json::from_str("1.5e3").unwrap();
        assert_eq!(exact_decimal(&e).unwrap().to_string(), "1500");
        assert!(check_scalar(ScalarType::Number, &json!("1")).is_err());
    }

    #[test]
    fn lists_and_maps_check_items() {
        let t = VarType::parse("list(string)").unwrap();
        assert!(check_value(t, &json!(["a", "b"])).is_ok());
        assert!(check_value(t, &json!(["a", 1])).is_err());
        let m = VarType::parse("map(string, int)").unwrap();
        assert!(check_value(m, &json!({"a": 1})).is_ok());
        assert!(check_value(m, &json!({"a": true})).is_err());
    }
}

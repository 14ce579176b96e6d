//! The subset's functions (Format 11.1): `size`, conversions (`int`,
//! `double`, `string`, `bool`) and the string methods (`contains`,
//! `startsWith`, `endsWith`, `matches`).

use std::sync::Arc;

use super::checker::Func;
use super::error::{EvalError, EvalErrorKind as K};
use super::eval::TWO_63;
use super::value::Value;

const NO_OVERLOAD: EvalError = EvalError::fixed(K::NoSuchOverload, "no such overload");

/// One-argument functions.
pub(crate) fn unary(f: Func, x: &Value) -> Result<Value, EvalError> {
    match (f, x) {
        (Func::Size, Value::String(s)) => Ok(Value::Int(s.chars().count() as i64)),
        (Func::Size, Value::List(l)) => Ok(Value::Int(l.len() as i64)),
        (Func::Size, Value::Map(m)) => Ok(Value::Int(m.len() as i64)),
        (Func::ToInt, Value::Int(i)) => Ok(Value::Int(*i)),
        (Func::ToInt, Value::Double(d)) => double_to_int(*d).map(Value::Int),
        (Func::ToInt, Value::String(s)) => s
            .parse::<i64>()
            .map(Value::Int)
            .map_err(|_| EvalError::new(K::Conversion, format!("cannot convert {x} to int"))),
        (Func::ToDouble, Value::Double(d)) => Ok(Value::Double(*d)),
        (Func::ToDouble, Value::Int(i)) => Ok(Value::Double(*i as f64)),
        (Func::ToDouble, Value::String(s)) => s
            .parse::<f64>()
            .map(Value::Double)
            .map_err(|_| EvalError::new(K::Conversion, format!("cannot convert {x} to double"))),
        (Func::ToString, Value::String(_)) => Ok(x.clone()),
        (Func::ToString, Value::Int(i)) => Ok(Value::String(Arc::from(i.to_string()))),
        (Func::ToString, Value::Double(d)) => Ok(Value::String(Arc::from(format_double(*d)))),
        (Func::ToString, Value::Bool(b)) => Ok(Value::string(if *b { "true" } else { "false" })),
        (Func::ToBool, Value::Bool(b)) => Ok(Value::Bool(*b)),
        (Func::ToBool, Value::String(s)) => match s.as_ref() {
            "1" | "t" | "true" | "TRUE" | "True" => Ok(Value::Bool(true)),
            "0" | "f" | "false" | "FALSE" | "False" => Ok(Value::Bool(false)),
            _ => Err(EvalError::new(
                K::Conversion,
                format!("cannot convert {x} to bool"),
            )),
        },
        _ => Err(NO_OVERLOAD),
    }
}

/// Two-argument functions (receiver first).
pub(crate) fn binary(f: Func, x: &Value, y: &Value) -> Result<Value, EvalError> {
    let (Value::String(s), Value::String(t)) = (x, y) else {
        return Err(NO_OVERLOAD);
    };
    Ok(Value::Bool(match f {
        Func::Contains => s.contains(t.as_ref()),
        Func::StartsWith => s.starts_with(t.as_ref()),
        Func::EndsWith => s.ends_with(t.as_ref()),
        _ => return Err(NO_OVERLOAD),
    }))
}

/// `int(double)`: truncates toward zero; NaN and values outside the open
/// range (-2^63, 2^63) are errors (as cel-go and cel-cpp).
fn double_to_int(d: f64) -> Result<i64, EvalError> {
    const LIMIT: f64 = TWO_63;
    if d.is_nan() || d <= -LIMIT || d >= LIMIT {
        return Err(EvalError::fixed(
            K::Conversion,
            "double is out of the int range",
        ));
    }
    Ok(d.trunc() as i64)
}

/// `string(double)`: the shortest text that reads back as the same double;
/// exponent form (`1e+21`, `1.5e-07`) when the decimal exponent is below -4
/// or at least 21 (Go's `strconv.FormatFloat(d, 'g', -1, 64)`, as cel-go).
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let sci = format!("{d:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if d != 0.0 && !(-4..21).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{d}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_format_like_cel_go() {
        assert_eq!(format_double(123.456), "123.456");
        assert_eq!(format_double(-4.5e-3), "-0.0045");
        assert_eq!(format_double(1e21), "1e+21");
        assert_eq!(format_double(1.5e-7), "1.5e-07");
        assert_eq!(format_double(1e20), "100000000000000000000");
        assert_eq!(format_double(5.0), "5");
        assert_eq!(format_double(-0.0), "-0");
    }

    #[test]
    fn int_conversion_bounds() {
        assert!(double_to_int(TWO_63).is_err());
        assert!(double_to_int(-TWO_63).is_err());
        assert_eq!(double_to_int(-7.9).unwrap(), -7);
        assert!(double_to_int(f64::NAN).is_err());
    }
}

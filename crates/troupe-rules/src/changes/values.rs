//! Values against declared types (Format 8.2): does a JSON value fit a
//! variable's type?

use rust_decimal::Decimal;
use serde_json::Value;

use crate::model::{ScalarType, VarType};

/// Reads a JSON number as an exact decimal from its source text (Format 2.2,
/// 8.2): at most 28 significant digits and an absolute value below 10^28.
/// `None` for a non-number or one that does not fit: never rounded.
pub fn exact_decimal(v: &Value) -> Option<Decimal> {
    let Value::Number(n) = v else { return None };
    // A number keeps its source text (`arbitrary_precision`): read in place.
    decimal_from_text(n.as_str())
}

/// Parses JSON number text (`-12.50`, `1.5e3`, `0e29`) exactly.
pub fn decimal_from_text(text: &str) -> Option<Decimal> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // The digits are `int_part` then `frac_part`, read in place.
    let (int, frac) = (int_part.as_bytes(), frac_part.as_bytes());
    let n = int.len() + frac.len();
    if n == 0 || !int.iter().chain(frac).all(u8::is_ascii_digit) {
        return None;
    }
    let digit = |i: usize| {
        if i < int.len() {
            int[i]
        } else {
            frac[i - int.len()]
        }
    };
    // value = digits × 10^(exponent − len(frac_part)); drop zeros that do
    // not change it so that only significant digits count.
    let mut scale_exp = exponent.checked_sub(frac_part.len() as i64)?;
    let Some(first) = (0..n).find(|&i| digit(i) != b'0') else {
        return Some(Decimal::ZERO);
    };
    let last = (0..n).rev().find(|&i| digit(i) != b'0').unwrap_or(first);
    scale_exp = scale_exp.checked_add((n - 1 - last) as i64)?;
    let significant = last - first + 1;
    if significant > 28 {
        return None;
    }
    // At most 28 digits: below 10^28, within an i128.
    let mut mantissa: i128 = (first..=last).fold(0, |m, i| m * 10 + i128::from(digit(i) - b'0'));
    if scale_exp > 0 {
        // Integer digits beyond the significant ones: the value must stay
        // below 10^28.
        // (Saturating: an exponent near i64::MAX overflowed the sum.)
        if (significant as i64).saturating_add(scale_exp) > 28 {
            return None;
        }
        mantissa = mantissa.checked_mul(10i128.checked_pow(scale_exp as u32)?)?;
        scale_exp = 0;
    }
    // (Checked: `-i64::MIN` overflowed, as the sum above did.)
    let scale = u32::try_from(scale_exp.checked_neg()?).ok()?;
    if scale > 28 {
        return None;
    }
    if negative {
        mantissa = -mantissa;
    }
    Decimal::try_from_i128_with_scale(mantissa, scale).ok()
}

/// A value as text for a message, shortened to at most 40 characters.
pub fn shown(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() <= 40 {
        text
    } else {
        let head: String = text.chars().take(37).collect();
        format!("{head}…")
    }
}

/// True when `v` is a JSON integer that fits an i64.
pub fn is_int(v: &Value) -> bool {
    matches!(v, Value::Number(n) if n.as_i64().is_some() && !n.as_str().contains(['.', 'e', 'E']))
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
            "{} does not fit an exact decimal (at most 28 significant digits, below 10^28)",
            shown(v)
        ))
    } else if ty == ScalarType::Int && v.is_number() {
        let text = shown(v);
        if v.to_string().contains(['.', 'e', 'E']) {
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

/// Checks a value against a whole variable type. The error is the relative
/// JSON Pointer of the value it is about (`""` for the value itself, `/1`
/// for a list's second item, `/b` for a map's key `b`: Format 17.2, "a list
/// item at its index") and the message.
pub fn check_value(ty: VarType, v: &Value) -> Result<(), (String, String)> {
    let whole = |e: String| (String::new(), e);
    match ty {
        VarType::Scalar(s) => check_scalar(s, v).map_err(whole),
        VarType::List(s) => match v {
            Value::Array(items) => items.iter().enumerate().try_for_each(|(i, item)| {
                check_scalar(s, item).map_err(|e| (format!("/{i}"), format!("item {i}: {e}")))
            }),
            _ => Err(whole(format!("expected {ty}, found {}", kind_of(v)))),
        },
        VarType::Map(s) => match v {
            Value::Object(m) => m.iter().try_for_each(|(k, item)| {
                check_scalar(s, item).map_err(|e| {
                    (
                        format!("/{}", crate::diag::escape_token(k)),
                        format!("key `{k}`: {e}"),
                    )
                })
            }),
            _ => Err(whole(format!("expected {ty}, found {}", kind_of(v)))),
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

    /// `decimal_from_text` as it was before Run AJ (the digits copied into
    /// strings and parsed).
    fn decimal_by_copy(text: &str) -> Option<Decimal> {
        let (negative, rest) = match text.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, text),
        };
        let (mantissa, exponent) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
            None => (rest, 0),
        };
        let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let digits: String = format!("{int_part}{frac_part}");
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let mut scale_exp = exponent.checked_sub(frac_part.len() as i64)?;
        let trimmed = digits.trim_start_matches('0');
        if trimmed.is_empty() {
            return Some(Decimal::ZERO);
        }
        let mut significant = trimmed.to_string();
        while significant.ends_with('0') {
            significant.pop();
            scale_exp = scale_exp.checked_add(1)?;
        }
        if significant.len() > 28 {
            return None;
        }
        let mut mantissa: i128 = significant.parse().ok()?;
        if scale_exp > 0 {
            // Saturating, as in `decimal_from_text`: the sum overflowed
            // (a panic in debug builds, wrapped to `None` in release).
            if (significant.len() as i64).saturating_add(scale_exp) > 28 {
                return None;
            }
            mantissa = mantissa.checked_mul(10i128.checked_pow(scale_exp as u32)?)?;
            scale_exp = 0;
        }
        let scale = u32::try_from(scale_exp.checked_neg()?).ok()?;
        if scale > 28 {
            return None;
        }
        if negative {
            mantissa = -mantissa;
        }
        Decimal::try_from_i128_with_scale(mantissa, scale).ok()
    }

    /// Reading the digits in place gives what copying them did.
    #[test]
    fn decimal_in_place_is_decimal_by_copy() {
        let mut texts: Vec<String> = [
            "0",
            "-0",
            "00",
            "0.0",
            "-0.000",
            "1",
            "-1",
            "10",
            "100",
            "0.1",
            "0.10",
            "10.0",
            "1.5e3",
            "1.5E-3",
            "-12.50",
            "5.05e1",
            "0e29",
            "1e28",
            "1e27",
            "9e27",
            "10e26",
            "1e-28",
            "1e-29",
            "0.0000000000000000000000000001",
            "1.0e-28",
            "12345678901234567890123456789",
            "1234567890123456789012345678",
            "1234567890123456789012345678.0",
            "12345678901234567890123456780",
            "9999999999999999999999999999",
            "99999999999999999999999999990",
            "1e",
            "1e+5",
            "e5",
            ".",
            "",
            "-",
            "1.",
            ".5",
            "+1",
            "1.2.3",
            "1a",
            "1e9223372036854775807",
            "1e-9223372036854775808",
            "100e-2",
            "0.00000",
            "7e-0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for a in ["0", "1", "10", "07", "000123000", "5"] {
            for b in ["", "0", "5", "50", "000", "0007"] {
                for e in ["", "e0", "e3", "e-3", "e30", "e-30", "e26", "E-2"] {
                    texts.push(format!("{a}.{b}{e}"));
                    texts.push(format!("-{a}{e}"));
                }
            }
        }
        for t in &texts {
            assert_eq!(decimal_from_text(t), decimal_by_copy(t), "{t}");
        }
    }

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
    fn decimals_keep_28_significant_digits_and_never_round() {
        let d = |t: &str| decimal_from_text(t).map(|d| d.to_string());
        assert_eq!(
            d("0.1234567890123456789012345678").as_deref(),
            Some("0.1234567890123456789012345678")
        );
        assert_eq!(
            d("0.12345678901234567890123456789"),
            None,
            "29 significant digits"
        );
        assert_eq!(d("9999999999999999999999999999.5"), None);
        assert_eq!(
            d("9999999999999999999999999999").as_deref(),
            Some("9999999999999999999999999999")
        );
        assert_eq!(d("1e28"), None, "10^28 is not below 10^28");
        assert_eq!(d("0e29").as_deref(), Some("0"));
        assert_eq!(d("0e-40").as_deref(), Some("0"));
        assert_eq!(d("-0").as_deref(), Some("0"));
        assert_eq!(d("1.50").as_deref(), Some("1.5"));
        assert_eq!(d("12.5e-1").as_deref(), Some("1.25"));
        assert_eq!(
            d("1e-28").as_deref(),
            Some("0.0000000000000000000000000001")
        );
        assert_eq!(d("1e-29"), None);
        let tiny = format!("0.{}1", "0".repeat(500));
        assert_eq!(d(&tiny), None);
        assert_eq!(d("1e-400"), None);
        assert_eq!(d("-2.5").as_deref(), Some("-2.5"));
    }

    #[test]
    fn long_values_are_shortened_in_messages() {
        let big: Value = serde_json::from_str(&"9".repeat(1000)).unwrap();
        let e = check_scalar(ScalarType::Int, &big).unwrap_err();
        assert!(e.len() < 120, "{e}");
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

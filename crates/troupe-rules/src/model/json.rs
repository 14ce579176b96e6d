//! Troupe JSON (Format 18.8): the bytes of every JSON document Troupe
//! writes — session lines, `bundle.json`, `ir.json`, `manifest.json`.
//! Compact (no space outside strings), members in the map's order, strings
//! escaped as serde_json's compact form does (`"`, `\`, characters below
//! U+0020 as `\b \t \n \f \r` or `\u00xx`, nothing else), and numbers
//! normalized: ints in decimal, decimals as Format 10.4 formats them (plain,
//! no exponent, no trailing fractional zeros, `-0` as `0`), so the same
//! value always has the same bytes however it was spelled (`50.50`, `5.05e1`).

use serde_json::Value;

/// The largest exponent written out in plain digits. A number beyond it is
/// outside every limit of Format 2.2 (only an extension value can hold
/// one); it is written as it was read, so that a short input cannot expand
/// into a huge output (Format 16.2).
const MAX_PLAIN_EXPONENT: i64 = 400;

/// `v` as Troupe JSON (no trailing `\n`).
pub fn troupe_json(v: &Value) -> String {
    let mut out = Vec::new();
    write_value(v, &mut out);
    into_string(out)
}

/// The bytes written by [`write_value`] and [`write_string`] as a string
/// (they are UTF-8: serde_json writes strings as they are, and the rest is
/// ASCII).
pub fn into_string(out: Vec<u8>) -> String {
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Appends `v` as Troupe JSON to `out`.
pub fn write_value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Number(n) => {
            // An integer is written from its value, not its text (with
            // `arbitrary_precision` the text is kept as read: `-0`).
            if let Some(i) = n.as_i64() {
                out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes());
            } else if let Some(u) = n.as_u64() {
                out.extend_from_slice(itoa::Buffer::new().format(u).as_bytes());
            } else {
                out.extend_from_slice(plain_number(n.as_str()).as_bytes());
            }
        }
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(x, out);
            }
            out.push(b']');
        }
        Value::Object(m) => write_object(m, out, |_, x, out| write_value(x, out)),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Null => out.extend_from_slice(b"null"),
    }
}

/// An object's members in order, each value written by `member` (given
/// the member's key).
#[inline]
fn write_object(
    m: &serde_json::Map<String, Value>,
    out: &mut Vec<u8>,
    mut member: impl FnMut(&str, &Value, &mut Vec<u8>),
) {
    out.push(b'{');
    for (i, (k, x)) in m.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_string(k, out);
        out.push(b':');
        member(k, x, out);
    }
    out.push(b'}');
}

/// [`write_value`] of `v`, the items of its member `key` (when `v` is an
/// object and that member an array) each written on one of the machine's
/// cores ([`crate::par::map`]) and joined in order: the same bytes. A
/// bundle's scenarios are most of its `bundle.json` (Format 14.4;
/// docs/performance.md, Run AU).
pub fn write_value_items_side_by_side(v: &Value, key: &str, out: &mut Vec<u8>) {
    let Value::Object(m) = v else {
        return write_value(v, out);
    };
    write_object(m, out, |k, x, out| match x {
        Value::Array(items) if k == key => {
            let written = crate::par::map(items, |_, x| {
                let mut one = Vec::new();
                write_value(x, &mut one);
                one
            });
            out.push(b'[');
            for (i, one) in written.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(one);
            }
            out.push(b']');
        }
        _ => write_value(x, out),
    })
}

/// Appends `s` as a JSON string, escaped by serde_json's compact form.
pub fn write_string(s: &str, out: &mut Vec<u8>) {
    // Writing to a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// A JSON number's text in plain decimal notation (Format 10.4):
/// `50.50` → `50.5`, `3.00` → `3`, `1.5e2` → `150`, `-0.0` → `0`,
/// `1E-3` → `0.001`. Exact: digits are moved, never rounded.
pub fn plain_number(text: &str) -> String {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, "0"),
    };
    let Ok(exponent) = exponent.trim_start_matches('+').parse::<i64>() else {
        return text.to_string();
    };
    if exponent.abs() > MAX_PLAIN_EXPONENT {
        return text.to_string();
    }
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if !(int.bytes().all(|b| b.is_ascii_digit()) && frac.bytes().all(|b| b.is_ascii_digit())) {
        return text.to_string();
    }
    // All digits, and where the decimal point falls among them.
    let digits: Vec<u8> = int.bytes().chain(frac.bytes()).collect();
    let point = int.len() as i64 + exponent;
    let digit = |i: i64| -> u8 {
        if i >= 0 && (i as usize) < digits.len() {
            digits[i as usize]
        } else {
            b'0'
        }
    };
    let (Some(first), Some(last)) = (
        digits.iter().position(|&d| d != b'0'),
        digits.iter().rposition(|&d| d != b'0'),
    ) else {
        return "0".to_string(); // every digit zero: `0`, never `-0`
    };
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    // Integer digits from the first non-zero one, keeping one before the point.
    let int_start = (first as i64).min(point - 1).max(0);
    if point <= 0 {
        out.push('0');
    } else {
        for i in int_start..point {
            out.push(digit(i) as char);
        }
    }
    let end = (last as i64) + 1;
    if end > point {
        out.push('.');
        for i in point..end {
            out.push(digit(i) as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{plain_number, troupe_json};

    #[test]
    fn values_are_written_compact_with_numbers_normalized() {
        // Format 18.8: compact, members in order, `-0` as `0`, decimals
        // plain (10.4), big unsigned ints in full.
        let v: serde_json::Value = serde_json::from_str(
            r#"{"b": [-0, 1.50, 5.05e1, 18446744073709551615, -3], "a": {"s": "x\"y"}, "t": true, "n": null}"#,
        )
        .unwrap();
        assert_eq!(
            troupe_json(&v),
            r#"{"b":[0,1.5,50.5,18446744073709551615,-3],"a":{"s":"x\"y"},"t":true,"n":null}"#
        );
    }

    #[test]
    fn numbers_are_plain_and_normalized() {
        for (text, plain) in [
            ("50.50", "50.5"),
            ("90.0", "90"),
            ("1.5e2", "150"),
            ("1.5e+2", "150"),
            ("-0.0", "0"),
            ("-0", "0"),
            ("2.50", "2.5"),
            ("1E-3", "0.001"),
            ("0.000", "0"),
            ("12", "12"),
            ("-3", "-3"),
            ("100", "100"),
            ("0.5", "0.5"),
            ("-12.340", "-12.34"),
            ("123e-5", "0.00123"),
            ("30e-1", "3"),
            ("0.0012e3", "1.2"),
            ("1e1000", "1e1000"),
        ] {
            assert_eq!(plain_number(text), plain, "{text}");
        }
    }
}

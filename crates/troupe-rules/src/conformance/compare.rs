//! Comparison rules of the conformance suite (README 3, 4): deep JSON
//! equality with object keys unordered and numbers compared as doubles, and
//! subset comparison of objects.

use serde_json::Value;

/// A JSON number as an IEEE 754 double.
fn as_double(n: &serde_json::Number) -> Option<f64> {
    n.to_string().parse::<f64>().ok()
}

/// Deep equality: key order ignored, array order kept, numbers as doubles.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (as_double(x), as_double(y)) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        (a, b) => a == b,
    }
}

/// The keys of `expect` whose values differ in `actual` (missing included),
/// as `key: expected E, got A` lines.
pub fn subset_diff(
    expect: &serde_json::Map<String, Value>,
    actual: &serde_json::Map<String, Value>,
) -> Vec<String> {
    expect
        .iter()
        .filter_map(|(k, e)| match actual.get(k) {
            Some(a) if json_eq(e, a) => None,
            Some(a) => Some(format!("`{k}`: expected {e}, got {a}")),
            None => Some(format!("`{k}`: expected {e}, got nothing")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_compare_as_doubles_and_keys_unordered() {
        let a: Value = serde_json::from_str(r#"{"a": 1.50, "b": [1, 2]}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b": [1.0, 2e0], "a": 1.5}"#).unwrap();
        assert!(json_eq(&a, &b));
        assert!(!json_eq(&json!([1, 2]), &json!([2, 1])));
        assert!(!json_eq(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!json_eq(&json!("1"), &json!(1)));
    }

    #[test]
    fn subsets_check_only_listed_keys() {
        let e = json!({"a": 1});
        let a = json!({"a": 1.0, "b": 2});
        assert!(subset_diff(e.as_object().unwrap(), a.as_object().unwrap()).is_empty());
        let a = json!({"b": 2});
        assert_eq!(
            subset_diff(e.as_object().unwrap(), a.as_object().unwrap()).len(),
            1
        );
    }
}

//! Troupe JSON (Format 18.8) normalizes numbers however they were spelled
//! (10.4: plain, no exponent, no trailing fractional zeros, `-0` as `0`),
//! so `bundle.json`, and with it the package's `content_hash`, depends on
//! values, not spelling (Format 14.4). Found by a second reader.

use troupe::internals::load::{bundle_json, content_hash};

fn bytes(text: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    String::from_utf8(bundle_json(&v)).unwrap()
}

#[test]
fn bundle_json_numbers_are_normalized() {
    assert_eq!(
        bytes(r#"{"a": 50.50, "b": 90.0, "c": 1.5e2, "d": -0.0, "e": 2.50, "f": 7, "g": 1E-3}"#),
        "{\"a\":50.5,\"b\":90,\"c\":150,\"d\":0,\"e\":2.5,\"f\":7,\"g\":0.001}\n"
    );
}

#[test]
fn the_content_hash_does_not_depend_on_spelling() {
    let a = bundle_json(&serde_json::from_str(r#"{"x": [5.0, 0.50]}"#).unwrap());
    let b = bundle_json(&serde_json::from_str(r#"{"x": [5, 5e-1]}"#).unwrap());
    assert_eq!(content_hash(&a), content_hash(&b));
}

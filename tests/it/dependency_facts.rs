//! Facts about dependencies that Troupe relies on (STACK.md): a crate upgrade that breaks one fails here.

#[test]
fn arbitrary_precision_numbers_validate() {
    let schema = serde_json::json!({"type":"object","properties":{"a":{"type":"integer","maximum":10},"b":{"type":"number"}}});
    let v = jsonschema::options().build(&schema).unwrap();
    let ok: serde_json::Value =
        serde_json::from_str(r#"{"a": 5, "b": 12345678901234567.89}"#).unwrap();
    assert!(v.is_valid(&ok));
    let bad: serde_json::Value = serde_json::from_str(r#"{"a": 11}"#).unwrap();
    assert!(!v.is_valid(&bad));
    let bad2: serde_json::Value = serde_json::from_str(r#"{"a": 1.5}"#).unwrap();
    assert!(!v.is_valid(&bad2));
    assert_eq!(ok["b"].to_string(), "12345678901234567.89");
}

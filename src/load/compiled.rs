//! The compiled form of a package as a loader sees it (Format 14.4): the
//! IR version this implementation reads, the content hash, and whether a
//! package's `ir.json` may be used instead of checking its `bundle.json`.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The IR version this implementation writes and accepts.
pub const IR_VERSION: &str = "troupe-ir-1";

/// `"sha256:" + lower-case hex SHA-256` of `bytes`.
pub fn content_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(7 + 64);
    s.push_str("sha256:");
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Verifies a screened package's compiled form (Format 14.4) and returns
/// the bundle `ir.json` carries. `Ok(None)`: the package has no `ir.json`
/// (it is simply compiled). `Err`: IR_MISMATCH warnings; the caller
/// compiles `bundle.json` afresh.
pub fn verify_ir(
    file: &str,
    entries: &[(String, Vec<u8>)],
) -> Result<Option<Value>, Vec<crate::diag::Diagnostic>> {
    use crate::diag::{Code, Diagnostic, Severity};
    let get = |n: &str| {
        entries
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, b)| b.as_slice())
    };
    let Some(ir) = get("ir.json") else {
        return Ok(None);
    };
    let mismatch = |entry: &str, pointer: &str, msg: &str| {
        Diagnostic::error(Code::IrMismatch, msg.to_string())
            .with_severity(Severity::Warning)
            .in_file(format!("{file}!{entry}"))
            .at(pointer)
    };
    let Some(manifest) = get("manifest.json") else {
        return Err(vec![mismatch(
            "ir.json",
            "",
            "the package has ir.json but no manifest.json; the IR is not used and bundle.json is compiled afresh",
        )]);
    };
    let manifest: Value = match serde_json::from_slice(manifest) {
        Ok(v) => v,
        Err(_) => {
            return Err(vec![mismatch(
                "manifest.json",
                "",
                "manifest.json cannot be read; the IR is not used",
            )])
        }
    };
    let bundle = get("bundle.json").unwrap_or_default();
    let mut out = Vec::new();
    if manifest.get("content_hash").and_then(Value::as_str) != Some(&content_hash(bundle)) {
        out.push(mismatch(
            "manifest.json",
            "/content_hash",
            "bundle.json changed after it was compiled (its hash differs from content_hash); the IR is not used and bundle.json is compiled afresh",
        ));
    }
    if manifest.get("ir_version").and_then(Value::as_str) != Some(IR_VERSION) {
        out.push(mismatch(
            "manifest.json",
            "/ir_version",
            &format!("the package was compiled for another IR version (this Troupe reads `{IR_VERSION}`); the IR is not used"),
        ));
    }
    if !out.is_empty() {
        return Err(out);
    }
    let ir: Option<Value> = serde_json::from_slice(ir).ok();
    match ir {
        Some(Value::Object(mut m))
            if m.get("ir_version").and_then(Value::as_str) == Some(IR_VERSION)
                && m.get("checked") == Some(&Value::Bool(true))
                && m.get("bundle").is_some_and(Value::is_object) =>
        {
            Ok(m.remove("bundle"))
        }
        _ => Err(vec![mismatch(
            "ir.json",
            "",
            "ir.json cannot be read as this Troupe's IR; it is not used and bundle.json is compiled afresh",
        )]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(bundle: &str, manifest: Option<String>, ir: &str) -> Vec<(String, Vec<u8>)> {
        let mut e = vec![
            ("bundle.json".to_string(), bundle.as_bytes().to_vec()),
            ("ir.json".to_string(), ir.as_bytes().to_vec()),
        ];
        if let Some(m) = manifest {
            e.push(("manifest.json".to_string(), m.into_bytes()));
        }
        e
    }

    fn manifest(bundle: &str, version: &str) -> String {
        format!(
            r#"{{"troupe":"0.1","kind":"package","ir_version":"{version}","content_hash":"{}"}}"#,
            content_hash(bundle.as_bytes())
        )
    }

    fn pointers(r: Result<Option<Value>, Vec<crate::diag::Diagnostic>>) -> Vec<(String, String)> {
        r.unwrap_err()
            .into_iter()
            .map(|d| {
                (
                    d.location.file.unwrap_or_default(),
                    d.location.pointer.unwrap_or_default(),
                )
            })
            .collect()
    }

    #[test]
    fn each_mismatch_of_14_4_is_reported_where_the_spec_says() {
        let b = r#"{"troupe":"0.1","kind":"bundle"}"#;
        let ir = format!(r#"{{"ir_version":"{IR_VERSION}","checked":true,"bundle":{b}}}"#);
        // All present and matching: the IR's bundle is used.
        let ok = verify_ir("p", &entries(b, Some(manifest(b, IR_VERSION)), &ir));
        assert!(ok.unwrap().is_some());
        // Another IR version.
        let r = verify_ir("p", &entries(b, Some(manifest(b, "other-9")), &ir));
        assert_eq!(
            pointers(r),
            [("p!manifest.json".into(), "/ir_version".into())]
        );
        // ir.json without manifest.json.
        let r = verify_ir("p", &entries(b, None, &ir));
        assert_eq!(pointers(r), [("p!ir.json".into(), "".into())]);
        // ir.json that is not this IR (untrusted input: never a panic).
        let r = verify_ir("p", &entries(b, Some(manifest(b, IR_VERSION)), "[1,2"));
        assert_eq!(pointers(r), [("p!ir.json".into(), "".into())]);
        // No ir.json at all: simply compiled, no diagnostic.
        let none = vec![("bundle.json".to_string(), b.as_bytes().to_vec())];
        assert!(verify_ir("p", &none).unwrap().is_none());
    }
}

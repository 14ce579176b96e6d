//! Schema validation (Format 2.2, 15, 17.2): every bundle, session line and
//! pack file is validated against its JSON Schema 2020-12 document in
//! `schemas/`, and each failure becomes a [`Diagnostic`] with code `SCHEMA`, or
//! `UNKNOWN_FIELD` for a property the format does not define, located at the
//! property itself.
//!
//! The schemas are embedded in the binary (`include_str!`), registered under
//! their `$id`s in one `jsonschema::Registry` and compiled once, offline: no
//! `$ref` is ever fetched from the network.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use jsonschema::{Registry, Validator};
use serde_json::Value;

use super::schema_errors::{problems, Problem};
use crate::diag::{escape_token, Diagnostic};
use crate::load::Document;

/// Which schema a document is validated against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaKind {
    /// A bundle (`*.troupe.json`, `bundle.json`): Format 3–11.
    Bundle,
    /// Line 1 of a session file: Format 12.
    SessionHeader,
    /// A session line after the header: Format 7.
    Message,
    /// A pack's `manifest.yaml`: Format 13.1.
    Manifest,
    /// A pack's `scenarios/*.yaml`: Format 13.2.
    PackScenario,
    /// A pack's `npcs/*.yaml`: Format 13.3.
    Npc,
    /// A pack's `rubrics/*.yaml`: Format 13.5.
    Rubric,
    /// A pack's `safety/*.yaml`: Format 13.4.
    Safety,
    /// A pack's `scenes/*.yaml`: Format 13.6.
    Scene,
    /// A pack's `worlds/*.yaml`: Format 13.7.
    World,
    /// A pack's `tests/*.yaml` fixture: Format 13.8.
    PackTest,
    /// A pack's `playtests/*.yaml`: Format 13.9.
    Playtest,
    /// A pack's `personas/*.yaml`: Format 13.9.
    Persona,
    /// A conformance case file (`conformance/cases/**.json`).
    ConformanceCase,
    /// A package's `manifest.json`: Format 14.1.
    PackageManifest,
}

/// The `$id` prefix of every format 0.1 schema.
pub const ID_BASE: &str = "https://troupe.dev/schemas/0.1/";

impl SchemaKind {
    /// Every kind, in a fixed order.
    pub const ALL: &'static [SchemaKind] = &[
        SchemaKind::Bundle,
        SchemaKind::SessionHeader,
        SchemaKind::Message,
        SchemaKind::Manifest,
        SchemaKind::PackScenario,
        SchemaKind::Npc,
        SchemaKind::Rubric,
        SchemaKind::Safety,
        SchemaKind::Scene,
        SchemaKind::World,
        SchemaKind::PackTest,
        SchemaKind::Playtest,
        SchemaKind::Persona,
        SchemaKind::ConformanceCase,
        SchemaKind::PackageManifest,
    ];

    /// The schema's path inside `schemas/` (`bundle.schema.json`).
    pub fn file(self) -> &'static str {
        match self {
            SchemaKind::Bundle => "bundle.schema.json",
            SchemaKind::SessionHeader => "session-header.schema.json",
            SchemaKind::Message => "message.schema.json",
            SchemaKind::Manifest => "manifest.schema.json",
            SchemaKind::PackScenario => "scenario.schema.json",
            SchemaKind::Npc => "npc.schema.json",
            SchemaKind::Rubric => "rubric.schema.json",
            SchemaKind::Safety => "safety.schema.json",
            SchemaKind::Scene => "scene.schema.json",
            SchemaKind::World => "world.schema.json",
            SchemaKind::PackTest => "pack-test.schema.json",
            SchemaKind::Playtest => "playtest.schema.json",
            SchemaKind::Persona => "persona.schema.json",
            SchemaKind::ConformanceCase => "conformance/case.schema.json",
            SchemaKind::PackageManifest => "package-manifest.schema.json",
        }
    }

    /// The schema's `$id`: [`ID_BASE`] followed by [`SchemaKind::file`].
    pub fn id(self) -> String {
        format!("{ID_BASE}{}", self.file())
    }
}

/// Every embedded schema document: its path inside `schemas/` and its text.
/// `defs.schema.json` holds the shared definitions and validates nothing itself.
pub const SOURCES: &[(&str, &str)] = &[
    (
        "defs.schema.json",
        include_str!("../../../../schemas/defs.schema.json"),
    ),
    (
        "bundle.schema.json",
        include_str!("../../../../schemas/bundle.schema.json"),
    ),
    (
        "session-header.schema.json",
        include_str!("../../../../schemas/session-header.schema.json"),
    ),
    (
        "message.schema.json",
        include_str!("../../../../schemas/message.schema.json"),
    ),
    (
        "manifest.schema.json",
        include_str!("../../../../schemas/manifest.schema.json"),
    ),
    (
        "scenario.schema.json",
        include_str!("../../../../schemas/scenario.schema.json"),
    ),
    (
        "npc.schema.json",
        include_str!("../../../../schemas/npc.schema.json"),
    ),
    (
        "rubric.schema.json",
        include_str!("../../../../schemas/rubric.schema.json"),
    ),
    (
        "safety.schema.json",
        include_str!("../../../../schemas/safety.schema.json"),
    ),
    (
        "scene.schema.json",
        include_str!("../../../../schemas/scene.schema.json"),
    ),
    (
        "world.schema.json",
        include_str!("../../../../schemas/world.schema.json"),
    ),
    (
        "pack-test.schema.json",
        include_str!("../../../../schemas/pack-test.schema.json"),
    ),
    (
        "playtest.schema.json",
        include_str!("../../../../schemas/playtest.schema.json"),
    ),
    (
        "persona.schema.json",
        include_str!("../../../../schemas/persona.schema.json"),
    ),
    (
        "conformance/case.schema.json",
        include_str!("../../../../conformance/case.schema.json"),
    ),
    (
        "package-manifest.schema.json",
        include_str!("../../../../schemas/package-manifest.schema.json"),
    ),
];

/// Why the embedded schemas could not be compiled. Only a broken build of
/// Troupe itself can cause one; `tests/it/schemas.rs` builds them all.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SchemaError {
    /// A schema file is not JSON.
    #[error("schema {file} is not valid JSON: {message}")]
    Json {
        /// The schema's path inside `schemas/`.
        file: String,
        /// The parser's message.
        message: String,
    },
    /// A schema file has no `$id`, or one that does not match its path.
    #[error("schema {file} must have the $id {expected}")]
    BadId {
        /// The schema's path inside `schemas/`.
        file: String,
        /// The `$id` it must have.
        expected: String,
    },
    /// The registry could not be prepared (a bad URI or an unresolvable `$ref`).
    #[error("schema registry: {0}")]
    Registry(String),
    /// A schema did not compile (an invalid schema or a `$ref` that does not resolve offline).
    #[error("schema {file} does not compile: {message}")]
    Build {
        /// The schema's path inside `schemas/`.
        file: String,
        /// The compiler's message.
        message: String,
    },
}

/// The compiled schemas, built once per process ([`Schemas::get`]).
pub struct Schemas {
    /// Every `$id` registered, for the validators compiled on first use.
    registry: Registry<'static>,
    /// One validator per kind, compiled the first time a document of that
    /// kind is validated: a process that checks a pack never compiles the
    /// schemas of conformance cases, playtests or packages (about a quarter
    /// of a short `troupe run`'s instructions went to compiling all 15).
    validators: HashMap<SchemaKind, OnceLock<Validator>>,
    /// Every schema document by `$id`, to read a failing keyword's schema when
    /// phrasing a message.
    documents: HashMap<String, Value>,
}

impl std::fmt::Debug for Schemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schemas")
            .field("kinds", &self.validators.len())
            .field(
                "compiled",
                &self
                    .validators
                    .values()
                    .filter(|v| v.get().is_some())
                    .count(),
            )
            .finish()
    }
}

static SCHEMAS: OnceLock<Result<Schemas, SchemaError>> = OnceLock::new();

/// The keyword added beside every `"type": "integer"` of the embedded
/// schemas: the integer must be in the signed 64-bit range, compared exactly
/// (Format 2.2; JSON Schema validators compare through doubles, so
/// `-9223372036854775809` would pass as −2^63).
const INT64_KEYWORD: &str = "x-troupe-int64";

/// Adds [`INT64_KEYWORD`] to every schema object whose `type` is `integer`
/// (or lists it without `number`).
fn mark_integers(v: &mut Value) {
    match v {
        Value::Object(m) => {
            let integer = match m.get("type") {
                Some(Value::String(t)) => t == "integer",
                // A value that may also be any number (a variable's
                // `default`, a change's value) follows 8.2, not this range.
                Some(Value::Array(ts)) => {
                    ts.iter().any(|t| t == "integer") && !ts.iter().any(|t| t == "number")
                }
                _ => false,
            };
            for (k, x) in m.iter_mut() {
                // Property names and enum/const values are data, not schemas.
                if k != "enum" && k != "const" && k != "examples" && k != "default" {
                    mark_integers(x);
                }
            }
            if integer {
                m.insert(INT64_KEYWORD.into(), Value::Bool(true));
            }
        }
        Value::Array(a) => a.iter_mut().for_each(mark_integers),
        _ => {}
    }
}

/// A number with a zero fraction outside the signed 64-bit range.
fn out_of_int64(v: &Value) -> bool {
    let Value::Number(n) = v else { return false };
    if crate::model::integer(v).is_some() {
        return false;
    }
    let text = n.to_string();
    match rust_decimal::Decimal::from_str_exact(&text)
        .or_else(|_| rust_decimal::Decimal::from_scientific(&text))
    {
        Ok(d) => d.fract().is_zero(),
        // Too large or too precise for a decimal: integral when its digits
        // after the point (if any) are zeros, judged on the double.
        Err(_) => n.as_f64().is_some_and(|f| f.fract() == 0.0),
    }
}

struct Int64;

impl<'i> jsonschema::Keyword<'i> for Int64 {
    fn validate(&self, instance: &'i Value) -> Result<(), jsonschema::ValidationError<'i>> {
        if out_of_int64(instance) {
            return Err(jsonschema::ValidationError::custom(
                "is outside the signed 64-bit integer range (-9223372036854775808 to 9223372036854775807, Format 2.2)",
            ));
        }
        Ok(())
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        !out_of_int64(instance)
    }
}

impl Schemas {
    /// Parses every embedded schema, registers each under its `$id` and
    /// compiles one validator per [`SchemaKind`], with `format` asserted and no
    /// network access: every schema is proved to compile (the tests call
    /// this). Use [`Schemas::get`] to build them only once, each validator
    /// compiled when first needed.
    pub fn build() -> Result<Schemas, SchemaError> {
        let schemas = Schemas::prepare()?;
        for kind in SchemaKind::ALL {
            let validator = schemas.compile(*kind)?;
            let _ = schemas.validators[kind].set(validator);
        }
        Ok(schemas)
    }

    /// Parses every embedded schema and registers each under its `$id`; no
    /// validator is compiled yet.
    fn prepare() -> Result<Schemas, SchemaError> {
        let mut documents = HashMap::new();
        for (file, text) in SOURCES {
            let value: Value = serde_json::from_str(text).map_err(|e| SchemaError::Json {
                file: (*file).to_string(),
                message: e.to_string(),
            })?;
            let expected = format!("{ID_BASE}{file}");
            if value.get("$id").and_then(Value::as_str) != Some(expected.as_str()) {
                return Err(SchemaError::BadId {
                    file: (*file).to_string(),
                    expected,
                });
            }
            let mut value = value;
            mark_integers(&mut value);
            documents.insert(expected, value);
        }
        for kind in SchemaKind::ALL {
            if !documents.contains_key(&kind.id()) {
                return Err(SchemaError::Registry(format!("no schema {}", kind.file())));
            }
        }
        let registry = Registry::new()
            .extend(documents.iter().map(|(id, v)| (id.clone(), v.clone())))
            .and_then(|b| b.prepare())
            .map_err(|e| SchemaError::Registry(e.to_string()))?;
        let validators = SchemaKind::ALL
            .iter()
            .map(|kind| (*kind, OnceLock::new()))
            .collect();
        Ok(Schemas {
            registry,
            validators,
            documents,
        })
    }

    /// Compiles the validator of `kind` against the registry.
    fn compile(&self, kind: SchemaKind) -> Result<Validator, SchemaError> {
        let schema = self
            .documents
            .get(&kind.id())
            .ok_or_else(|| SchemaError::Registry(format!("no schema {}", kind.file())))?;
        jsonschema::options()
            .with_registry(&self.registry)
            .offline()
            .should_validate_formats(true)
            .with_keyword(INT64_KEYWORD, |_, _, _| Ok(Box::new(Int64)))
            .build(schema)
            .map_err(|e| SchemaError::Build {
                file: kind.file().to_string(),
                message: e.to_string(),
            })
    }

    /// The validator of `kind`, compiled on first use.
    ///
    /// # Panics
    ///
    /// Only if the embedded schema of `kind` does not compile, which no input
    /// can cause and `tests/it/schemas.rs` rules out ([`Schemas::build`]
    /// compiles every kind). Every kind has its cell: [`Schemas::prepare`]
    /// makes one per [`SchemaKind::ALL`].
    fn validator(&self, kind: SchemaKind) -> &Validator {
        self.validators[&kind].get_or_init(|| match self.compile(kind) {
            Ok(v) => v,
            Err(e) => panic!("the embedded JSON Schemas are broken: {e}"),
        })
    }

    /// The schemas of this process, built on first use, or why they could not be built.
    pub fn try_get() -> Result<&'static Schemas, &'static SchemaError> {
        SCHEMAS.get_or_init(Schemas::prepare).as_ref()
    }

    /// The schemas of this process, built on first use.
    ///
    /// # Panics
    ///
    /// Only if the embedded schemas are broken, which no input can cause and
    /// `tests/it/schemas.rs` rules out.
    pub fn get() -> &'static Schemas {
        match Schemas::try_get() {
            Ok(s) => s,
            Err(e) => panic!("the embedded JSON Schemas are broken: {e}"),
        }
    }

    /// Validates `doc.value` against the schema of `kind` (Format 17.2).
    ///
    /// Each problem is one diagnostic: `UNKNOWN_FIELD` at the unknown property
    /// (`/characters/0/mystery`) or at the `type` of a part of unknown type
    /// (Format 7.2, 15), else `SCHEMA`. The pointer is `pointer_prefix`
    /// followed by the JSON Pointer inside the document: the prefix is `""`
    /// for bundles and pack files, `"header"` for a session header and
    /// `"message:<id>"` for a message. Line and column come from `doc.spans`.
    /// One problem is reported once, however many schema paths found it; the
    /// result is in the order the values are written.
    pub fn validate(
        &self,
        kind: SchemaKind,
        doc: &Document,
        pointer_prefix: &str,
    ) -> Vec<Diagnostic> {
        let validator = self.validator(kind);
        let lookup = |uri: &str| self.keyword_schema(uri);
        let mut found: Vec<Problem> = Vec::new();
        for error in validator.iter_errors(&doc.value) {
            problems(&error, &lookup, &mut found);
        }
        if found.is_empty() {
            return Vec::new();
        }
        let order = document_order(&doc.value, found.iter().map(|p| p.pointer.as_str()));
        found.sort_by_cached_key(|p| (position(&order, &p.pointer), p.pointer.clone(), p.code));
        found.dedup_by(|b, a| a.code == b.code && a.pointer == b.pointer);
        // One pass locates them all, however many (Format 16.2).
        doc.spans.prefetch(found.iter().map(|p| p.pointer.as_str()));
        found
            .into_iter()
            .map(|p| {
                let at = if p.at_key {
                    doc.spans.locate_key(&p.pointer)
                } else {
                    doc.spans.locate(&p.pointer)
                };
                let mut d = Diagnostic::error(p.code, p.message)
                    .in_file(doc.file.clone())
                    .at(format!("{pointer_prefix}{}", p.pointer));
                if let Some(lc) = at {
                    d = d.at_line_col(lc.line, lc.column);
                }
                d
            })
            .collect()
    }

    /// The schema object that holds the keyword at an absolute keyword
    /// location (`https://troupe.dev/schemas/0.1/defs.schema.json#/$defs/part/else/properties/type/const`
    /// → the object at `/$defs/part/else/properties/type`).
    fn keyword_schema(&self, uri: &str) -> Option<&Value> {
        let (base, fragment) = uri.split_once('#')?;
        let doc = self.documents.get(base)?;
        let fragment = percent_decode(fragment);
        let parent = match fragment.rfind('/') {
            Some(i) => &fragment[..i],
            None => "",
        };
        doc.pointer(parent)
    }
}

/// The pre-order rank of each of `pointers` that exists in `value` and of
/// their ancestors, so that diagnostics come out in the order their values
/// are written. Only those values are ranked, and only their children are
/// looked at: memory is the pointers' size, not the document's (a table of
/// every value of a large document costs more than the document).
fn document_order<'p>(
    value: &Value,
    pointers: impl Iterator<Item = &'p str>,
) -> HashMap<String, usize> {
    fn walk(
        v: &Value,
        pointer: &mut String,
        needed: &HashSet<&str>,
        out: &mut HashMap<String, usize>,
    ) {
        out.insert(pointer.clone(), out.len());
        let len = pointer.len();
        let mut child = |pointer: &mut String, x: &Value| {
            if needed.contains(pointer.as_str()) {
                walk(x, pointer, needed, out);
            }
            pointer.truncate(len);
        };
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    pointer.push('/');
                    pointer.push_str(&escape_token(k));
                    child(pointer, x);
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    pointer.push('/');
                    pointer.push_str(&i.to_string());
                    child(pointer, x);
                }
            }
            _ => {}
        }
    }
    let mut needed = HashSet::new();
    for p in pointers {
        let mut q = p;
        while needed.insert(q) {
            match q.rfind('/') {
                Some(i) => q = &q[..i],
                None => break,
            }
        }
    }
    let mut out = HashMap::new();
    walk(value, &mut String::new(), &needed, &mut out);
    out
}

/// The document position of `pointer`, or of its nearest ancestor that exists.
fn position(order: &HashMap<String, usize>, pointer: &str) -> usize {
    let mut p = pointer;
    loop {
        if let Some(i) = order.get(p) {
            return *i;
        }
        match p.rfind('/') {
            Some(i) => p = &p[..i],
            None => return 0,
        }
    }
}

/// Decodes `%XX` escapes of a URI fragment (`%24defs` → `$defs`).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hi = bytes.get(i + 1).and_then(|c| (*c as char).to_digit(16));
            let lo = bytes.get(i + 2).and_then(|c| (*c as char).to_digit(16));
            if let (Some(hi), Some(lo)) = (hi, lo) {
                out.push((hi * 16 + lo) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_escapes_decode_and_bad_ones_stay() {
        assert_eq!(percent_decode("/%24defs/x"), "/$defs/x");
        assert_eq!(percent_decode("%2"), "%2");
        assert_eq!(percent_decode("%zz%"), "%zz%");
        assert_eq!(percent_decode("é%41"), "éA");
    }

    #[test]
    fn positions_fall_back_to_the_nearest_ancestor() {
        let v = serde_json::json!({"a": {"b": 1}, "c": [1, 2], "d~/": 0});
        let all = ["", "/a", "/a/b", "/c", "/c/0", "/c/1", "/d~0~1"];
        let order = document_order(&v, all.into_iter());
        assert_eq!(position(&order, ""), 0);
        assert_eq!(position(&order, "/a/b"), 2);
        assert_eq!(position(&order, "/c/1"), 5);
        assert_eq!(position(&order, "/a/missing"), 1);
        assert_eq!(position(&order, "/d~0~1"), 6);
        // Only what is asked for is ranked, in the same order.
        let order = document_order(&v, ["/c/1", "/a/missing"].into_iter());
        assert!(position(&order, "/a/missing") < position(&order, "/c/1"));
        assert_eq!(order.len(), 4, "{order:?}");
    }

    #[test]
    fn every_kind_has_an_embedded_source() {
        for kind in SchemaKind::ALL {
            assert!(SOURCES.iter().any(|(f, _)| *f == kind.file()), "{kind:?}");
        }
    }
}

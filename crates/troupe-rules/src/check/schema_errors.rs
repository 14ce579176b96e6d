//! Turns `jsonschema` errors into located problems with plain messages
//! (Format 15, 17.2). Used by [`super::schema::Schemas::validate`].

use jsonschema::error::{TypeKind, ValidationErrorKind as K};
use jsonschema::ValidationError;
use serde_json::Value;

use crate::diag::{escape_token, Code};

/// One schema problem before it becomes a diagnostic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// `SCHEMA` or `UNKNOWN_FIELD`.
    pub code: Code,
    /// JSON Pointer inside the validated document.
    pub pointer: String,
    /// Plain message naming the field.
    pub message: String,
    /// True when the problem is about a property itself (locate its key).
    pub at_key: bool,
}

/// Looks up the schema object holding the keyword at an absolute keyword location.
pub(crate) type Lookup<'s> = dyn Fn(&str) -> Option<&'s Value> + 's;

const ID_PATTERN: &str = "^[a-z][a-z0-9_-]{0,63}$";
const VERSION_PATTERN: &str = "^[0-9]+\\.[0-9]+$";

/// Appends the problems one validation error stands for to `out`.
pub(crate) fn problems<'s>(err: &ValidationError<'_>, lookup: &Lookup<'s>, out: &mut Vec<Problem>) {
    let path = err.instance_path().as_str().to_string();
    let keyword_uri = err
        .absolute_keyword_location()
        .map(|u| u.as_str().to_string())
        .unwrap_or_default();
    let schema = lookup(&keyword_uri);
    let name = field(&path);
    let mut schema_problem = |message: String| {
        out.push(Problem {
            code: Code::Schema,
            pointer: path.clone(),
            message,
            at_key: false,
        })
    };
    match err.kind() {
        K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
            let known: Vec<&str> = schema
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            for u in unexpected {
                let hint = crate::diag::suggest::did_you_mean(u, known.iter().copied());
                out.push(Problem {
                    code: Code::UnknownField,
                    pointer: format!("{path}/{}", escape_token(u)),
                    message: format!("unknown field `{u}`{hint}"),
                    at_key: true,
                });
            }
        }
        K::Required { property } => {
            let p = property.as_str().unwrap_or_default();
            schema_problem(format!("missing required field `{p}`"));
        }
        K::Constant { expected_value } => {
            let instance = err.instance();
            match instance.as_str() {
                Some(t) if keyword_uri.contains("/part/else/properties/type/const") => {
                    out.push(Problem {
                        code: Code::UnknownField,
                        pointer: path.clone(),
                        message: format!("unknown part type `{t}` (only `text` exists)"),
                        at_key: false,
                    })
                }
                _ => schema_problem(format!("{name} must be {}", show(expected_value))),
            }
        }
        K::Enum { options } => {
            let list = match options.as_ref() {
                Value::Array(items) => items.iter().map(show).collect::<Vec<_>>().join(", "),
                other => show(other),
            };
            schema_problem(format!("{name} must be one of: {list}"));
        }
        K::Not { schema: negated } => not_problem(err, &path, &name, negated, out),
        K::PropertyNames { error } => {
            let key = error.instance().as_str().unwrap_or_default().to_string();
            let why = match error.kind() {
                K::Not { .. } => "is a reserved name",
                K::Pattern { .. } => "is not a valid ID",
                _ => "is not an allowed key",
            };
            out.push(Problem {
                code: Code::Schema,
                pointer: format!("{path}/{}", escape_token(&key)),
                message: format!("`{key}` {why}"),
                at_key: true,
            });
        }
        K::OneOfNotValid { context } | K::AnyOf { context } => {
            branch_problems(&path, &name, context, lookup, out)
        }
        K::OneOfMultipleValid { .. } => {
            let names = schema
                .and_then(|s| s.get("oneOf"))
                .map(required_names)
                .unwrap_or_default();
            if names.is_empty() {
                schema_problem(format!("{name} matches more than one allowed form"));
            } else {
                schema_problem(format!("give only one of {}", names.join(", ")));
            }
        }
        K::Type { kind } => {
            // A number or bool where a string is wanted is usually a YAML
            // scalar left unquoted (`schema_version: 0.1`): say how to write it.
            let quote = match err.instance().as_ref() {
                v @ (Value::Number(_) | Value::Bool(_)) if types(kind) == "a string" => {
                    format!(": write \"{v}\" (in quotes)")
                }
                _ => String::new(),
            };
            schema_problem(format!("{name} must be {}{quote}", types(kind)))
        }
        K::MinLength { limit: 1 } => schema_problem(format!("{name} must not be empty")),
        K::MinLength { limit } => {
            schema_problem(format!("{name} must be at least {limit} characters long"))
        }
        K::MaxLength { limit } => {
            schema_problem(format!("{name} must be at most {limit} characters long"))
        }
        K::MinItems { limit: 1 } => schema_problem(format!("{name} must not be an empty list")),
        K::MinItems { limit } => schema_problem(format!("{name} needs at least {limit} items")),
        K::MaxItems { limit } => schema_problem(format!("{name} allows at most {limit} items")),
        K::Pattern { pattern } => schema_problem(match pattern.as_str() {
            ID_PATTERN => format!(
                "{name} must be an ID: lower case letters, digits, `_` and `-`, starting with a letter, at most 64 characters"
            ),
            VERSION_PATTERN => format!("{name} must be a version MAJOR.MINOR, like \"0.1\""),
            _ => format!("{name} does not match the pattern `{pattern}`"),
        }),
        K::Format { format } => schema_problem(if format == "date-time" {
            format!("{name} is not an RFC 3339 date-time (like 2026-01-31T18:30:00Z)")
        } else {
            format!("{name} is not a valid {format}")
        }),
        K::Minimum { limit } => schema_problem(format!("{name} must be at least {limit}")),
        K::Maximum { limit } => schema_problem(format!("{name} must be at most {limit}")),
        K::ExclusiveMinimum { limit } => {
            schema_problem(format!("{name} must be greater than {limit}"))
        }
        K::ExclusiveMaximum { limit } => schema_problem(format!("{name} must be less than {limit}")),
        K::MaxProperties { limit } if known_count(err.instance(), schema) <= *limit => {
            // The excess is unknown fields, each reported as UNKNOWN_FIELD.
        }
        K::MinProperties { limit } | K::MaxProperties { limit } => {
            let keys = schema
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
                .map(|p| p.keys().map(|k| format!("`{k}`")).collect::<Vec<_>>());
            let exact = schema.is_some_and(|s| {
                s.get("minProperties") == Some(&Value::from(1))
                    && s.get("maxProperties") == Some(&Value::from(1))
            });
            match keys {
                Some(keys) if exact => {
                    schema_problem(format!("{name} must have exactly one of {}", keys.join(", ")))
                }
                _ if matches!(err.kind(), K::MinProperties { .. }) => {
                    schema_problem(format!("{name} needs at least {limit} fields"))
                }
                _ => schema_problem(format!("{name} allows at most {limit} fields")),
            }
        }
        K::UniqueItems => schema_problem(format!("{name} lists the same item twice")),
        K::Contains => {
            let wanted = schema
                .and_then(|s| s.get("contains"))
                .and_then(|c| c.get("const"))
                .map(show);
            match wanted {
                Some(w) => schema_problem(format!("{name} must list {w}")),
                None => schema_problem(format!("{name} has no item of the required kind")),
            }
        }
        K::FalseSchema if keyword_uri.contains("/dependentSchemas/derived/") => schema_problem(
            format!("{name} is not allowed on a derived variable: its value is computed from `derived` (Format 8.1)"),
        ),
        K::FalseSchema => schema_problem(format!("{name} is not allowed")),
        K::Custom { message, .. } => schema_problem(format!("{name} {message}")),
        _ => {
            let text: String = err.to_string().chars().take(200).collect();
            schema_problem(format!("{name}: {text}"));
        }
    }
}

/// A `not` failure: two fields given together, a forbidden field, or a reserved name.
fn not_problem(
    err: &ValidationError<'_>,
    path: &str,
    name: &str,
    negated: &Value,
    out: &mut Vec<Problem>,
) {
    let required: Vec<&str> = negated
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let (pointer, message, at_key) = match required.as_slice() {
        [one] => (
            format!("{path}/{}", escape_token(one)),
            if *one == "scripts" {
                "`scripts` is not allowed: packs are data, not code".to_string()
            } else {
                format!("`{one}` is not allowed here")
            },
            true,
        ),
        [first @ .., last] if !first.is_empty() => (
            format!("{path}/{}", escape_token(last)),
            format!(
                "{} and `{last}` cannot both be given",
                first
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            true,
        ),
        _ => match (negated.get("enum"), err.instance().as_str()) {
            (Some(e), _) if e.as_array().is_some_and(|e| e.contains(&Value::from(""))) => (
                path.to_string(),
                format!("{name} is empty: a zero default is written by leaving `default` out (Format 8.1, 2.2)"),
                false,
            ),
            (Some(_), Some(text)) => (
                path.to_string(),
                format!("`{text}` is a reserved name and cannot be declared as an ID"),
                false,
            ),
            _ => (
                path.to_string(),
                format!("{name} has a value that is not allowed"),
                false,
            ),
        },
    };
    out.push(Problem {
        code: Code::Schema,
        pointer,
        message,
        at_key,
    });
}

/// A `oneOf`/`anyOf` that no branch matched: report the branch that came
/// closest, or one message when no branch fits the value's type.
fn branch_problems<'s>(
    path: &str,
    name: &str,
    context: &[Vec<ValidationError<'static>>],
    lookup: &Lookup<'s>,
    out: &mut Vec<Problem>,
) {
    // Rank each branch: 2 = the value has the wrong type, 1 = a wrong constant
    // at the value itself, 0 = the value's shape fits but something inside fails.
    let mut best: Option<(u8, Vec<Problem>)> = None;
    let mut wanted_types: Vec<String> = Vec::new();
    let mut required: Vec<String> = Vec::new();
    let mut only_required = true;
    for branch in context {
        let mut rank = 0;
        let mut found = Vec::new();
        for e in branch {
            let here = e.instance_path().as_str() == path;
            match e.kind() {
                K::Type { kind } if here => {
                    rank = 2;
                    wanted_types.push(types(kind));
                }
                K::Constant { .. } | K::Enum { .. } if here => rank = rank.max(1),
                _ => {}
            }
            match e.kind() {
                K::Required { property } if here => {
                    required.push(format!("`{}`", property.as_str().unwrap_or_default()))
                }
                _ => only_required = false,
            }
            problems(e, lookup, &mut found);
        }
        found.dedup_by(|b, a| a.code == b.code && a.pointer == b.pointer);
        let better = match &best {
            None => true,
            Some((r, p)) => (rank, found.len()) < (*r, p.len()),
        };
        if better {
            best = Some((rank, found));
        }
    }
    let problem = |message: String| Problem {
        code: Code::Schema,
        pointer: path.to_string(),
        message,
        at_key: false,
    };
    match best {
        Some((2, _)) => {
            wanted_types.dedup();
            out.push(problem(format!(
                "{name} must be {}",
                wanted_types.join(" or ")
            )));
        }
        _ if only_required && !required.is_empty() => {
            required.dedup();
            out.push(problem(format!("needs one of {}", required.join(", "))));
        }
        Some((_, found)) => out.extend(found),
        None => out.push(problem(format!("{name} matches no allowed form"))),
    }
}

/// How many of an object's fields its schema's `properties` know.
fn known_count(instance: &Value, schema: Option<&Value>) -> u64 {
    let known = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    match (instance.as_object(), known) {
        (Some(fields), Some(known)) => {
            fields.keys().filter(|k| known.contains_key(*k)).count() as u64
        }
        (Some(fields), None) => fields.len() as u64,
        _ => 0,
    }
}

/// The field names `required` by the branches of a `oneOf`.
fn required_names(branches: &Value) -> Vec<String> {
    branches
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b.get("required").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| format!("`{s}`"))
        .collect()
}

/// How a message names the value at `path`: "`name`", "item 2 of `cast`", "the document".
pub(crate) fn field(path: &str) -> String {
    let mut segments = path.split('/').skip(1).map(unescape);
    let all: Vec<String> = segments.by_ref().collect();
    match all.as_slice() {
        [] => "the document".to_string(),
        [.., parent, last] if last.parse::<usize>().is_ok() => {
            format!("item {last} of `{parent}`")
        }
        [.., last] => format!("`{last}`"),
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// A JSON value as shown in a message: strings bare, others as JSON.
fn show(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// "a string", "an object or a string".
fn types(kind: &TypeKind) -> String {
    let names: Vec<String> = match kind {
        TypeKind::Single(t) => vec![t.to_string()],
        TypeKind::Multiple(set) => set.iter().map(|t| t.to_string()).collect(),
    };
    names
        .iter()
        .map(|n| match n.as_str() {
            "array" => "a list".to_string(),
            "object" => "an object".to_string(),
            "integer" => "an integer".to_string(),
            other => format!("a {other}"),
        })
        .collect::<Vec<_>>()
        .join(" or ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_named_for_messages() {
        assert_eq!(field(""), "the document");
        assert_eq!(field("/characters/0/name"), "`name`");
        assert_eq!(field("/scenarios/0/cast/2"), "item 2 of `cast`");
        assert_eq!(field("/set/a~1b"), "`a/b`");
    }

    #[test]
    fn types_read_as_english() {
        use jsonschema::JsonType;
        assert_eq!(types(&TypeKind::Single(JsonType::Array)), "a list");
        assert_eq!(types(&TypeKind::Single(JsonType::Integer)), "an integer");
    }
}

//! The resources of `troupe mcp` (docs/mcp.md): the specification by
//! section, the diagnostic codes of docs/validation.md, and the JSON
//! Schemas. The documents are embedded when the binary is built, so an
//! installed `troupe` serves the text it implements.

/// `docs/format.md`, the normative specification.
const FORMAT: &str = include_str!("../../../docs/format.md");
/// `docs/validation.md`, every diagnostic code.
const VALIDATION: &str = include_str!("../../../docs/validation.md");

/// One resource: its URI, a name, a description and its text.
#[derive(Debug, Clone)]
pub struct Doc {
    /// `troupe://format/8.6`, `troupe://validation/CEL_TYPE`,
    /// `troupe://schemas/npc.schema.json`, …
    pub uri: String,
    /// A short name (`Format 8.6 State at a message`).
    pub name: String,
    /// What it is.
    pub description: String,
    /// `text/markdown` or `application/schema+json`.
    pub mime: &'static str,
    /// The text.
    pub text: String,
}

/// The headings of a Markdown text outside code fences: (line index,
/// level, heading text).
fn headings(text: &str) -> Vec<(usize, usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let level = line.bytes().take_while(|b| *b == b'#').count();
        if (1..=6).contains(&level) && line.as_bytes().get(level) == Some(&b' ') {
            out.push((i, level, line[level + 1..].trim()));
        }
    }
    out
}

/// The sections of `text` whose heading passes `key` (which returns the
/// section's key): each runs to the next heading of its level or higher.
fn sections<'a>(
    text: &'a str,
    key: impl Fn(usize, &'a str) -> Option<String>,
) -> Vec<(String, &'a str, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let heads = headings(text);
    let mut out = Vec::new();
    for (n, (start, level, title)) in heads.iter().enumerate() {
        let Some(k) = key(*level, title) else {
            continue;
        };
        let end = heads[n + 1..]
            .iter()
            .find(|(_, l, _)| l <= level)
            .map_or(lines.len(), |(i, _, _)| *i);
        let body = lines[*start..end].join("\n");
        out.push((k, *title, body.trim_end().to_string() + "\n"));
    }
    out
}

/// A spec section's number from its heading (`8.6 State at a message` →
/// `8.6`).
fn section_number(level: usize, title: &str) -> Option<String> {
    if !(2..=3).contains(&level) {
        return None;
    }
    let number = title.split(' ').next()?;
    let ok = !number.is_empty()
        && number.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && number.as_bytes()[0].is_ascii_digit();
    ok.then(|| number.to_string())
}

/// A code's name from its heading in docs/validation.md (`CEL_TYPE —
/// error (Format 11.1)` → `CEL_TYPE`).
fn code_name(level: usize, title: &str) -> Option<String> {
    if level != 3 {
        return None;
    }
    let code = title.split(' ').next()?;
    let ok = !code.is_empty()
        && code
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    ok.then(|| code.to_string())
}

/// Every resource, in a fixed order: the two documents whole, each spec
/// section, each code, each schema.
pub fn all() -> Vec<Doc> {
    let mut out = vec![
        Doc {
            uri: "troupe://format".into(),
            name: "docs/format.md".into(),
            description: "The Troupe format, the normative specification (whole)".into(),
            mime: "text/markdown",
            text: FORMAT.to_string(),
        },
        Doc {
            uri: "troupe://validation".into(),
            name: "docs/validation.md".into(),
            description: "What troupe check checks; every diagnostic code (whole)".into(),
            mime: "text/markdown",
            text: VALIDATION.to_string(),
        },
    ];
    for (number, title, text) in sections(FORMAT, section_number) {
        out.push(Doc {
            uri: format!("troupe://format/{number}"),
            name: format!("Format {title}"),
            description: format!("docs/format.md §{number}"),
            mime: "text/markdown",
            text,
        });
    }
    for (code, title, text) in sections(VALIDATION, code_name) {
        out.push(Doc {
            uri: format!("troupe://validation/{code}"),
            name: code.clone(),
            description: format!("docs/validation.md: {title}"),
            mime: "text/markdown",
            text,
        });
    }
    for (file, text) in troupe::schemas() {
        out.push(Doc {
            uri: format!("troupe://schemas/{file}"),
            name: format!("schemas/{file}"),
            description: "A JSON Schema of a file Troupe reads".into(),
            mime: "application/schema+json",
            text: (*text).to_string(),
        });
    }
    for (command, text) in troupe::output_schemas() {
        out.push(Doc {
            uri: format!("troupe://schemas/output/{command}.schema.json"),
            name: format!("schemas/output/{command}.schema.json"),
            description: format!("The JSON Schema of `troupe {command} --json` (Format 20.1)"),
            mime: "application/schema+json",
            text: (*text).to_string(),
        });
    }
    out
}

/// The resource at `uri`.
pub fn read(uri: &str) -> Option<Doc> {
    all().into_iter().find(|d| d.uri == uri)
}

/// The URI templates clients may fill in (RFC 6570).
pub const TEMPLATES: &[(&str, &str, &str)] = &[
    (
        "troupe://format/{section}",
        "Format section",
        "A section of docs/format.md by number (`8.6`, `20`), with its subsections",
    ),
    (
        "troupe://validation/{code}",
        "Diagnostic code",
        "A diagnostic code's entry in docs/validation.md (`CEL_TYPE`)",
    ),
    (
        "troupe://schemas/{file}",
        "JSON Schema",
        "A JSON Schema by file name (`npc.schema.json`, `output/run.schema.json`)",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_codes_and_schemas_are_resources() {
        let s = read("troupe://format/8.6").unwrap();
        assert!(s.text.starts_with("### 8.6 "), "{}", &s.text[..40]);
        assert!(!s.text.contains("### 8.7 "));
        let top = read("troupe://format/20").unwrap();
        assert!(top.text.contains("### 20.1 ") && !top.text.contains("## 21 "));
        let code = read("troupe://validation/CEL_TYPE").unwrap();
        assert!(code.text.starts_with("### CEL_TYPE"));
        assert!(read("troupe://schemas/npc.schema.json").is_some());
        assert!(read("troupe://schemas/output/run.schema.json").is_some());
        assert!(read("troupe://format/99").is_none());
    }
}

//! Lorebooks → a world's lore entries (`docs/import.md` §3, §4; Format 5).
//!
//! Three inputs share this module: a card's `character_book`, a standalone
//! V3 lorebook (`{"spec": "lorebook_v3", "data": Lorebook}`), and
//! SillyTavern's World Info file (`{"entries": {"<uid>": {...}}}`).
//! Fields Troupe has no place for stay in the entry's `extensions`.

use std::collections::HashSet;

use serde_json::{json, Map, Value};

use troupe::{Code, Diagnostic};

use super::ids::{slug, unique};
use super::macros;
use super::record;
use super::summary::Summary;

/// The card fields of a book entry that Troupe holds in its own fields.
const ENTRY_MAPPED: &[&str] = &[
    "keys",
    "content",
    "enabled",
    "insertion_order",
    "case_sensitive",
    "constant",
    "secondary_keys",
    "position",
];

/// The card fields of a book that the world holds.
const BOOK_MAPPED: &[&str] = &["name", "description", "entries", "recursive_scanning"];

/// Content for an entry whose card content is empty: a comment macro that
/// renders nothing (Troupe needs a non-empty `content`, Format 5.2).
pub const EMPTY_CONTENT: &str = "{{// empty}}";

/// What a book is converted with: the opening ID of each greeting index
/// (`@@is_greeting N`), and the owner's name for a book without a name.
#[derive(Debug, Clone, Default)]
pub struct BookContext {
    /// Greeting index (0 = `first_mes`, k = `alternate_greetings[k-1]`) →
    /// opening ID, `None` when that greeting has no opening.
    pub greetings: Vec<Option<String>>,
    /// The name to call the world when the book has none.
    pub fallback_name: String,
    /// IDs already used in the bundle namespace.
    pub taken: HashSet<String>,
    /// What the conversion created, converted, kept and warned of.
    pub summary: Summary,
}

/// A card book (V2/V3 `character_book`, or `data` of a `lorebook_v3`) → a
/// world (Format 5.1) with its entries and the book's record in
/// `extensions.card`.
///
/// Errors: SCHEMA at `pointer` when the book or an entry is not an object,
/// or `entries` is not a list.
pub fn book_to_world(
    book: &Value,
    pointer: &str,
    ctx: &mut BookContext,
) -> Result<Value, Diagnostic> {
    let obj = book.as_object().ok_or_else(|| {
        Diagnostic::error(Code::Schema, "a lorebook must be an object").at(pointer)
    })?;
    let entries = match obj.get("entries") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => {
            return Err(Diagnostic::error(Code::Schema, "`entries` must be a list")
                .at(format!("{pointer}/entries")))
        }
    };
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map_or_else(|| ctx.fallback_name.clone(), str::to_string);
    let id = unique(&slug(&name, "world"), &mut ctx.taken);
    ctx.summary.created("world", &id, Some(pointer));
    let book_scan = obj
        .get("scan_depth")
        .and_then(Value::as_i64)
        .filter(|d| *d >= 0);
    let mut world = Map::new();
    world.insert("id".into(), json!(id));
    world.insert("name".into(), json!(name));
    if let Some(d) = obj
        .get("description")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        world.insert(
            "description".into(),
            json!(macros::to_troupe_noted(
                d,
                &format!("{pointer}/description"),
                &mut ctx.summary
            )),
        );
    }
    if obj.get("recursive_scanning") == Some(&json!(true)) {
        world.insert("recursion".into(), json!(true));
        ctx.summary.converted(
            &format!("{pointer}/recursive_scanning"),
            "`recursive_scanning` = true → the world's `recursion: true` (Format 5.7: no step limit)",
        );
    }
    let mut out_entries = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let at = format!("{pointer}/entries/{i}");
        let entry = card_entry(e, i, book_scan, ctx, &at)?;
        if let Some(eid) = entry.get("id").and_then(Value::as_str) {
            ctx.summary.created("entry", eid, Some(&at));
        }
        out_entries.push(entry);
    }
    if !out_entries.is_empty() {
        world.insert("entries".into(), Value::Array(out_entries.clone()));
    }
    let view = book_view(&world);
    let restored: Vec<Value> = out_entries.iter().map(entry_to_card).collect();
    let rec = record::build(obj, BOOK_MAPPED, &view, |k| {
        book_inverse(k, &world, &restored)
    });
    world.insert("extensions".into(), json!({ "card": rec }));
    Ok(Value::Object(world))
}

/// The Troupe form of a book's own mapped fields (what its record hashes).
pub fn book_view(world: &Map<String, Value>) -> Value {
    json!({"name": world.get("name"), "description": world.get("description"),
           "recursion": world.get("recursion")})
}

/// The card value of a book's mapped field `k` from the world. `entries`
/// is given the card entries (on import the originals, on export the
/// entries rebuilt from the world's).
pub fn book_inverse(k: &str, world: &Map<String, Value>, entries: &[Value]) -> Option<Value> {
    match k {
        "name" => world.get("name").cloned(),
        "description" => Some(json!(world
            .get("description")
            .and_then(Value::as_str)
            .map(macros::from_troupe)
            .unwrap_or_default())),
        "entries" => Some(Value::Array(entries.to_vec())),
        "recursive_scanning" => Some(json!(world
            .get("recursion")
            .is_some_and(|r| *r != json!(false)))),
        _ => None,
    }
}

/// One card book entry → a Troupe entry (Format 5.2).
fn card_entry(
    e: &Value,
    i: usize,
    book_scan: Option<i64>,
    ctx: &mut BookContext,
    at: &str,
) -> Result<Value, Diagnostic> {
    let obj = e.as_object().ok_or_else(|| {
        Diagnostic::error(Code::Schema, "a lorebook entry must be an object").at(at)
    })?;
    let ext = obj.get("extensions").and_then(Value::as_object);
    let ext_bool = |k: &str| ext.and_then(|x| x.get(k)).and_then(Value::as_bool);
    let ext_int = |k: &str| ext.and_then(|x| x.get(k)).and_then(Value::as_i64);
    let case_sensitive = obj
        .get("case_sensitive")
        .and_then(Value::as_bool)
        .or_else(|| ext_bool("case_sensitive"));
    let use_regex = obj.get("use_regex").and_then(Value::as_bool) == Some(true);
    let content = obj.get("content").and_then(Value::as_str).unwrap_or("");
    let (prefix, body) = split_decorators(content);
    let decorators = parse_decorators(prefix);

    let mut t = Map::new();
    t.insert("id".into(), json!(format!("entry-{}", i + 1)));
    let body_t = macros::to_troupe_noted(body, &format!("{at}/content"), &mut ctx.summary);
    t.insert(
        "content".into(),
        json!(if body_t.is_empty() {
            EMPTY_CONTENT.to_string()
        } else {
            body_t
        }),
    );
    let keys = map_keys_noted(
        obj.get("keys"),
        use_regex,
        &format!("{at}/keys"),
        &mut ctx.summary,
    );
    if !keys.is_empty() {
        t.insert("keys".into(), json!(keys));
    }
    let selective = obj.get("selective").and_then(Value::as_bool) == Some(true);
    let secondary = map_keys_noted(
        obj.get("secondary_keys"),
        use_regex,
        &format!("{at}/secondary_keys"),
        &mut ctx.summary,
    );
    if selective && !secondary.is_empty() {
        t.insert("secondary_keys".into(), json!(secondary));
        t.insert("logic".into(), json!(logic(ext_int("selectiveLogic"))));
    }
    if obj.get("constant").and_then(Value::as_bool) == Some(true) {
        t.insert("constant".into(), json!(true));
    }
    if let Some(c) = case_sensitive {
        t.insert("case_sensitive".into(), json!(c));
    }
    // Card keys match as substrings unless told otherwise (Format 5.4
    // defaults whole_words to true).
    t.insert(
        "whole_words".into(),
        json!(ext_bool("match_whole_words").unwrap_or(false)),
    );
    let depth_at = if ext_int("scan_depth").is_some_and(|d| d >= 0) {
        format!("{at}/extensions/scan_depth")
    } else {
        format!("{}/scan_depth", at.rsplitn(3, '/').nth(2).unwrap_or(""))
    };
    let depth = ext_int("scan_depth").filter(|d| *d >= 0).or(book_scan);
    let no_scan = set_scan_depth(&mut t, depth, &depth_at, &mut ctx.summary);
    if let Some(o) = obj.get("insertion_order").and_then(Value::as_i64) {
        t.insert("order".into(), json!(o));
    }
    match obj.get("position").and_then(Value::as_str) {
        Some("before_char") => {
            t.insert("position".into(), json!("before"));
        }
        Some("after_char") => {
            t.insert("position".into(), json!("after"));
        }
        _ => {}
    }
    if obj.get("enabled").and_then(Value::as_bool) == Some(false) {
        t.insert("enabled".into(), json!(false));
    }
    let mut when = Vec::new();
    if ext_bool("useProbability") == Some(true) {
        if let Some(p) = ext_int("probability").filter(|p| *p < 100) {
            when.push(format!("roll(\"1d100\") <= {p}"));
        }
    }
    let unlowered = lower_decorators(&decorators, &mut t, &mut when, ctx);
    for line in &unlowered {
        ctx.summary.kept(
            &format!("{at}/content"),
            format!(
                "decorator `{line}`: Troupe has no equivalent (kept in extensions.card.unlowered)"
            ),
        );
    }
    if let Some(x) = ext {
        note_sillytavern_fields(x, &format!("{at}/extensions"), &mut ctx.summary);
        // The card's `extensions` are kept whole in the record.
        map_st_lore_fields(
            x,
            false,
            &mut t,
            &format!("{at}/extensions"),
            &mut ctx.summary,
        );
    }
    never_active_warning(obj.get("keys"), &t, "keys", at, &mut ctx.summary);
    // A decorator may have given a depth or made the entry constant.
    if no_scan && !t.contains_key("scan_depth") && t.get("constant") != Some(&json!(true)) {
        when = vec![NO_SCAN_WHEN.to_string()];
    }
    if !when.is_empty() {
        t.insert("when".into(), json!(when.join(" && ")));
    }
    let view = entry_view(&t);
    let rec = record::build(obj, ENTRY_MAPPED, &view, |k| entry_inverse(k, &t, prefix));
    let mut card = rec.as_object().cloned().unwrap_or_default();
    if !prefix.is_empty() {
        card.insert("decorators".into(), json!(prefix));
    }
    if !unlowered.is_empty() {
        card.insert("unlowered".into(), json!(unlowered));
    }
    t.insert("extensions".into(), json!({ "card": card }));
    Ok(Value::Object(t))
}

/// SillyTavern's default scan depth (its World Info setting "Scan Depth"),
/// given to an imported entry that sets none (`docs/import.md` §3).
pub const SILLYTAVERN_SCAN_DEPTH: i64 = 2;

/// The `when` of an imported entry with scan depth 0 that is not constant:
/// SillyTavern scans no chat message for it, so its keys never hit the
/// conversation (`docs/import.md` §3).
pub const NO_SCAN_WHEN: &str = "false";

/// Sets the `scan_depth` of an imported entry from SillyTavern's `depth`
/// (`None`: not set, SillyTavern's default 2). Depth 0 — SillyTavern scans
/// no chat message, only recursion and the Author's Note — has no Troupe
/// form: no `scan_depth` is written, a constant entry stays constant (it
/// scans nothing either way) and the caller makes any other entry never
/// active (`when: false`); the conversion is noted at `at`. Returns true in
/// that last case.
fn set_scan_depth(
    t: &mut Map<String, Value>,
    depth: Option<i64>,
    at: &str,
    summary: &mut Summary,
) -> bool {
    match depth {
        Some(0) => {
            let constant = t.get("constant") == Some(&json!(true));
            summary.converted(
                at,
                if constant {
                    "scan depth 0 (SillyTavern scans no chat message): Troupe has no depth 0; \
                     the entry is constant, which needs no scanning"
                } else {
                    "scan depth 0 (SillyTavern scans no chat message, only recursion and the \
                     Author's Note): Troupe has no depth 0; the entry never activates by its \
                     keys (`when: false`)"
                },
            );
            !constant
        }
        d => {
            t.insert(
                "scan_depth".into(),
                json!(d.unwrap_or(SILLYTAVERN_SCAN_DEPTH)),
            );
            false
        }
    }
}

/// The Troupe fields of an entry without its `extensions` (what a record
/// hashes).
pub fn entry_view(t: &Map<String, Value>) -> Value {
    let mut v = t.clone();
    v.remove("extensions");
    Value::Object(v)
}

/// The card value of a mapped entry field from the Troupe entry `t`;
/// `prefix` is the decorator text that stood before the content.
pub fn entry_inverse(k: &str, t: &Map<String, Value>, prefix: &str) -> Option<Value> {
    let strs = |f: &str| -> Value {
        json!(t
            .get(f)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default())
    };
    Some(match k {
        "keys" => strs("keys"),
        "secondary_keys" => strs("secondary_keys"),
        "content" => {
            let c = t.get("content").and_then(Value::as_str).unwrap_or("");
            let body = if c == EMPTY_CONTENT {
                String::new()
            } else {
                macros::from_troupe(c)
            };
            json!(format!("{prefix}{body}"))
        }
        "enabled" => json!(t.get("enabled").and_then(Value::as_bool).unwrap_or(true)),
        "insertion_order" => t.get("order").cloned().unwrap_or(json!(100)),
        "case_sensitive" => t.get("case_sensitive").cloned()?,
        "constant" => json!(t.get("constant").and_then(Value::as_bool).unwrap_or(false)),
        "position" => json!(match t.get("position").and_then(Value::as_str) {
            Some("after") => "after_char",
            _ => "before_char",
        }),
        _ => return None,
    })
}

/// A Troupe entry → the card entry it came from (its record restored), or,
/// for an entry made in Troupe, a new card entry from its fields.
pub fn entry_to_card(t: &Value) -> Value {
    let empty = Map::new();
    let obj = t.as_object().unwrap_or(&empty);
    let view = entry_view(obj);
    match t.pointer("/extensions/card") {
        Some(rec) => {
            let prefix = rec.get("decorators").and_then(Value::as_str).unwrap_or("");
            let mut out = record::restore(rec, &view, |k| entry_inverse(k, obj, prefix));
            let mut ext = out
                .get("extensions")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            st_lore_to_card(obj, &mut ext);
            if !ext.is_empty() || out.contains_key("extensions") {
                out.insert("extensions".into(), Value::Object(ext));
            }
            Value::Object(out)
        }
        None => {
            let mut out = Map::new();
            for k in ENTRY_MAPPED {
                if let Some(v) = entry_inverse(k, obj, "") {
                    out.insert((*k).to_string(), v);
                }
            }
            out.insert("use_regex".into(), json!(false));
            let mut ext = Map::new();
            for (troupe, _, card) in ST_LORE_FIELDS {
                if matches!(*troupe, "sticky" | "cooldown") {
                    continue;
                }
                if let Some(x) = obj.get(*troupe) {
                    ext.insert((*card).to_string(), st_lore_to_source(troupe, x, false));
                }
            }
            let int = |k: &str| obj.get(k).and_then(Value::as_i64).unwrap_or(0);
            let (s, c) = troupe_timed_to_st(int("sticky"), int("cooldown"));
            if s >= 1 {
                ext.insert("sticky".into(), json!(s));
            }
            if c >= 1 {
                ext.insert("cooldown".into(), json!(c));
            }
            out.insert("extensions".into(), Value::Object(ext));
            Value::Object(out)
        }
    }
}

/// A world → the card book it came from (its record restored, entries
/// rebuilt by [`entry_to_card`]), or a new book for a world made in Troupe.
pub fn world_to_book(world: &Value) -> Value {
    let empty = Map::new();
    let obj = world.as_object().unwrap_or(&empty);
    let entries: Vec<Value> = obj
        .get("entries")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(entry_to_card)
        .collect();
    let view = book_view(obj);
    match world.pointer("/extensions/card") {
        Some(rec) => Value::Object(record::restore(rec, &view, |k| {
            book_inverse(k, obj, &entries)
        })),
        None => {
            let mut out = Map::new();
            for k in BOOK_MAPPED {
                if let Some(v) = book_inverse(k, obj, &entries) {
                    out.insert((*k).to_string(), v);
                }
            }
            out.insert("extensions".into(), json!({}));
            Value::Object(out)
        }
    }
}

/// SillyTavern's `selectiveLogic` (0 AND ANY, 1 NOT ALL, 2 NOT ANY,
/// 3 AND ALL) → Troupe `logic`.
fn logic(n: Option<i64>) -> &'static str {
    match n {
        Some(1) => "not_all",
        Some(2) => "not_any",
        Some(3) => "and_all",
        _ => "and_any",
    }
}

/// [`map_keys`], noting in `summary` (as ADVISORY warnings at `at`) every
/// key that cannot be kept: keys given as one string (read as
/// comma-separated keys), a key that is not a string, a regex the `regex`
/// crate refuses (invalid, or JavaScript-only syntax such as lookbehind) or
/// with flags Troupe has not. The original text stays in the record.
pub fn map_keys_noted(
    keys: Option<&Value>,
    use_regex: bool,
    at: &str,
    summary: &mut Summary,
) -> Vec<String> {
    match keys {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => {
            let parts: Vec<&str> = s
                .split(',')
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .collect();
            let mapped: Vec<String> = parts.iter().filter_map(|k| map_key(k, use_regex)).collect();
            summary.warn(
                at,
                format!(
                    "the keys are one string, not a list: read as the comma-separated keys {mapped:?} (the original is kept)"
                ),
            );
            mapped
        }
        Some(Value::Array(a)) => {
            let mut out = Vec::new();
            for (i, k) in a.iter().enumerate() {
                let Some(k) = k.as_str() else {
                    summary.warn(
                        &format!("{at}/{i}"),
                        format!("a key that is not a string ({k}) cannot be kept: dropped (the original is kept)"),
                    );
                    continue;
                };
                match map_key(k, use_regex) {
                    Some(m) => out.push(m),
                    None if k.is_empty() => {}
                    None => summary.warn(
                        &format!("{at}/{i}"),
                        format!(
                            "the regex key `{k}` cannot be kept: the regex crate refuses it (invalid, JavaScript-only syntax such as lookbehind or backreferences, or flags other than i m s g u y); dropped, the original text is kept"
                        ),
                    ),
                }
            }
            out
        }
        Some(other) => {
            summary.warn(
                at,
                format!(
                    "the keys are {other}, not a list of strings: dropped (the original is kept)"
                ),
            );
            Vec::new()
        }
    }
}

/// Warns (ADVISORY at `at`) of an entry that can never activate: enabled,
/// not constant, without a `when`, and no key left (`field` missing, or
/// every key dropped).
fn never_active_warning(
    original: Option<&Value>,
    t: &Map<String, Value>,
    field: &str,
    at: &str,
    summary: &mut Summary,
) {
    let b = |k: &str| t.get(k).and_then(Value::as_bool);
    if t.contains_key("keys") || b("constant") == Some(true) || b("enabled") == Some(false) {
        return;
    }
    let why = match original {
        None | Some(Value::Null) => format!("it has no `{field}`"),
        _ => "none of its keys could be kept".to_string(),
    };
    summary.warn(
        at,
        format!("this entry never activates: {why} and it is not constant"),
    );
}

/// SillyTavern entry fields whose behaviour Troupe does not reproduce at
/// import (`docs/import.md` §3): kept as data, each noted in the summary
/// when set (not null, false, 0 or empty). Timed effects, recursion flags
/// and inclusion groups are converted instead ([`ST_LORE_FIELDS`]).
pub const ST_KEPT_ONLY: &[(&str, &str)] = &[
    (
        "depth",
        "insertion depth is a prompt-building matter Troupe leaves to the runtime",
    ),
    (
        "role",
        "insertion role is a prompt-building matter Troupe leaves to the runtime",
    ),
    (
        "automationId",
        "SillyTavern automation has no Troupe equivalent",
    ),
    (
        "automation_id",
        "SillyTavern automation has no Troupe equivalent",
    ),
    ("vectorized", "vector search has no Troupe equivalent"),
];

fn note_sillytavern_fields(fields: &Map<String, Value>, at: &str, summary: &mut Summary) {
    for (k, why) in ST_KEPT_ONLY {
        // SillyTavern's defaults say nothing: depth 4.
        let default = match *k {
            "depth" => Some(4.0),
            _ => None,
        };
        let set = match fields.get(*k) {
            Some(Value::Number(n)) if default.is_some() && n.as_f64() == default => false,
            None | Some(Value::Null) | Some(Value::Bool(false)) => false,
            Some(Value::Number(n)) => n.as_f64() != Some(0.0),
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(_) => true,
        };
        if set {
            summary.kept(
                &format!("{at}/{}", troupe::internals::diag::escape_token(k)),
                format!("`{k}` = {}: {why}", fields[*k]),
            );
        }
    }
}

/// SillyTavern's World Info fields of timed effects, recursion and
/// inclusion groups (`docs/import.md` §3) and the Troupe entry fields they
/// become (Format 5.6–5.8): (Troupe field, World Info name, card
/// `extensions` name).
pub const ST_LORE_FIELDS: &[(&str, &str, &str)] = &[
    ("sticky", "sticky", "sticky"),
    ("cooldown", "cooldown", "cooldown"),
    ("delay", "delay", "delay"),
    ("exclude_recursion", "excludeRecursion", "exclude_recursion"),
    ("prevent_recursion", "preventRecursion", "prevent_recursion"),
    (
        "delay_until_recursion",
        "delayUntilRecursion",
        "delay_until_recursion",
    ),
    ("group", "group", "group"),
    ("group_weight", "groupWeight", "group_weight"),
    ("group_override", "groupOverride", "group_override"),
    ("group_scoring", "useGroupScoring", "use_group_scoring"),
];

/// The Troupe value of one SillyTavern lore field (`ST_LORE_FIELDS`), or
/// `None` when it leaves the Troupe field absent (SillyTavern's "off":
/// null, false, 0, an empty group, weight 100). `Err` for a value Troupe
/// cannot hold (kept as data).
fn st_lore_value(field: &str, v: &Value) -> Result<Option<Value>, ()> {
    let int = || troupe::internals::model::integer(v);
    match (field, v) {
        (_, Value::Null) | (_, Value::Bool(false)) => Ok(None),
        ("sticky" | "cooldown" | "delay", _) => match int() {
            Some(n) if n >= 1 => Ok(Some(json!(n))),
            Some(_) => Ok(None),
            None => Err(()),
        },
        ("delay_until_recursion", Value::Bool(true)) => Ok(Some(json!(true))),
        ("delay_until_recursion", _) => match int() {
            Some(n) if n >= 1 => Ok(Some(json!(n))),
            Some(0) => Ok(None),
            _ => Err(()),
        },
        ("group", Value::String(g)) => {
            let names: Vec<&str> = g
                .split(',')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .collect();
            Ok((!names.is_empty()).then(|| json!(names)))
        }
        ("group_weight", _) => match int() {
            Some(100) => Ok(None),
            Some(n) if n >= 1 => Ok(Some(json!(n))),
            _ => Err(()),
        },
        (_, Value::Bool(true)) => Ok(Some(json!(true))),
        _ => Err(()),
    }
}

/// Maps SillyTavern's timed-effect, recursion and group fields of `fields`
/// (World Info names when `world_info`, else a card entry's `extensions`
/// names) onto the Troupe entry `t` (Format 5.6–5.8), noting each set one
/// as converted and each one Troupe cannot hold as kept, at `at/<name>`.
/// Returns the names of the fields whose original the Troupe form does not
/// give back exactly (kept by the caller).
fn map_st_lore_fields(
    fields: &Map<String, Value>,
    world_info: bool,
    t: &mut Map<String, Value>,
    at: &str,
    summary: &mut Summary,
) -> Vec<&'static str> {
    let mut lossy = Vec::new();
    for (troupe, wi, card) in ST_LORE_FIELDS {
        let name = if world_info { *wi } else { *card };
        let Some(v) = fields.get(name) else {
            continue;
        };
        let here = format!("{at}/{}", troupe::internals::diag::escape_token(name));
        match st_lore_value(troupe, v) {
            Ok(Some(x)) => {
                if !matches!(*troupe, "sticky" | "cooldown") {
                    summary.converted(&here, format!("`{name}` = {v} → `{troupe}: {x}`"));
                }
                if *troupe == "group" && st_lore_to_source(troupe, &x, world_info) != *v {
                    lossy.push(name);
                }
                t.insert((*troupe).to_string(), x);
            }
            Ok(None) => {}
            Err(()) => {
                lossy.push(name);
                summary.kept(
                    &here,
                    format!(
                        "`{name}` = {v}: not a value Troupe's `{troupe}` can hold (Format 5.2)"
                    ),
                );
            }
        }
    }
    // SillyTavern's sticky and cooldown count differently from Troupe's
    // (`docs/import.md` §3): convert the pair so the same messages are held
    // and cooling.
    let int_of = |t: &Map<String, Value>, k: &str| t.get(k).and_then(Value::as_i64).unwrap_or(0);
    let st = (int_of(t, "sticky"), int_of(t, "cooldown"));
    if st != (0, 0) {
        let troupe = st_timed_to_troupe(st.0, st.1);
        for (k, v) in [("sticky", troupe.0), ("cooldown", troupe.1)] {
            if v >= 1 {
                t.insert(k.to_string(), json!(v));
            } else {
                t.remove(k);
            }
        }
        // The two fields have the same names in World Info and in a card's
        // `extensions`.
        let (sticky_name, cooldown_name) = ("sticky", "cooldown");
        let shown = |n: i64| {
            if n >= 1 {
                n.to_string()
            } else {
                "absent".to_string()
            }
        };
        summary.converted(
            &format!("{at}/{}", if st.0 >= 1 { sticky_name } else { cooldown_name }),
            format!(
                "SillyTavern `sticky` {} and `cooldown` {} → Troupe `sticky` {} and `cooldown` {}: the same messages held and cooling (SillyTavern counts the message an entry starts at, Troupe the messages after it; Format 5.6)",
                st.0,
                st.1,
                shown(troupe.0),
                shown(troupe.1)
            ),
        );
        // Both SillyTavern forms of one behaviour (sticky 1 and sticky 0
        // with one more cooldown) read the same: keep the original when the
        // way back would give the other.
        if troupe_timed_to_st(troupe.0, troupe.1) != st {
            for name in [sticky_name, cooldown_name] {
                if fields.contains_key(name) {
                    lossy.push(name);
                }
            }
        }
    }
    lossy
}

/// SillyTavern's `sticky` and `cooldown` of one entry → Troupe's (Format
/// 5.6, `docs/import.md` §3). SillyTavern records an effect at the chat
/// length L where the entry starts, ends it once the chat has L + N
/// messages, and starts a sticky entry's cooldown when its sticky ends (a
/// cooldown without sticky runs from L). So sticky N ≥ 1 holds the next
/// N − 1 messages and the cooldown then blocks C; a cooldown C without
/// sticky blocks the next C − 1. Troupe counts the messages after the
/// start: sticky N − 1 and cooldown C, or cooldown C − 1.
pub fn st_timed_to_troupe(sticky: i64, cooldown: i64) -> (i64, i64) {
    if sticky >= 1 {
        (sticky - 1, cooldown.max(0))
    } else {
        (0, (cooldown - 1).max(0))
    }
}

/// Troupe's `sticky` and `cooldown` → SillyTavern's, the way back of
/// [`st_timed_to_troupe`] (0 for absent).
pub fn troupe_timed_to_st(sticky: i64, cooldown: i64) -> (i64, i64) {
    if sticky >= 1 {
        (sticky + 1, cooldown.max(0))
    } else if cooldown >= 1 {
        (0, cooldown + 1)
    } else {
        (0, 0)
    }
}

/// The SillyTavern value of a Troupe lore field (the way back of
/// [`st_lore_value`]): `x` the Troupe value, `Value::Null` when absent.
fn st_lore_to_source(troupe: &str, x: &Value, world_info: bool) -> Value {
    match troupe {
        "sticky" | "cooldown" | "delay" => match x {
            Value::Null => {
                if world_info {
                    Value::Null
                } else {
                    json!(0)
                }
            }
            v => v.clone(),
        },
        "delay_until_recursion" => match x {
            Value::Null => json!(false),
            v => v.clone(),
        },
        "group" => json!(x
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(",")),
        "group_weight" => match x {
            Value::Null => json!(100),
            v => v.clone(),
        },
        _ => json!(x.as_bool().unwrap_or(false)),
    }
}

/// Writes the Troupe entry `t`'s timed-effect, recursion and group fields
/// into a card entry's `extensions` (`docs/import.md` §6): a value is
/// rewritten only when reading the one there back would not give the
/// Troupe field, so an unedited import exports its original values.
fn st_lore_to_card(t: &Map<String, Value>, ext: &mut Map<String, Value>) {
    // Sticky and cooldown convert as a pair (`st_timed_to_troupe`).
    let st_int = |k: &str| match ext.get(k).map(|v| st_lore_value(k, v)) {
        Some(Ok(Some(v))) => v.as_i64().unwrap_or(0),
        _ => 0,
    };
    let troupe_int = |k: &str| t.get(k).and_then(Value::as_i64).unwrap_or(0);
    let now = (troupe_int("sticky"), troupe_int("cooldown"));
    let read = st_timed_to_troupe(st_int("sticky"), st_int("cooldown"));
    let unreadable = ["sticky", "cooldown"]
        .iter()
        .any(|k| matches!(ext.get(*k).map(|v| st_lore_value(k, v)), Some(Err(()))));
    if read != now || (unreadable && now != (0, 0)) {
        let (s, c) = troupe_timed_to_st(now.0, now.1);
        ext.insert("sticky".into(), json!(s));
        ext.insert("cooldown".into(), json!(c));
    }
    for (troupe, _, card) in ST_LORE_FIELDS {
        if matches!(*troupe, "sticky" | "cooldown") {
            continue;
        }
        let now = t.get(*troupe).cloned();
        let was = ext.get(*card).map(|v| st_lore_value(troupe, v));
        let same = match (&was, &now) {
            (Some(Ok(a)), b) => a == b,
            (None, None) => true,
            _ => false,
        };
        if !same {
            ext.insert(
                (*card).to_string(),
                st_lore_to_source(troupe, now.as_ref().unwrap_or(&Value::Null), false),
            );
        }
    }
}

/// Card keys → Troupe keys (Format 5.4): empty keys are dropped; a
/// `/pattern/flags` key stays a regex with the flags Troupe knows (`i`,
/// `m`, `s`; `g`, `u`, `y` dropped); with `use_regex`, a key holding regex
/// metacharacters becomes `/key/`. A regex the `regex` crate refuses, or
/// with other flags, is dropped (it stays in the entry's record).
pub fn map_keys(keys: Option<&Value>, use_regex: bool) -> Vec<String> {
    keys.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(|k| map_key(k, use_regex))
        .collect()
}

fn map_key(k: &str, use_regex: bool) -> Option<String> {
    if k.is_empty() {
        return None;
    }
    if let Some(rest) = k.strip_prefix('/') {
        if let Some(end) = rest.rfind('/') {
            let (pattern, flags) = (&rest[..end], &rest[end + 1..]);
            if flags.chars().all(|c| c.is_ascii_alphabetic()) {
                let kept: String = flags.chars().filter(|c| "ims".contains(*c)).collect();
                if flags.chars().any(|c| !"imsguy".contains(c)) || !valid_regex(pattern) {
                    return None;
                }
                return Some(format!("/{pattern}/{kept}"));
            }
        }
    }
    if use_regex && k.chars().any(|c| "\\^$.|?*+()[]{}".contains(c)) {
        return valid_regex(k).then(|| format!("/{k}/"));
    }
    Some(k.to_string())
}

fn valid_regex(pattern: &str) -> bool {
    !pattern.is_empty() && regex::Regex::new(pattern).is_ok()
}

/// Splits entry content into its leading decorator lines (each starting
/// with `@@`, with their newlines and the blank lines after them) and the
/// rest.
fn split_decorators(content: &str) -> (&str, &str) {
    let mut end = 0;
    let mut in_decorators = true;
    for line in content.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if in_decorators && bare.starts_with("@@") {
            end += line.len();
        } else if end > 0 && bare.trim().is_empty() {
            in_decorators = false;
            end += line.len();
        } else {
            break;
        }
    }
    content.split_at(end)
}

/// One decorator line: `@@name value` (or `@@@name value`, a fallback).
#[derive(Debug, Clone)]
struct Decorator {
    name: String,
    value: String,
    fallback: bool,
    line: String,
}

fn parse_decorators(prefix: &str) -> Vec<Decorator> {
    prefix
        .lines()
        .filter(|l| l.starts_with("@@"))
        .map(|l| {
            let fallback = l.starts_with("@@@");
            let rest = l.trim_start_matches('@');
            let (name, value) = rest.split_once(' ').unwrap_or((rest, ""));
            Decorator {
                name: name.trim().to_string(),
                value: value.trim().to_string(),
                fallback,
                line: l.to_string(),
            }
        })
        .collect()
}

/// Lowers decorators into the entry (`docs/import.md` §4): each `@@`
/// decorator, or when Troupe cannot express it, its first `@@@` fallback
/// that it can. Only the first decorator of a name counts. Returns the lines
/// of the decorators that were not lowered.
fn lower_decorators(
    decorators: &[Decorator],
    t: &mut Map<String, Value>,
    when: &mut Vec<String>,
    ctx: &BookContext,
) -> Vec<String> {
    let has_activate = decorators.iter().any(|d| d.name == "activate");
    let mut seen = HashSet::new();
    let mut unlowered = Vec::new();
    let mut i = 0;
    while i < decorators.len() {
        let mut group = vec![&decorators[i]];
        let mut j = i + 1;
        while j < decorators.len() && decorators[j].fallback {
            group.push(&decorators[j]);
            j += 1;
        }
        let mut done = false;
        for d in group.iter() {
            if done || !seen.insert(d.name.clone()) && !d.fallback {
                continue;
            }
            if lower_one(d, t, when, ctx, has_activate) {
                done = true;
            } else {
                unlowered.push(d.line.clone());
            }
        }
        i = j;
    }
    unlowered
}

fn lower_one(
    d: &Decorator,
    t: &mut Map<String, Value>,
    when: &mut Vec<String>,
    ctx: &BookContext,
    has_activate: bool,
) -> bool {
    let int = || d.value.parse::<i64>().ok();
    let list = || -> Vec<String> {
        d.value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| serde_json::to_string(s).unwrap_or_default())
            .collect()
    };
    match d.name.as_str() {
        "activate" => {
            t.insert("constant".into(), json!(true));
            true
        }
        "dont_activate" if !has_activate => {
            t.insert("enabled".into(), json!(false));
            true
        }
        "activate_only_after" => match int().filter(|n| *n >= 0) {
            Some(n) => {
                when.push(format!("turn >= {n}"));
                true
            }
            None => false,
        },
        "activate_only_every" => match int().filter(|n| *n >= 1) {
            Some(n) => {
                when.push(format!("turn % {n} == 0"));
                true
            }
            None => false,
        },
        "scan_depth" => match int().filter(|n| *n >= 1) {
            Some(n) => {
                t.insert("scan_depth".into(), json!(n));
                true
            }
            None => false,
        },
        "position" => match d.value.as_str() {
            "before_desc" => {
                t.insert("position".into(), json!("before"));
                true
            }
            "after_desc" => {
                t.insert("position".into(), json!("after"));
                true
            }
            _ => false,
        },
        "additional_keys" | "exclude_keys" => {
            let keys = list();
            if keys.is_empty() {
                return false;
            }
            let hit = format!("hit([{}])", keys.join(", "));
            when.push(if d.name == "exclude_keys" {
                format!("!{hit}")
            } else {
                hit
            });
            true
        }
        "is_greeting" => match int()
            .and_then(|n| usize::try_from(n).ok())
            .and_then(|n| ctx.greetings.get(n).cloned().flatten())
        {
            Some(id) => {
                when.push(format!("opening == {}", json!(id)));
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// A SillyTavern World Info file (`{"entries": {"<uid>": {...}}}`) → a
/// world named `name` (`docs/import.md` §3). Fields Troupe does not map are
/// kept in each entry's `extensions.sillytavern`.
///
/// Errors: SCHEMA when `entries` is not an object or an entry is not one.
pub fn world_info_to_world(
    doc: &Value,
    name: &str,
    taken: &mut HashSet<String>,
) -> Result<Value, Diagnostic> {
    world_info_import(doc, name, taken, &mut Summary::default())
}

/// [`world_info_to_world`], noting in `summary` what it created, the keys
/// it could not keep (warnings; the entry keeps the original `key` /
/// `keysecondary` in `extensions.sillytavern`), entries that can never
/// activate, and SillyTavern fields kept only as data.
pub fn world_info_import(
    doc: &Value,
    name: &str,
    taken: &mut HashSet<String>,
    summary: &mut Summary,
) -> Result<Value, Diagnostic> {
    let entries = doc
        .get("entries")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            Diagnostic::error(Code::Schema, "`entries` must be an object keyed by uid")
                .at("/entries")
        })?;
    let mut out = Vec::new();
    for (uid, e) in entries {
        let at = format!("/entries/{}", troupe::internals::diag::escape_token(uid));
        let obj = e.as_object().ok_or_else(|| {
            Diagnostic::error(Code::Schema, "a World Info entry must be an object").at(&at)
        })?;
        let entry = world_info_entry(uid, obj, &at, summary);
        if let Some(eid) = entry.get("id").and_then(Value::as_str) {
            summary.created("entry", eid, Some(&at));
        }
        out.push(entry);
    }
    let mut world = Map::new();
    let world_id = unique(&slug(name, "world"), taken);
    summary.created.insert(
        0,
        super::summary::Created {
            kind: "world",
            id: world_id.clone(),
            from: None,
        },
    );
    world.insert("id".into(), json!(world_id));
    world.insert(
        "name".into(),
        json!(if name.is_empty() { "World" } else { name }),
    );
    // A World Info file holds no recursion setting; SillyTavern's "Recursive
    // scan" is on by default with no step limit (Format 5.7).
    world.insert("recursion".into(), json!(true));
    summary.converted(
        "",
        "World Info has no recursion setting: SillyTavern's default (recursive scan on, no step limit) → the world's `recursion: true` (Format 5.7)",
    );
    if !out.is_empty() {
        world.insert("entries".into(), Value::Array(out));
    }
    let mut rest = doc.as_object().cloned().unwrap_or_default();
    rest.remove("entries");
    if !rest.is_empty() {
        world.insert("extensions".into(), json!({ "sillytavern": rest }));
    }
    Ok(Value::Object(world))
}

const WI_MAPPED: &[&str] = &[
    "key",
    "keysecondary",
    "content",
    "constant",
    "order",
    "disable",
    "selectiveLogic",
    "caseSensitive",
    "matchWholeWords",
    "scanDepth",
    "sticky",
    "cooldown",
    "delay",
    "excludeRecursion",
    "preventRecursion",
    "delayUntilRecursion",
    "group",
    "groupWeight",
    "groupOverride",
    "useGroupScoring",
];

fn world_info_entry(uid: &str, e: &Map<String, Value>, at: &str, summary: &mut Summary) -> Value {
    let b = |k: &str| e.get(k).and_then(Value::as_bool);
    let n = |k: &str| e.get(k).and_then(Value::as_i64);
    let mut t = Map::new();
    t.insert("id".into(), json!(slug(&format!("entry-{uid}"), "entry")));
    let content = macros::to_troupe_noted(
        e.get("content").and_then(Value::as_str).unwrap_or(""),
        &format!("{at}/content"),
        summary,
    );
    t.insert(
        "content".into(),
        json!(if content.is_empty() {
            EMPTY_CONTENT.to_string()
        } else {
            content
        }),
    );
    let keys = map_keys_noted(e.get("key"), false, &format!("{at}/key"), summary);
    if !keys.is_empty() {
        t.insert("keys".into(), json!(keys));
    }
    let secondary = map_keys_noted(
        e.get("keysecondary"),
        false,
        &format!("{at}/keysecondary"),
        summary,
    );
    if b("selective") == Some(true) && !secondary.is_empty() {
        t.insert("secondary_keys".into(), json!(secondary));
        t.insert("logic".into(), json!(logic(n("selectiveLogic"))));
    }
    if b("constant") == Some(true) {
        t.insert("constant".into(), json!(true));
    }
    if let Some(c) = b("caseSensitive") {
        t.insert("case_sensitive".into(), json!(c));
    }
    t.insert(
        "whole_words".into(),
        json!(b("matchWholeWords").unwrap_or(false)),
    );
    let no_scan = set_scan_depth(
        &mut t,
        n("scanDepth").filter(|d| *d >= 0),
        &format!("{at}/scanDepth"),
        summary,
    );
    if let Some(o) = n("order") {
        t.insert("order".into(), json!(o));
    }
    match n("position") {
        Some(0) => {
            t.insert("position".into(), json!("before"));
        }
        Some(1) => {
            t.insert("position".into(), json!("after"));
        }
        _ => {}
    }
    if b("disable") == Some(true) {
        t.insert("enabled".into(), json!(false));
    }
    if no_scan {
        t.insert("when".into(), json!(NO_SCAN_WHEN));
    } else if b("useProbability") == Some(true) {
        if let Some(p) = n("probability").filter(|p| *p < 100) {
            t.insert("when".into(), json!(format!("roll(\"1d100\") <= {p}")));
        }
    }
    let lore_lossy = map_st_lore_fields(e, true, &mut t, at, summary);
    // Keys that did not all come across keep their original text.
    let lossy = |k: &str, mapped: &[String]| {
        e.get(k)
            .is_some_and(|v| !v.is_null() && *v != json!(mapped) && *v != json!([]))
    };
    // Depth 0 has no Troupe form: keep it as written.
    let no_scan_kept = n("scanDepth") == Some(0);
    let key_lossy = lossy("key", &keys);
    let secondary_lossy = lossy("keysecondary", &secondary);
    let kept: Map<String, Value> = e
        .iter()
        .filter(|(k, _)| {
            !WI_MAPPED.contains(&k.as_str())
                || (k.as_str() == "key" && key_lossy)
                || (k.as_str() == "keysecondary" && secondary_lossy)
                || (k.as_str() == "scanDepth" && no_scan_kept)
                || lore_lossy.contains(&k.as_str())
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    note_sillytavern_fields(e, at, summary);
    never_active_warning(e.get("key"), &t, "key", at, summary);
    if !kept.is_empty() {
        t.insert("extensions".into(), json!({ "sillytavern": kept }));
    }
    Value::Object(t)
}

/// A lorebook document → a bundle with its world, and the import's
/// summary: a V3 `lorebook_v3` (`data` is the book), a bare card book
/// (`entries` a list), or SillyTavern World Info (`entries` an object keyed
/// by uid). `stem` names a world whose book has no name.
///
/// Errors: SCHEMA for another `spec`, or a book or entry of the wrong shape.
pub fn lorebook_document(doc: &Value, stem: &str) -> Result<(Value, Summary), Diagnostic> {
    let mut ctx = BookContext {
        fallback_name: stem.to_string(),
        ..Default::default()
    };
    let world = match doc.get("spec") {
        Some(Value::String(s)) if s == "lorebook_v3" => {
            book_to_world(doc.get("data").unwrap_or(&Value::Null), "/data", &mut ctx)?
        }
        Some(other) => {
            return Err(Diagnostic::error(
                Code::Schema,
                format!("not a lorebook: `spec` is {other}; expected `lorebook_v3`"),
            )
            .at("/spec"))
        }
        None if doc.get("entries").is_some_and(Value::is_array) => {
            book_to_world(doc, "", &mut ctx)?
        }
        None => world_info_import(doc, stem, &mut ctx.taken, &mut ctx.summary)?,
    };
    Ok((
        json!({"troupe": "0.1", "kind": "bundle", "worlds": [world]}),
        ctx.summary,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(e: Value) -> Value {
        let mut ctx = BookContext {
            greetings: vec![Some("first".into()), Some("alt-1".into())],
            ..Default::default()
        };
        card_entry(&e, 0, None, &mut ctx, "/e").unwrap()
    }

    #[test]
    fn keys_selective_logic_and_defaults() {
        let t = entry(
            json!({"keys": ["dragon", ""], "secondary_keys": ["gold"], "selective": true,
            "content": "Dragons hoard.", "enabled": true, "insertion_order": 5,
            "extensions": {"selectiveLogic": 2}}),
        );
        assert_eq!(t["keys"], json!(["dragon"]));
        assert_eq!(t["secondary_keys"], json!(["gold"]));
        assert_eq!(t["logic"], "not_any");
        assert_eq!(t["order"], 5);
        assert_eq!(t["whole_words"], false);
        // The dropped empty key means `keys` does not give the original back.
        assert_eq!(
            t["extensions"]["card"]["was"]["keys"],
            json!(["dragon", ""])
        );
    }

    #[test]
    fn regex_keys() {
        assert_eq!(
            map_key("/drag(on|gin)/gi", false).as_deref(),
            Some("/drag(on|gin)/i")
        );
        assert_eq!(map_key("/(?<=a)b/", false), None);
        assert_eq!(map_key("/a/x", false), None);
        assert_eq!(map_key("a.b", true).as_deref(), Some("/a.b/"));
        assert_eq!(map_key("a.b", false).as_deref(), Some("a.b"));
        assert_eq!(map_key("plain", true).as_deref(), Some("plain"));
    }

    #[test]
    fn decorators_lower_to_fields_and_conditions() {
        let t = entry(json!({"keys": ["k"], "content":
            "@@activate_only_after 3\n@@additional_keys a, b\n@@exclude_keys c\n@@is_greeting 1\n@@scan_depth 4\n@@depth 2\n@@risu_thing 1\n@@@activate_only_every 2\n\nThe text.",
            "enabled": true, "insertion_order": 100}));
        assert_eq!(t["content"], "The text.");
        assert_eq!(t["scan_depth"], 4);
        assert_eq!(
            t["when"],
            "turn >= 3 && hit([\"a\", \"b\"]) && !hit([\"c\"]) && opening == \"alt-1\" && turn % 2 == 0"
        );
        assert_eq!(
            t["extensions"]["card"]["unlowered"],
            json!(["@@depth 2", "@@risu_thing 1"])
        );
        // The content comes back with its decorators.
        assert!(t["extensions"]["card"].get("was").is_none());
    }

    #[test]
    fn activate_wins_over_dont_activate() {
        let t = entry(json!({"keys": [], "content": "@@dont_activate\n@@activate\nx"}));
        assert_eq!(t["constant"], true);
        assert!(t.get("enabled").is_none());
        let t = entry(json!({"keys": [], "content": "@@dont_activate\nx"}));
        assert_eq!(t["enabled"], false);
    }

    #[test]
    fn world_info_entries() {
        let doc = json!({"entries": {"7": {"uid": 7, "key": ["wood"], "keysecondary": ["x"],
            "selective": true, "selectiveLogic": 3, "content": "C", "order": 10, "position": 1,
            "disable": true, "probability": 40, "useProbability": true, "sticky": 2}}});
        let w = world_info_to_world(&doc, "Eldoria", &mut HashSet::new()).unwrap();
        let e = &w["entries"][0];
        assert_eq!(e["id"], "entry-7");
        assert_eq!(e["logic"], "and_all");
        assert_eq!(e["position"], "after");
        assert_eq!(e["enabled"], false);
        assert_eq!(e["when"], "roll(\"1d100\") <= 40");
        // `sticky` is converted (Format 5.6, docs/import.md §3: SillyTavern's
        // sticky 2 holds one message after the start), not kept as data.
        assert_eq!(e["sticky"], 1);
        assert!(e["extensions"]["sillytavern"].get("sticky").is_none());
        assert_eq!(w["recursion"], true);
        assert_eq!(w["id"], "eldoria");
    }

    #[test]
    fn scan_depth_defaults_to_sillytaverns_and_zero_scans_nothing() {
        // No depth anywhere: SillyTavern's 2; an entry's own depth wins.
        assert_eq!(
            entry(json!({"keys": ["a"], "content": "x"}))["scan_depth"],
            2
        );
        let t = entry(json!({"keys": ["a"], "content": "x", "extensions": {"scan_depth": 5}}));
        assert_eq!(t["scan_depth"], 5);
        // The book's depth when the entry has none, 0 included.
        let book = json!({"scan_depth": 0, "entries": [
            {"keys": ["a"], "content": "x"},
            {"keys": ["b"], "content": "y", "extensions": {"scan_depth": 3}},
            {"keys": [], "constant": true, "content": "z"}]});
        let mut ctx = BookContext::default();
        let w = book_to_world(&book, "/b", &mut ctx).unwrap();
        let es = &w["entries"];
        assert!(es[0].get("scan_depth").is_none());
        assert_eq!(es[0]["when"], "false");
        assert_eq!(es[0]["keys"], json!(["a"]));
        assert_eq!(es[1]["scan_depth"], 3);
        assert!(es[1].get("when").is_none());
        // A constant entry scans nothing in SillyTavern either: unchanged.
        assert!(es[2].get("scan_depth").is_none() && es[2].get("when").is_none());
        let at: Vec<&str> = ctx
            .summary
            .converted
            .iter()
            .map(|n| n.at.as_str())
            .collect();
        assert_eq!(at, ["/b/scan_depth", "/b/scan_depth"]);
        // World Info: null is the default; 0 replaces the probability and is kept.
        let doc = json!({"entries": {
            "1": {"key": ["a"], "content": "x", "scanDepth": null},
            "2": {"key": ["b"], "content": "y", "scanDepth": 0,
                  "useProbability": true, "probability": 50}}});
        let mut summary = Summary::default();
        let w = world_info_import(&doc, "W", &mut HashSet::new(), &mut summary).unwrap();
        assert_eq!(w["entries"][0]["scan_depth"], 2);
        let e = &w["entries"][1];
        assert!(e.get("scan_depth").is_none());
        assert_eq!(e["when"], "false");
        assert_eq!(e["extensions"]["sillytavern"]["scanDepth"], 0);
        assert_eq!(summary.converted[0].at, "/entries/2/scanDepth");
        assert!(!summary.has_loss());
    }
}

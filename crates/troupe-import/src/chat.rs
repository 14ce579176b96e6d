//! SillyTavern chat logs → a session (`docs/import.md` §7, Format 12).
//!
//! Line 1 is the chat's header (`user_name`, `character_name`,
//! `create_date`, `chat_metadata`), each later line a message (`name`,
//! `is_user`, `is_system`, `send_date`, `mes`, `swipes`, `swipe_id`,
//! `swipe_info`, `extra`, ...). The messages form the main path `m1`, `m2`,
//! …; the other swipes of message `mN` become its siblings `mN.K` (K = the
//! swipe index) under the same parent. `is_system` messages are hidden. The
//! first message names the opening whose greeting it is. Fields not mapped
//! are kept in each message's `extensions.sillytavern`.
//!
//! A **group chat** (`docs/import.md` §7.1) has no single character: line 1
//! is a message (SillyTavern writes group chats without a header) or a
//! header without `character_name`. Each speaker's `name` is a member of
//! the group ([`group_members`]); [`add_members`] makes them characters of
//! the scenario and [`chat_import_group`] keeps who said each line.

use std::collections::HashSet;

use serde_json::{json, Map, Value};

use troupe::internals::load::MAX_JSONL_LINE_BYTES;
use troupe::{Code, Diagnostic};

use super::card::USER_SEAT;
use super::ids::{slug, unique};
use super::macros;
use super::summary::Summary;

/// What a chat is imported against: the bundle of its card, and the
/// character and scenario IDs the card import chose.
#[derive(Debug, Clone)]
pub struct ChatTarget<'a> {
    /// The card's bundle.
    pub bundle: &'a Value,
    /// The card's character.
    pub character: &'a str,
    /// The card's scenario.
    pub scenario: &'a str,
}

/// A member of a group chat (`docs/import.md` §7.1): the `name` it speaks
/// under, and the line it first speaks on (`line:N`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    /// The `name` of its messages.
    pub name: String,
    /// The line of its first message, `line:N`.
    pub line: String,
}

/// The lines of a chat, each a JSON object; PARSE or LIMIT per bad line.
fn parse_lines(file: &str, bytes: &[u8]) -> Result<Vec<Value>, Vec<Diagnostic>> {
    let mut lines = Vec::new();
    let mut errors = Vec::new();
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    for (i, raw) in body.split(|b| *b == b'\n').enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let at = format!("line:{}", i + 1);
        if raw.len() > MAX_JSONL_LINE_BYTES {
            errors.push(
                Diagnostic::error(Code::Limit, "the line is over 16 MiB")
                    .in_file(file)
                    .at(at),
            );
            continue;
        }
        match super::parse_object(file, raw) {
            Ok(v) => lines.push(v),
            Err(ds) => errors.extend(ds.into_iter().map(|mut d| {
                d.location.pointer = Some(at.clone());
                d
            })),
        }
    }
    if errors.is_empty() {
        Ok(lines)
    } else {
        Err(errors)
    }
}

/// Whether a chat line is a message (it has `mes`, `is_user` or `swipes`)
/// rather than a header.
fn is_message(v: &Value) -> bool {
    ["mes", "is_user", "swipes"]
        .iter()
        .any(|k| v.get(k).is_some())
}

/// The header (`None` when line 1 is a message) and the messages.
fn split_header(lines: &[Value]) -> (Option<&Value>, &[Value]) {
    match lines.split_first() {
        Some((h, rest)) if !is_message(h) => (Some(h), rest),
        _ => (None, lines),
    }
}

/// The member a group chat's message is said by (`docs/import.md` §7.1):
/// its non-empty `name`, unless it is the user's (`is_user`) or one of
/// SillyTavern's own messages, which carry an `extra.type` (its narrator,
/// help and notices). A hidden message (`is_system`) is still its author's.
fn member_name(m: &Value) -> Option<&str> {
    let user = m.get("is_user").and_then(Value::as_bool) == Some(true);
    let own = m.get("extra").and_then(|e| e.get("type")).is_some();
    if user || own {
        return None;
    }
    m.get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

/// The members of a group chat (`docs/import.md` §7.1) in the order they
/// first speak, or `None` for a one-character chat (line 1 is a header
/// with a non-empty `character_name`) or a file that does not parse (the
/// import reports it).
pub fn group_members(file: &str, bytes: &[u8]) -> Option<Vec<GroupMember>> {
    let lines = parse_lines(file, bytes).ok()?;
    let (header, messages) = split_header(&lines);
    let solo = header
        .and_then(|h| h.get("character_name"))
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    if solo || lines.is_empty() {
        return None;
    }
    let first = usize::from(header.is_some()) + 1;
    let mut members: Vec<GroupMember> = Vec::new();
    for (n, m) in messages.iter().enumerate() {
        if let Some(name) = member_name(m) {
            if !members.iter().any(|x| x.name == name) {
                members.push(GroupMember {
                    name: name.to_string(),
                    line: format!("line:{}", n + first),
                });
            }
        }
    }
    Some(members)
}

/// A bundle for a group chat imported without a card (`docs/import.md`
/// §7.1): no character yet ([`add_members`] adds them) and the scenario
/// `group-chat` with the seat `player`.
pub fn group_bundle() -> Value {
    json!({"troupe": "0.1", "kind": "bundle", "characters": [],
        "scenarios": [{"id": "group-chat", "name": "Group chat",
            "cast": [{"seat": USER_SEAT, "player": true}]}]})
}

/// Makes the group's members characters of `scenario` in `bundle`
/// (`docs/import.md` §7.1) and returns each member's `(name, character
/// ID)`. A member named as `character` is (its `name` or `nickname`) is
/// that character; every other member becomes a character
/// `{id, name, fictional: true, age_band: "adult"}` (ID from the name,
/// clear of the bundle's IDs and seats) and a cast entry after the
/// scenario's characters, before its seats. A scenario without
/// `turn_order` gets `{"strategy": "natural"}`, SillyTavern's default
/// activation strategy.
pub fn add_members(
    bundle: &mut Value,
    scenario: &str,
    character: &str,
    members: &[GroupMember],
    summary: &mut Summary,
) -> Vec<(String, String)> {
    let card_names: Vec<String> = bundle
        .get("characters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c.get("id").and_then(Value::as_str) == Some(character))
        .flat_map(|c| ["name", "nickname"].map(|k| c.get(k).and_then(Value::as_str)))
        .flatten()
        .map(str::to_string)
        .collect();
    let mut taken = bundle_ids(bundle);
    let Some(sc) = bundle
        .get_mut("scenarios")
        .and_then(Value::as_array_mut)
        .and_then(|a| {
            a.iter_mut()
                .find(|s| s.get("id").and_then(Value::as_str) == Some(scenario))
        })
    else {
        return Vec::new();
    };
    let cast: Vec<Value> = sc
        .get("cast")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    taken.extend(
        cast.iter()
            .filter_map(|c| c.get("seat").and_then(Value::as_str).map(str::to_string)),
    );
    let mut map = Vec::new();
    let mut added_chars = Vec::new();
    let mut added_cast = Vec::new();
    for m in members {
        if card_names.contains(&m.name) {
            map.push((m.name.clone(), character.to_string()));
            continue;
        }
        let id = unique(&slug(&m.name, "character"), &mut taken);
        summary.created("character", &id, Some(&format!("{}/name", m.line)));
        added_chars.push(json!({"id": id, "name": m.name, "fictional": true, "age_band": "adult"}));
        added_cast.push(json!({"character": id}));
        map.push((m.name.clone(), id));
    }
    let seats = cast
        .iter()
        .position(|c| c.get("seat").is_some())
        .unwrap_or(cast.len());
    let mut new_cast = cast[..seats].to_vec();
    new_cast.extend(added_cast);
    new_cast.extend(cast[seats..].iter().cloned());
    sc["cast"] = Value::Array(new_cast);
    if sc.get("turn_order").is_none() {
        sc["turn_order"] = json!({"strategy": "natural"});
        summary.converted(
            "turn_order",
            "the scenario's turn order is `natural`, SillyTavern's default activation strategy; the group's own settings are not in the chat (docs/import.md §7.1)",
        );
    }
    if let Some(chars) = bundle.get_mut("characters").and_then(Value::as_array_mut) {
        chars.extend(added_chars);
    }
    map
}

/// Converts a chat log into session lines (Format 12): the header first,
/// then one JSON object per message, each as compact JSON.
///
/// Errors: PARSE for a line that is not a JSON object (pointer `line:N`),
/// an empty file; LIMIT for a line over 16 MiB.
pub fn chat_to_session(
    file: &str,
    bytes: &[u8],
    target: &ChatTarget<'_>,
) -> Result<Vec<Value>, Vec<Diagnostic>> {
    chat_import(file, bytes, target).map(|(lines, _)| lines)
}

/// [`chat_to_session`] with the import's [`Summary`]: the player and
/// messages created, the swipe choices and edited messages converted, and
/// a warning (ADVISORY at `line:1/character_name`) when the chat's
/// `character_name` is not the card's name or nickname — its lines are then
/// attributed to the card's character all the same.
pub fn chat_import(
    file: &str,
    bytes: &[u8],
    target: &ChatTarget<'_>,
) -> Result<(Vec<Value>, Summary), Vec<Diagnostic>> {
    chat_import_group(file, bytes, target, &[])
}

/// [`chat_import`] of a group chat (`docs/import.md` §7.1): a message whose
/// `name` is a member's in `members` (`(name, character ID)`, from
/// [`add_members`]) is that character's. Line 1 may be a message (no
/// header); the user's name is then the first user message's `name`.
pub fn chat_import_group(
    file: &str,
    bytes: &[u8],
    target: &ChatTarget<'_>,
    members: &[(String, String)],
) -> Result<(Vec<Value>, Summary), Vec<Diagnostic>> {
    let mut summary = Summary::default();
    let lines = parse_lines(file, bytes)?;
    if lines.is_empty() {
        return Err(vec![
            Diagnostic::error(Code::Parse, "the chat is empty").in_file(file)
        ]);
    }
    let (header, messages) = split_header(&lines);
    // Messages are on lines `first`, `first + 1`, … .
    let first = usize::from(header.is_some()) + 1;
    let empty = Value::Object(Map::new());
    let header = header.unwrap_or(&empty);
    let user_name = header
        .get("user_name")
        .and_then(Value::as_str)
        .or_else(|| {
            messages
                .iter()
                .find(|m| m.get("is_user").and_then(Value::as_bool) == Some(true))
                .and_then(|m| m.get("name"))
                .and_then(Value::as_str)
        })
        .filter(|s| !s.is_empty())
        .unwrap_or("User");
    let char_name = header
        .get("character_name")
        .and_then(Value::as_str)
        .unwrap_or("");

    let mut taken = bundle_ids(target.bundle);
    let user_id = unique(&slug(user_name, "player"), &mut taken);
    if bytes.starts_with(super::UTF8_BOM) {
        summary.converted("line:1", "a byte order mark was dropped");
    }

    let character = target
        .bundle
        .get("characters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c.get("id").and_then(Value::as_str) == Some(target.character));
    let char_display = character
        .and_then(|c| c.get("nickname").or_else(|| c.get("name")))
        .and_then(Value::as_str)
        .unwrap_or(char_name);
    let char_names: Vec<&str> = [
        Some(char_name),
        character
            .and_then(|c| c.get("name"))
            .and_then(Value::as_str),
        Some(char_display),
    ]
    .into_iter()
    .flatten()
    .filter(|s| !s.is_empty())
    .collect();
    let scenario = target
        .bundle
        .get("scenarios")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|s| s.get("id").and_then(Value::as_str) == Some(target.scenario));
    // The scenario's first seat is the user's (an imported card has one).
    let seat = scenario
        .and_then(|s| s.get("cast"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find_map(|c| c.get("seat").and_then(Value::as_str))
        .unwrap_or(USER_SEAT);
    let openings: Vec<(String, String, Option<regex::Regex>)> = scenario
        .and_then(|s| s.get("openings"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|o| {
            let id = o.get("id")?.as_str()?.to_string();
            let template = o.get("text")?.as_str()?;
            let text = macros::from_troupe(template);
            Some((
                id,
                macros::fill_names(&text, char_display, user_name)
                    .trim()
                    .to_string(),
                greeting_pattern(template, char_display, user_name),
            ))
        })
        .collect();
    let card_names: Vec<&str> = char_names.get(1..).unwrap_or_default().to_vec();
    if !char_name.is_empty() && !card_names.is_empty() && !card_names.contains(&char_name) {
        summary.warn(
            "line:1/character_name",
            format!(
                "the chat is `{char_name}`'s but the card is `{}`'s; the chat's lines by `{char_name}` are attributed to the card's character `{}`",
                card_names[0], target.character
            ),
        );
    }
    let opening_of = |text: &str| {
        let text = text.trim();
        openings
            .iter()
            .find(|(_, t, _)| t == text)
            .or_else(|| {
                openings
                    .iter()
                    .find(|(_, _, re)| re.as_ref().is_some_and(|r| r.is_match(text)))
            })
            .map(|(id, _, _)| id.clone())
    };

    let mut header_out = Map::new();
    header_out.insert("troupe".into(), json!("0.1"));
    header_out.insert("kind".into(), json!("session"));
    header_out.insert("scenario".into(), json!(target.scenario));
    header_out.insert(
        "players".into(),
        json!([{"character": user_id, "seat": seat, "name": user_name}]),
    );
    header_out.insert(
        "characters".into(),
        json!([{"id": user_id, "name": user_name, "fictional": true, "age_band": "adult"}]),
    );
    if let Some(t) = header.get("create_date").and_then(timestamp) {
        header_out.insert("created".into(), json!(t));
    }
    if header.as_object().is_some_and(|h| !h.is_empty()) {
        header_out.insert("extensions".into(), json!({ "sillytavern": header }));
    }
    let mut out = vec![Value::Object(header_out)];
    for (k, why) in [
        (
            "chat_metadata",
            "SillyTavern's chat settings (author's note, variables, …) have no Troupe place",
        ),
        (
            "create_date",
            "the chat's own date; `created` holds it when it is RFC 3339 or epoch ms",
        ),
    ] {
        if header.get(k).is_some_and(|v| !v.is_null()) {
            summary.kept(
                &format!("line:1/{k}"),
                format!("kept in the session header's extensions.sillytavern: {why}"),
            );
        }
    }
    summary.created("scenario", target.scenario, None);
    let user_at = header.get("user_name").map(|_| "line:1/user_name");
    summary.created("player", &user_id, user_at);

    let mut parent: Option<String> = None;
    for (n, m) in messages.iter().enumerate() {
        let id = format!("m{}", n + 1);
        let is_user = m.get("is_user").and_then(Value::as_bool) == Some(true);
        let name = m.get("name").and_then(Value::as_str).unwrap_or("");
        let member = members
            .iter()
            .find(|(n, _)| member_name(m) == Some(n.as_str()))
            .map(|(_, id)| id.clone());
        let author = if is_user {
            user_id.clone()
        } else if let Some(id) = member {
            id
        } else if char_names.contains(&name) {
            target.character.to_string()
        } else {
            "narrator".to_string()
        };
        let mes = m.get("mes").and_then(Value::as_str).unwrap_or("");
        let mut kept = m.as_object().cloned().unwrap_or_default();
        for k in ["mes", "swipes"] {
            kept.remove(k);
        }
        let base = |text: &str, ext: Value| {
            let mut msg = Map::new();
            msg.insert("author".into(), json!(author));
            msg.insert(
                "parts".into(),
                json!([{"type": "text", "text": macros::literal(text)}]),
            );
            if m.get("is_system").and_then(Value::as_bool) == Some(true) {
                msg.insert("hidden".into(), json!(true));
            }
            if let Some(t) = m.get("send_date").and_then(timestamp) {
                msg.insert("time".into(), json!(t));
            }
            msg.insert("extensions".into(), json!({ "sillytavern": ext }));
            msg
        };
        let place = |msg: &mut Map<String, Value>, id: &str, text: &str| {
            let mut ordered = Map::new();
            ordered.insert("id".into(), json!(id));
            match &parent {
                Some(p) => {
                    ordered.insert("parent".into(), json!(p));
                }
                None if author == target.character => {
                    if let Some(o) = opening_of(text) {
                        ordered.insert("opening".into(), json!(o));
                    }
                }
                None => {}
            }
            ordered.append(msg);
            Value::Object(ordered)
        };
        let swipes = m
            .get("swipes")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let at = format!("line:{}", n + first);
        let (chosen, shown) = shown_swipe(m, &swipes);
        if m.get("mes").is_none() && shown.is_some() {
            summary.converted(&at, format!("no `mes`: swipe {chosen} is the message"));
        }
        let mes = shown.unwrap_or(mes);
        match m.get("swipe_id") {
            Some(v) if v.as_u64().is_some_and(|k| (k as usize) < swipes.len()) => {}
            _ if swipes.is_empty() => {}
            v => summary.converted(
                &at,
                format!(
                    "`swipe_id` is {}: swipe {chosen} is the one shown, as SillyTavern shows it",
                    v.map_or("missing".to_string(), Value::to_string)
                ),
            ),
        }
        let mut main = base(mes, Value::Object(kept));
        out.push(place(&mut main, &id, mes));
        summary.created("message", &id, Some(&at));
        for (k, s) in swipes.iter().enumerate() {
            let Some(text) = s.as_str() else {
                summary.warn(
                    &format!("{at}/swipes/{k}"),
                    "a swipe that is not a string is dropped",
                );
                continue;
            };
            if k == chosen && text == mes {
                continue;
            }
            let info = m.get("swipe_info").and_then(|i| i.get(k)).cloned();
            let mut ext = json!({"swipe_index": k});
            if k == chosen {
                ext["edited"] = json!(true);
                summary.converted(
                    &at,
                    format!("`mes` differs from swipe {k} (an edited message): {id} is `mes`, {id}.{k} the swipe's text"),
                );
            }
            if let Some(info) = info {
                ext["swipe_info"] = info;
            }
            let mut sib = base(text, ext);
            let sib_id = format!("{id}.{k}");
            out.push(place(&mut sib, &sib_id, text));
            summary.created("message", &sib_id, Some(&format!("{at}/swipes/{k}")));
        }
        parent = Some(id);
    }
    Ok((out, summary))
}

/// A pattern for the texts a greeting shows once rendered, for greetings
/// with choices (`docs/import.md` §7): names filled in, each `random` or
/// `pick` any one of its options, a `roll` any number, comments and
/// `hidden_key` nothing, other macros as written; the whole trimmed text.
/// `None` for a greeting without choices or rolls (the exact comparison
/// decides) or one too large for a pattern.
fn greeting_pattern(template: &str, char: &str, user: &str) -> Option<regex::Regex> {
    use troupe::internals::template::{Macro, Node};
    let t = troupe::internals::template::parse(template).ok()?;
    let mut any = false;
    let mut re = String::from("^");
    // The first and last nodes that render something: their outer white
    // space is trimmed, as the message is.
    let shows = |n: &Node| match n {
        Node::Macro(Macro::Comment, _) => false,
        Node::Macro(Macro::Call { name, .. }, _) => name != "comment" && name != "hidden_key",
        _ => true,
    };
    let first = t.nodes.iter().position(shows).unwrap_or(0);
    let last = t.nodes.iter().rposition(shows).unwrap_or(0);
    for (i, n) in t.nodes.iter().enumerate() {
        match n {
            Node::Text(s) => {
                // Compared with the trimmed message: the ends are trimmed.
                let s = if i == first { s.trim_start() } else { s };
                let s = if i == last { s.trim_end() } else { s };
                re.push_str(&regex::escape(s));
            }
            Node::Macro(Macro::User, _) => re.push_str(&regex::escape(user)),
            Node::Macro(Macro::Char, _) => re.push_str(&regex::escape(char)),
            Node::Macro(Macro::Comment, _) => {}
            Node::Macro(Macro::Call { name, args }, src) => match name.as_str() {
                "random" | "pick" => {
                    any = true;
                    let alts: Vec<String> = args.iter().map(|a| regex::escape(a)).collect();
                    re.push_str(&format!("(?:{})", alts.join("|")));
                }
                "roll" => {
                    any = true;
                    re.push_str(r"-?\d+");
                }
                "comment" | "hidden_key" => {}
                _ => re.push_str(&regex::escape(&template[src.clone()])),
            },
            Node::Macro(_, src) => re.push_str(&regex::escape(&template[src.clone()])),
        }
    }
    if !any {
        return None;
    }
    re.push('$');
    regex::RegexBuilder::new(&re)
        .size_limit(1 << 20)
        .build()
        .ok()
}

/// The swipe SillyTavern shows for message `m`, and its text when `m` has
/// no `mes`: `swipe_id` when it is an index into `swipes`; otherwise (null,
/// missing, out of range, not a number) the first swipe equal to `mes`,
/// else swipe 0 (SillyTavern sets a missing `swipe_id` to 0 and shows
/// `mes`).
fn shown_swipe<'a>(m: &Value, swipes: &'a [Value]) -> (usize, Option<&'a str>) {
    let chosen = m
        .get("swipe_id")
        .and_then(Value::as_u64)
        .map(|k| k as usize)
        .filter(|k| *k < swipes.len())
        .or_else(|| {
            let mes = m.get("mes").and_then(Value::as_str)?;
            swipes.iter().position(|s| s.as_str() == Some(mes))
        })
        .unwrap_or(0);
    let text = if m.get("mes").is_none() {
        swipes.get(chosen).and_then(Value::as_str)
    } else {
        None
    };
    (chosen, text)
}

/// A SillyTavern date as RFC 3339 (Format 7): epoch milliseconds (a number)
/// → UTC with milliseconds; a string already in RFC 3339 with an offset is
/// kept. Anything else (SillyTavern's human dates have no time zone) gives
/// `None`; the original stays in the extensions.
pub fn timestamp(v: &Value) -> Option<String> {
    if let Some(ms) = v.as_i64() {
        return Some(from_epoch_ms(ms));
    }
    let s = v.as_str()?;
    let re = regex::Regex::new(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
        .ok()?;
    re.is_match(s).then(|| s.to_string())
}

/// Epoch milliseconds → `YYYY-MM-DDTHH:MM:SS.mmmZ` (proleptic Gregorian,
/// days to civil date by Howard Hinnant's algorithm).
pub fn from_epoch_ms(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let milli = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

/// The IDs a bundle's characters, worlds and scenarios hold: an ID made for
/// an imported object must be clear of them.
fn bundle_ids(bundle: &Value) -> HashSet<String> {
    ["characters", "worlds", "scenarios"]
        .iter()
        .filter_map(|k| bundle.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(|x| x.get("id").and_then(Value::as_str).map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_ms_dates() {
        assert_eq!(from_epoch_ms(0), "1970-01-01T00:00:00.000Z");
        // 2023-01-08T12:32:26.000Z, worked out by hand: 19365 days after 1970-01-01.
        assert_eq!(from_epoch_ms(1_673_181_146_000), "2023-01-08T12:32:26.000Z");
        assert_eq!(from_epoch_ms(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(from_epoch_ms(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn dates_kept_or_dropped() {
        assert_eq!(
            timestamp(&json!("2026-01-01T00:00:00.000Z")).as_deref(),
            Some("2026-01-01T00:00:00.000Z")
        );
        assert_eq!(timestamp(&json!("2023-5-12 @21h 32m 29s 224ms")), None);
    }

    #[test]
    fn swipes_become_siblings_and_system_is_hidden() {
        let bundle = json!({"characters": [{"id": "ann", "name": "Ann"}],
            "scenarios": [{"id": "ann-chat", "openings": [{"id": "first", "text": "Hi {{user}}"}, {"id": "alt-1", "text": "Yo"}]}]});
        let chat = concat!(
            "{\"user_name\":\"Bo\",\"character_name\":\"Ann\"}\n",
            "{\"name\":\"Ann\",\"is_user\":false,\"mes\":\"Hi Bo\",\"swipes\":[\"Hi Bo\",\"Yo\"],\"swipe_id\":0}\n",
            "{\"name\":\"Bo\",\"is_user\":true,\"mes\":\"hey\",\"send_date\":0}\n",
            "{\"name\":\"Ann\",\"is_user\":false,\"mes\":\"b\",\"swipes\":[\"a\",\"b\"],\"swipe_id\":1,\"swipe_info\":[{\"x\":1},{\"x\":2}]}\n",
            "{\"name\":\"System\",\"is_user\":false,\"is_system\":true,\"mes\":\"note\"}\n"
        );
        let t = ChatTarget {
            bundle: &bundle,
            character: "ann",
            scenario: "ann-chat",
        };
        let lines = chat_to_session("c.jsonl", chat.as_bytes(), &t).unwrap();
        let ids: Vec<_> = lines[1..]
            .iter()
            .map(|l| l["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["m1", "m1.1", "m2", "m3", "m3.0", "m4"]);
        assert_eq!(lines[1]["opening"], "first");
        assert_eq!(lines[2]["opening"], "alt-1");
        assert!(lines[2].get("parent").is_none());
        assert_eq!(lines[3]["author"], "bo");
        assert_eq!(lines[3]["time"], "1970-01-01T00:00:00.000Z");
        assert_eq!(lines[5]["parent"], "m2");
        assert_eq!(
            lines[5]["extensions"]["sillytavern"]["swipe_info"],
            json!({"x": 1})
        );
        assert_eq!(lines[6]["parent"], "m3");
        assert_eq!(lines[6]["hidden"], true);
        assert_eq!(lines[6]["author"], "narrator");
    }
}

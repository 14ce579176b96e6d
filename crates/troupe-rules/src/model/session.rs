//! Sessions (Format 7, 12): the header and messages.

use serde::Deserialize;
use serde_json::Value;

use super::{flag, list, text};

/// A player in a session header (Format 12.3).
#[derive(Debug, Clone, Deserialize)]
pub struct Player {
    /// The player's name (informative).
    #[allow(dead_code)] // the typed model's field; its readers still read the raw document (issue 38 item 1)
    #[serde(default)]
    pub name: Option<String>,
    /// The seat the player fills.
    #[serde(default)]
    pub seat: Option<String>,
    /// The character the player plays.
    #[serde(default)]
    pub character: Option<String>,
}

/// The name the header characters of default players have (Format 18.4).
pub const DEFAULT_PLAYER_NAME: &str = "Player";

/// The players and header characters a runtime starts a session with when
/// the caller fills no seat (Format 18.4): each seat of the scenario's
/// `cast` filled with a header character `{"id": <seat>, "name": <name>,
/// "fictional": true, "age_band": "adult"}` and the player `{"seat",
/// "character"}`; each `player: true` character entry as the player
/// `{"character"}`. In cast order. `name` is [`DEFAULT_PLAYER_NAME`]
/// unless the caller names the player (`--player-name`).
pub fn default_players(scenario: &Value, name: &str) -> (Vec<Value>, Vec<Value>) {
    seated_players(scenario, |_| Some(name.to_string()))
}

/// A player place of a scenario's cast (Format 6.1): a seat, or a
/// `player: true` character entry.
enum Slot<'a> {
    Seat(&'a str),
    Character(&'a str),
}

/// The scenario's player places, in cast order.
fn player_slots(scenario: &Value) -> impl Iterator<Item = Slot<'_>> {
    scenario
        .get("cast")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            if let Some(seat) = entry.get("seat").and_then(Value::as_str) {
                Some(Slot::Seat(seat))
            } else if entry.get("player").and_then(Value::as_bool) == Some(true) {
                entry
                    .get("character")
                    .and_then(Value::as_str)
                    .map(Slot::Character)
            } else {
                None
            }
        })
}

/// 18.4's default filling of `seat`: the player `{"seat", "character"}`
/// and its header character named `name`, whose ID is
/// [`default_seat_character`].
fn default_seat(seat: &str, name: &str) -> (Value, Value) {
    let id = default_seat_character(seat);
    (
        serde_json::json!({"seat": seat, "character": id}),
        serde_json::json!({"id": id, "name": name, "fictional": true, "age_band": "adult"}),
    )
}

/// The ID of the header character that fills `seat` by default (Format
/// 18.4): the seat's ID, or, when that is a reserved ID (3.2: a seat may be
/// named `user`, a character may not), the seat's ID followed by `-1`.
pub fn default_seat_character(seat: &str) -> String {
    if super::RESERVED_IDS.contains(&seat) {
        format!("{seat}-1")
    } else {
        seat.to_string()
    }
}

/// The players and header characters of 18.4 for the cast entries `name_of`
/// keeps: for each seat and each `player: true` character, in cast order,
/// `name_of(id)` is `None` to leave it out, or the name a seat's header
/// character gets (ignored for a character entry). [`default_players`] keeps
/// every one; playtests (22.5) keep the ones their agents play.
pub fn seated_players(
    scenario: &Value,
    mut name_of: impl FnMut(&str) -> Option<String>,
) -> (Vec<Value>, Vec<Value>) {
    let mut players = Vec::new();
    let mut characters = Vec::new();
    for slot in player_slots(scenario) {
        match slot {
            Slot::Seat(seat) => {
                if let Some(name) = name_of(seat) {
                    let (p, c) = default_seat(seat, &name);
                    players.push(p);
                    characters.push(c);
                }
            }
            Slot::Character(c) => {
                if name_of(c).is_some() {
                    players.push(serde_json::json!({"character": c}));
                }
            }
        }
    }
    (players, characters)
}

/// The players and header characters of 18.4 when the caller fills some
/// seats with `given` (header player objects): in cast order, each seat
/// the caller fills keeps the caller's player (its first one naming that
/// seat), each seat it does not fill gets the default player and a header
/// character named `name`, each `player: true` character entry the
/// caller's player naming it or else `{"character"}`; then the caller's
/// players that match no cast entry or fill a seat again, in their order,
/// for the checks of 12.3 to report. The characters returned are only the
/// added header characters, in cast order.
pub fn fill_players(scenario: &Value, given: Vec<Value>, name: &str) -> (Vec<Value>, Vec<Value>) {
    let text = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).map(str::to_string);
    let mut rest: Vec<Option<Value>> = given.into_iter().map(Some).collect();
    let mut take = |pred: &dyn Fn(&Value) -> bool| -> Option<Value> {
        rest.iter_mut()
            .find(|p| p.as_ref().is_some_and(pred))
            .and_then(Option::take)
    };
    let mut players = Vec::new();
    let mut characters = Vec::new();
    for slot in player_slots(scenario) {
        match slot {
            Slot::Seat(seat) => match take(&|p| text(p, "seat").as_deref() == Some(seat)) {
                Some(p) => players.push(p),
                None => {
                    let (p, c) = default_seat(seat, name);
                    players.push(p);
                    characters.push(c);
                }
            },
            Slot::Character(c) => {
                let own = take(&|p| {
                    p.get("seat").is_none() && text(p, "character").as_deref() == Some(c)
                });
                players.push(own.unwrap_or_else(|| serde_json::json!({"character": c})));
            }
        }
    }
    players.extend(rest.into_iter().flatten());
    (players, characters)
}

/// A header player object with its members in the order a run writes them
/// (Format 18.8): `seat`, `character`, `name`, then any other member as it
/// came (the checks of 12 report those). Anything but an object is kept.
pub fn player_in_order(player: Value) -> Value {
    let Value::Object(mut m) = player else {
        return player;
    };
    let mut out = serde_json::Map::new();
    for k in ["seat", "character", "name"] {
        if let Some(v) = m.remove(k) {
            out.insert(k.into(), v);
        }
    }
    out.extend(m);
    Value::Object(out)
}

/// A session header (Format 12.1) as the stages read it, borrowed from the
/// parsed line. Each field is read on its own: a field of the wrong type
/// reads as absent, its schema diagnostic reported already (Format 17.1).
#[derive(Debug, Clone, Copy)]
pub struct Header<'a> {
    /// The scenario's ID.
    pub scenario: Option<&'a str>,
    /// The players (Format 12.3), when given.
    pub players: Option<&'a [Value]>,
    /// Characters that replace or add to the bundle's (Format 12.2), when given.
    pub characters: Option<&'a [Value]>,
    /// The difficulty preset (Format 6.5).
    pub difficulty: Option<&'a str>,
    /// The seed of the generator (Format 11.5).
    pub seed: Option<u64>,
}

impl<'a> Header<'a> {
    /// Reads the header line `v`.
    pub fn read(v: &'a Value) -> Header<'a> {
        Header {
            scenario: text(v, "scenario"),
            players: list(v, "players"),
            characters: list(v, "characters"),
            difficulty: text(v, "difficulty"),
            seed: v.get("seed").and_then(super::integer_u64),
        }
    }
}

/// The key of a session's scenario and seating (Format 12.3: the header's
/// `players` and `characters` as written): sessions of one pack whose keys
/// are equal share a resolved story and its compiled runtime.
pub fn seating_key(scenario: &str, header: &Value) -> String {
    let field = |k: &str| header.get(k).unwrap_or(&Value::Null);
    format!(
        "{scenario}\u{0}{}\u{0}{}",
        field("players"),
        field("characters")
    )
}

/// A message line (Format 7, 12) as the stages read it, borrowed from the
/// parsed line: each field read on its own, as [`Header`]'s.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    /// The message's ID.
    pub id: Option<&'a str>,
    /// The parent's ID; none for a root.
    pub parent: Option<&'a str>,
    /// The opening a root came from (Format 6.3).
    pub opening: Option<&'a str>,
    /// A cast member's character ID or `narrator`.
    pub author: Option<&'a str>,
    /// The parts (Format 7.1), when given: a root naming an opening
    /// without parts shows the opening's.
    pub parts: Option<&'a [Value]>,
    /// Hidden messages are outside the story (Format 7.4).
    pub hidden: bool,
    /// Changes (Format 8.5), when given.
    pub changes: Option<&'a [Value]>,
    /// Recorded firings (Format 7.3, 9), in order.
    pub firings: &'a [Value],
    /// A summary (Format 12.5).
    pub summary: Option<Summary<'a>>,
    /// RFC 3339 time.
    pub time: Option<&'a str>,
    /// A settings change (Format 8.9), as written.
    pub settings: Option<&'a Value>,
    /// Why the author was chosen (Format 18.9).
    pub chosen: Option<Chosen<'a>>,
    /// The line as written.
    pub raw: &'a Value,
}

impl<'a> Message<'a> {
    /// Reads the message line `v`.
    pub fn read(v: &'a Value) -> Message<'a> {
        Message {
            id: text(v, "id"),
            parent: text(v, "parent"),
            opening: text(v, "opening"),
            author: text(v, "author"),
            parts: list(v, "parts"),
            hidden: flag(v, "hidden"),
            changes: list(v, "changes"),
            firings: list(v, "firings").unwrap_or_default(),
            summary: v.get("summary").map(|s| Summary {
                text: text(s, "text"),
                audience: list(s, "audience"),
                raw: s,
            }),
            time: text(v, "time"),
            settings: v.get("settings"),
            chosen: v.get("chosen").map(|c| Chosen {
                why: text(c, "why"),
                name: text(c, "name"),
                draw: c.get("draw").and_then(Value::as_u64),
                raw: c,
            }),
            raw: v,
        }
    }

    /// The names of the line's fields, in written order.
    pub fn fields(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        self.raw
            .as_object()
            .into_iter()
            .flat_map(|o| o.keys().map(String::as_str))
    }

    /// Each recorded firing (Format 7.3) in order, `None` where it names
    /// neither an event nor an outcome.
    pub fn firings(&self) -> impl Iterator<Item = Option<FiringRecord<'a>>> + use<'a> {
        self.firings.iter().map(|f| {
            text(f, "event")
                .map(FiringRecord::Event)
                .or_else(|| text(f, "outcome").map(FiringRecord::Outcome))
        })
    }
}

/// A message part (Format 7.1) as the stages read it.
#[derive(Debug, Clone, Copy)]
pub struct Part<'a> {
    /// The part's text (a template, Format 10).
    pub text: Option<&'a str>,
    /// Who the part is for, when given (Format 7.2).
    pub audience: Option<&'a [Value]>,
}

impl<'a> Part<'a> {
    /// Reads the part `v`.
    pub fn read(v: &'a Value) -> Part<'a> {
        Part {
            text: text(v, "text"),
            audience: list(v, "audience"),
        }
    }
}

/// A message's summary (Format 12.5).
#[derive(Debug, Clone, Copy)]
pub struct Summary<'a> {
    /// The summary's text.
    pub text: Option<&'a str>,
    /// Who the summary is for, when given.
    pub audience: Option<&'a [Value]>,
    /// The summary as written.
    pub raw: &'a Value,
}

/// Why a reply's author was chosen (Format 18.9 `chosen`).
#[derive(Debug, Clone, Copy)]
pub struct Chosen<'a> {
    /// The reason (`addressed`, `rotation`, …).
    pub why: Option<&'a str>,
    /// The name the input addressed, when it named one.
    pub name: Option<&'a str>,
    /// The draw of a random pick.
    pub draw: Option<u64>,
    /// The record as written.
    pub raw: &'a Value,
}

/// A recorded firing (Format 7.3), by the ID it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FiringRecord<'a> {
    /// `{"event": id}`.
    Event(&'a str),
    /// `{"outcome": id}`.
    Outcome(&'a str),
}

/// The start of a session header (Format 12.1) for scenario `scenario`:
/// `troupe`, `kind`, `scenario`, then `players` and `characters` when not
/// empty. Difficulty and seed follow, written by the caller.
pub fn header_start(
    scenario: &Value,
    players: Vec<Value>,
    characters: Vec<Value>,
) -> serde_json::Map<String, Value> {
    let mut h = serde_json::Map::new();
    h.insert("troupe".into(), "0.1".into());
    h.insert("kind".into(), "session".into());
    h.insert(
        "scenario".into(),
        scenario.get("id").cloned().unwrap_or(Value::Null),
    );
    if !players.is_empty() {
        h.insert("players".into(), Value::Array(players));
    }
    if !characters.is_empty() {
        h.insert("characters".into(), Value::Array(characters));
    }
    h
}

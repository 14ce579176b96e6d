//! A story: one scenario as a session sees it (Format 6.1, 8.7, 12.2, 12.3) —
//! its cast with seats filled, its characters (header characters replacing
//! the bundle's), its worlds, and every variable in use by state name.
//!
//! The checks and the compiler both start from a [`Story`].

// foldhash, not SipHash: these maps are keyed by the story's IDs and state names
// and built for every story a check or compile resolves (docs/performance.md,
// Run AE); none is iterated into output.
use foldhash::{HashMap, HashSet};

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

use crate::diag::{Code, Diagnostic};
use crate::model::{
    read_items, CastEntry, Character, Keys, Player, Scenario, VarType, Variable, World,
};

/// Who owns a variable (Format 8.7).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Owner {
    /// The scenario: state name `<id>`.
    Scenario(String),
    /// A character: state name `<character>.<id>`.
    Character(String),
    /// A world: state name `<world>.<id>`.
    World(String),
}

impl Owner {
    /// The owner's ID (what `self` is in CEL).
    pub fn id(&self) -> &str {
        match self {
            Owner::Scenario(s) | Owner::Character(s) | Owner::World(s) => s,
        }
    }
}

/// A declared variable with its owner and where it was declared.
#[derive(Debug, Clone)]
pub struct VarDecl {
    /// The state name: `<id>` or `<owner>.<id>`.
    pub name: String,
    /// The owner.
    pub owner: Owner,
    /// The declaration as written.
    pub decl: Variable,
    /// The declared type, when it parses.
    pub ty: Option<VarType>,
    /// JSON Pointer of the declaration in the bundle.
    pub pointer: String,
}

impl VarDecl {
    /// The fixed keys of a keyed variable (`keys: [..]` or `keys: "cast"`);
    /// `None` for a `"*"` map or an unkeyed variable.
    pub fn fixed_keys(&self, cast: &[CastMember]) -> Option<Vec<String>> {
        match &self.decl.keys {
            Some(Keys::List(keys)) => Some(keys.clone()),
            Some(Keys::Word(w)) if w == "cast" => {
                Some(cast.iter().map(|m| m.character.clone()).collect())
            }
            _ => None,
        }
    }

    /// True for a keyed variable of any kind.
    pub fn is_keyed(&self) -> bool {
        self.decl.keys.is_some()
    }

    /// True for a `"*"` map.
    pub fn is_open_map(&self) -> bool {
        matches!(&self.decl.keys, Some(Keys::Word(w)) if w == "*")
    }

    /// True for a derived variable.
    pub fn is_derived(&self) -> bool {
        self.decl.derived.is_some()
    }
}

/// A member of the session's cast (Format 6.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CastMember {
    /// The character's ID.
    pub character: String,
    /// Whether a player plays it.
    pub player: bool,
    /// The seat it fills, if any.
    pub seat: Option<String>,
    /// JSON Pointer of the cast entry.
    pub pointer: String,
}

/// One scenario resolved for a session (or for no session).
#[derive(Debug, Clone, Default)]
pub struct Story {
    /// Index of the scenario in the bundle.
    pub index: usize,
    /// JSON Pointer of the scenario (`/scenarios/<index>`).
    pub pointer: String,
    /// The scenario.
    pub scenario: Scenario,
    /// Every character of the bundle, header characters replacing them by ID.
    pub characters: IndexMap<String, Character>,
    /// The cast, in order, seats filled; unfilled seats left out.
    pub cast: Vec<CastMember>,
    /// Character ID → its position in `cast`, so that every cast look-up is
    /// O(1) and checks stay linear in the cast (Format 16.2).
    cast_index: HashMap<String, usize>,
    /// Every seat of the scenario's cast, filled or not (6.1).
    seats: HashSet<String>,
    /// Worlds the scenario uses, in order, with the worlds' bundle index.
    pub worlds: Vec<(World, usize)>,
    /// Every variable in use by state name, in declaration order: the
    /// scenario's, then each cast character's, then each world's.
    pub variables: IndexMap<String, VarDecl>,
    /// Whether the story was resolved for a session (seats filled as its
    /// header says) rather than for the bundle alone.
    pub session: bool,
    /// The story's CEL declarations, built once on first use
    /// ([`crate::resolve::env::owner_env`]).
    pub(crate) cel: std::sync::OnceLock<std::sync::Arc<crate::resolve::env::StoryEnv>>,
    /// The story's expressions compiled by the checks, each once
    /// ([`crate::resolve::env::compile_once`]).
    pub(crate) programs: crate::resolve::env::Compiled,
}

impl Story {
    /// The character IDs of the players, in cast order.
    pub fn players(&self) -> Vec<String> {
        self.cast
            .iter()
            .filter(|m| m.player)
            .map(|m| m.character.clone())
            .collect()
    }

    /// True when `id` is a member of the cast.
    pub fn in_cast(&self, id: &str) -> bool {
        self.cast_index.contains_key(id)
    }

    /// The seat IDs of the scenario's cast, filled or not, in cast order
    /// (6.1).
    pub fn seat_ids(&self) -> impl Iterator<Item = &str> + '_ {
        self.scenario
            .cast
            .iter()
            .filter_map(|c| c.get("seat").and_then(Value::as_str))
    }

    /// Whether `id` is a seat of the scenario's cast, filled or not (6.1).
    pub fn is_seat(&self, id: &str) -> bool {
        !self.in_cast(id) && self.seats.contains(id)
    }

    /// Whether a reference to `id` as a cast member can be accepted (Format
    /// 6.1, 6.4): a member of the cast, or a seat of the cast; or, for a story resolved without a
    /// session whose scenario has seats, any character of the bundle, since
    /// a session may seat it — such references are decided per session.
    pub fn cast_ref_ok(&self, id: &str) -> bool {
        self.in_cast(id)
            || self.is_seat(id)
            || (!self.session
                && self.characters.contains_key(id)
                && self.scenario.cast.iter().any(|c| c.get("seat").is_some()))
    }

    /// The narrator's name (Format 6.2).
    pub fn narrator_name(&self) -> &str {
        self.scenario
            .narrator
            .as_ref()
            .and_then(|n| n.name.as_deref())
            .unwrap_or("Narrator")
    }
}

/// The header parts a story needs: players and replacement characters.
#[derive(Debug, Clone, Default)]
pub struct SessionContext {
    /// Players, each with the index it has in the header.
    pub players: Vec<(usize, Player)>,
    /// Header characters, each with its index.
    pub characters: Vec<(usize, Character)>,
}

impl SessionContext {
    /// Reads the context from a session header value.
    pub fn from_header(header: &Value) -> Self {
        SessionContext {
            players: read_items(header, "players"),
            characters: read_items(header, "characters"),
        }
    }
}

/// Resolves scenario `index` of `bundle` for a session with `ctx` (or none).
/// Seat problems are reported in `diags` at `header/players/<i>/...`
/// (Format 12.3).
pub fn resolve(
    bundle: &Value,
    index: usize,
    ctx: Option<&SessionContext>,
    diags: &mut Vec<Diagnostic>,
) -> Option<Story> {
    let scenario = Scenario::read_checked(bundle.get("scenarios")?.get(index)?)?;
    let pointer = format!("/scenarios/{index}");

    let mut characters: IndexMap<String, Character> = read_items(bundle, "characters")
        .into_iter()
        .map(|(_, c): (usize, Character)| (c.id.clone(), c))
        .collect();
    if let Some(ctx) = ctx {
        for (_, c) in &ctx.characters {
            characters.insert(c.id.clone(), c.clone());
        }
    }
    let bundle_worlds: Vec<(usize, World)> = read_items(bundle, "worlds");

    // Seats filled by the players (Format 12.3). An entry with an error
    // fills no seat and makes no player, so each entry is judged against
    // the cast as written and the entries before it that were kept.
    let mut seat_fill: IndexMap<String, (usize, String)> = IndexMap::new();
    let mut seats: HashSet<String> = HashSet::default();
    let mut plain_cast: HashSet<String> = HashSet::default();
    let mut player_cast: HashSet<String> = HashSet::default();
    for c in scenario
        .cast
        .iter()
        .filter_map(|c| CastEntry::deserialize(c).ok())
    {
        match (c.seat, c.character) {
            (Some(seat), _) => {
                seats.insert(seat);
            }
            (None, Some(ch)) => {
                if c.player == Some(true) {
                    player_cast.insert(ch.clone());
                }
                plain_cast.insert(ch);
            }
            (None, None) => {}
        }
    }
    if let Some(ctx) = ctx {
        let mut listed: HashSet<String> = HashSet::default();
        for (i, p) in &ctx.players {
            let Some(ch) = p.character.clone() else {
                continue;
            };
            let seat_error = |m: String, field: &str| {
                Diagnostic::error(Code::Seat, m).at(format!("header/players/{i}/{field}"))
            };
            if !characters.contains_key(&ch) {
                diags.push(
                    Diagnostic::error(
                        Code::UnknownRef,
                        format!("player {i} plays `{ch}`, which is no character"),
                    )
                    .at(format!("header/players/{i}/character")),
                );
                continue;
            }
            if listed.contains(&ch) {
                diags.push(seat_error(
                    format!("`{ch}` is already named by an earlier player entry"),
                    "character",
                ));
                continue;
            }
            match &p.seat {
                Some(seat) => {
                    if !seats.contains(seat) {
                        diags.push(seat_error(
                            format!("the scenario has no seat `{seat}`"),
                            "seat",
                        ));
                    } else if plain_cast.contains(&ch) {
                        diags.push(seat_error(
                            format!(
                                "`{ch}` is already in the cast and cannot also fill seat `{seat}`"
                            ),
                            "character",
                        ));
                    } else if seat_fill.contains_key(seat) {
                        diags.push(seat_error(
                            format!("seat `{seat}` is already filled by an earlier player"),
                            "seat",
                        ));
                    } else {
                        seat_fill.insert(seat.clone(), (*i, ch.clone()));
                        listed.insert(ch);
                    }
                }
                None if player_cast.contains(&ch) => {
                    listed.insert(ch);
                }
                None => diags.push(seat_error(
                    format!("`{ch}` is not a cast member marked `player: true`; name a seat to play another character"),
                    "character",
                )),
            }
        }
    }

    // Lookups by character ID keep resolution linear in the cast (Format
    // 16.2): how often each character is in the cast so far.
    let mut cast: Vec<CastMember> = Vec::new();
    let mut in_cast: HashMap<String, usize> = HashMap::default();
    for (ci, entry) in scenario.cast.iter().enumerate() {
        let Ok(entry) = CastEntry::deserialize(entry) else {
            continue;
        };
        let entry_ptr = format!("{pointer}/cast/{ci}");
        if let Some(ch) = entry.character {
            if in_cast.contains_key(&ch) || !characters.contains_key(&ch) {
                continue; // reported by the bundle checks
            }
            *in_cast.entry(ch.clone()).or_default() += 1;
            cast.push(CastMember {
                character: ch,
                player: entry.player.unwrap_or(false),
                seat: None,
                pointer: entry_ptr,
            });
        } else if let Some(seat) = entry.seat
            && let Some((_, ch)) = seat_fill.get(&seat)
        {
            if in_cast.contains_key(ch) {
                continue; // reported with the players above
            }
            *in_cast.entry(ch.clone()).or_default() += 1;
            cast.push(CastMember {
                character: ch.clone(),
                player: true,
                seat: Some(seat.clone()),
                pointer: entry_ptr,
            });
        }
    }
    let mut world_by_id: HashMap<&str, (usize, &World)> = HashMap::default();
    for (i, w) in &bundle_worlds {
        world_by_id.entry(w.id.as_str()).or_insert((*i, w));
    }
    let worlds: Vec<(World, usize)> = scenario
        .worlds
        .iter()
        .filter_map(|w| w.as_str())
        .filter_map(|id| world_by_id.get(id).map(|(i, w)| ((*w).clone(), *i)))
        .collect();

    let mut variables = IndexMap::new();
    let mut add_vars = |list: &[Value], owner: Owner, base: &str| {
        for (vi, v) in list.iter().enumerate() {
            let Ok(decl) = Variable::deserialize(v) else {
                continue;
            };
            let name = match &owner {
                Owner::Scenario(_) => decl.id.clone(),
                Owner::Character(o) | Owner::World(o) => format!("{o}.{}", decl.id),
            };
            if variables.contains_key(&name) {
                continue; // DUPLICATE_ID, reported by the bundle checks
            }
            variables.insert(
                name.clone(),
                VarDecl {
                    name,
                    owner: owner.clone(),
                    ty: VarType::parse(&decl.ty),
                    decl,
                    pointer: format!("{base}/variables/{vi}"),
                },
            );
        }
    };
    add_vars(
        &scenario.variables,
        Owner::Scenario(scenario.id.clone()),
        &pointer,
    );
    // The first bundle character with each ID, by index.
    let mut bundle_char_index: HashMap<&str, usize> = HashMap::default();
    if let Some(list) = bundle.get("characters").and_then(Value::as_array) {
        for (i, v) in list.iter().enumerate() {
            if let Some(id) = crate::model::id_of(v) {
                bundle_char_index.entry(id).or_insert(i);
            }
        }
    }
    // A header character replaces the bundle's of its ID (Format 12.2), so
    // its declarations are located in the header.
    let header_char_index: HashMap<&str, usize> = ctx
        .map(|ctx| {
            ctx.characters
                .iter()
                .map(|(i, c)| (c.id.as_str(), *i))
                .collect()
        })
        .unwrap_or_default();
    for m in &cast {
        if let Some(c) = characters.get(&m.character) {
            let base = match header_char_index.get(m.character.as_str()) {
                Some(i) => format!("header/characters/{i}"),
                None => bundle_char_index
                    .get(m.character.as_str())
                    .map(|i| format!("/characters/{i}"))
                    .unwrap_or_else(|| "header/characters".to_string()),
            };
            add_vars(&c.variables, Owner::Character(c.id.clone()), &base);
        }
    }
    for (w, wi) in &worlds {
        add_vars(
            &w.variables,
            Owner::World(w.id.clone()),
            &format!("/worlds/{wi}"),
        );
    }

    let cast_index = cast
        .iter()
        .enumerate()
        .map(|(i, m)| (m.character.clone(), i))
        .collect();
    let seats = scenario
        .cast
        .iter()
        .filter_map(|c| c.get("seat").and_then(Value::as_str).map(str::to_string))
        .collect();
    Some(Story {
        index,
        pointer,
        scenario,
        characters,
        cast,
        cast_index,
        seats,
        worlds,
        variables,
        session: ctx.is_some(),
        cel: std::sync::OnceLock::new(),
        programs: Default::default(),
    })
}

impl crate::changes::Decls for Story {
    fn var(&self, name: &str) -> Option<crate::changes::VarView<'_>> {
        use crate::changes::Keyed;
        let (k, decl) = self.variables.get_key_value(name)?;
        let keys = match &decl.decl.keys {
            None => Keyed::No,
            Some(Keys::List(keys)) => Keyed::Fixed(keys.iter().map(String::as_str).collect()),
            Some(Keys::Word(w)) if w == "cast" => {
                Keyed::Fixed(self.cast.iter().map(|m| m.character.as_str()).collect())
            }
            Some(_) => Keyed::Open,
        };
        Some(crate::changes::VarView {
            name: k.as_str(),
            ty: decl.ty,
            keys,
            derived: decl.is_derived(),
        })
    }

    fn var_names(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        Box::new(self.variables.keys().map(String::as_str))
    }

    fn cast_ref_ok(&self, id: &str) -> bool {
        Story::cast_ref_ok(self, id)
    }

    fn cast_refs(&self) -> Vec<&str> {
        let members = self.scenario.cast_entries().filter_map(|e| e.character);
        members.chain(self.seat_ids()).collect()
    }
}

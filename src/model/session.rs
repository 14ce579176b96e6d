//! Sessions (Format 7, 12): the header and messages.

use serde::Deserialize;
use serde_json::Value;

/// A player in a session header (Format 12.3).
#[derive(Debug, Clone, Deserialize)]
pub struct Player {
    /// The player's name (informative).
    #[serde(default)]
    pub name: Option<String>,
    /// The seat the player fills.
    #[serde(default)]
    pub seat: Option<String>,
    /// The character the player plays.
    #[serde(default)]
    pub character: Option<String>,
}

/// A session header (Format 12).
#[derive(Debug, Clone, Deserialize)]
pub struct Header {
    /// The scenario's ID.
    #[serde(default)]
    pub scenario: Option<String>,
    /// The players.
    #[serde(default)]
    pub players: Vec<Value>,
    /// Characters that replace or add to the bundle's (Format 12.2).
    #[serde(default)]
    pub characters: Vec<Value>,
    /// The difficulty preset.
    #[serde(default)]
    pub difficulty: Option<String>,
    /// The seed of the generator (Format 11.5).
    #[serde(default, deserialize_with = "super::de_opt_int")]
    pub seed: Option<u64>,
}

/// A message (Format 7).
#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    /// The message's ID.
    pub id: String,
    /// The parent's ID; none for a root.
    #[serde(default)]
    pub parent: Option<String>,
    /// The opening a root came from.
    #[serde(default)]
    pub opening: Option<String>,
    /// A character ID or `narrator`.
    #[serde(default)]
    pub author: Option<String>,
    /// The parts.
    #[serde(default)]
    pub parts: Vec<Value>,
    /// Hidden messages are outside the story (Format 7.4).
    #[serde(default)]
    pub hidden: bool,
    /// Changes (Format 8.5).
    #[serde(default)]
    pub changes: Vec<Value>,
    /// Recorded firings (Format 9).
    #[serde(default)]
    pub firings: Vec<Value>,
    /// A summary (Format 12.5).
    #[serde(default)]
    pub summary: Option<Value>,
    /// RFC 3339 time.
    #[serde(default)]
    pub time: Option<String>,
}

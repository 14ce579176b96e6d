//! A scenario's items (Format 6, 9, 18, 19) as the stages read them:
//! borrowed from the loaded document, each field read on its own, so a
//! field of the wrong type reads as absent (its schema diagnostic is
//! reported already, and the semantic checks still run on what can be
//! read: Format 17.1). Each format field name is written here once; the
//! stages read the typed fields.

use serde_json::{Map, Value};

use super::{array, flag, text};

/// The members of `v` when it is an object (none otherwise), for the
/// readers that take every field in one pass.
fn members(v: &Value) -> impl Iterator<Item = (&String, &Value)> {
    v.as_object().into_iter().flatten()
}

/// A cast entry (Format 6.1): a character entry or a seat.
#[derive(Debug, Clone, Copy)]
pub struct Cast<'a> {
    /// The character of a character entry.
    pub character: Option<&'a str>,
    /// The seat of a seat entry.
    pub seat: Option<&'a str>,
    /// `player: true` (always so for a seat, which is a player seat).
    pub player: bool,
    /// The draw weight (18.9), when written.
    pub talkativeness: Option<u64>,
    /// A muted character never speaks (18.9).
    pub muted: bool,
}

impl<'a> Cast<'a> {
    /// Reads the cast entry `v`.
    pub fn read(v: &'a Value) -> Cast<'a> {
        Cast {
            character: text(v, "character"),
            seat: text(v, "seat"),
            player: flag(v, "player"),
            talkativeness: v.get("talkativeness").and_then(Value::as_u64),
            muted: flag(v, "muted"),
        }
    }

    /// The entries of scenario `sc`'s `cast`, in order.
    pub fn all(sc: &'a Value) -> impl Iterator<Item = Cast<'a>> {
        array(sc, "cast").iter().map(Cast::read)
    }

    /// Whether the entry is a player's: a seat, or `player: true` (6.1).
    pub fn is_player(&self) -> bool {
        self.seat.is_some() || self.player
    }
}

/// An opening (Format 6.3).
#[derive(Debug, Clone, Copy)]
pub struct Opening<'a> {
    /// The opening's ID.
    pub id: Option<&'a str>,
    /// A cast member's character ID or `narrator`.
    pub author: Option<&'a str>,
    /// The short form: one text part.
    pub text: Option<&'a Value>,
    /// Its parts.
    pub parts: &'a [Value],
    /// Its changes (8.5), applied at the root.
    pub changes: &'a [Value],
    /// `scene.present` at the root, when written.
    pub present: Option<&'a Value>,
    /// Only for sessions with several players.
    pub group_only: bool,
}

impl<'a> Opening<'a> {
    /// Reads the opening `v`.
    pub fn read(v: &'a Value) -> Opening<'a> {
        Opening {
            id: super::id_of(v),
            author: text(v, "author"),
            text: v.get("text"),
            parts: array(v, "parts"),
            changes: array(v, "changes"),
            present: scene_present(v),
            group_only: flag(v, "group_only"),
        }
    }
}

/// `v.scene.present` (a scenario's or an opening's scene, Format 6.4), when
/// written.
pub fn scene_present(v: &Value) -> Option<&Value> {
    v.get("scene")?.get("present")
}

/// An event (Format 9) or an outcome (9.4, which has no `repeat`, `end`
/// or `signal`: they read as absent).
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    /// The event's ID.
    pub id: Option<&'a str>,
    /// When it fires: a CEL string or the threshold shape (9.1).
    pub when: Option<&'a Value>,
    /// Whether it may fire again on one path.
    pub repeat: bool,
    /// Whether firing it ends the story.
    pub end: bool,
    /// Its changes (8.5).
    pub changes: &'a [Value],
    /// The signal it raises (playtests, Format 22).
    pub signal: Option<&'a str>,
    /// Its description (for readers: Format 20.3).
    pub description: Option<&'a str>,
}

impl<'a> Event<'a> {
    /// Reads the event or outcome `v`.
    pub fn read(v: &'a Value) -> Event<'a> {
        let mut e = Event {
            id: None,
            when: None,
            repeat: false,
            end: false,
            changes: &[],
            signal: None,
            description: None,
        };
        // One pass over the members, as [`Rule::read`].
        for (k, x) in members(v) {
            match k.as_str() {
                "id" => e.id = x.as_str(),
                "when" => e.when = Some(x),
                "repeat" => e.repeat = x.as_bool() == Some(true),
                "end" => e.end = x.as_bool() == Some(true),
                "changes" => e.changes = x.as_array().map_or(&[], Vec::as_slice),
                "signal" => e.signal = x.as_str(),
                "description" => e.description = x.as_str(),
                _ => {}
            }
        }
        e
    }
}

/// A lore entry (Format 5): a scenario's, a character's or a world's.
#[derive(Debug, Clone, Copy)]
pub struct LoreEntry<'a> {
    /// The entry's ID.
    pub id: Option<&'a str>,
    /// `keys`, as written (its presence matters: 5.3).
    pub keys: Option<&'a Value>,
    /// `secondary_keys`, when a list.
    pub secondary_keys: &'a [Value],
    /// The text it contributes (a template).
    pub content: Option<&'a str>,
    /// Its condition (CEL).
    pub when: Option<&'a str>,
    /// `case_sensitive: true` (5.4).
    pub case_sensitive: bool,
    /// `enabled`, when written as a boolean.
    pub enabled: Option<bool>,
    /// `constant`, when written as a boolean.
    pub constant: Option<bool>,
}

impl<'a> LoreEntry<'a> {
    /// Reads the entry `v`.
    pub fn read(v: &'a Value) -> LoreEntry<'a> {
        let boolean = |k: &str| v.get(k).and_then(Value::as_bool);
        LoreEntry {
            id: super::id_of(v),
            keys: v.get("keys"),
            secondary_keys: array(v, "secondary_keys"),
            content: text(v, "content"),
            when: text(v, "when"),
            case_sensitive: flag(v, "case_sensitive"),
            enabled: boolean("enabled"),
            constant: boolean("constant"),
        }
    }

    /// `keys` when written as a list.
    pub fn key_list(&self) -> &'a [Value] {
        self.keys
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }
}

/// A variable declaration (Format 8.1), read field by field.
#[derive(Debug, Clone, Copy)]
pub struct VarItem<'a> {
    /// The variable's ID.
    pub id: Option<&'a str>,
    /// Its type, as written.
    pub ty: Option<&'a str>,
    /// `knob`, as written (its presence matters for the owner check).
    pub knob: Option<&'a Value>,
    /// Its `derived` expression (CEL).
    pub derived: Option<&'a str>,
    /// `keys` (Format 8.4), as written.
    pub keys: Option<&'a Value>,
    /// `min`, as written.
    pub min: Option<&'a Value>,
    /// `max`, as written.
    pub max: Option<&'a Value>,
    /// `places`, as written.
    pub places: Option<&'a Value>,
    /// `default`, as written.
    pub default: Option<&'a Value>,
    /// `visibility`.
    pub visibility: Option<&'a str>,
    /// Its description (for readers: Format 20.3).
    pub description: Option<&'a str>,
}

impl<'a> VarItem<'a> {
    /// Reads the declaration `v`.
    pub fn read(v: &'a Value) -> VarItem<'a> {
        VarItem {
            id: super::id_of(v),
            ty: text(v, "type"),
            knob: v.get("knob"),
            derived: text(v, "derived"),
            keys: v.get("keys"),
            min: v.get("min"),
            max: v.get("max"),
            places: v.get("places"),
            default: v.get("default"),
            visibility: text(v, "visibility"),
            description: text(v, "description"),
        }
    }
}

/// The scene moves of one change object (Format 8.5): `set` of
/// `scene.present`, `enter` and `leave`, each as written.
#[derive(Debug, Clone, Copy)]
pub struct SceneMoves<'a> {
    /// The list `set: {scene.present: …}` replaces the scene's with.
    pub present: Option<&'a Value>,
    /// Who `enter` brings in.
    pub enter: Option<&'a Value>,
    /// Who `leave` takes out.
    pub leave: Option<&'a Value>,
}

impl<'a> SceneMoves<'a> {
    /// Reads the change `c`.
    pub fn read(c: &'a Value) -> SceneMoves<'a> {
        SceneMoves {
            present: c.get("set").and_then(|s| s.get("scene.present")),
            enter: c.get("enter"),
            leave: c.get("leave"),
        }
    }
}

/// The template fields of a character, world or scenario (Format 4, 10):
/// `description`, `personality` and the named texts of `text`.
#[derive(Debug, Clone, Copy)]
pub struct TextFields<'a> {
    /// `description`.
    pub description: Option<&'a str>,
    /// `personality` (a character's).
    pub personality: Option<&'a str>,
    /// `text`: named texts, when an object.
    pub text: Option<&'a Map<String, Value>>,
}

impl<'a> TextFields<'a> {
    /// Reads the template fields of `v`.
    pub fn read(v: &'a Value) -> TextFields<'a> {
        TextFields {
            description: text(v, "description"),
            personality: text(v, "personality"),
            text: v.get("text").and_then(Value::as_object),
        }
    }

    /// `description` and `personality`, each with its field name (for
    /// pointers).
    pub fn templates(&self) -> [(&'static str, Option<&'a str>); 2] {
        [
            ("description", self.description),
            ("personality", self.personality),
        ]
    }
}

/// A settings change (Format 8.9) as written: `difficulty` and `knobs`,
/// each of any type (the settings checks say what is wrong with them).
#[derive(Debug, Clone, Copy)]
pub struct Settings<'a> {
    /// `difficulty`: a preset ID.
    pub difficulty: Option<&'a Value>,
    /// `knobs`: knob values.
    pub knobs: Option<&'a Value>,
}

impl<'a> Settings<'a> {
    /// The fields of a settings change (others are `x-` extensions or
    /// UNKNOWN_FIELD).
    pub const FIELDS: [&'static str; 2] = ["difficulty", "knobs"];

    /// Reads the settings object `obj`.
    pub fn read(obj: &'a Map<String, Value>) -> Settings<'a> {
        Settings {
            difficulty: obj.get("difficulty"),
            knobs: obj.get("knobs"),
        }
    }
}

/// What names and describes a scenario (Format 6): its ID, name and
/// description, read from the scenario as written.
#[derive(Debug, Clone, Copy)]
pub struct ScenarioHead<'a> {
    /// The scenario's ID.
    pub id: Option<&'a str>,
    /// Its name.
    pub name: Option<&'a str>,
    /// Its description (a template).
    pub description: Option<&'a str>,
}

impl<'a> ScenarioHead<'a> {
    /// Reads the scenario `sc`.
    pub fn read(sc: &'a Value) -> ScenarioHead<'a> {
        ScenarioHead {
            id: super::id_of(sc),
            name: text(sc, "name"),
            description: text(sc, "description"),
        }
    }
}

/// The emotion expression (Format 18.6) of the scenario `sc` as written,
/// when text.
pub fn emotion(sc: &Value) -> Option<&str> {
    text(sc, "emotion")
}

/// What a model may change of one state name (Format 24.2): a member of
/// the `model` block's `changes`.
#[derive(Debug, Clone, Copy)]
pub struct ModelChange<'a> {
    /// `step`: the most one turn may move the value, as written.
    pub step: Option<&'a Value>,
}

impl<'a> ModelChange<'a> {
    /// Reads the member value `v`.
    pub fn read(v: &'a Value) -> ModelChange<'a> {
        ModelChange {
            step: v.get("step"),
        }
    }
}

/// A rule of the rules runtime (Format 18.1).
#[derive(Debug, Clone, Copy)]
pub struct Rule<'a> {
    /// The rule's ID.
    pub id: Option<&'a str>,
    /// Its condition (a CEL string).
    pub when: Option<&'a str>,
    /// Its keywords, when written.
    pub keywords: Option<&'a [Value]>,
    /// Its regular expression.
    pub pattern: Option<&'a str>,
    /// Its priority as written (an integer, Format 2.2).
    pub priority: Option<&'a Value>,
    /// Its changes.
    pub changes: &'a [Value],
    /// Its replies (templates).
    pub replies: &'a [Value],
    /// Its owner.
    pub by: Option<&'a str>,
    /// Who says its reply.
    pub reply_as: Option<&'a str>,
    /// `on: "reply"`: a reaction (18.9).
    pub on_reply: bool,
}

impl<'a> Rule<'a> {
    /// Reads the rule `v`.
    pub fn read(v: &'a Value) -> Rule<'a> {
        let mut r = Rule {
            id: None,
            when: None,
            keywords: None,
            pattern: None,
            priority: None,
            changes: &[],
            replies: &[],
            by: None,
            reply_as: None,
            on_reply: false,
        };
        // One pass over the members instead of a hashed look-up per field:
        // every check and the compile read each rule (docs/performance.md,
        // Run AE). A field of the wrong type reads as absent, as `text`,
        // `list` and `array` read it.
        for (k, x) in members(v) {
            match k.as_str() {
                "id" => r.id = x.as_str(),
                "when" => r.when = x.as_str(),
                "keywords" => r.keywords = x.as_array().map(Vec::as_slice),
                "pattern" => r.pattern = x.as_str(),
                "priority" => r.priority = Some(x),
                "changes" => r.changes = x.as_array().map_or(&[], Vec::as_slice),
                "replies" => r.replies = x.as_array().map_or(&[], Vec::as_slice),
                "by" => r.by = x.as_str(),
                "reply_as" => r.reply_as = x.as_str(),
                "on" => r.on_reply = x.as_str() == Some("reply"),
                _ => {}
            }
        }
        r
    }

    /// The rules of scenario `sc`, in declaration order.
    pub fn all(sc: &'a Value) -> impl Iterator<Item = Rule<'a>> {
        array(sc, "rules").iter().map(Rule::read)
    }

    /// The priority as an integer (0 when absent).
    pub fn priority(&self) -> i64 {
        self.priority.and_then(super::integer).unwrap_or(0)
    }
}

/// A scenario's `turn_order` (Format 18.9).
#[derive(Debug, Clone, Copy, Default)]
pub struct TurnOrder<'a> {
    /// The strategy's name.
    pub strategy: Option<&'a str>,
    /// The fallback strategy's name.
    pub fallback: Option<&'a str>,
    /// Whether a speaker may react to its own reply.
    pub allow_self_responses: bool,
    /// The most replies a turn has, when written.
    pub max_replies_per_turn: Option<u64>,
}

impl<'a> TurnOrder<'a> {
    /// Reads the `turn_order` of scenario `sc` (all absent without one).
    pub fn of(sc: &'a Value) -> TurnOrder<'a> {
        TurnOrder::read(sc.get("turn_order"))
    }

    /// Reads the `turn_order` block `t` (all absent without one).
    pub fn read(t: Option<&'a Value>) -> TurnOrder<'a> {
        let Some(t) = t else {
            return TurnOrder::default();
        };
        TurnOrder {
            strategy: text(t, "strategy"),
            fallback: text(t, "fallback"),
            allow_self_responses: flag(t, "allow_self_responses"),
            max_replies_per_turn: t.get("max_replies_per_turn").and_then(Value::as_u64),
        }
    }
}

/// A scenario's difficulty presets (Format 6.5).
#[derive(Debug, Clone, Copy)]
pub struct Difficulty<'a> {
    /// The preset used when a session names none.
    pub default: Option<&'a str>,
    /// Preset → knob → value, when written as an object.
    pub options: Option<&'a Map<String, Value>>,
}

impl<'a> Difficulty<'a> {
    /// Reads the `difficulty` of scenario `sc`, when it has one.
    pub fn of(sc: &'a Value) -> Option<Difficulty<'a>> {
        Some(Difficulty::read(sc.get("difficulty")?))
    }

    /// Reads the difficulty block `d`.
    pub fn read(d: &'a Value) -> Difficulty<'a> {
        Difficulty {
            default: text(d, "default"),
            options: d.get("options").and_then(Value::as_object),
        }
    }

    /// Whether `preset` is one of the presets.
    pub fn has(&self, preset: &str) -> bool {
        self.options.is_some_and(|o| o.contains_key(preset))
    }

    /// The presets' names, in written order.
    pub fn presets(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        self.options
            .into_iter()
            .flat_map(|o| o.keys().map(String::as_str))
    }
}

/// A rubric criterion (Format 19.6).
#[derive(Debug, Clone, Copy)]
pub struct Criterion<'a> {
    /// The criterion's ID.
    pub id: Option<&'a str>,
    /// Its weight, as written.
    pub weight: Option<&'a Value>,
    /// Its score expression (CEL).
    pub score: Option<&'a str>,
}

impl<'a> Criterion<'a> {
    /// The criteria of scenario `sc`'s rubric (`None` without a rubric).
    pub fn all(sc: &'a Value) -> Option<impl Iterator<Item = Criterion<'a>>> {
        Criterion::of_rubric(sc.get("rubric")?)
    }

    /// The criteria of the rubric `rubric`.
    pub fn of_rubric(rubric: &'a Value) -> Option<impl Iterator<Item = Criterion<'a>>> {
        Some(array(rubric, "criteria").iter().map(|c| Criterion {
            id: super::id_of(c),
            weight: c.get("weight"),
            score: text(c, "score"),
        }))
    }
}

/// A safety category (Format 19.1).
#[derive(Debug, Clone, Copy)]
pub struct Category<'a> {
    /// The category's ID (`minor_safety` and `crisis_support` extend the
    /// global rules, 19.3).
    pub id: Option<&'a str>,
    /// Its terms (keys, 19.2).
    pub terms: &'a [Value],
    /// Its regular expressions.
    pub patterns: &'a [Value],
    /// What a redirect says (a template).
    pub redirect_text: Option<&'a str>,
    /// `action` (`redirect`, `stop`, …).
    pub action: Option<&'a str>,
}

impl<'a> Category<'a> {
    /// The categories of the safety policy `policy`, in order.
    pub fn all(policy: Option<&'a Value>) -> impl Iterator<Item = Category<'a>> {
        policy
            .map_or(&[][..], |p| array(p, "categories"))
            .iter()
            .map(|c| Category {
                id: super::id_of(c),
                terms: array(c, "terms"),
                patterns: array(c, "patterns"),
                redirect_text: text(c, "redirect_text"),
                action: text(c, "action"),
            })
    }

    /// The categories of scenario `sc`'s `safety`.
    pub fn of(sc: &'a Value) -> impl Iterator<Item = Category<'a>> {
        Category::all(sc.get("safety"))
    }
}

/// A safety policy (Format 19.1, 13.4): its own fields; its categories are
/// [`Category::all`]'s.
#[derive(Debug, Clone, Copy)]
pub struct Policy<'a> {
    /// `policy_id`.
    pub id: Option<&'a str>,
    /// `content_rating_cap`.
    pub content_rating_cap: Option<&'a str>,
    /// `global_rules`, when a list.
    pub global_rules: &'a [Value],
}

impl<'a> Policy<'a> {
    /// Reads the policy `p`.
    pub fn read(p: &'a Value) -> Policy<'a> {
        Policy {
            id: text(p, "policy_id"),
            content_rating_cap: text(p, "content_rating_cap"),
            global_rules: array(p, "global_rules"),
        }
    }
}

/// A threshold condition (Format 9.1) `{type, variable, threshold}`, each
/// field as written.
#[derive(Debug, Clone, Copy)]
pub struct Threshold<'a> {
    /// `type`: `variable_above`, `variable_below` or `variable_equals`.
    pub kind: Option<&'a str>,
    /// The variable's state name.
    pub variable: Option<&'a str>,
    /// The threshold.
    pub threshold: Option<&'a Value>,
}

impl<'a> Threshold<'a> {
    /// Reads the condition `t` (a CEL string reads with no fields).
    pub fn read(t: &'a Value) -> Threshold<'a> {
        Threshold {
            kind: text(t, "type"),
            variable: text(t, "variable"),
            threshold: t.get("threshold"),
        }
    }
}

/// A scenario's `model` block (Format 24.2), read field by field; an absent
/// block (or one that is no object) reads as empty.
#[derive(Debug, Clone, Copy, Default)]
pub struct ModelBlock<'a> {
    /// `changes`: each variable the model may change, with its declaration.
    pub changes: Option<&'a Map<String, Value>>,
    /// `emotions`, as written.
    pub emotions: &'a [Value],
    /// `prompt` (24.3), when text.
    pub prompt: Option<&'a str>,
    /// `lore_budget`, as written (an integer when valid).
    pub lore_budget: Option<&'a Value>,
    /// `history`, as written (an integer when valid).
    pub history: Option<&'a Value>,
}

impl<'a> ModelBlock<'a> {
    /// Reads the block `m`.
    pub fn read(m: Option<&'a Value>) -> ModelBlock<'a> {
        let Some(m) = m.filter(|m| m.is_object()) else {
            return ModelBlock::default();
        };
        ModelBlock {
            changes: m.get("changes").and_then(Value::as_object),
            emotions: array(m, "emotions"),
            prompt: text(m, "prompt"),
            lore_budget: m.get("lore_budget"),
            history: m.get("history"),
        }
    }

    /// Each variable the model may change, in written order, with its
    /// `step` as written (24.2).
    pub fn change_steps(&self) -> impl Iterator<Item = (&'a str, Option<&'a Value>)> + use<'a> {
        self.changes
            .into_iter()
            .flatten()
            .map(|(name, d)| (name.as_str(), ModelChange::read(d).step))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_field_of_the_wrong_type_reads_as_absent_and_the_others_still_read() {
        let rule = json!({"id": "r", "when": 3, "priority": 5.0, "by": ["x"], "on": "reply"});
        let r = Rule::read(&rule);
        assert_eq!((r.id, r.when, r.by), (Some("r"), None, None));
        // 5.0 is the integer 5 (Format 2.2).
        assert_eq!(r.priority(), 5);
        assert!(r.on_reply);
        assert_eq!(Rule::read(&json!({"priority": "high"})).priority(), 0);
    }

    #[test]
    fn a_seat_is_a_player_entry_and_a_character_entry_is_one_only_with_player_true() {
        let sc = json!({"cast": [
            {"character": "kai", "talkativeness": 20, "muted": true},
            {"seat": "p1"},
            {"character": "mo", "player": true}
        ]});
        let cast: Vec<Cast<'_>> = Cast::all(&sc).collect();
        let players: Vec<bool> = cast.iter().map(Cast::is_player).collect();
        assert_eq!(players, [false, true, true]);
        assert_eq!((cast[0].talkativeness, cast[0].muted), (Some(20), true));
        assert_eq!(cast[1].seat, Some("p1"));
    }

    #[test]
    fn difficulty_presets_keep_their_written_order() {
        let sc = json!({"difficulty": {"default": "easy",
            "options": {"hard": {"patience": 1}, "easy": {"patience": 9}}}});
        let d = Difficulty::of(&sc).unwrap();
        assert_eq!(d.default, Some("easy"));
        assert_eq!(d.presets().collect::<Vec<_>>(), ["hard", "easy"]);
        assert!(d.has("hard") && !d.has("medium"));
        assert!(Difficulty::of(&json!({})).is_none());
    }

    #[test]
    fn variable_policy_and_threshold_fields_read_as_written() {
        let v = json!({"id": "mood", "type": "number", "min": 0, "max": "9", "places": 2.0,
            "keys": ["a"], "default": [1], "visibility": 3, "description": "How it feels"});
        let d = VarItem::read(&v);
        assert_eq!(
            (d.min, d.max, d.places),
            (Some(&json!(0)), Some(&json!("9")), Some(&json!(2.0)))
        );
        assert_eq!((d.visibility, d.description), (None, Some("How it feels")));
        assert_eq!(d.default, Some(&json!([1])));
        assert!(VarItem::read(&json!(["id"])).id.is_none());
        let p = json!({"policy_id": "default", "content_rating_cap": ["teen"], "global_rules": "x",
            "categories": [{"id": "g", "action": "redirect"}, {"action": 1}]});
        let policy = Policy::read(&p);
        assert_eq!(
            (policy.id, policy.content_rating_cap),
            (Some("default"), None)
        );
        assert!(policy.global_rules.is_empty());
        let actions: Vec<_> = Category::all(Some(&p)).map(|c| c.action).collect();
        assert_eq!(actions, [Some("redirect"), None]);
        let tv = json!({"type": "variable_above", "variable": "x", "threshold": 60});
        let t = Threshold::read(&tv);
        assert_eq!(
            (t.kind, t.variable, t.threshold),
            (Some("variable_above"), Some("x"), Some(&json!(60)))
        );
        let cel = json!("state.x > 1");
        let t = Threshold::read(&cel);
        assert!(t.kind.is_none() && t.variable.is_none() && t.threshold.is_none());
        assert_eq!(
            Event::read(&json!({"description": "d"})).description,
            Some("d")
        );
    }

    #[test]
    fn text_fields_and_settings_read_as_written() {
        let ch = json!({"description": "d", "personality": 3, "text": {"greeting": "hi"}});
        let t = TextFields::read(&ch);
        assert_eq!(
            t.templates(),
            [("description", Some("d")), ("personality", None)]
        );
        assert_eq!(t.text.unwrap().len(), 1);
        assert!(TextFields::read(&json!({"text": ["hi"]})).text.is_none());
        assert!(TextFields::read(&json!("text")).description.is_none());
        let m = json!({"difficulty": 7, "x-note": 1});
        let s = Settings::read(m.as_object().unwrap());
        assert_eq!((s.difficulty, s.knobs), (Some(&json!(7)), None));
        assert!(!Settings::FIELDS.contains(&"x-note"));
        assert_eq!(ModelChange::read(&json!({"step": 2})).step, Some(&json!(2)));
        assert!(ModelChange::read(&json!([2])).step.is_none());
        assert_eq!(emotion(&json!({"emotion": "'calm'"})), Some("'calm'"));
        assert_eq!(emotion(&json!({"emotion": ["calm"]})), None);
        let sc = json!({"id": "s", "name": ["S"], "description": "D"});
        let h = ScenarioHead::read(&sc);
        assert_eq!((h.id, h.name, h.description), (Some("s"), None, Some("D")));
    }

    /// The one-pass readers (Run AE) read what a look-up of each field
    /// reads, whatever each field's type, with unknown members beside them
    /// and for a value that is no object.
    #[test]
    fn rules_and_events_read_in_one_pass_as_field_by_field() {
        let values = [
            json!(null),
            json!("text"),
            json!(true),
            json!(7),
            json!(["a", 1]),
            json!({"k": "v"}),
        ];
        for v in &values {
            let rule = json!({
                "x-note": 1, "id": v, "when": v, "keywords": v, "pattern": v,
                "priority": v, "changes": v, "replies": v, "by": v,
                "reply_as": v, "on": v, "extensions": {"id": "no"}
            });
            let r = Rule::read(&rule);
            assert_eq!(r.id, super::super::id_of(&rule));
            assert_eq!(r.when, text(&rule, "when"));
            assert_eq!(r.keywords, super::super::list(&rule, "keywords"));
            assert_eq!(r.pattern, text(&rule, "pattern"));
            assert_eq!(r.priority, rule.get("priority"));
            assert_eq!(r.changes, array(&rule, "changes"));
            assert_eq!(r.replies, array(&rule, "replies"));
            assert_eq!(
                (r.by, r.reply_as),
                (text(&rule, "by"), text(&rule, "reply_as"))
            );
            assert_eq!(r.on_reply, text(&rule, "on") == Some("reply"));
            let event = json!({
                "id": v, "when": v, "repeat": v, "end": v, "changes": v,
                "signal": v, "description": v, "x-note": 2
            });
            let e = Event::read(&event);
            assert_eq!(
                (e.id, e.when),
                (super::super::id_of(&event), event.get("when"))
            );
            assert_eq!(
                (e.repeat, e.end),
                (flag(&event, "repeat"), flag(&event, "end"))
            );
            assert_eq!(e.changes, array(&event, "changes"));
            assert_eq!(
                (e.signal, e.description),
                (text(&event, "signal"), text(&event, "description"))
            );
        }
        assert!(Rule::read(&json!({"on": "reply"})).on_reply);
        assert!(Event::read(&json!({"repeat": true, "end": true})).end);
        for v in &values[..5] {
            assert!(Rule::read(v).id.is_none() && Event::read(v).when.is_none());
        }
    }

    #[test]
    fn an_outcome_reads_as_an_event_that_neither_repeats_nor_ends() {
        let o = json!({"id": "deal", "when": "state.x > 1", "changes": [{"set": {"x": 0}}]});
        let e = Event::read(&o);
        assert_eq!(e.id, Some("deal"));
        assert!(!e.repeat && !e.end && e.signal.is_none());
        assert_eq!(e.changes.len(), 1);
        let sc = json!({"turn_order": {"strategy": "natural", "max_replies_per_turn": 3}});
        let t = TurnOrder::of(&sc);
        assert_eq!(
            (t.strategy, t.max_replies_per_turn),
            (Some("natural"), Some(3))
        );
        assert!(TurnOrder::of(&json!({})).strategy.is_none());
    }
}

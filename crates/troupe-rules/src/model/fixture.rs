//! A pack's turn fixtures (`tests/*.yaml`, Format 13.8, 21.3) as the
//! checks read them: borrowed from the loaded document, each field read on
//! its own, so a field of the wrong type reads as absent (its schema
//! diagnostic is reported already, and the other checks still run: Format
//! 17.1). Running a fixture reads the schema-valid document whole
//! (`testing::fixtures::Fixture`).

use serde_json::{Map, Value};

use super::{array, text};

/// A fixture file (Format 13.8).
#[derive(Debug, Clone, Copy)]
pub struct Fixture<'a> {
    /// `fixture_id`.
    pub fixture_id: Option<&'a str>,
    /// The scenario it plays.
    pub scenario_id: Option<&'a str>,
    /// Its description.
    pub description: Option<&'a str>,
    /// `runtime` as written (`rules` when absent, 21.3).
    pub runtime: Option<&'a str>,
    /// The difficulty preset.
    pub difficulty: Option<&'a str>,
    /// The cassette's pack-relative path (21.3).
    pub cassette: Option<&'a str>,
    /// `coverage.minimum` as written (21.3).
    pub coverage_minimum: Option<&'a Value>,
    /// `turns` as written: turns and settings steps.
    pub turns: &'a [Value],
    /// `static_assertions` as written (21.4).
    pub static_assertions: &'a [Value],
}

impl<'a> Fixture<'a> {
    /// Reads the fixture document `v`.
    pub fn read(v: &'a Value) -> Fixture<'a> {
        Fixture {
            fixture_id: text(v, "fixture_id"),
            scenario_id: text(v, "scenario_id"),
            description: text(v, "description"),
            runtime: text(v, "runtime"),
            difficulty: text(v, "difficulty"),
            cassette: text(v, "cassette"),
            coverage_minimum: v.get("coverage").and_then(|c| c.get("minimum")),
            turns: array(v, "turns"),
            static_assertions: array(v, "static_assertions"),
        }
    }

    /// The items of `turns`, each with its index, in order.
    pub fn steps(&self) -> impl Iterator<Item = (usize, Step<'a>)> + use<'a> {
        self.turns.iter().map(Step::read).enumerate()
    }

    /// How many items of `turns` are turns (settings steps not counted).
    pub fn turn_count(&self) -> usize {
        self.steps()
            .filter(|(_, s)| matches!(s, Step::Turn(_)))
            .count()
    }

    /// The static assertions, in order.
    pub fn assertions(&self) -> impl Iterator<Item = Assertion<'a>> + use<'a> {
        self.static_assertions.iter().map(Assertion::read)
    }
}

/// An item of a fixture's `turns` (Format 13.8).
#[derive(Debug, Clone, Copy)]
pub enum Step<'a> {
    /// A settings step `{settings: …}` (8.9, 21.3): the settings as written.
    Settings(&'a Value),
    /// A turn.
    Turn(Turn<'a>),
}

impl<'a> Step<'a> {
    /// Reads the `turns` item `v`: a settings step when it has `settings`,
    /// else a turn.
    pub fn read(v: &'a Value) -> Step<'a> {
        match v.get("settings") {
            Some(s) => Step::Settings(s),
            None => Step::Turn(Turn::read(v)),
        }
    }
}

/// A turn of a fixture (Format 13.8).
#[derive(Debug, Clone, Copy)]
pub struct Turn<'a> {
    /// `turn`, when written as a JSON integer.
    pub turn: Option<i64>,
    /// `expect`, when written (of any type: an expectation that is no
    /// object reads as one with no fields).
    pub expect: Option<Expect<'a>>,
}

impl<'a> Turn<'a> {
    /// Reads the turn `v`.
    pub fn read(v: &'a Value) -> Turn<'a> {
        Turn {
            turn: v.get("turn").and_then(Value::as_i64),
            expect: v.get("expect").map(Expect::read),
        }
    }
}

/// A turn's `expect` (Format 13.8, 21.3): the fields that name something
/// of the story.
#[derive(Debug, Clone, Copy)]
pub struct Expect<'a> {
    /// `fired`, when a list.
    pub fired: &'a [Value],
    /// `not_fired`, when a list.
    pub not_fired: &'a [Value],
    /// `outcome`.
    pub outcome: Option<&'a str>,
    /// `rule`.
    pub rule: Option<&'a str>,
    /// `state_delta_contains`, when a list.
    pub state_delta_contains: &'a [Value],
    /// `state`, when an object.
    pub state: Option<&'a Map<String, Value>>,
    /// `replies`, when a list (each item `{by?, rule?, contains?}`).
    pub replies: &'a [Value],
}

impl<'a> Expect<'a> {
    /// Reads the expectation `v`.
    pub fn read(v: &'a Value) -> Expect<'a> {
        Expect {
            fired: array(v, "fired"),
            not_fired: array(v, "not_fired"),
            outcome: text(v, "outcome"),
            rule: text(v, "rule"),
            state_delta_contains: array(v, "state_delta_contains"),
            state: v.get("state").and_then(Value::as_object),
            replies: array(v, "replies"),
        }
    }

    /// `fired` and `not_fired`, each with its field name (for pointers).
    pub fn firing_lists(&self) -> [(&'static str, &'a [Value]); 2] {
        [("fired", self.fired), ("not_fired", self.not_fired)]
    }
}

/// A static assertion (Format 21.4).
#[derive(Debug, Clone, Copy)]
pub struct Assertion<'a> {
    /// Its description.
    #[allow(dead_code)] // the typed model's field; no stage reads it yet (issue 38 item 1)
    pub description: Option<&'a str>,
    /// Its path.
    pub path: Option<&'a str>,
    /// Its check.
    pub check: Option<&'a str>,
}

impl<'a> Assertion<'a> {
    /// Reads the assertion `v`.
    pub fn read(v: &'a Value) -> Assertion<'a> {
        Assertion {
            description: text(v, "description"),
            path: text(v, "path"),
            check: text(v, "check"),
        }
    }

    /// `path` and `check`, each with its field name (for pointers).
    pub fn texts(&self) -> [(&'static str, Option<&'a str>); 2] {
        [("path", self.path), ("check", self.check)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_fixture_reads_its_steps_and_expectations() {
        let v = json!({"fixture_id": "golden", "scenario_id": "haggle", "difficulty": "easy",
            "cassette": "cassettes/a.json", "coverage": {"minimum": 80},
            "turns": [
                {"turn": 1, "player_input": "Hi", "expect": {"fired": ["e", 3], "not_fired": [],
                    "outcome": "win", "rule": "greet", "state_delta_contains": ["x"],
                    "state": {"x": 1}}},
                {"settings": {"difficulty": "hard"}},
                {"turn": 2.0, "player_input": "Bye"}
            ],
            "static_assertions": [{"path": "manifest.name", "check": "non_empty_string"}]});
        let f = Fixture::read(&v);
        assert_eq!(
            (f.fixture_id, f.scenario_id, f.difficulty),
            (Some("golden"), Some("haggle"), Some("easy"))
        );
        assert_eq!(f.cassette, Some("cassettes/a.json"));
        assert_eq!(f.coverage_minimum, Some(&json!(80)));
        assert_eq!(f.turn_count(), 2);
        let steps: Vec<_> = f.steps().collect();
        let Step::Turn(t) = steps[0].1 else {
            panic!("a turn")
        };
        assert_eq!(t.turn, Some(1));
        let e = t.expect.unwrap();
        assert_eq!(e.fired.len(), 2);
        assert_eq!((e.outcome, e.rule), (Some("win"), Some("greet")));
        assert_eq!(e.firing_lists()[1].0, "not_fired");
        assert!(e.state.unwrap().contains_key("x"));
        assert!(matches!(steps[1], (1, Step::Settings(s)) if s["difficulty"] == "hard"));
        // `turn` is read as a JSON integer only (2.0 reads as absent).
        assert!(matches!(
            steps[2].1,
            Step::Turn(Turn {
                turn: None,
                expect: None
            })
        ));
        let a: Vec<_> = f.assertions().collect();
        assert_eq!(
            a[0].texts(),
            [
                ("path", Some("manifest.name")),
                ("check", Some("non_empty_string"))
            ]
        );
    }

    #[test]
    fn odd_shapes_read_as_absent() {
        // Objects for arrays, arrays for objects, numbers for strings.
        let v = json!({"fixture_id": 4, "turns": {"turn": 1}, "static_assertions": "x",
            "coverage": [80], "cassette": ["cassettes/a.json"]});
        let f = Fixture::read(&v);
        assert!(f.fixture_id.is_none() && f.cassette.is_none() && f.coverage_minimum.is_none());
        assert_eq!(f.steps().count(), 0);
        assert_eq!(f.assertions().count(), 0);
        let arr = json!([{"turn": 1}]);
        let f = Fixture::read(&arr);
        assert!(f.scenario_id.is_none() && f.turns.is_empty());
        // A turn that is no object is a turn with nothing in it; an
        // expectation that is no object has no fields.
        let turns = json!([7, {"turn": "1", "expect": ["fired"]}, {"settings": null}]);
        let steps: Vec<_> = turns.as_array().unwrap().iter().map(Step::read).collect();
        assert!(matches!(
            steps[0],
            Step::Turn(Turn {
                turn: None,
                expect: None
            })
        ));
        let Step::Turn(t) = steps[1] else {
            panic!("a turn")
        };
        let e = t.expect.unwrap();
        assert!(t.turn.is_none() && e.fired.is_empty() && e.state.is_none() && e.outcome.is_none());
        // `settings: null` is written: a settings step (its schema says the rest).
        assert!(matches!(steps[2], Step::Settings(Value::Null)));
        let av = json!({"path": 1, "check": "lt 3"});
        let a = Assertion::read(&av);
        assert_eq!((a.path, a.check), (None, Some("lt 3")));
    }
}

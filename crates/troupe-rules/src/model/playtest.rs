//! A pack's playtests and personas (`playtests/*.yaml`,
//! `personas/*.yaml`, Format 22.1, 22.3) as the checks and the docs page
//! read them: borrowed from the loaded document, each field read on its
//! own, so a field of the wrong type reads as absent (its schema diagnostic
//! is reported already, and the other checks still run: Format 17.1).
//! Running a playtest reads the schema-valid document whole
//! (`playtest::model::Playtest`).

use serde_json::Value;

use super::{array, text};

/// A playtest file (Format 22.1).
#[derive(Debug, Clone, Copy)]
pub struct Playtest<'a> {
    /// `name`: the playtest's ID.
    pub name: Option<&'a str>,
    /// `party`, `adversarial`, `parallel` or `scenario` (22.2).
    pub mode: Option<&'a str>,
    /// The scenario played.
    pub scenario_id: Option<&'a str>,
    /// Its summary.
    pub summary: Option<&'a str>,
    /// `rounds` as written (an int ≥ 1, Format 2.2).
    pub rounds: Option<&'a Value>,
    /// `requires.difficulty`.
    pub requires_difficulty: Option<&'a str>,
    /// The cassette's pack-relative path.
    pub cassette: Option<&'a str>,
    /// `roster`: the agents, as written.
    pub roster: &'a [Value],
    /// `group_goals`, as written.
    pub group_goals: &'a [Value],
    /// `choreography`, as written.
    pub choreography: &'a [Value],
}

impl<'a> Playtest<'a> {
    /// Reads the playtest document `v`.
    pub fn read(v: &'a Value) -> Playtest<'a> {
        Playtest {
            name: text(v, "name"),
            mode: text(v, "mode"),
            scenario_id: text(v, "scenario_id"),
            summary: text(v, "summary"),
            rounds: v.get("rounds"),
            requires_difficulty: v.get("requires").and_then(|r| text(r, "difficulty")),
            cassette: text(v, "cassette"),
            roster: array(v, "roster"),
            group_goals: array(v, "group_goals"),
            choreography: array(v, "choreography"),
        }
    }

    /// The agents of the roster, in order.
    pub fn agents(&self) -> impl Iterator<Item = Agent<'a>> + use<'a> {
        self.roster.iter().map(Agent::read)
    }

    /// The group goals, in order.
    pub fn group_goal_items(&self) -> impl Iterator<Item = Goal<'a>> + use<'a> {
        self.group_goals.iter().map(Goal::read)
    }

    /// The choreography's steps, in order.
    pub fn steps(&self) -> impl Iterator<Item = Step<'a>> + use<'a> {
        self.choreography.iter().map(Step::read)
    }
}

/// A roster agent (Format 22.1).
#[derive(Debug, Clone, Copy)]
pub struct Agent<'a> {
    /// The agent's ID.
    pub id: Option<&'a str>,
    /// Its persona's ID.
    pub role: Option<&'a str>,
    /// The seat or player character it plays.
    pub target: Option<&'a str>,
    /// Its goals, as written.
    pub goals: &'a [Value],
}

impl<'a> Agent<'a> {
    /// Reads the agent `v`.
    pub fn read(v: &'a Value) -> Agent<'a> {
        Agent {
            id: super::id_of(v),
            role: text(v, "role"),
            target: text(v, "target"),
            goals: array(v, "goals"),
        }
    }

    /// Its goals, in order.
    pub fn goal_items(&self) -> impl Iterator<Item = Goal<'a>> + use<'a> {
        self.goals.iter().map(Goal::read)
    }
}

/// A goal (Format 22.1): an agent's or the group's.
#[derive(Debug, Clone, Copy)]
pub struct Goal<'a> {
    /// The goal's ID.
    #[allow(dead_code)] // the typed model's field; no stage reads it yet (issue 38 item 1)
    pub id: Option<&'a str>,
    /// `verify`: the condition that decides it (CEL, 22.6).
    pub verify: Option<&'a str>,
}

impl<'a> Goal<'a> {
    /// Reads the goal `v`.
    pub fn read(v: &'a Value) -> Goal<'a> {
        Goal {
            id: super::id_of(v),
            verify: text(v, "verify"),
        }
    }
}

/// A choreography step (Format 22.1).
#[derive(Debug, Clone, Copy)]
pub struct Step<'a> {
    /// The agent who speaks.
    pub who: Option<&'a str>,
    /// What it says (a template).
    pub say: Option<&'a str>,
    /// The signal it waits for.
    pub after: Option<&'a str>,
    /// `round` as written (an int ≥ 1, Format 2.2).
    pub round: Option<&'a Value>,
}

impl<'a> Step<'a> {
    /// Reads the step `v`.
    pub fn read(v: &'a Value) -> Step<'a> {
        Step {
            who: text(v, "who"),
            say: text(v, "do"),
            after: text(v, "after"),
            round: v.get("round"),
        }
    }
}

/// A persona file (Format 22.3).
#[derive(Debug, Clone, Copy)]
pub struct Persona<'a> {
    /// `persona_id`.
    pub id: Option<&'a str>,
    /// Its rules, as written.
    pub rules: &'a [Value],
    /// `fallback`: the lines said when no rule matches, as written.
    pub fallback: &'a [Value],
}

impl<'a> Persona<'a> {
    /// Reads the persona document `v`.
    pub fn read(v: &'a Value) -> Persona<'a> {
        Persona {
            id: text(v, "persona_id"),
            rules: array(v, "rules"),
            fallback: array(v, "fallback"),
        }
    }

    /// Its rules, in order.
    pub fn rule_items(&self) -> impl Iterator<Item = PersonaRule<'a>> + use<'a> {
        self.rules.iter().map(PersonaRule::read)
    }
}

/// A persona's rule (Format 22.3).
#[derive(Debug, Clone, Copy)]
pub struct PersonaRule<'a> {
    /// Its condition (CEL).
    pub when: Option<&'a str>,
    /// `say`, when a list of lines (templates).
    pub say: &'a [Value],
}

impl<'a> PersonaRule<'a> {
    /// Reads the rule `v`.
    pub fn read(v: &'a Value) -> PersonaRule<'a> {
        PersonaRule {
            when: text(v, "when"),
            say: array(v, "say"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_playtest_reads_its_agents_goals_and_steps() {
        let v = json!({"name": "two_buyers", "mode": "party", "scenario_id": "market",
            "summary": "Two buyers", "rounds": 6.0, "requires": {"difficulty": "hard"},
            "roster": [{"id": "ana", "role": "polite", "target": "buyer1",
                "goals": [{"id": "charm", "verify": "state.x > 1.0"}]}],
            "group_goals": [{"id": "deal", "verify": "'deal_done' in signals"}],
            "choreography": [{"who": "ana", "do": "Hi", "after": "warming_up", "round": 2}]});
        let p = Playtest::read(&v);
        assert_eq!(
            (p.name, p.mode, p.scenario_id),
            (Some("two_buyers"), Some("party"), Some("market"))
        );
        assert_eq!(
            (p.summary, p.requires_difficulty),
            (Some("Two buyers"), Some("hard"))
        );
        assert_eq!(p.rounds.and_then(crate::model::integer_u64), Some(6));
        let a: Vec<_> = p.agents().collect();
        assert_eq!(
            (a[0].id, a[0].role, a[0].target),
            (Some("ana"), Some("polite"), Some("buyer1"))
        );
        assert_eq!(
            a[0].goal_items().next().unwrap().verify,
            Some("state.x > 1.0")
        );
        assert_eq!(p.group_goal_items().next().unwrap().id, Some("deal"));
        let s = p.steps().next().unwrap();
        assert_eq!(
            (s.who, s.say, s.after),
            (Some("ana"), Some("Hi"), Some("warming_up"))
        );
        assert_eq!(s.round, Some(&json!(2)));
    }

    #[test]
    fn odd_shapes_read_as_absent() {
        let v = json!({"name": 3, "roster": {"id": "ana"}, "requires": ["difficulty"],
            "choreography": "x", "group_goals": [7, {"verify": ["a"]}]});
        let p = Playtest::read(&v);
        assert!(p.name.is_none() && p.requires_difficulty.is_none());
        assert_eq!((p.agents().count(), p.steps().count()), (0, 0));
        let goals: Vec<_> = p.group_goal_items().collect();
        assert!(goals.iter().all(|g| g.id.is_none() && g.verify.is_none()));
        assert!(Playtest::read(&json!([1, 2])).mode.is_none());
        let persona = json!({"persona_id": "haggler", "rules": [{"when": 1, "say": ["Hi", 2]}],
            "fallback": {"say": "x"}});
        let per = Persona::read(&persona);
        assert_eq!(per.id, Some("haggler"));
        assert!(per.fallback.is_empty());
        let r = per.rule_items().next().unwrap();
        assert_eq!((r.when, r.say.len()), (None, 2));
    }
}

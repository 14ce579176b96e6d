//! The wiring of a compiled story as a graph (Format 20.2, `troupe graph`):
//! which opening, rule, event or outcome changes which variable, which
//! condition reads which variable, which event raises which signal, and
//! which firing ends the story. Read from the compiled story ([`StoryIr`])
//! and the runtime's rules ([`RuntimeIr`]); the reads are the slots each
//! compiled CEL program reads ([`crate::cel::Program::reads`]).
//!
//! Output is text: DOT ([`Graph::to_dot`]) or Mermaid
//! ([`Graph::to_mermaid`]). The same story gives the same bytes: nodes and
//! edges are in declaration order, node IDs are generated (`v0`, `r0`, …),
//! and every label is escaped for the target syntax.

use std::collections::HashSet;
use std::fmt::Write as _;

use crate::cel::Program;
use crate::compile::{ChangeIr, OwnerRef, StoryIr};
use crate::runtime::compiled::RuntimeIr;

/// What a node stands for (Format 20.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// A state variable (or `scene.location` / `scene.present`).
    Variable,
    /// An opening (Format 6.3).
    Opening,
    /// A rule (Format 18.1).
    Rule,
    /// An event (Format 9) that does not end the story.
    Event,
    /// An event with `end` (it ends the story).
    EndingEvent,
    /// An outcome (Format 9; every outcome ends the story).
    Outcome,
    /// A signal raised by an event.
    Signal,
    /// A value conditions read that no change writes: a difficulty knob
    /// (`difficulty.<knob>`), the clock and counters (`turn`, `round`,
    /// `elapsed`, `hour`, `weekday`), `opening`, `last.*`.
    Input,
    /// The end of the story.
    End,
}

impl NodeKind {
    /// The word used in labels and the legend.
    pub fn word(self) -> &'static str {
        match self {
            NodeKind::Variable => "variable",
            NodeKind::Opening => "opening",
            NodeKind::Rule => "rule",
            NodeKind::Event => "event",
            NodeKind::EndingEvent => "ending event",
            NodeKind::Outcome => "outcome",
            NodeKind::Signal => "signal",
            NodeKind::Input => "input",
            NodeKind::End => "END",
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            NodeKind::Variable => "v",
            NodeKind::Opening => "p",
            NodeKind::Rule => "r",
            NodeKind::Event | NodeKind::EndingEvent => "e",
            NodeKind::Outcome => "o",
            NodeKind::Signal => "s",
            NodeKind::Input => "i",
            NodeKind::End => "END",
        }
    }
}

/// What an edge says (Format 20.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    /// The source sets the target variable.
    Set,
    /// The source adds to the target variable.
    Add,
    /// The target's condition (or derived expression) reads the source
    /// variable.
    Reads,
    /// The source event raises the target signal.
    Raises,
    /// The source ends the story (the target is END).
    Ends,
}

impl EdgeKind {
    /// The edge's label.
    pub fn label(self) -> &'static str {
        match self {
            EdgeKind::Set => "set",
            EdgeKind::Add => "add",
            EdgeKind::Reads => "reads",
            EdgeKind::Raises => "raises",
            EdgeKind::Ends => "ends",
        }
    }
}

/// A node: its generated ID (safe in DOT and Mermaid), its kind and the
/// pack's ID of what it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The generated ID (`v0`, `r3`, `END`).
    pub id: String,
    /// What it stands for.
    pub kind: NodeKind,
    /// The pack's ID (a variable's state name, a rule's ID, a signal).
    pub name: String,
}

/// An edge between two nodes, by index into [`Graph::nodes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Edge {
    /// The source node.
    pub from: usize,
    /// The target node.
    pub to: usize,
    /// What it says.
    pub kind: EdgeKind,
}

/// The graph of one scenario.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    /// The scenario's ID.
    pub scenario: String,
    /// Nodes: variables (declaration order), then in the order first met
    /// while reading derived variables, openings, rules (trial order),
    /// events and outcomes (declaration order): inputs, signals, END.
    pub nodes: Vec<Node>,
    /// Edges in the order they were found, each once.
    pub edges: Vec<Edge>,
}

/// The node a flattened environment slot name reads: a variable
/// (`state.x`, `own.x`, `state.rel.kai` → `rel`, `scene.location`) or an
/// input (`difficulty.patience`, `turn`, `last.text`); `None` for the
/// constants (`char`, `user`, `self`).
fn slot_var(ir: &StoryIr, owner: OwnerRef, slot: &str) -> Option<(NodeKind, String)> {
    if slot == "scene.location" || slot == "scene.present" {
        return Some((NodeKind::Variable, slot.to_string()));
    }
    if slot.starts_with("difficulty.")
        || slot.starts_with("last.")
        || ["turn", "round", "elapsed", "hour", "weekday", "opening"].contains(&slot)
    {
        return Some((NodeKind::Input, slot.to_string()));
    }
    let name = if let Some(rest) = slot.strip_prefix("state.") {
        rest.to_string()
    } else if let Some(rest) = slot.strip_prefix("own.") {
        match owner {
            OwnerRef::Scenario => rest.to_string(),
            o => format!("{}.{rest}", ir.owner_id(o)),
        }
    } else {
        return None;
    };
    // The longest variable name that is the slot or a prefix of it (a
    // keyed variable's key slots).
    ir.vars
        .iter()
        .filter(|v| {
            name == *v.name || (name.starts_with(&*v.name) && name[v.name.len()..].starts_with('.'))
        })
        .max_by_key(|v| v.name.len())
        .map(|v| (NodeKind::Variable, v.name.to_string()))
}

struct Builder {
    g: Graph,
    seen: HashSet<Edge>,
}

impl Builder {
    fn node(&mut self, kind: NodeKind, name: &str) -> usize {
        let same = |n: &Node| {
            n.name == name
                && (n.kind == kind
                    || matches!(
                        (n.kind, kind),
                        (NodeKind::Event, NodeKind::EndingEvent)
                            | (NodeKind::EndingEvent, NodeKind::Event)
                    ))
        };
        if let Some(i) = self.g.nodes.iter().position(same) {
            return i;
        }
        let id = if kind == NodeKind::End {
            "END".to_string()
        } else {
            let n = self
                .g
                .nodes
                .iter()
                .filter(|n| n.kind.prefix() == kind.prefix())
                .count();
            format!("{}{n}", kind.prefix())
        };
        self.g.nodes.push(Node {
            id,
            kind,
            name: name.to_string(),
        });
        self.g.nodes.len() - 1
    }

    fn edge(&mut self, from: usize, to: usize, kind: EdgeKind) {
        let e = Edge { from, to, kind };
        if self.seen.insert(e) {
            self.g.edges.push(e);
        }
    }

    fn changes(&mut self, ir: &StoryIr, from: usize, changes: &[ChangeIr]) {
        for c in changes {
            let (var, kind) = match c {
                ChangeIr::Set { var, .. } | ChangeIr::SetOpen { var, .. } => (
                    ir.vars.get(*var as usize).map(|v| v.name.to_string()),
                    EdgeKind::Set,
                ),
                ChangeIr::Add { var, .. } | ChangeIr::AddOpen { var, .. } => (
                    ir.vars.get(*var as usize).map(|v| v.name.to_string()),
                    EdgeKind::Add,
                ),
                ChangeIr::Location(_) => (Some("scene.location".to_string()), EdgeKind::Set),
                ChangeIr::Present(_) | ChangeIr::Enter(_) | ChangeIr::Leave(_) => {
                    (Some("scene.present".to_string()), EdgeKind::Set)
                }
            };
            if let Some(name) = var {
                let v = self.node(NodeKind::Variable, &name);
                self.edge(from, v, kind);
            }
        }
    }

    /// Edges from what `program`, run in environment `env` of the story,
    /// reads to node `to`.
    fn reads(&mut self, ir: &StoryIr, env: usize, to: usize, program: Option<&Program>) {
        let (Some(p), Some(e)) = (program, ir.envs.get(env)) else {
            return;
        };
        for slot in p.reads(&e.env) {
            if let Some((kind, name)) = slot_var(ir, e.owner, &slot) {
                let v = self.node(kind, &name);
                self.edge(v, to, EdgeKind::Reads);
            }
        }
    }
}

/// Builds the graph of the compiled story `ir` with the runtime's rules
/// `rt` (Format 20.2).
pub fn build(ir: &StoryIr, rt: &RuntimeIr) -> Graph {
    let mut b = Builder {
        g: Graph {
            scenario: ir.scenario.to_string(),
            ..Graph::default()
        },
        seen: HashSet::new(),
    };
    for v in &ir.vars {
        b.node(NodeKind::Variable, &v.name);
    }
    for d in &ir.derived {
        if let Some(v) = ir.vars.get(d.var as usize) {
            let to = b.node(NodeKind::Variable, &v.name);
            b.reads(ir, d.env as usize, to, Some(&d.program));
        }
    }
    for o in &ir.openings {
        let n = b.node(NodeKind::Opening, &o.id);
        b.changes(ir, n, &o.changes);
        if o.scene_location.is_some() {
            let v = b.node(NodeKind::Variable, "scene.location");
            b.edge(n, v, EdgeKind::Set);
        }
        if o.scene_present.is_some() {
            let v = b.node(NodeKind::Variable, "scene.present");
            b.edge(n, v, EdgeKind::Set);
        }
    }
    for r in &rt.rules {
        let n = b.node(NodeKind::Rule, &r.id);
        // Rules, events and outcomes run in the scenario's environment
        // (with `hit()` declared for rules: the same slots).
        b.reads(ir, 0, n, r.when.as_deref());
        b.changes(ir, n, &r.changes);
    }
    let mut end = None;
    for (list, outcome) in [(&ir.events, false), (&ir.outcomes, true)] {
        for f in list {
            let kind = match (outcome, f.end) {
                (true, _) => NodeKind::Outcome,
                (false, true) => NodeKind::EndingEvent,
                (false, false) => NodeKind::Event,
            };
            let n = b.node(kind, &f.id);
            b.reads(ir, 0, n, f.when.as_ref());
            b.changes(ir, n, &f.changes);
            if let Some(s) = &f.signal {
                let s = b.node(NodeKind::Signal, s);
                b.edge(n, s, EdgeKind::Raises);
            }
            if f.end {
                let e = *end.get_or_insert_with(|| b.node(NodeKind::End, "END"));
                b.edge(n, e, EdgeKind::Ends);
            }
        }
    }
    b.g
}

/// A DOT double-quoted string: `"` and `\` escaped, line breaks as `\n`.
fn dot_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' | '\r' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A Mermaid quoted label: characters that end or break a label become
/// entity codes (`#quot;`, `#35;`, …).
fn mermaid_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A node's label (Format 20.2): `rule <id>`, a variable's state name, `END`.
pub fn label(n: &Node) -> String {
    match n.kind {
        NodeKind::Variable | NodeKind::Input | NodeKind::End => n.name.clone(),
        k => format!("{} {}", k.word(), n.name),
    }
}

fn dot_attrs(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Variable => "shape=ellipse",
        NodeKind::Opening => "shape=house",
        NodeKind::Rule => "shape=box",
        NodeKind::Event => "shape=box, style=rounded",
        NodeKind::EndingEvent => "shape=box, style=\"rounded,bold\", peripheries=2",
        NodeKind::Outcome => "shape=doubleoctagon",
        NodeKind::Signal => "shape=cds",
        NodeKind::Input => "shape=note",
        NodeKind::End => "shape=doublecircle, style=filled, fillcolor=black, fontcolor=white",
    }
}

/// The node kinds in legend order (Format 20.2).
pub const LEGEND: [NodeKind; 9] = [
    NodeKind::Variable,
    NodeKind::Input,
    NodeKind::Opening,
    NodeKind::Rule,
    NodeKind::Event,
    NodeKind::EndingEvent,
    NodeKind::Outcome,
    NodeKind::Signal,
    NodeKind::End,
];

impl Graph {
    /// The graph in Graphviz DOT: one `digraph`, a `cluster_legend`
    /// subgraph with one node per kind (IDs `legend_…`) and a line on the
    /// edge styles, then the nodes and the edges.
    pub fn to_dot(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "digraph {} {{", dot_str(&self.scenario));
        let _ = writeln!(out, "  rankdir=LR;");
        let _ = writeln!(out, "  node [fontname=\"Helvetica\"];");
        let _ = writeln!(out, "  edge [fontname=\"Helvetica\", fontsize=10];");
        let _ = writeln!(out, "  subgraph cluster_legend {{");
        let _ = writeln!(out, "    label=\"legend: edges set/add (solid), reads (dashed), raises (dotted), ends (bold)\";");
        for (i, k) in LEGEND.iter().enumerate() {
            let _ = writeln!(
                out,
                "    legend_{i} [label={}, {}];",
                dot_str(k.word()),
                dot_attrs(*k)
            );
        }
        let _ = writeln!(out, "  }}");
        for n in &self.nodes {
            let _ = writeln!(
                out,
                "  {} [label={}, {}];",
                n.id,
                dot_str(&label(n)),
                dot_attrs(n.kind)
            );
        }
        for e in &self.edges {
            let style = match e.kind {
                EdgeKind::Set | EdgeKind::Add => "",
                EdgeKind::Reads => ", style=dashed",
                EdgeKind::Raises => ", style=dotted",
                EdgeKind::Ends => ", style=bold",
            };
            let _ = writeln!(
                out,
                "  {} -> {} [label={}{style}];",
                self.nodes[e.from].id,
                self.nodes[e.to].id,
                dot_str(e.kind.label())
            );
        }
        out.push_str("}\n");
        out
    }

    /// The graph as a Mermaid `flowchart LR`: a `legend` subgraph, the
    /// nodes (a shape per kind, a class for the ending ones), the edges
    /// (`-->|add|`, `-.->|reads|`, `-.-o|raises|`… see Format 20.2).
    pub fn to_mermaid(&self) -> String {
        let mut out = String::new();
        out.push_str("flowchart LR\n");
        let _ = writeln!(out, "  subgraph legend [\"legend\"]");
        for (i, k) in LEGEND.iter().enumerate() {
            let _ = writeln!(
                out,
                "    legend_{i}{}",
                mermaid_shape(*k, &mermaid_str(k.word()))
            );
        }
        let _ = writeln!(out, "  end");
        for n in &self.nodes {
            let _ = writeln!(
                out,
                "  {}{}",
                n.id,
                mermaid_shape(n.kind, &mermaid_str(&label(n)))
            );
        }
        for e in &self.edges {
            let arrow = match e.kind {
                EdgeKind::Set | EdgeKind::Add | EdgeKind::Raises => "-->",
                EdgeKind::Reads => "-.->",
                EdgeKind::Ends => "==>",
            };
            let _ = writeln!(
                out,
                "  {} {arrow}|{}| {}",
                self.nodes[e.from].id,
                e.kind.label(),
                self.nodes[e.to].id
            );
        }
        out.push_str("  classDef ending stroke-width:3px;\n");
        out.push_str("  classDef terminal fill:#000,color:#fff;\n");
        let ending: Vec<String> = (0..LEGEND.len())
            .filter(|i| matches!(LEGEND[*i], NodeKind::EndingEvent | NodeKind::Outcome))
            .map(|i| format!("legend_{i}"))
            .chain(
                self.nodes
                    .iter()
                    .filter(|n| matches!(n.kind, NodeKind::EndingEvent | NodeKind::Outcome))
                    .map(|n| n.id.clone()),
            )
            .collect();
        let _ = writeln!(out, "  class {} ending;", ending.join(","));
        let end_legend = LEGEND.iter().position(|k| *k == NodeKind::End).unwrap_or(0);
        let mut terminal = vec![format!("legend_{end_legend}")];
        if self.nodes.iter().any(|n| n.kind == NodeKind::End) {
            terminal.push("END".to_string());
        }
        let _ = writeln!(out, "  class {} terminal;", terminal.join(","));
        out
    }
}

fn mermaid_shape(kind: NodeKind, label: &str) -> String {
    match kind {
        NodeKind::Variable => format!("([{label}])"),
        NodeKind::Opening => format!("[/{label}/]"),
        NodeKind::Rule => format!("[{label}]"),
        NodeKind::Event => format!("({label})"),
        NodeKind::EndingEvent => format!("({label})"),
        NodeKind::Outcome => format!("{{{{{label}}}}}"),
        NodeKind::Signal => format!(">{label}]"),
        NodeKind::Input => format!("[({label})]"),
        NodeKind::End => format!("(({label}))"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped() {
        let g = Graph {
            scenario: "a\"b".into(),
            nodes: vec![
                Node {
                    id: "r0".into(),
                    kind: NodeKind::Rule,
                    name: "say \"hi\" #1 <b> \\ x".into(),
                },
                Node {
                    id: "v0".into(),
                    kind: NodeKind::Variable,
                    name: "my-var".into(),
                },
            ],
            edges: vec![Edge {
                from: 0,
                to: 1,
                kind: EdgeKind::Add,
            }],
        };
        let dot = g.to_dot();
        assert!(dot.starts_with("digraph \"a\\\"b\" {"), "{dot}");
        assert!(
            dot.contains("r0 [label=\"rule say \\\"hi\\\" #1 <b> \\\\ x\", shape=box];"),
            "{dot}"
        );
        assert!(dot.contains("v0 [label=\"my-var\""), "{dot}");
        assert!(dot.contains("r0 -> v0 [label=\"add\"];"), "{dot}");
        let m = g.to_mermaid();
        assert!(
            m.contains("r0[\"rule say #quot;hi#quot; #35;1 #lt;b#gt; \\ x\"]"),
            "{m}"
        );
        assert!(m.contains("r0 -->|add| v0"), "{m}");
    }
}

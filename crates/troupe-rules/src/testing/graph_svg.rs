//! The scenario graph as an SVG picture (Format 20.2 "SVG", `troupe graph
//! --format svg`): the nodes and edges of [`Graph`] laid out in layers,
//! left to right, by `layout-rs` (a Sugiyama-style layered layout), and
//! drawn here: a title, a legend (one sample node per kind, one sample
//! line per edge kind), then each node in its kind's shape and each edge in
//! its kind's style.
//!
//! The drawing is ours, not the layout crate's SVG writer: `layout-rs`
//! calls [`RenderBackend`] methods with the positions it found, and
//! [`Canvas`] turns them into SVG with every pack text escaped, no script,
//! no external reference, coordinates rounded to one decimal and elements
//! in a fixed order, so the same graph gives the same bytes.

use std::fmt::Write as _;

use layout::core::base::Orientation;
use layout::core::format::{ClipHandle, RenderBackend};
use layout::core::geometry::Point;
use layout::core::style::{LineStyleKind, StyleAttr};
use layout::std_shapes::shapes::{Arrow, Element, LineEndKind, ShapeKind};
use layout::topo::layout::VisualGraph;

use super::graph::{label, EdgeKind, Graph, NodeKind, LEGEND};

/// The font the labels are written in (a list: the first one installed).
const FONT: &str = "DejaVu Sans, Verdana, Helvetica, Arial, sans-serif";
/// The labels' font size in pixels.
const FONT_SIZE: f64 = 12.0;
/// The width a label's character is given: wider than any character of
/// the fonts above at [`FONT_SIZE`] but the widest (`m`, `W`), so a label
/// stays inside its node.
const CHAR_W: f64 = 7.6;
/// A node's height.
const NODE_H: f64 = 30.0;
/// The margin around the picture.
const MARGIN: f64 = 16.0;

/// The XML-escaped form of `s` (Format 20.2: `&amp;`, `&lt;`, `&gt;`,
/// `&quot;`, `&apos;`); control characters other than tab become spaces
/// (XML 1.0 cannot hold them).
pub fn xml_escape(s: &str) -> String {
    crate::testing::report::xml_escape(s, &['\t'])
}

/// A number as SVG writes it here: one decimal, no `-0.0`.
fn n(x: f64) -> String {
    let r = (x * 10.0).round() / 10.0;
    if r == 0.0 {
        "0".to_string()
    } else if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// The width of a node whose label is `text`.
fn node_width(kind: NodeKind, text: &str) -> f64 {
    let chars = text.chars().count() as f64;
    let pad = match kind {
        NodeKind::Variable => 34.0,
        NodeKind::End => 22.0,
        NodeKind::Opening | NodeKind::Signal => 36.0,
        NodeKind::Outcome => 34.0,
        _ => 24.0,
    };
    let w = chars * CHAR_W + pad;
    if kind == NodeKind::End {
        w.max(NODE_H + 14.0)
    } else {
        w.max(44.0)
    }
}

fn node_height(kind: NodeKind) -> f64 {
    if kind == NodeKind::End {
        NODE_H + 14.0
    } else {
        NODE_H
    }
}

fn fill(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Variable => "#dbeafe",
        NodeKind::Input => "#e5e7eb",
        NodeKind::Opening => "#dcfce7",
        NodeKind::Rule => "#ffffff",
        NodeKind::Event => "#fef9c3",
        NodeKind::EndingEvent => "#fed7aa",
        NodeKind::Outcome => "#fbcfe8",
        NodeKind::Signal => "#e9d5ff",
        NodeKind::End => "#000000",
    }
}

fn edge_color(kind: EdgeKind) -> &'static str {
    match kind {
        EdgeKind::Set => "#1d4ed8",
        EdgeKind::Add => "#15803d",
        EdgeKind::Reads => "#6b7280",
        EdgeKind::Raises => "#7e22ce",
        EdgeKind::Ends => "#000000",
    }
}

fn edge_attrs(kind: EdgeKind) -> String {
    let (width, dash) = match kind {
        EdgeKind::Set | EdgeKind::Add => (1.5, ""),
        EdgeKind::Reads => (1.3, " stroke-dasharray=\"6,4\""),
        EdgeKind::Raises => (1.6, " stroke-dasharray=\"2,3\""),
        EdgeKind::Ends => (3.0, ""),
    };
    format!(
        "fill=\"none\" stroke=\"{}\" stroke-width=\"{width}\"{dash}",
        edge_color(kind)
    )
}

const EDGES: [EdgeKind; 5] = [
    EdgeKind::Set,
    EdgeKind::Add,
    EdgeKind::Reads,
    EdgeKind::Raises,
    EdgeKind::Ends,
];

/// The SVG elements of a node of `kind` whose box has its top left at
/// (`x`, `y`) and size `w`×`h`, with `text` in it.
fn shape(out: &mut String, kind: NodeKind, x: f64, y: f64, w: f64, h: f64, text: &str) {
    let f = fill(kind);
    let s = "stroke=\"#1f2937\" stroke-width=\"1.3\"";
    let (cx, cy) = (x + w / 2.0, y + h / 2.0);
    match kind {
        NodeKind::Variable => {
            let _ = writeln!(
                out,
                "<ellipse cx=\"{}\" cy=\"{}\" rx=\"{}\" ry=\"{}\" fill=\"{f}\" {s}/>",
                n(cx),
                n(cy),
                n(w / 2.0),
                n(h / 2.0)
            );
        }
        NodeKind::Input => {
            let c = 8.0;
            let _ = writeln!(
                out,
                "<path d=\"M{} {} H{} L{} {} V{} H{} Z M{} {} V{} H{}\" fill=\"{f}\" {s}/>",
                n(x),
                n(y),
                n(x + w - c),
                n(x + w),
                n(y + c),
                n(y + h),
                n(x),
                n(x + w - c),
                n(y),
                n(y + c),
                n(x + w)
            );
        }
        NodeKind::Opening => {
            let t = 12.0;
            let _ = writeln!(
                out,
                "<path d=\"M{} {} H{} L{} {} L{} {} H{} Z\" fill=\"{f}\" {s}/>",
                n(x),
                n(y),
                n(x + w - t),
                n(x + w),
                n(cy),
                n(x + w - t),
                n(y + h),
                n(x)
            );
        }
        NodeKind::Rule => {
            let _ = writeln!(
                out,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{f}\" {s}/>",
                n(x),
                n(y),
                n(w),
                n(h)
            );
        }
        NodeKind::Event | NodeKind::EndingEvent => {
            let _ = writeln!(
                out,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"9\" fill=\"{f}\" {s}/>",
                n(x),
                n(y),
                n(w),
                n(h)
            );
            if kind == NodeKind::EndingEvent {
                let _ = writeln!(
                    out,
                    "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"6\" fill=\"none\" {s}/>",
                    n(x + 3.0),
                    n(y + 3.0),
                    n(w - 6.0),
                    n(h - 6.0)
                );
            }
        }
        NodeKind::Outcome => {
            for (i, d) in [0.0, 3.5].iter().enumerate() {
                let c = 9.0 - d / 2.0;
                let (x0, y0, x1, y1) = (x + d, y + d, x + w - d, y + h - d);
                let pts = [
                    (x0 + c, y0),
                    (x1 - c, y0),
                    (x1, y0 + c),
                    (x1, y1 - c),
                    (x1 - c, y1),
                    (x0 + c, y1),
                    (x0, y1 - c),
                    (x0, y0 + c),
                ];
                let p: Vec<String> = pts
                    .iter()
                    .map(|(a, b)| format!("{},{}", n(*a), n(*b)))
                    .collect();
                let fl = if i == 0 { f } else { "none" };
                let _ = writeln!(
                    out,
                    "<polygon points=\"{}\" fill=\"{fl}\" {s}/>",
                    p.join(" ")
                );
            }
        }
        NodeKind::Signal => {
            let t = 10.0;
            let _ = writeln!(
                out,
                "<path d=\"M{} {} H{} L{} {} L{} {} H{} Z\" fill=\"{f}\" {s}/>",
                n(x),
                n(y),
                n(x + w),
                n(x + w - t),
                n(cy),
                n(x + w),
                n(y + h),
                n(x)
            );
        }
        NodeKind::End => {
            let r = w.min(h) / 2.0;
            let _ = writeln!(
                out,
                "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{f}\" {s}/>",
                n(cx),
                n(cy),
                n(r)
            );
            let _ = writeln!(
                out,
                "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"none\" {s}/>",
                n(cx),
                n(cy),
                n(r + 3.5)
            );
        }
    }
    let color = if kind == NodeKind::End {
        "#ffffff"
    } else {
        "#111827"
    };
    let tx = match kind {
        NodeKind::Opening => cx - 5.0,
        NodeKind::Signal => cx - 4.0,
        _ => cx,
    };
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" fill=\"{color}\" text-anchor=\"middle\" dominant-baseline=\"central\">{}</text>",
        n(tx),
        n(cy),
        xml_escape(text)
    );
}

/// What the layout drew, collected: node boxes by node index and edge
/// paths by edge index, in the order the layout drew them.
#[derive(Default)]
struct Canvas {
    nodes: Vec<(usize, f64, f64, f64, f64)>,
    edges: Vec<(usize, String, bool, bool)>,
    min: (f64, f64),
    max: (f64, f64),
    any: bool,
}

impl Canvas {
    fn grow(&mut self, p: Point) {
        if !p.x.is_finite() || !p.y.is_finite() {
            return;
        }
        if self.any {
            self.min = (self.min.0.min(p.x), self.min.1.min(p.y));
            self.max = (self.max.0.max(p.x), self.max.1.max(p.y));
        } else {
            self.min = (p.x, p.y);
            self.max = (p.x, p.y);
            self.any = true;
        }
    }

    fn node(&mut self, props: Option<String>, xy: Point, size: Point) {
        let Some(i) = props
            .as_deref()
            .and_then(|p| p.strip_prefix('n'))
            .and_then(|p| p.parse::<usize>().ok())
        else {
            return;
        };
        self.grow(xy);
        self.grow(Point::new(xy.x + size.x, xy.y + size.y));
        self.nodes.push((i, xy.x, xy.y, size.x, size.y));
    }
}

impl RenderBackend for Canvas {
    fn draw_rect(
        &mut self,
        xy: Point,
        size: Point,
        _look: &StyleAttr,
        properties: Option<String>,
        _clip: Option<ClipHandle>,
    ) {
        self.node(properties, xy, size);
    }

    fn draw_line(&mut self, _: Point, _: Point, _: &StyleAttr, _: Option<String>) {}

    fn draw_circle(
        &mut self,
        xy: Point,
        size: Point,
        _look: &StyleAttr,
        properties: Option<String>,
    ) {
        // `xy` is the center here.
        let tl = Point::new(xy.x - size.x / 2.0, xy.y - size.y / 2.0);
        self.node(properties, tl, size);
    }

    fn draw_text(&mut self, _: Point, _: &str, _: &StyleAttr) {}

    fn draw_arrow(
        &mut self,
        path: &[(Point, Point)],
        _dashed: bool,
        head: (bool, bool),
        _look: &StyleAttr,
        properties: Option<String>,
        _text: &str,
    ) {
        let Some(i) = properties
            .as_deref()
            .and_then(|p| p.strip_prefix('e'))
            .and_then(|p| p.parse::<usize>().ok())
        else {
            return;
        };
        if path.len() < 2 {
            return;
        }
        for (a, b) in path {
            self.grow(*a);
            self.grow(*b);
        }
        let mut d = format!(
            "M{} {} C{} {} {} {} {} {}",
            n(path[0].0.x),
            n(path[0].0.y),
            n(path[0].1.x),
            n(path[0].1.y),
            n(path[1].0.x),
            n(path[1].0.y),
            n(path[1].1.x),
            n(path[1].1.y)
        );
        for (a, b) in path.iter().skip(2) {
            let _ = write!(d, " S{} {} {} {}", n(a.x), n(a.y), n(b.x), n(b.y));
        }
        self.edges.push((i, d, head.0, head.1));
    }

    fn create_clip(&mut self, _: Point, _: Point, _: usize) -> ClipHandle {
        0
    }
}

/// Lays `g` out with `layout-rs`; `None` when the layout could not be
/// made (an empty graph, or the layout crate gave up).
fn lay_out(g: &Graph) -> Option<Canvas> {
    if g.nodes.is_empty() {
        return None;
    }
    let nodes: Vec<(NodeKind, String)> = g.nodes.iter().map(|x| (x.kind, label(x))).collect();
    let edges: Vec<(usize, usize)> = g.edges.iter().map(|e| (e.from, e.to)).collect();
    let run = move || {
        let mut vg = VisualGraph::new(Orientation::LeftToRight);
        let handles: Vec<_> = nodes
            .iter()
            .enumerate()
            .map(|(i, (kind, text))| {
                let size = Point::new(node_width(*kind, text), node_height(*kind));
                let shape = match kind {
                    NodeKind::Variable | NodeKind::End => ShapeKind::Circle(String::new()),
                    _ => ShapeKind::Box(String::new()),
                };
                let look = StyleAttr::simple();
                vg.add_node(Element::create_with_properties(
                    shape,
                    look,
                    Orientation::LeftToRight,
                    size,
                    format!("n{i}"),
                ))
            })
            .collect();
        for (i, (from, to)) in edges.iter().enumerate() {
            let mut a = Arrow::new(
                LineEndKind::None,
                LineEndKind::Arrow,
                LineStyleKind::Normal,
                "",
                &StyleAttr::simple(),
                &None,
                &None,
            );
            a.properties = Some(format!("e{i}"));
            vg.add_edge(a, handles[*from], handles[*to]);
        }
        let mut canvas = Canvas::default();
        vg.do_it(false, false, false, &mut canvas);
        canvas
    };
    // The layout crate asserts on graphs it cannot lay out; such a graph
    // gets the plain layout below instead of a panic (Format 17: never a
    // panic on input).
    let laid = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).ok();
    laid.filter(|c| c.any && c.nodes.len() == g.nodes.len())
}

/// A plain layout for a graph the layered layout could not draw: nodes in
/// columns by kind, edges as straight lines.
fn plain(g: &Graph) -> Canvas {
    let mut c = Canvas::default();
    let col = |k: NodeKind| match k {
        NodeKind::Input | NodeKind::Opening => 0,
        NodeKind::Variable => 2,
        NodeKind::Rule => 1,
        NodeKind::Event | NodeKind::EndingEvent | NodeKind::Outcome => 3,
        NodeKind::Signal | NodeKind::End => 4,
    };
    let mut widths = [0.0f64; 5];
    for x in &g.nodes {
        let w = node_width(x.kind, &label(x));
        widths[col(x.kind)] = widths[col(x.kind)].max(w);
    }
    let mut left = [0.0f64; 5];
    for i in 1..5 {
        left[i] = left[i - 1] + widths[i - 1] + 60.0;
    }
    let mut rows = [0usize; 5];
    let mut boxes = Vec::new();
    for (i, x) in g.nodes.iter().enumerate() {
        let k = col(x.kind);
        let (w, h) = (node_width(x.kind, &label(x)), node_height(x.kind));
        let y = rows[k] as f64 * (NODE_H + 30.0);
        rows[k] += 1;
        let xy = Point::new(left[k], y);
        c.node(Some(format!("n{i}")), xy, Point::new(w, h));
        boxes.push((left[k], y, w, h));
    }
    for (i, e) in g.edges.iter().enumerate() {
        let (fx, fy, fw, fh) = boxes[e.from];
        let (tx, ty, _, th) = boxes[e.to];
        let d = format!(
            "M{} {} L{} {}",
            n(fx + fw),
            n(fy + fh / 2.0),
            n(tx),
            n(ty + th / 2.0)
        );
        c.edges.push((i, d, false, true));
    }
    c
}

/// The graph as one SVG document (Format 20.2 "SVG").
pub fn to_svg(g: &Graph) -> String {
    to_svg_with_ids(g, "")
}

/// [`to_svg`] with every `id` (and each `url(#…)` to one) starting with
/// `prefix`, so several graphs can sit in one HTML page (Format 21.2)
/// without two elements sharing an ID.
pub fn to_svg_with_ids(g: &Graph, prefix: &str) -> String {
    let canvas = lay_out(g).unwrap_or_else(|| plain(g));
    let (gw, gh) = if canvas.any {
        (canvas.max.0 - canvas.min.0, canvas.max.1 - canvas.min.1)
    } else {
        (0.0, 0.0)
    };

    // The legend: sample nodes in rows, then sample lines.
    let mut legend = String::new();
    let width_min = 720.0f64;
    let width = (gw + 2.0 * MARGIN).max(width_min);
    let title_h = 34.0;
    let mut x = MARGIN;
    let mut y = title_h + 22.0;
    let _ = writeln!(
        legend,
        "<text x=\"{}\" y=\"{}\" font-weight=\"bold\">legend</text>",
        n(MARGIN),
        n(title_h + 12.0)
    );
    for k in LEGEND {
        let (w, h) = (node_width(k, k.word()), node_height(k));
        if x + w > width - MARGIN && x > MARGIN {
            x = MARGIN;
            y += NODE_H + 22.0;
        }
        let yy = y + (NODE_H - h) / 2.0;
        let _ = writeln!(
            legend,
            "<g class=\"legend-node\"><title>{}</title>",
            k.word()
        );
        shape(&mut legend, k, x, yy, w, h, k.word());
        legend.push_str("</g>\n");
        x += w + 18.0;
    }
    y += NODE_H + 26.0;
    x = MARGIN;
    for e in EDGES {
        let w = 150.0;
        if x + w > width - MARGIN && x > MARGIN {
            x = MARGIN;
            y += 22.0;
        }
        let _ = writeln!(
            legend,
            "<g class=\"legend-edge\"><path d=\"M{} {} H{}\" {} marker-end=\"url(#{prefix}ah-{})\"/><text x=\"{}\" y=\"{}\" dominant-baseline=\"central\">{}</text></g>",
            n(x),
            n(y),
            n(x + 56.0),
            edge_attrs(e),
            e.label(),
            n(x + 64.0),
            n(y),
            e.label()
        );
        x += w;
    }
    let top = y + 26.0;
    let _ = writeln!(
        legend,
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#d1d5db\"/>",
        n(MARGIN),
        n(top - 10.0),
        n(width - MARGIN),
        n(top - 10.0)
    );

    let height = top + gh + MARGIN + if canvas.any { 0.0 } else { 30.0 };
    let mut out = String::new();
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" font-family=\"{FONT}\" font-size=\"{}\">",
        n(width),
        n(height),
        n(width),
        n(height),
        n(FONT_SIZE)
    );
    let _ = writeln!(
        out,
        "<title>graph of scenario {}</title>",
        xml_escape(&g.scenario)
    );
    out.push_str("<defs>\n");
    for e in EDGES {
        let _ = writeln!(
            out,
            "<marker id=\"{prefix}ah-{}\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" markerUnits=\"userSpaceOnUse\" orient=\"auto\"><path d=\"M0 0 L10 5 L0 10 Z\" fill=\"{}\"/></marker>",
            e.label(),
            edge_color(e)
        );
        let _ = writeln!(
            out,
            "<marker id=\"{prefix}at-{}\" viewBox=\"0 0 10 10\" refX=\"1\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" markerUnits=\"userSpaceOnUse\" orient=\"auto\"><path d=\"M10 0 L0 5 L10 10 Z\" fill=\"{}\"/></marker>",
            e.label(),
            edge_color(e)
        );
    }
    out.push_str("</defs>\n");
    let _ = writeln!(
        out,
        "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>",
        n(width),
        n(height)
    );
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" font-size=\"16\" font-weight=\"bold\">graph of scenario {}</text>",
        n(MARGIN),
        n(22.0),
        xml_escape(&g.scenario)
    );
    out.push_str("<g class=\"legend\">\n");
    out.push_str(&legend);
    out.push_str("</g>\n");
    if !canvas.any {
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\">(nothing to draw: the scenario has no variables, rules, events or outcomes)</text>",
            n(MARGIN),
            n(top + 10.0)
        );
    }
    let (dx, dy) = (MARGIN - canvas.min.0, top - canvas.min.1);
    let _ = writeln!(
        out,
        "<g class=\"graph\" transform=\"translate({} {})\">",
        n(dx),
        n(dy)
    );
    // Edges first (under the nodes), in edge order; then nodes in node
    // order.
    let mut edges = canvas.edges;
    edges.sort_by_key(|e| e.0);
    // Edges between the same two nodes (a rule that reads and adds to one
    // variable) get the same curve from the layout: each after the first
    // is shifted down a little so both stay visible.
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for (i, d, start, end) in &edges {
        let Some(e) = g.edges.get(*i) else {
            continue;
        };
        let pair = (e.from.min(e.to), e.from.max(e.to));
        let k = pairs.iter().filter(|p| **p == pair).count();
        pairs.push(pair);
        let shift = if k == 0 {
            String::new()
        } else {
            format!(" transform=\"translate(0 {})\"", n(5.0 * k as f64))
        };
        let title = format!(
            "{} -{}-> {}",
            label(&g.nodes[e.from]),
            e.kind.label(),
            label(&g.nodes[e.to])
        );
        let mut marks = String::new();
        if *end {
            let _ = write!(marks, " marker-end=\"url(#{prefix}ah-{})\"", e.kind.label());
        }
        if *start {
            let _ = write!(
                marks,
                " marker-start=\"url(#{prefix}at-{})\"",
                e.kind.label()
            );
        }
        let _ = writeln!(
            out,
            "<g class=\"edge {}\"{shift}><title>{}</title><path d=\"{d}\" {}{marks}/></g>",
            e.kind.label(),
            xml_escape(&title),
            edge_attrs(e.kind)
        );
    }
    let mut nodes = canvas.nodes;
    nodes.sort_by_key(|x| x.0);
    nodes.dedup_by_key(|x| x.0);
    for (i, x, y, w, h) in nodes {
        let node = &g.nodes[i];
        let text = label(node);
        let _ = writeln!(
            out,
            "<g class=\"node\" id=\"{prefix}{}\"><title>{}</title>",
            xml_escape(&node.id),
            xml_escape(&text)
        );
        shape(&mut out, node.kind, x, y, w, h, &text);
        out.push_str("</g>\n");
    }
    out.push_str("</g>\n</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::graph::{Edge, Node};

    #[test]
    fn escapes_and_is_stable() {
        let g = Graph {
            scenario: "<script>alert(1)</script>".into(),
            nodes: vec![
                Node {
                    id: "r0".into(),
                    kind: NodeKind::Rule,
                    name: "say \"<b>\" & 'x'".into(),
                },
                Node {
                    id: "v0".into(),
                    kind: NodeKind::Variable,
                    name: "trust".into(),
                },
            ],
            edges: vec![Edge {
                from: 0,
                to: 1,
                kind: EdgeKind::Add,
            }],
        };
        let svg = to_svg(&g);
        assert!(!svg.contains("<script"), "{svg}");
        assert!(svg.contains("&lt;script&gt;"), "{svg}");
        assert!(svg.contains("rule say &quot;&lt;b&gt;&quot; &amp; &apos;x&apos;"));
        assert_eq!(svg, to_svg(&g));
        let empty = Graph::default();
        assert!(to_svg(&empty).contains("nothing to draw"));
        // Prefixed: every ID and every reference to one carries the prefix.
        let page = to_svg_with_ids(&g, "g1-");
        let ids: Vec<&str> = page.split("id=\"").skip(1).collect();
        assert!(!ids.is_empty());
        assert!(ids.iter().all(|x| x.starts_with("g1-")), "{page}");
        let refs: Vec<&str> = page.split("url(#").skip(1).collect();
        assert!(!refs.is_empty());
        assert!(refs.iter().all(|x| x.starts_with("g1-")), "{page}");
    }
}

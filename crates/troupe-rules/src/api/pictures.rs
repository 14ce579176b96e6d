//! Pictures of recorded sessions (feature `pictures`): [`plot`], the SVG
//! that `troupe plot` draws (Format 20.4) — variables over the messages of
//! a path, or of every branch of the message tree, with the firings and
//! the ending marked. Drawn with plotters' SVG backend from what
//! [`History`] answers.
//!
//! ```
//! # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
//! use troupe::pictures::{plot, PlotOptions};
//! let pack = troupe::Pack::open("examples/packs/harbor-lights")?;
//! let history = pack.recorded_history("walkthrough.jsonl")?;
//! let svg = plot(&history, &PlotOptions::default())?;
//! assert!(svg.contains("<svg"));
//! # Ok::<(), troupe::Error>(())
//! ```

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::{Map, Value};

use super::error::{Error, ErrorKind, Result};
use super::history::History;

/// What [`plot`] draws (Format 20.4).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlotOptions {
    /// The state names to draw (`--vars`); `None`: every int, number or
    /// bool variable.
    pub vars: Option<Vec<String>>,
    /// The last message of the path (`--at`); `None`: the session's last
    /// message in file order.
    pub at: Option<String>,
    /// Every branch of the tree (`--tree`) instead of one path.
    pub tree: bool,
}

/// One line: a name and a value (or a gap) per x.
struct Line {
    name: String,
    points: Vec<Option<f64>>,
}

/// A panel: one variable, its lines, whether it is a bool.
struct Panel {
    var: String,
    lines: Vec<Line>,
    boolean: bool,
}

/// A message of a branch and the flattened state there.
type Step = (String, Map<String, Value>);

/// A firing mark: x, label, whether it ended the story.
type Mark = (usize, String, bool);

fn number(v: &Value) -> Option<(f64, bool)> {
    match v {
        Value::Bool(b) => Some((if *b { 1.0 } else { 0.0 }, true)),
        Value::Number(n) => n.to_string().parse::<f64>().ok().map(|x| (x, false)),
        _ => None,
    }
}

/// Text safe in an SVG text node: control characters as spaces
/// ([`crate::testing::report::xml_chars`]; plotters escapes the markup
/// characters itself).
fn clean(s: &str) -> String {
    crate::testing::report::xml_chars(s, &[]).into_owned()
}

/// The variable a flattened state name belongs to: the longest declared
/// name equal to it or a prefix of it followed by `.` (a keyed variable's
/// key); `None` for `scene.…` and anything undeclared.
fn owner_var<'a>(vars: &'a [String], key: &str) -> Option<&'a str> {
    vars.iter()
        .filter(|v| {
            key == v.as_str() || (key.starts_with(v.as_str()) && key[v.len()..].starts_with('.'))
        })
        .max_by_key(|v| v.len())
        .map(String::as_str)
}

/// The font of every text (a list: the first one installed).
const FONT: &str = "DejaVu Sans, Verdana, Helvetica, Arial, sans-serif";

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
];

fn draw_error<E: std::fmt::Debug>(e: E) -> Error {
    Error::new(ErrorKind::Io, format!("cannot draw the plot: {e:?}"))
}

/// The plot of `history` as one SVG document (Format 20.4).
///
/// Errors: [`ErrorKind::NotFound`] for an unknown `at` message or a name in
/// `vars` that is no variable (with the closest), and for a session
/// without messages. With `tree`, `at` is ignored (the command line
/// refuses the two together).
pub fn plot(history: &History, opts: &PlotOptions) -> Result<String> {
    let engine = history.engine_ref();
    let declared: Vec<String> = engine.ir.vars.iter().map(|v| v.name.to_string()).collect();
    let last = history
        .last_id()
        .ok_or_else(|| Error::new(ErrorKind::NotFound, "the session has no messages"))?
        .to_string();
    if let Some(vs) = &opts.vars {
        for v in vs {
            let known = declared.iter().any(|d| d == v)
                || owner_var(&declared, v).is_some_and(|o| o != v.as_str());
            if !known {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "the scenario has no variable `{v}`{}",
                        crate::diag::suggest::one_of(v, declared.iter().map(String::as_str))
                    ),
                ));
            }
        }
    }
    // Branches: (name, [(id, state)]).
    let leaves: Vec<String> = if opts.tree {
        history.leaves().into_iter().map(str::to_string).collect()
    } else {
        vec![opts.at.clone().unwrap_or(last)]
    };
    let mut branches: Vec<(String, Vec<Step>)> = Vec::new();
    for leaf in &leaves {
        branches.push((leaf.clone(), history.states_along(leaf)?));
    }
    let width_n = branches.iter().map(|b| b.1.len()).max().unwrap_or(1);

    // Which flattened names, in state order (the first branch's order,
    // then names only later branches have).
    let mut names: Vec<String> = Vec::new();
    for (_, states) in &branches {
        for (_, st) in states {
            for k in st.keys() {
                if !names.iter().any(|n| n == k) {
                    names.push(k.clone());
                }
            }
        }
    }
    let order = |k: &str| {
        engine
            .ir
            .vars
            .iter()
            .position(|v| Some(&*v.name) == owner_var(&declared, k))
            .unwrap_or(usize::MAX)
    };
    names.sort_by_key(|k| order(k)); // stable: keys keep their order
    let wanted = |k: &str| match &opts.vars {
        None => true,
        Some(vs) => vs
            .iter()
            .any(|v| k == v || (owner_var(&declared, k) == Some(v.as_str()) && k.len() > v.len())),
    };
    let mut panels: Vec<Panel> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    for k in names.iter().filter(|k| wanted(k)) {
        let var = owner_var(&declared, k);
        let mut numeric = true;
        let mut boolean = true;
        let mut any = false;
        for (_, states) in &branches {
            for (_, st) in states {
                if let Some(v) = st.get(k) {
                    match number(v) {
                        Some((_, b)) => {
                            any = true;
                            boolean &= b;
                        }
                        None => numeric = false,
                    }
                }
            }
        }
        let Some(var) = var.filter(|_| numeric && any) else {
            let shown = var.filter(|v| *v != k.as_str()).unwrap_or(k);
            if !skipped.iter().any(|s| s == shown) {
                skipped.push(shown.to_string());
            }
            continue;
        };
        let panel = match panels.iter_mut().position(|p| p.var == var) {
            Some(i) => &mut panels[i],
            None => {
                panels.push(Panel {
                    var: var.to_string(),
                    lines: Vec::new(),
                    boolean,
                });
                panels.last_mut().expect("pushed")
            }
        };
        panel.boolean &= boolean;
        for (leaf, states) in &branches {
            let name = match (k.as_str() == var, opts.tree) {
                (true, false) => k.clone(),
                (true, true) => format!("to {leaf}"),
                (false, false) => k.clone(),
                (false, true) => format!("{k} to {leaf}"),
            };
            let points = (0..width_n)
                .map(|i| {
                    states
                        .get(i)
                        .and_then(|(_, st)| st.get(k))
                        .and_then(number)
                        .map(|x| x.0)
                })
                .collect();
            panel.lines.push(Line { name, points });
        }
    }

    // Firings and endings, by x.
    let mut marks: Vec<Mark> = Vec::new();
    for (leaf, states) in &branches {
        let ending = history.ended_at(leaf)?.ending;
        for (x, (id, _)) in states.iter().enumerate() {
            for (kind, f) in history.firings(id)? {
                let ends = ending
                    .as_ref()
                    .is_some_and(|e| e.message == *id && e.id == f && e.kind == kind);
                let text = if ends {
                    format!("END {f}")
                } else {
                    format!("{kind} {f}")
                };
                if !marks.iter().any(|m| m.0 == x && m.1 == text) {
                    marks.push((x, text, ends));
                }
            }
        }
    }
    marks.sort_by_key(|m| m.0);

    // The x tick labels: the message IDs of the path, or the depth.
    let ticks: Vec<String> = if opts.tree {
        (0..width_n).map(|i| i.to_string()).collect()
    } else {
        branches[0].1.iter().map(|(id, _)| clean(id)).collect()
    };

    let legend = |p: &Panel| p.lines.len() > 1 || p.lines.iter().any(|l| l.name != p.var);
    // Legends go in a column right of the panels, never over the lines.
    let legend_w = panels
        .iter()
        .filter(|p| legend(p))
        .flat_map(|p| p.lines.iter().map(|l| l.name.chars().count()))
        .max()
        .map_or(0, |n| (n as u32 * 8 + 48).clamp(120, 420));
    let panel_hs: Vec<u32> = panels
        .iter()
        .map(|p| (60 + 18 * p.lines.len() as u32).max(180))
        .collect();
    let width = (140 + 64 * width_n as u32).clamp(720, 2400) + legend_w;
    let title_h = 44u32;
    let note_h = if skipped.is_empty() { 0 } else { 20 };
    let strip_h = 130u32;
    let panel_h = 180u32;
    let height = title_h + note_h + strip_h + panel_hs.iter().sum::<u32>().max(panel_h) + 30;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let title = if opts.tree {
            format!(
                "plot of scenario {}: {} branches",
                history.scenario(),
                branches.len()
            )
        } else {
            format!(
                "plot of scenario {}: path to {}",
                history.scenario(),
                branches[0].0
            )
        };
        root.draw(&Text::new(
            clean(&title),
            (16, 14),
            (FONT, 18).into_font().color(&BLACK),
        ))
        .map_err(draw_error)?;
        let (_, rest) = root.split_vertically(title_h);
        let rest = if skipped.is_empty() {
            rest
        } else {
            rest.draw(&Text::new(
                clean(&format!(
                    "not drawn (not a number or bool): {}",
                    skipped.join(", ")
                )),
                (16, 2),
                (FONT, 13).into_font().color(&RGBColor(90, 90, 90)),
            ))
            .map_err(draw_error)?;
            rest.split_vertically(note_h).1
        };
        let (strip, rest) = rest.split_vertically(strip_h);
        let x_max = (width_n as i32 - 1).max(1);
        let y_area = 64u32;
        // The strip: the firings' labels, rotated, at their x.
        {
            let chart = ChartBuilder::on(&strip)
                .margin_left(10)
                .margin_right(24 + legend_w)
                .y_label_area_size(y_area)
                .build_cartesian_2d(-0.25f64..(x_max as f64 + 0.25), 0f64..1f64)
                .map_err(draw_error)?;
            chart.plotting_area().fill(&WHITE).map_err(draw_error)?;
            let mut by_x: Vec<(usize, Vec<&Mark>)> = Vec::new();
            for m in &marks {
                match by_x.iter_mut().find(|(x, _)| *x == m.0) {
                    Some((_, v)) => v.push(m),
                    None => by_x.push((m.0, vec![m])),
                }
            }
            for (x, ms) in by_x {
                for (j, m) in ms.iter().enumerate() {
                    let color = if m.2 { RGBColor(200, 0, 0) } else { BLACK };
                    let style = (FONT, 12)
                        .into_font()
                        .transform(FontTransform::Rotate270)
                        .color(&color)
                        .pos(Pos::new(HPos::Left, VPos::Center));
                    chart
                        .plotting_area()
                        .draw(&Text::new(
                            clean(&m.1),
                            (x as f64 + 0.02 + 0.16 * j as f64, 0.02),
                            style,
                        ))
                        .map_err(draw_error)?;
                }
            }
        }
        let mut areas: Vec<DrawingArea<SVGBackend, Shift>> = Vec::new();
        let mut left = rest.clone();
        for h in &panel_hs {
            let (a, r) = left.split_vertically(*h);
            areas.push(a);
            left = r;
        }
        if panels.is_empty() {
            rest.draw(&Text::new(
                "no int, number or bool variable to draw",
                (80, 40),
                (FONT, 14).into_font(),
            ))
            .map_err(draw_error)?;
        }
        let tick_fmt = |x: &i32| ticks.get(*x as usize).cloned().unwrap_or_default();
        for (panel, area) in panels.iter().zip(areas.iter()) {
            let values = panel.lines.iter().flat_map(|l| l.points.iter().flatten());
            let (mut lo, mut hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |a, v| {
                (a.0.min(*v), a.1.max(*v))
            });
            if panel.boolean {
                (lo, hi) = (0.0, 1.0);
            }
            if !lo.is_finite() {
                (lo, hi) = (0.0, 1.0);
            }
            if (hi - lo).abs() < f64::EPSILON {
                (lo, hi) = (lo - 0.5, hi + 0.5);
            }
            let pad = (hi - lo) * 0.08;
            let mut chart = ChartBuilder::on(area)
                .margin_left(10)
                .margin_right(24 + legend_w)
                .margin_top(8)
                .caption(clean(&panel.var), (FONT, 15))
                .x_label_area_size(30)
                .y_label_area_size(y_area)
                .build_cartesian_2d(-0.25f64..(x_max as f64 + 0.25), (lo - pad)..(hi + pad))
                .map_err(draw_error)?;
            let boolean = panel.boolean;
            let y_fmt = move |y: &f64| {
                if boolean {
                    match *y {
                        v if (v - 0.0).abs() < 1e-9 => "false".into(),
                        v if (v - 1.0).abs() < 1e-9 => "true".into(),
                        _ => String::new(),
                    }
                } else {
                    let r = (y * 1000.0).round() / 1000.0;
                    if r == 0.0 {
                        "0".into()
                    } else {
                        format!("{r}")
                    }
                }
            };
            let x_fmt = |x: &f64| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    tick_fmt(&(i as i32))
                } else {
                    String::new()
                }
            };
            let n_ticks = width_n.min(((width - 140) / 48) as usize).max(2);
            chart
                .configure_mesh()
                .x_labels(n_ticks)
                .y_labels(if boolean { 3 } else { 6 })
                .x_label_formatter(&x_fmt)
                .y_label_formatter(&y_fmt)
                .light_line_style(RGBColor(245, 245, 245))
                .max_light_lines(1)
                .label_style((FONT, 12))
                .draw()
                .map_err(draw_error)?;
            for m in &marks {
                let x = m.0 as f64;
                let pts = vec![(x, lo - pad), (x, hi + pad)];
                if m.2 {
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            pts,
                            RGBColor(200, 0, 0).stroke_width(3),
                        )))
                        .map_err(draw_error)?;
                } else {
                    chart
                        .draw_series(DashedLineSeries::new(
                            pts,
                            5,
                            4,
                            RGBColor(120, 120, 120).stroke_width(1),
                        ))
                        .map_err(draw_error)?;
                }
            }
            for (i, line) in panel.lines.iter().enumerate() {
                let color = COLORS[i % COLORS.len()];
                let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
                for (x, p) in line.points.iter().enumerate() {
                    match p {
                        Some(y) => runs.last_mut().expect("one").push((x as f64, *y)),
                        None => runs.push(Vec::new()),
                    }
                }
                for run in runs.into_iter().filter(|r| !r.is_empty()) {
                    let dots: Vec<Circle<(f64, f64), u32>> = run
                        .iter()
                        .map(|p| Circle::new(*p, 3, color.filled()))
                        .collect();
                    chart
                        .draw_series(LineSeries::new(run, color.stroke_width(2)))
                        .map_err(draw_error)?;
                    chart.draw_series(dots).map_err(draw_error)?;
                }
            }
            if legend(panel) {
                let x0 = (width - legend_w) as i32;
                for (i, line) in panel.lines.iter().enumerate() {
                    let color = COLORS[i % COLORS.len()];
                    let y = 34 + 18 * i as i32;
                    area.draw(&PathElement::new(
                        vec![(x0, y), (x0 + 20, y)],
                        color.stroke_width(3),
                    ))
                    .map_err(draw_error)?;
                    area.draw(&Text::new(
                        clean(&line.name),
                        (x0 + 26, y),
                        (FONT, 12)
                            .into_font()
                            .color(&BLACK)
                            .pos(Pos::new(HPos::Left, VPos::Center)),
                    ))
                    .map_err(draw_error)?;
                }
            }
        }
        root.present().map_err(draw_error)?;
    }
    if !svg.ends_with('\n') {
        svg.push('\n');
    }
    Ok(svg)
}

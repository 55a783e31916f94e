//! The compare view's chart: both paths' log-prob per step as lines, and Jensen–Shannon per step as
//! bars beside them on a fixed scale (0 to ln 2 nats, the most it can be) with its numbers. Steps are
//! counted from 1, as the status bar counts them.

use super::compare::names;
use super::theme::Theme;
use crate::fmt::{shown_step, JS_MAX};
use crate::protocol::{AlignedStep, Comparison, PathToken};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Block, Chart, Dataset, GraphType, LegendPosition, Paragraph, Sparkline,
};
use ratatui::Frame;

/// Both log-prob series over the steps, and the divergence under them.
pub fn draw(frame: &mut Frame, area: Rect, c: &Comparison, reference: bool, theme: &Theme) {
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(70), Constraint::Percentage(30)]).areas(area);
    let series = |pick: &dyn Fn(&AlignedStep) -> Option<&PathToken>| -> Vec<(f64, f64)> {
        c.steps
            .iter()
            .filter_map(|s| pick(s).map(|t| (x_of(s), t.logprob.max(-20.0))))
            .collect()
    };
    let a = series(&|s| s.a.as_ref());
    let b = series(&|s| s.b.as_ref());
    let low = a
        .iter()
        .chain(&b)
        .map(|p| p.1)
        .fold(0.0f64, f64::min)
        .floor()
        .min(-1.0);
    let (x_min, x_max) = x_bounds(c);
    let (na, nb) = names(reference);
    let chart = Chart::new(vec![
        Dataset::default()
            .name(format!("{na} log p"))
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(theme.key)
            .data(&a),
        Dataset::default()
            .name(format!("{nb} log p"))
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(theme.planned)
            .data(&b),
    ])
    .block(Block::new().title(Span::styled(
        format!(" log p per step: {na} and {nb} "),
        theme.dim,
    )))
    .legend_position(Some(LegendPosition::BottomRight))
    .hidden_legend_constraints((Constraint::Percentage(100), Constraint::Percentage(100)))
    .x_axis(step_axis(x_min, x_max, theme))
    .y_axis(
        Axis::default()
            .bounds([low, 0.0])
            .labels(vec![Span::raw(format!("{low:.0}")), Span::raw("0")])
            .style(theme.dim),
    );
    frame.render_widget(chart, left);
    js_chart(frame, right, c, theme);
}

/// A step's place on the x axis: its number as the screen counts it.
fn x_of(s: &AlignedStep) -> f64 {
    shown_step(s.step) as f64
}

/// The first and last step on the x axis (never a zero-width range).
fn x_bounds(c: &Comparison) -> (f64, f64) {
    let first = c.steps.first().map_or(1.0, x_of);
    let last = c.steps.last().map_or(1.0, x_of);
    (first, last.max(first + 1.0))
}

/// The x axis: "step 1" to "step N".
fn step_axis(x_min: f64, x_max: f64, theme: &Theme) -> Axis<'static> {
    Axis::default()
        .bounds([x_min, x_max])
        .labels(vec![
            Span::raw(format!("{}", x_min as usize)),
            Span::raw(format!("step {}", x_max as usize)),
        ])
        .style(theme.dim)
}

/// Jensen–Shannon per step as bars (one column per step, from step 1) on the fixed scale 0 to ln 2
/// nats, with the scale numbered on its left, so a small divergence looks small whatever the others
/// are.
fn js_chart(frame: &mut Frame, area: Rect, c: &Comparison, theme: &Theme) {
    let block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(" JS per step (nats) ", theme.dim));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [axis, bars] =
        Layout::horizontal([Constraint::Length(5), Constraint::Fill(1)]).areas(inner);
    // The scale: its top, middle and 0, each on the row it marks.
    let rows = axis.height as usize;
    let mut labels = vec![Line::default(); rows];
    if rows >= 2 {
        labels[0] = Line::styled(format!("{JS_MAX:.2}┤"), theme.dim);
        labels[rows - 1] = Line::styled(format!("{:>4}┤", "0"), theme.dim);
    }
    if rows >= 5 {
        labels[(rows - 1) / 2] = Line::styled(format!("{:.2}┤", JS_MAX / 2.0), theme.dim);
    }
    frame.render_widget(Paragraph::new(labels), axis);
    // Thousandths of a nat: Sparkline wants integers; its top is fixed at ln 2, not at the largest.
    let js: Vec<u64> = c
        .steps
        .iter()
        .map(|s| (s.js.unwrap_or(0.0).min(JS_MAX) * 1000.0).round() as u64)
        .collect();
    let top = (JS_MAX * 1000.0).round() as u64;
    let spark = Sparkline::default().data(&js).max(top).style(theme.bar);
    frame.render_widget(spark, bars);
}

//! The compare view's chart: both paths' log-prob per step as lines, and Jensen–Shannon per step as
//! a sparkline beside them.

use super::compare::names;
use super::theme::Theme;
use crate::protocol::{AlignedStep, Comparison, PathToken};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols::Marker;
use ratatui::text::Span;
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, LegendPosition, Sparkline};
use ratatui::Frame;

/// Both log-prob series over the steps, and the divergence under them.
pub fn draw(frame: &mut Frame, area: Rect, c: &Comparison, reference: bool, theme: &Theme) {
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(70), Constraint::Percentage(30)]).areas(area);
    let series = |pick: &dyn Fn(&AlignedStep) -> Option<&PathToken>| -> Vec<(f64, f64)> {
        c.steps
            .iter()
            .filter_map(|s| pick(s).map(|t| (s.step as f64, t.logprob.max(-20.0))))
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
    let x_max = c.steps.len().saturating_sub(1).max(1) as f64;
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
    .x_axis(
        Axis::default()
            .bounds([0.0, x_max])
            .labels(vec![
                Span::raw("0"),
                Span::raw(format!("step {}", x_max as usize)),
            ])
            .style(theme.dim),
    )
    .y_axis(
        Axis::default()
            .bounds([low, 0.0])
            .labels(vec![Span::raw(format!("{low:.0}")), Span::raw("0")])
            .style(theme.dim),
    );
    frame.render_widget(chart, left);
    // The divergence per step, in thousandths of a nat, as a sparkline.
    let js: Vec<u64> = c
        .steps
        .iter()
        .map(|s| (s.js.unwrap_or(0.0) * 1000.0).round() as u64)
        .collect();
    let block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(" JS per step ", theme.dim));
    let spark = Sparkline::default().block(block).data(&js).style(theme.bar);
    frame.render_widget(spark, right);
}

//! The repetition panel (one of the side panels, `Tab`): the loop at the tip, if any; a chart over the
//! generated steps of the chosen token's probability and of the entropy it was chosen from, loop steps
//! marked, which shows the trap closing (the probability climbs, the entropy collapses); and the token
//! that would continue the loop, before and after the sampler's penalties.

use super::theme::Theme;
use crate::analysis::Cycle;
use crate::app::lab::tip_loop;
use crate::app::App;
use crate::fmt::{fit, pct, quoted_token};
use crate::protocol::{SessionView, TokenRecord};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, Paragraph};
use ratatui::Frame;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(" Repetition ", theme.title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(view) = &app.session else {
        return;
    };
    let w = inner.width as usize;
    let lines = status_lines(view, w, theme, app.distribution_hidden());
    let [text, p_area, h_area] = Layout::vertical([
        Constraint::Length(lines.len() as u16),
        Constraint::Fill(1),
        Constraint::Fill(1),
    ])
    .areas(inner);
    frame.render_widget(Paragraph::new(lines), text);
    let generated = &view.tokens[view.prompt_len.min(view.tokens.len())..];
    if generated.len() < 2 || p_area.height < 3 {
        return;
    }
    let since = tip_loop(view).map(|c| c.since_position.saturating_sub(view.prompt_len));
    series_chart(
        frame,
        p_area,
        generated,
        since,
        ("p(chosen)", |t| t.prob as f64, 1.0),
        theme,
    );
    let top_h = generated
        .iter()
        .map(|t| t.entropy as f64)
        .fold(1.0f64, f64::max)
        .ceil();
    series_chart(
        frame,
        h_area,
        generated,
        since,
        ("entropy", |t| t.entropy as f64, top_h),
        theme,
    );
}

/// The loop in words, as the status bar and the transcript say it: "loop: period 17, ×2.4, since
/// step 8".
pub fn alert(c: &Cycle, view: &SessionView) -> String {
    let since = crate::fmt::shown_step(c.since_position.saturating_sub(view.prompt_len));
    format!(
        "loop: period {}, ×{:.1}, since step {since}",
        c.period, c.repeats
    )
}

/// The loop line and the loop-continuing token's fate under the penalties.
fn status_lines(view: &SessionView, w: usize, theme: &Theme, hidden: bool) -> Vec<Line<'static>> {
    let Some(c) = tip_loop(view) else {
        return vec![Line::styled(fit("no loop at the tip", w), theme.dim)];
    };
    let mut lines = vec![Line::styled(fit(&alert(&c, view), w), theme.error)];
    if hidden {
        // The loop token's odds would give a guess away.
        lines.push(Line::styled(
            fit("next: hidden until the guess", w),
            theme.dim,
        ));
        return lines;
    }
    // The loop goes on with the token one period back; the engine gives its figures wherever it ranks.
    let next_id = view.tokens[view.tokens.len() - c.period].token.id;
    // A view without them (an older saved session) still has the rows on screen.
    let shown = &view.next.candidates;
    let fate = match view
        .next
        .loop_next
        .as_ref()
        .filter(|n| n.token.id == next_id)
    {
        Some(x) => Some((
            x.token.clone(),
            x.prob,
            x.rank,
            x.sampled_prob,
            x.sampled_rank,
        )),
        None => shown.iter().position(|x| x.token.id == next_id).map(|row| {
            let x = &shown[row];
            (x.token.clone(), x.prob, x.rank, x.sampled_prob, row)
        }),
    };
    match fate {
        Some((token, prob, rank, sampled_prob, sampled_rank)) => {
            lines.push(Line::from(vec![
                Span::styled("next ", theme.dim),
                Span::styled(quoted_token(&token), theme.planned),
                Span::styled(format!(" model {} #{}", pct(prob), rank + 1), theme.text),
            ]));
            let after = if sampled_prob > 0.0 {
                format!("sampler {} #{}", pct(sampled_prob), sampled_rank + 1)
            } else {
                format!("sampler: cut (#{} by score)", sampled_rank + 1)
            };
            lines.push(Line::styled(fit(&format!("  → {after}"), w), theme.text));
        }
        None => lines.push(Line::styled(
            fit(&format!("next: out of the top {} shown", shown.len()), w),
            theme.text,
        )),
    }
    lines.push(Line::styled(
        fit("s: penalties re-rank it, no pass", w),
        theme.dim,
    ));
    lines
}

/// One series over the generated steps, the loop's steps drawn again in the alert colour.
fn series_chart(
    frame: &mut Frame,
    area: Rect,
    generated: &[TokenRecord],
    loop_since: Option<usize>,
    (name, value, top): (&str, fn(&TokenRecord) -> f64, f64),
    theme: &Theme,
) {
    let all: Vec<(f64, f64)> = generated
        .iter()
        .enumerate()
        .map(|(i, t)| (crate::fmt::shown_step(i) as f64, value(t)))
        .collect();
    let in_loop: Vec<(f64, f64)> = loop_since
        .map(|s| all[s.min(all.len())..].to_vec())
        .unwrap_or_default();
    // Steps counted from 1, as the status bar counts them.
    let x_max = all.len().max(2) as f64;
    let mut sets = vec![Dataset::default()
        .name(name.to_string())
        .marker(Marker::Braille)
        .graph_type(GraphType::Line)
        .style(theme.key)
        .data(&all)];
    if !in_loop.is_empty() {
        sets.push(
            Dataset::default()
                .name("in the loop")
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(theme.error)
                .data(&in_loop),
        );
    }
    let title = Span::styled(format!(" {name} per step "), theme.dim);
    let chart = Chart::new(sets)
        .block(Block::new().title(title))
        .hidden_legend_constraints((Constraint::Length(0), Constraint::Length(0)))
        .x_axis(
            Axis::default()
                .bounds([1.0, x_max])
                .labels(vec![
                    Span::raw("1"),
                    Span::raw(format!("step {}", all.len())),
                ])
                .style(theme.dim),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, top])
                .labels(vec![Span::raw("0"), Span::raw(format!("{top:.0}"))])
                .style(theme.dim),
        );
    frame.render_widget(chart, area);
}

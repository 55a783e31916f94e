//! The next-token panel: top-k candidates as bars, or the sampler chain stage by stage (`t`).

use super::fmt::{bar, cut_bar, pad, pct, quoted};
use super::theme::Theme;
use crate::app::layout::{candidate_rows, inset, CHAIN_HEADER};
use crate::app::App;
use crate::protocol::Distribution;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let view = if app.show_chain { "chain" } else { "bars" };
    let mut block = Block::bordered()
        .border_style(theme.border)
        .title_top(Line::styled(format!(" t: {view} "), theme.dim).right_aligned());
    let Some(dist) = app.session.as_ref().map(|s| &s.next) else {
        block = block.title(Span::styled(" Next token ", theme.title));
        frame.render_widget(block, area);
        return;
    };
    block = block
        .title(Span::styled(
            format!(" Next token · position {} ", dist.position),
            theme.title,
        ))
        .title_bottom(Line::styled(
            format!(
                " entropy {:.2} nats · EOS {} ",
                dist.entropy,
                pct(dist.eos_prob)
            ),
            theme.dim,
        ));
    frame.render_widget(block, area);
    let rows = candidate_rows(area, app.show_chain);
    let inner = inset(area);
    if app.show_chain {
        let header = Rect {
            height: CHAIN_HEADER,
            ..inner
        };
        frame.render_widget(
            Paragraph::new(chain_header(dist, rows.width, theme)),
            header,
        );
    }
    let lines: Vec<Line> = (0..dist.candidates.len().min(rows.height as usize))
        .map(|i| {
            if app.show_chain {
                chain_row(app, dist, i, rows.width as usize, theme)
            } else {
                bar_row(app, dist, i, rows.width as usize, theme)
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), rows);
    let footer = Rect {
        y: rows.y + rows.height,
        height: (inner.y + inner.height).saturating_sub(rows.y + rows.height),
        ..inner
    };
    frame.render_widget(
        Paragraph::new(footer_lines(app, dist, rows.width, theme)),
        footer,
    );
}

/// Width of the token column: the longest candidate, within limits.
fn token_width(dist: &Distribution, avail: usize) -> usize {
    let longest = dist
        .candidates
        .iter()
        .map(|c| quoted(&c.token.text).width())
        .max()
        .unwrap_or(6);
    longest.clamp(6, 16).min(avail / 3)
}

/// `▶ 1 " Paris"   78.0% ███████████ ◀ next`
fn bar_row(app: &App, dist: &Distribution, i: usize, width: usize, theme: &Theme) -> Line<'static> {
    let c = &dist.candidates[i];
    let selected = i == app.selected;
    let planned = c.token.id == dist.planned.id;
    let cut = c.sampled_prob <= 0.0;
    let tw = token_width(dist, width);
    let mark = if planned { " ◀ next" } else { "" };
    let bar_w = width.saturating_sub(4 + tw + 7 + 7).max(3);
    let text_style = if cut { theme.dim } else { theme.text };
    let bar_style = if cut { theme.bar_cut } else { theme.bar };
    let mut spans = vec![
        Span::styled(
            format!("{}{:>2} ", if selected { "▶" } else { " " }, i + 1),
            theme.key,
        ),
        Span::styled(pad(&quoted(&c.token.text), tw), text_style),
        Span::styled(format!(" {:>6} ", pct(c.prob)), text_style),
        Span::styled(
            if cut {
                cut_bar(c.prob, bar_w)
            } else {
                bar(c.prob, bar_w)
            },
            bar_style,
        ),
        Span::styled(mark, theme.planned),
    ];
    if selected {
        for s in &mut spans[..3] {
            s.style = s.style.patch(theme.selected);
        }
    }
    Line::from(spans)
}

/// Columns of the chain view: one per stage, `CELL` wide.
const CELL: usize = 6;

fn stage_label(name: &str) -> &str {
    match name {
        "penalties" => "pen",
        "temperature" => "temp",
        other => other,
    }
}

/// Stage names, then how many tokens each stage keeps.
fn chain_header(dist: &Distribution, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let tw = chain_token_width(dist, width as usize);
    let mut names = format!("{:3} {}", "", pad("stage →", tw));
    let mut kept = format!("{:3} {}", "", pad("kept", tw));
    for st in &dist.stages {
        names.push_str(&format!("{:>w$}", stage_label(&st.name), w = CELL));
        kept.push_str(&format!("{:>w$}", compact_count(st.kept), w = CELL));
    }
    vec![
        Line::styled(names, theme.title),
        Line::styled(kept, theme.dim),
    ]
}

fn chain_token_width(dist: &Distribution, width: usize) -> usize {
    let avail = width.saturating_sub(4 + CELL * dist.stages.len());
    token_width(dist, width * 3).min(avail).max(4)
}

/// One candidate across the stages: its renormalised probability, or ✂ where a stage cut it.
fn chain_row(
    app: &App,
    dist: &Distribution,
    i: usize,
    width: usize,
    theme: &Theme,
) -> Line<'static> {
    let c = &dist.candidates[i];
    let tw = chain_token_width(dist, width);
    let planned = c.token.id == dist.planned.id;
    let mut spans = vec![
        Span::styled(
            format!("{}{:>2} ", if i == app.selected { "▶" } else { " " }, i + 1),
            theme.key,
        ),
        Span::styled(
            pad(&quoted(&c.token.text), tw),
            if planned { theme.planned } else { theme.text },
        ),
    ];
    let mut alive = true;
    for st in &dist.stages {
        let p = st.probs.get(i).copied().unwrap_or(0.0);
        let (text, style) = if p > 0.0 {
            (pct(p), theme.text)
        } else if alive {
            alive = false;
            ("✂".to_string(), theme.error)
        } else {
            ("·".to_string(), theme.dim)
        };
        spans.push(Span::styled(format!("{text:>w$}", w = CELL), style));
    }
    Line::from(spans)
}

fn compact_count(n: usize) -> String {
    if n >= 10_000 {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

/// Under the list: the chain's kept mass per stage (chain view) or a legend, and what the sampler does.
fn footer_lines(app: &App, dist: &Distribution, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let first = if app.show_chain {
        let tw = chain_token_width(dist, width as usize);
        let mut row = format!("{:3} {}", "", pad("mass kept", tw));
        for st in &dist.stages {
            row.push_str(&format!("{:>w$}", pct(st.kept_mass), w = CELL));
        }
        Line::styled(row, theme.dim)
    } else {
        Line::from(vec![
            Span::styled("◀ next", theme.planned),
            Span::styled(": the sampler's pick · ", theme.dim),
            Span::styled("░", theme.bar_cut),
            Span::styled(" cut by it", theme.dim),
        ])
    };
    let planned = quoted(&dist.planned.text);
    let second = match &dist.draw {
        None => Line::from(vec![
            Span::styled("greedy → ", theme.dim),
            Span::styled(planned, theme.planned),
            Span::styled(" (the most likely)", theme.dim),
        ]),
        Some(d) => {
            let kept = dist.stages.last().map(|s| s.kept).unwrap_or(0);
            Line::from(vec![
                Span::styled(format!("draw u={:.3} → ", d.u), theme.dim),
                Span::styled(planned, theme.planned),
                Span::styled(
                    format!(" (#{} of {kept}, {})", d.rank + 1, pct(dist.planned_prob)),
                    theme.dim,
                ),
            ])
        }
    };
    vec![first, second]
}

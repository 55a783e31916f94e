//! Panels that open over the screen: sampler settings (`s`), the branch list (`b`), search hits (`/`).

use super::fmt::{fit, pad, pct, quoted};
use super::help::panel_hints;
use super::theme::Theme;
use crate::app::keymap::Mode;
use crate::app::sampler_panel::FIELDS;
use crate::app::App;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;

/// Draws `lines` in a bordered panel over `area` with the mode's key hints at the bottom.
fn panel(
    frame: &mut Frame,
    area: Rect,
    title: String,
    lines: Vec<Line>,
    mode: Mode,
    theme: &Theme,
) {
    let block = Block::bordered()
        .border_style(theme.title)
        .title(Span::styled(title, theme.title));
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    let hints = panel_hints(mode, inner.width as usize, theme);
    let [body, foot] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(hints.len() as u16)])
            .areas(inner);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), body);
    frame.render_widget(Paragraph::new(hints), foot);
}

/// Sampler settings: each change is sent at once and re-ranks the current distribution.
pub fn sampler(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let mut lines = vec![];
    for (i, f) in FIELDS.iter().enumerate() {
        let sel = i == app.sampler_field;
        let style = if sel { theme.selected } else { theme.text };
        let name = pad(
            &format!("{}{}", if sel { "▶ " } else { "  " }, f.name()),
            17,
        );
        lines.push(Line::from(vec![
            Span::styled(name, style),
            Span::styled(
                format!("{:>6}", f.value(&app.settings)),
                style.patch(theme.key),
            ),
        ]));
    }
    let f = FIELDS[app.sampler_field];
    lines.push(Line::styled(f.explain(), theme.dim));
    lines.push(Line::styled(
        "a change re-ranks the list at once: no forward pass",
        theme.info,
    ));
    panel(frame, area, " Sampler ".into(), lines, Mode::Sampler, theme);
}

/// Branches: every leaf of the session tree, the current one marked.
pub fn branches(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let w = area.width.saturating_sub(2) as usize;
    let list = app
        .session
        .as_ref()
        .map(|s| s.branches.as_slice())
        .unwrap_or(&[]);
    let mut lines = vec![];
    if list.is_empty() {
        lines.push(Line::styled(
            "one path so far: rewind and choose",
            theme.dim,
        ));
        lines.push(Line::styled("another token to make a branch", theme.dim));
    }
    for (i, b) in list.iter().enumerate() {
        let sel = i == app.branch_selected;
        let head = format!(
            "{}{}#{} {} tok, fork @{} ",
            if sel { "▶" } else { " " },
            if b.current { "●" } else { " " },
            b.id,
            b.len,
            b.fork_position
        );
        let style = if sel { theme.selected } else { theme.text };
        lines.push(Line::from(vec![
            Span::styled(head.clone(), style),
            Span::styled(format!("{:.2}", b.mean_logprob), theme.dim),
        ]));
        lines.push(Line::styled(
            fit(&format!("   {}", b.preview), w),
            theme.dim,
        ));
    }
    panel(
        frame,
        area,
        " Branches ".into(),
        lines,
        Mode::Branches,
        theme,
    );
}

/// Vocabulary search hits for the query being typed.
pub fn search(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let mut lines = vec![];
    if app.search_hits.is_empty() {
        let msg = if app.input.is_empty() {
            "type to search the vocabulary"
        } else {
            "no hits yet"
        };
        lines.push(Line::styled(msg, theme.dim));
    }
    for (i, h) in app.search_hits.iter().enumerate() {
        let sel = i == app.search_selected;
        let style = if sel { theme.selected } else { theme.text };
        lines.push(Line::from(vec![
            Span::styled(if sel { "▶ " } else { "  " }, theme.key),
            Span::styled(pad(&quoted(&h.token.text), 16), style),
            Span::styled(format!(" {:>6}", pct(h.prob)), style),
            Span::styled(format!("  id {}", h.token.id), theme.dim),
        ]));
    }
    let title = format!(" Search: {} ", fit(&app.input, 20));
    panel(frame, area, title, lines, Mode::Search, theme);
}

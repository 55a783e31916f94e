//! Panels that open over the screen: sampler settings (`s`), search hits (`/`, the guess box while a
//! guess is awaited), the prompt editor (`p`); the branch list (`b`) is drawn by `branches.rs` in the
//! same frame.

use super::help::panel_hints;
use super::theme::Theme;
use crate::app::keymap::{hint_key, Action, Mode};
use crate::app::sampler_panel::FIELDS;
use crate::app::App;
use crate::fmt::{fit, pad, pct, quoted, quoted_token};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

/// Draws `lines` in a bordered panel over `area` with the mode's key hints at the bottom.
pub(super) fn panel(
    frame: &mut Frame,
    area: Rect,
    title: String,
    lines: Vec<Line>,
    mode: Mode,
    theme: &Theme,
) {
    let inner = frame_over(frame, area, title, theme);
    let hints = panel_hints(mode, inner.width as usize, theme);
    let [body, foot] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(hints.len() as u16)])
            .areas(inner);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), body);
    frame.render_widget(Paragraph::new(hints), foot);
}

/// Clears `area` and draws a titled border over it, as every panel that opens over the screen has;
/// returns the inside.
pub(super) fn frame_over(frame: &mut Frame, area: Rect, title: String, theme: &Theme) -> Rect {
    let block = Block::bordered()
        .border_style(theme.title)
        .title(Span::styled(title, theme.title));
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    inner
}

/// Sampler settings: each change is sent at once and re-ranks the current distribution.
pub fn sampler(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let mut lines = vec![];
    // A window of rows that keeps the selected one in view, above the explanation and the hints.
    let hints = panel_hints(Mode::Sampler, area.width.saturating_sub(2) as usize, theme).len();
    let body = area.height.saturating_sub(2 + hints as u16) as usize;
    let rows = body.saturating_sub(3).clamp(1, FIELDS.len());
    let first = app.sampler.field.saturating_sub(rows - 1);
    for (i, f) in FIELDS.iter().enumerate().skip(first).take(rows) {
        let sel = i == app.sampler.field;
        let style = if sel { theme.selected } else { theme.text };
        let name = pad(
            &format!("{}{}", if sel { "▶ " } else { "  " }, f.names().label),
            17,
        );
        lines.push(Line::from(vec![
            Span::styled(name, style),
            Span::styled(
                format!("{:>6}", app.sampler.settings.shown(*f)),
                style.patch(theme.key),
            ),
        ]));
    }
    let f = FIELDS[app.sampler.field];
    lines.push(Line::styled(f.names().explain, theme.dim));
    lines.push(Line::styled("applies at once: no forward pass", theme.info));
    panel(frame, area, " Sampler ".into(), lines, Mode::Sampler, theme);
}

/// Vocabulary search hits for the query being typed: each with the model's probability, its rank in the
/// whole distribution, its row in the next-token list when it is there, and (where there is room) the
/// sampler's probability and id. Listed by match or by probability. While a guess is awaited the box
/// is the guess box instead (`guess_box`).
pub fn search(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    if app.awaiting_guess() {
        return guess_box(frame, area, app, theme);
    }
    let w = area.width.saturating_sub(2) as usize;
    let tw = if w >= 56 { 16 } else { 12 };
    // Columns past the token, most useful first; those that do not fit are left out.
    let base = 2 + tw + 8 + 8;
    let with_list = base + 6 <= w;
    let with_sampler = with_list && base + 6 + 8 <= w;
    let with_id = with_sampler && base + 6 + 8 + 10 <= w;
    let mut lines = vec![];
    if app.input.hits.is_empty() {
        lines.push(Line::styled(no_hits(app), theme.dim));
    } else {
        let mut head = format!("  {} {:>7} {:>7}", pad("token", tw), "model", "rank");
        if with_list {
            head.push_str(&format!(" {:>5}", "list"));
        }
        if with_sampler {
            head.push_str(&format!(" {:>7}", "sampler"));
        }
        lines.push(Line::styled(head, theme.title));
    }
    let shown = app.candidates_on_screen();
    for (i, h) in app.search_hits().into_iter().enumerate() {
        let sel = i == app.input.selected;
        let style = if sel { theme.selected } else { theme.text };
        let row = shown
            .iter()
            .position(|c| c.token.id == h.token.id)
            .map_or("—".to_string(), |r| format!("#{}", r + 1));
        let mut spans = vec![
            Span::styled(if sel { "▶ " } else { "  " }, theme.key),
            Span::styled(pad(&quoted_token(&h.token), tw), style),
            Span::styled(format!(" {:>7}", pct(h.prob)), style),
            Span::styled(format!(" {:>7}", format!("#{}", h.rank + 1)), style),
        ];
        if with_list {
            spans.push(Span::styled(format!(" {row:>5}"), theme.dim));
        }
        if with_sampler {
            let sampled = if h.sampled_prob > 0.0 {
                pct(h.sampled_prob)
            } else {
                "cut".into()
            };
            spans.push(Span::styled(format!(" {sampled:>7}"), theme.dim));
        }
        if with_id {
            spans.push(Span::styled(format!("  id {}", h.token.id), theme.dim));
        }
        lines.push(Line::from(spans));
    }
    if !app.input.hits.is_empty() {
        let mut note = "rank: in the whole vocabulary, by the model's p".to_string();
        if with_list {
            note += &format!("; list: its row among the {} shown", shown.len());
        }
        lines.push(Line::styled(note, theme.dim));
    }
    let order = if app.input.by_prob {
        "by probability"
    } else {
        "by match"
    };
    let title = format!(" Search: {} · {order} ", fit(app.input.text(), 20));
    panel(frame, area, title, lines, Mode::Search, theme);
}

fn no_hits(app: &App) -> &'static str {
    if app.input.text().is_empty() {
        "type to search the vocabulary"
    } else {
        "no hits yet"
    }
}

/// The search box while a guess is awaited: what Enter will guess (the typed text as the next text,
/// or the hit moved onto), and the vocabulary's matching tokens in match order with nothing of the
/// model's: no probability, rank, row or order by probability before the reveal.
fn guess_box(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let w = area.width.saturating_sub(2) as usize;
    let enter = hint_key(Mode::Search, Action::Submit);
    let typed = app.input.text();
    let picked = app.input.picked.then(|| app.selected_hit()).flatten();
    let mut lines = vec![];
    let what = match picked {
        Some(hit) => Some(format!(
            "{enter} guesses the token {}",
            quoted_token(&hit.token)
        )),
        None if typed.trim().is_empty() => None,
        None => Some(format!(
            "{enter} guesses {} as the next text",
            quoted(&app.guess_text(typed))
        )),
    };
    match what {
        Some(what) => lines.push(Line::styled(what, theme.key)),
        None => lines.push(Line::styled("type a word, or a few", theme.dim)),
    }
    lines.push(Line::default());
    if app.input.hits.is_empty() && !typed.is_empty() {
        lines.push(Line::styled(no_hits(app), theme.dim));
    }
    if !app.input.hits.is_empty() {
        let keys = format!(
            "{}/{}",
            hint_key(Mode::Search, Action::Up),
            hint_key(Mode::Search, Action::Down)
        );
        let head = format!("matching tokens ({keys} picks one):");
        lines.push(Line::styled(head, theme.title));
    }
    for (i, h) in app.search_hits().into_iter().enumerate() {
        let sel = app.input.picked && i == app.input.selected;
        let style = if sel { theme.selected } else { theme.text };
        lines.push(Line::from(vec![
            Span::styled(if sel { "▶ " } else { "  " }, theme.key),
            Span::styled(quoted_token(&h.token), style),
        ]));
    }
    let title = format!(" Your guess: {} ", fit(typed, 20));
    let note = "The model's numbers stay hidden until the reveal.";
    lines.push(Line::styled(note, theme.dim));
    let hints = guess_hints(w, theme);
    let inner = frame_over(frame, area, title, theme);
    let [body, foot] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(hints.len() as u16)])
            .areas(inner);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), body);
    frame.render_widget(Paragraph::new(hints), foot);
}

/// The guess box's keys, in words that never say "force": Enter guesses.
fn guess_hints(width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let keys = [
        (hint_key(Mode::Search, Action::Submit), "guess"),
        (hint_key(Mode::Search, Action::Down), "pick a hit"),
        (hint_key(Mode::Search, Action::Close), "cancel"),
    ];
    let mut lines = vec![];
    let mut spans: Vec<Span> = vec![];
    let mut used = 0;
    for (key, what) in keys {
        let w = key.width() + what.width() + 2;
        if used + w > width && !spans.is_empty() {
            lines.push(Line::from(std::mem::take(&mut spans)));
            used = 0;
        }
        used += w;
        spans.push(Span::styled(key, theme.key));
        spans.push(Span::styled(format!(" {what} "), theme.dim));
    }
    lines.push(Line::from(spans));
    lines
}

/// The prompt editor (`p`), over the screen: the prompt's lines drawn as lines (a long one wrapped, `↵` where a line
/// breaks), the view kept on the cursor, the terminal's cursor put at it, and the keys at the foot.
pub fn prompt(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    // The whole screen above the status lines: the prompt is the one thing being worked on.
    let popup = area;
    let e = &app.input.editor;
    let title = if app.prompt.chat {
        " Prompt (the chat template wraps it) "
    } else {
        " Prompt "
    };
    let mut block = Block::bordered()
        .border_style(theme.title)
        .title(Span::styled(title, theme.title));
    let inner = block.inner(popup);
    let mut foot = panel_hints(Mode::Prompt, inner.width as usize, theme);
    foot.push(super::help::editing_hint(theme));
    let [body, hints] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(foot.len() as u16)]).areas(inner);
    // One cell stays free at the right for the cursor after the last character, or a `↵`.
    let rows = e.rows((body.width as usize).saturating_sub(1));
    let (crow, ccol) = e.cursor_cell(&rows);
    let h = (body.height as usize).max(1);
    let top = crow.saturating_sub(h - 1);
    let below = rows.len().saturating_sub(top + h);
    if top > 0 {
        let text = format!(" ↑ {top} more lines above ");
        block = block.title_top(Line::styled(text, theme.newest).right_aligned());
    }
    if below > 0 {
        let text = format!(" ↓ {below} more lines below ");
        block = block.title_bottom(Line::styled(text, theme.newest).right_aligned());
    }
    let text = e.text();
    let lines: Vec<Line> = rows
        .iter()
        .skip(top)
        .take(h)
        .map(|&(s, end)| {
            let mut spans = vec![Span::styled(text[s..end].to_string(), theme.text)];
            if text[end..].starts_with('\n') {
                spans.push(Span::styled("↵", theme.dim));
            }
            Line::from(spans)
        })
        .collect();
    frame.render_widget(Clear, popup);
    frame.render_widget(block, popup);
    frame.render_widget(Paragraph::new(lines), body);
    frame.render_widget(Paragraph::new(foot), hints);
    if body.height > 0 && crow >= top {
        frame.set_cursor_position((body.x + ccol as u16, body.y + (crow - top) as u16));
    }
}

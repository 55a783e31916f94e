//! The two status lines: model, step and pass counters, sampler and seed; then a message, the text
//! being typed, or key hints taken from the keymap.

use super::theme::Theme;
use crate::app::keymap::{hint_key, key_for, Action, Mode};
use crate::app::{sampler_panel, App, Busy};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// What the engine is doing, with a spinner frame from the app's clock; `None` when idle.
pub fn busy_text(app: &App) -> Option<String> {
    let spin = SPINNER[(app.now_ms / 100) as usize % SPINNER.len()];
    let label = app.busy.label(app.now_ms);
    match &app.busy {
        Busy::Idle => None,
        Busy::Reading { .. } => {
            let key = crate::app::keymap::hint_key(crate::app::Mode::Normal, Action::Cancel);
            Some(format!("{spin} {label}… ({key} cancels)"))
        }
        _ => Some(format!("{spin} {label}…")),
    }
}

/// Hints on the second line in normal mode, most useful first: (action, word). Keys come from the
/// keymap; hints that do not fit the width are left out.
const HINTS: [(Action, &str); 10] = [
    (Action::Step, "step"),
    (Action::Pick(1), "force"),
    (Action::OpenSearch, "search"),
    (Action::OpenForceText, "type"),
    (Action::Rewind, "rewind"),
    (Action::ToggleHelp, "help"),
    (Action::Quit, "quit"),
    (Action::OpenSampler, "sampler"),
    (Action::ToggleAutoplay, "autoplay"),
    (Action::ToggleChain, "chain"),
];

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    // Most important first; an item that does not fit is left out whole, never cut.
    let mut items = vec![
        Span::styled(format!(" step {}", app.step_count()), theme.key),
        Span::styled(format!("passes {}", app.forward_passes()), theme.text),
    ];
    if let Some(busy) = busy_text(app) {
        items.push(Span::styled(busy, theme.newest));
    }
    if app.autoplay.on {
        let text = format!("▶ autoplay {}", app.autoplay_label());
        items.push(Span::styled(text, theme.planned));
    }
    if !app.kv_cache_on() {
        items.push(Span::styled("KV OFF", theme.warn_badge));
    }
    let model = app.model.as_ref().map_or("no model", |m| m.name.as_str());
    items.extend([
        Span::styled(sampler_panel::summary(&app.sampler.settings), theme.text),
        Span::styled(format!("seed {}", app.sampler.settings.seed), theme.text),
        Span::styled(model.to_string(), theme.title),
    ]);
    let top = fit_items(items, area.width as usize, theme);
    let bottom = if app.mode.is_text_input() {
        let label = match app.mode {
            Mode::Search => "search vocabulary> ",
            Mode::ForceText => "text to force> ",
            _ => "prompt> ",
        };
        let hints = format!(
            "   {} ok · {} cancel",
            hint_key(app.mode, Action::Submit),
            hint_key(app.mode, Action::Close)
        );
        // How forced text will tokenise, as the engine said.
        let preview = if app.mode == Mode::ForceText && !app.input.preview.is_empty() {
            let pieces: String = app
                .input
                .preview
                .iter()
                .map(super::fmt::quoted_token)
                .collect();
            format!("  → {} tokens: {pieces}", app.input.preview.len())
        } else {
            String::new()
        };
        // Line breaks show as ↵; the end, where typing happens, stays in view.
        let text = app.input.text.replace('\n', "↵");
        let room = (area.width as usize).saturating_sub(label.width() + hints.width() + 3);
        let skip = text.width().saturating_sub(room);
        let text: String = text.chars().skip(skip).collect();
        Line::from(vec![
            Span::styled(format!(" {label}"), theme.key),
            Span::styled(if skip > 0 { format!("…{text}") } else { text }, theme.text),
            Span::styled("▌", theme.newest),
            Span::styled(preview, theme.dim),
            Span::styled(hints, theme.dim),
        ])
    } else if let Some(msg) = &app.status {
        let style = if msg.error { theme.error } else { theme.info };
        Line::styled(format!(" {}", msg.text), style)
    } else if app.mode == Mode::Normal {
        hints(area.width as usize, theme)
    } else {
        let close = hint_key(app.mode, Action::Close);
        Line::styled(format!(" {} · {close} closes", app.mode.title()), theme.dim)
    };
    frame.render_widget(Paragraph::new(vec![top, bottom]), area);
}

/// `items` joined by `│`, as many as fit `width` in order; the first always shows.
fn fit_items(items: Vec<Span<'static>>, width: usize, theme: &Theme) -> Line<'static> {
    let mut spans = vec![];
    let mut used = 0;
    for item in items {
        let sep = if spans.is_empty() { 0 } else { 3 };
        if !spans.is_empty() && used + sep + item.width() > width {
            continue;
        }
        if sep > 0 {
            spans.push(Span::styled(" │ ", theme.dim));
        }
        used += sep + item.width();
        spans.push(item);
    }
    Line::from(spans)
}

fn hints(width: usize, theme: &Theme) -> Line<'static> {
    let mut spans = vec![Span::raw(" ")];
    let mut used = 1;
    for (action, word) in HINTS {
        let Some(key) = key_for(Mode::Normal, action) else {
            continue;
        };
        let word = format!(" {word}  ");
        let w = key.width() + word.width();
        if used + w > width {
            continue;
        }
        used += w;
        spans.push(Span::styled(key, theme.key));
        spans.push(Span::styled(word, theme.dim));
    }
    Line::from(spans)
}

//! The two status lines: model, step and pass counters, sampler and seed; then a message, the text
//! being typed, or key hints taken from the keymap.

use super::theme::Theme;
use crate::app::keymap::{key_for, Action, Mode};
use crate::app::{sampler_panel, App, Busy};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// What the engine is doing, with a spinner frame from the app's clock; `None` when idle.
pub fn busy_text(app: &App) -> Option<String> {
    let spin = SPINNER[(app.now_ms / 100) as usize % SPINNER.len()];
    match &app.busy {
        Busy::Idle => None,
        Busy::Loading(what) => Some(format!("{spin} loading: {what}…")),
        Busy::Working(what) => Some(format!("{spin} {what}…")),
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
    let sep = || Span::styled(" │ ", theme.dim);
    // Most important first: a narrow screen cuts from the right, where the model name sits.
    let mut top = vec![
        Span::styled(format!(" step {}", app.step_count()), theme.key),
        sep(),
        Span::styled(format!("passes {}", app.forward_passes()), theme.text),
    ];
    if let Some(busy) = busy_text(app) {
        top.extend([sep(), Span::styled(busy, theme.newest)]);
    }
    if app.autoplay {
        let text = format!("▶ autoplay {}", app.autoplay_label());
        top.extend([sep(), Span::styled(text, theme.planned)]);
    }
    if !app.kv_cache {
        top.extend([sep(), Span::styled("KV OFF", theme.warn_badge)]);
    }
    let model = app.model.as_ref().map_or("no model", |m| m.name.as_str());
    top.extend([
        sep(),
        Span::styled(sampler_panel::summary(&app.settings), theme.text),
        sep(),
        Span::styled(format!("seed {}", app.settings.seed), theme.text),
        sep(),
        Span::styled(model.to_string(), theme.title),
    ]);
    let bottom = if app.mode.is_text_input() {
        let label = match app.mode {
            Mode::Search => "search vocabulary> ",
            Mode::ForceText => "text to force> ",
            _ => "prompt> ",
        };
        Line::from(vec![
            Span::styled(format!(" {label}"), theme.key),
            Span::styled(app.input.clone(), theme.text),
            Span::styled("▌", theme.newest),
            Span::styled("   enter ok · esc cancel", theme.dim),
        ])
    } else if let Some(msg) = &app.status {
        let style = if msg.error { theme.error } else { theme.info };
        Line::styled(format!(" {}", msg.text), style)
    } else if app.mode == Mode::Normal {
        hints(area.width as usize, theme)
    } else {
        Line::styled(format!(" {} · esc closes", app.mode.title()), theme.dim)
    };
    frame.render_widget(Paragraph::new(vec![Line::from(top), bottom]), area);
}

fn hints(width: usize, theme: &Theme) -> Line<'static> {
    let mut spans = vec![Span::raw(" ")];
    let mut used = 1;
    for (action, word) in HINTS {
        let Some(key) = key_for(Mode::Normal, action) else {
            continue;
        };
        let word = format!(" {word}  ");
        let w = key.chars().count() + word.chars().count();
        if used + w > width {
            continue;
        }
        used += w;
        spans.push(Span::styled(key, theme.key));
        spans.push(Span::styled(word, theme.dim));
    }
    Line::from(spans)
}

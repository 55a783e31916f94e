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

/// Hints on the second line in normal mode: (action, word). The keys come from the keymap.
const HINTS: [(Action, &str); 9] = [
    (Action::Step, "step"),
    (Action::Pick(1), "force"),
    (Action::OpenSearch, "search"),
    (Action::OpenForceText, "type"),
    (Action::Rewind, "rewind"),
    (Action::ToggleAutoplay, "autoplay"),
    (Action::OpenSampler, "sampler"),
    (Action::ToggleHelp, "help"),
    (Action::Quit, "quit"),
];

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let sep = Span::styled(" │ ", theme.dim);
    let model = app.model.as_ref().map_or("no model", |m| m.name.as_str());
    let mut top = vec![
        Span::styled(format!(" {model}"), theme.title),
        sep.clone(),
        Span::styled(format!("step {}", app.step_count()), theme.key),
        sep.clone(),
        Span::styled(format!("passes {}", app.forward_passes()), theme.text),
        sep.clone(),
        Span::styled(sampler_panel::summary(&app.settings), theme.text),
        sep.clone(),
        Span::styled(format!("seed {}", app.settings.seed), theme.text),
    ];
    if app.autoplay {
        top.push(sep.clone());
        top.push(Span::styled(
            format!("▶ autoplay {}", app.autoplay_label()),
            theme.planned,
        ));
    }
    if !app.kv_cache {
        top.push(sep.clone());
        top.push(Span::styled("KV OFF", theme.warn_badge));
    }
    if let Some(busy) = busy_text(app) {
        top.push(sep);
        top.push(Span::styled(busy, theme.newest));
    }
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
    } else {
        hints(app.mode, theme)
    };
    frame.render_widget(Paragraph::new(vec![Line::from(top), bottom]), area);
}

fn hints(mode: Mode, theme: &Theme) -> Line<'static> {
    let mut spans = vec![Span::raw(" ")];
    for (action, word) in HINTS {
        let Some(key) = key_for(Mode::Normal, action) else {
            continue;
        };
        let key = if matches!(action, Action::Pick(_)) {
            "1-9".to_string()
        } else {
            key
        };
        spans.push(Span::styled(key, theme.key));
        spans.push(Span::styled(format!(" {word}  "), theme.dim));
    }
    if mode != Mode::Normal {
        spans.clear();
    }
    Line::from(spans)
}

//! The two status lines: model, step and pass counters, sampler and seed; then a message, the text
//! being typed, or key hints taken from the keymap.

use super::theme::Theme;
use crate::app::keymap::{hint_key, key_for, Action, Mode};
use crate::app::{App, Busy};
use crate::fmt::fit;
use crate::protocol::{SamplerSettings, Setting};
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
    // Which branch the screen shows: after a switch, only a ⚑ had told them apart.
    if let Some(branch) = app.branch_label() {
        items.insert(1, Span::styled(branch, theme.key));
    }
    if let Some(busy) = busy_text(app) {
        items.push(Span::styled(busy, theme.newest));
    }
    if app.autoplay.on {
        let text = format!("▶ autoplay {}", app.autoplay_label());
        items.push(Span::styled(text, theme.planned));
    }
    if let Some(class) = app.class_short() {
        items.push(Span::styled(class, theme.key));
    } else if app.predict.on || app.predict.score.guesses > 0 {
        items.push(Span::styled(app.predict.score.short(), theme.key));
    }
    if !app.kv_cache_on() {
        items.push(Span::styled("KV OFF", theme.warn_badge));
    }
    let model = app.model.as_ref().map_or("no model", |m| m.name.as_str());
    // The sampler in full when it fits beside what comes before it, else in short: never left out, so
    // a penalty that is on always shows.
    let before: usize = items.iter().map(|i| i.width() + 3).sum();
    let [long, short] = sampler_forms(&app.sampler.settings);
    let sampler = if before + long.width() <= area.width as usize {
        long
    } else {
        short
    };
    items.extend([
        Span::styled(sampler, theme.text),
        Span::styled(format!("seed {}", app.sampler.settings.seed), theme.text),
    ]);
    // The loop alert (also on the transcript's border) before the model's name.
    if let Some(view) = &app.session {
        if let Some(c) = crate::app::lab::tip_loop(view) {
            items.push(Span::styled(
                super::repetition::alert(&c, view),
                theme.error,
            ));
        }
    }
    items.push(Span::styled(model.to_string(), theme.title));
    let top = fit_items(items, area.width as usize, theme);
    // A pending "press again" stands in for the text line: it is what the next key decides.
    let pending = app.confirm.is_some() && app.status.is_some();
    let bottom = if app.mode.is_text_input() && !pending {
        text_line(frame, area, app, theme)
    } else if let Some(msg) = &app.status {
        let style = if msg.error || pending {
            theme.error
        } else {
            theme.info
        };
        // An error wraps onto the rows `error_rows` gave it (its cause and what to do come last);
        // anything else is cut with a mark where it is longer than the line.
        let rows = area.height.saturating_sub(1).max(1) as usize;
        let lines = wrapped(&msg.text, area.width as usize, rows).into_iter();
        let all: Vec<Line> = std::iter::once(top)
            .chain(lines.map(|l| Line::styled(l, style)))
            .collect();
        frame.render_widget(Paragraph::new(all), area);
        return;
    } else if app.mode == Mode::Normal {
        hints(area.width as usize, app.awaiting_guess(), theme)
    } else {
        let close = hint_key(app.mode, Action::Close);
        Line::styled(format!(" {} · {close} closes", app.mode.title()), theme.dim)
    };
    frame.render_widget(Paragraph::new(vec![top, bottom]), area);
}

/// How many rows the status line needs under the status bar: an error wraps onto up to 3, so its cause
/// and what to do stay on screen at 80 columns; anything else takes 1.
pub fn error_rows(app: &App, width: u16) -> u16 {
    let pending = app.confirm.is_some() && app.status.is_some();
    match &app.status {
        Some(msg) if msg.error && !pending && !app.mode.is_text_input() => {
            wrapped(&msg.text, width as usize, 3).len() as u16
        }
        _ => 1,
    }
}

/// `text` after a space, wrapped to `width` on at most `rows` lines, the last cut with a mark.
fn wrapped(text: &str, width: usize, rows: usize) -> Vec<String> {
    let opts = textwrap::Options::new(width.max(10))
        .initial_indent(" ")
        .subsequent_indent(" ");
    let mut lines: Vec<String> = textwrap::wrap(text, opts)
        .into_iter()
        .map(|l| l.into_owned())
        .collect();
    if lines.len() > rows {
        let rest = lines.split_off(rows - 1).join(" ");
        lines.push(fit(&rest, width));
    }
    lines
}

/// The sampler settings that act on the next token, long ("greedy rep 1.75") and short
/// ("greedy rep1.75"): greedy, or the temperature and the cut-offs that are on; then every penalty
/// that acts (under greedy too, where they still choose the top token), with the penalty window when
/// it is not the default; then DRY. The names are the table's status names
/// (`protocol::SettingName::status`), the values as the sampler panel shows them.
pub fn sampler_forms(s: &SamplerSettings) -> [String; 2] {
    let mut long: Vec<String> = vec![];
    let mut short: Vec<String> = vec![];
    if s.is_greedy() {
        long.push("greedy".into());
        short.push("greedy".into());
    }
    let d = SamplerSettings::default();
    for setting in s.in_effect() {
        let Some((name, abbr)) = setting.names().status else {
            continue;
        };
        // The window is worth a word only when it is not the one everybody starts with.
        if setting == Setting::PenaltyLastN && s.penalty_last_n == d.penalty_last_n {
            continue;
        }
        let v = s.shown(setting);
        long.push(format!("{name} {v}"));
        short.push(format!("{abbr}{v}"));
    }
    [long.join(" "), short.join(" ")]
}

/// The second line while text is typed: the box's label, the text around the cursor (the terminal's
/// cursor is put there), how forced text will tokenise, and the keys that submit and cancel. The prompt
/// is edited in its own panel above; this line then says how big it is.
fn text_line(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) -> Line<'static> {
    let hints = format!(
        "   {} ok · {} cancel",
        hint_key(app.mode, Action::Submit),
        hint_key(app.mode, Action::Close)
    );
    if app.mode == Mode::Prompt {
        let e = &app.input.editor;
        let (line, lines) = e.line();
        let text = format!(
            " prompt: line {} of {lines} · {} characters",
            line + 1,
            e.text().chars().count()
        );
        return Line::from(vec![
            Span::styled(text, theme.key),
            Span::styled(hints, theme.dim),
        ]);
    }
    let label = match app.mode {
        Mode::Search if app.awaiting_guess() => "your guess> ",
        Mode::Search => "search vocabulary> ",
        Mode::Reference => "reference to teacher-force> ",
        Mode::Answer => "the class's answer> ",
        _ => "text to force> ",
    };
    // How forced text will tokenise, as the engine said.
    let preview = if app.mode == Mode::ForceText && !app.input.preview.is_empty() {
        let pieces: String = app
            .input
            .preview
            .iter()
            .map(crate::fmt::quoted_token)
            .collect();
        format!(
            "  → {}: {pieces}",
            crate::fmt::tokens(app.input.preview.len())
        )
    } else {
        String::new()
    };
    // An answer that could not be read says why where the box is (the status line gives way to the
    // box: "4" to a question of 3 choices had seemed to do nothing).
    let refused = app.status.as_ref().filter(|m| m.error);
    let (preview, preview_style) = match refused {
        Some(m) => (format!("  {}", m.text), theme.error),
        None => (preview, theme.dim),
    };
    let room = (area.width as usize).saturating_sub(label.width() + hints.width() + 2);
    let (shown, col) = app.input.editor.window(room);
    let x = area.x as usize + 1 + label.width() + col;
    if area.height >= 2 && x < (area.x + area.width) as usize {
        frame.set_cursor_position((x as u16, area.y + 1));
    }
    let pad = " ".repeat(usize::from(shown.width() <= col));
    // The preview takes what is left, cut with "…": the keys that submit and cancel stay whole (at
    // 100 columns a long preview had left "enter ok · esc can").
    let used = 1 + label.width() + shown.width() + pad.len() + hints.width();
    let preview = match (area.width as usize).saturating_sub(used) {
        0 => String::new(),
        room => fit(&preview, room),
    };
    Line::from(vec![
        Span::styled(format!(" {label}"), theme.key),
        Span::styled(format!("{shown}{pad}"), theme.text),
        Span::styled(preview, preview_style),
        Span::styled(hints, theme.dim),
    ])
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

/// The normal mode's hints; while guessing (predict mode, or a question), the search key says "guess"
/// and the pick key, which would force the answer, is left out.
fn hints(width: usize, guessing: bool, theme: &Theme) -> Line<'static> {
    let mut spans = vec![Span::raw(" ")];
    let mut used = 1;
    for (action, word) in HINTS {
        let word = match action {
            Action::Pick(_) if guessing => continue,
            Action::OpenSearch if guessing => "guess",
            _ => word,
        };
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

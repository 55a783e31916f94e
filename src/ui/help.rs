//! The help overlay (`?`), generated from the keymap table so it always matches what keys do, then a
//! legend of the screen's colours and marks. Where it does not fit, it says how much is below.

use super::layout::centered;
use super::legend;
use super::theme::Theme;
use crate::app::keymap::{self, Action, Binding, Mode, Scope, KEYMAP};
use crate::fmt::pad;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

/// Width of the key column.
const KEY_W: usize = 9;
/// Widest a column of the key table grows.
const COL_MAX: usize = 48;

/// Draws the help over `area`, its first `scroll` lines scrolled away (clamped to what there is).
pub fn draw(frame: &mut Frame, area: Rect, scroll: usize, theme: &Theme) {
    let (lines, popup) = content(area, theme);
    let inner_h = popup.height.saturating_sub(2) as usize;
    // The first two keys that close help ("? or esc"): the one that opened it, and the usual way out.
    let close: Vec<String> = keymap::keys_for(Mode::Help, Action::Close)
        .into_iter()
        .take(2)
        .collect();
    let mut block = Block::bordered()
        .border_style(theme.title)
        .title(Span::styled(" Help: keys ", theme.title))
        .title_bottom(
            Line::styled(format!(" {} closes ", close.join(" or ")), theme.dim).right_aligned(),
        );
    let scroll = scroll.min(lines.len().saturating_sub(inner_h));
    let below = lines.len().saturating_sub(scroll + inner_h);
    // Name the scroll keys once the keymap binds them in help.
    let key =
        |action| keymap::key_for(Mode::Help, action).map_or(String::new(), |k| format!(" ({k})"));
    if below > 0 {
        let text = format!(" ↓ {below} more lines below{} ", key(Action::Down));
        block = block.title_bottom(Line::styled(text, theme.newest));
    }
    if scroll > 0 {
        let text = format!(" ↑ {scroll} more above{} ", key(Action::Up));
        block = block.title_top(Line::styled(text, theme.newest).right_aligned());
    }
    let shown: Vec<Line> = lines.into_iter().skip(scroll).take(inner_h).collect();
    frame.render_widget(Clear, popup);
    frame.render_widget(Paragraph::new(shown).block(block), popup);
}

/// How far the help can scroll on a screen of `area`: the lines that do not fit.
pub fn max_scroll(area: Rect, theme: &Theme) -> usize {
    let (lines, popup) = content(area, theme);
    lines
        .len()
        .saturating_sub(popup.height.saturating_sub(2) as usize)
}

/// The help's lines for a screen of `area`, and where its popup goes.
fn content(area: Rect, theme: &Theme) -> (Vec<Line<'static>>, Rect) {
    let rows: Vec<&Binding> = KEYMAP
        .iter()
        .filter(|b| b.scope == Scope::In(Mode::Normal))
        .chain(KEYMAP.iter().filter(|b| b.scope == Scope::Global))
        .collect();
    // Two columns whenever they fit, three on a wide screen: the table stays short.
    let avail = area.width.saturating_sub(2) as usize;
    let columns = match avail {
        w if w >= 3 * 40 => 3,
        w if w >= 68 => 2,
        _ => 1,
    };
    let col_w = (avail / columns).min(COL_MAX);
    let mut lines = vec![
        Line::styled(
            " One forward pass, one token. Step it, or choose for it.",
            theme.text,
        ),
        Line::default(),
    ];
    lines.extend(key_table(&rows, columns, col_w, KEY_W, theme));
    lines.extend(panels_and_text_boxes(columns, col_w, theme));
    lines.push(Line::default());
    lines.extend(legend::help_lines(theme, col_w * columns));
    if lines.len() + 2 > area.height as usize {
        // Short of room: the blank spacer lines go first.
        lines.retain(|l| l.width() > 0);
    }
    let content_w = lines.iter().map(Line::width).max().unwrap_or(0);
    let width = (content_w.max(col_w * columns) + 2).min(area.width as usize);
    // A sliver of the screen beside the popup would show only the panels' borders, doubled.
    let width = if area.width as usize - width < 4 {
        area.width
    } else {
        width as u16
    };
    let height = (lines.len() + 2).min(area.height as usize) as u16;
    (lines, centered(area, width, height))
}

/// Under the key table: the panels that list their own keys, then the text boxes' keys (what every
/// box shares, then the prompt editor's own).
fn panels_and_text_boxes(columns: usize, col_w: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let panels = [
        Mode::Sampler,
        Mode::Branches,
        Mode::Search,
        Mode::Compare,
        Mode::Lens,
        Mode::HeadMap,
    ];
    let names: Vec<&str> = panels.iter().map(|m| m.title()).collect();
    // Wrapped to the table's width: at 80 columns it ran past the popup's edge, cut.
    let panels_line = format!("Each panel ({}) lists its keys.", names.join(", "));
    let wrap_w = (col_w * columns).saturating_sub(1).max(20);
    lines.extend(
        textwrap::wrap(&panels_line, wrap_w)
            .into_iter()
            .map(|l| Line::styled(format!(" {l}"), theme.dim)),
    );
    // The text boxes' keys: what every box shares, then the prompt editor's own.
    let open = [
        Action::OpenPrompt,
        Action::OpenForceText,
        Action::OpenSearch,
        Action::OpenReference,
    ]
    .map(|a| keymap::hint_key(Mode::Normal, a))
    .join(" ");
    lines.push(Line::styled(
        format!(" In a text box ({open}): type, or paste, at the cursor."),
        theme.text,
    ));
    let editing: Vec<&Binding> = keymap::editing_bindings()
        .chain(keymap::bindings(Mode::Prompt).filter(|b| b.action != Action::Close))
        .collect();
    // Editing keys come in pairs ("alt-enter ctrl-j"): their column is as wide as the widest.
    let key_w = editing
        .iter()
        .map(|b| b.keys_label().width() + 1)
        .max()
        .unwrap_or(KEY_W);
    lines.extend(key_table(&editing, columns, col_w, key_w.max(KEY_W), theme));
    lines
}

/// The key table in `columns` columns of `col_w`: each binding's keys (in `key_w` cells), then what it does, wrapped
/// (never cut) in its column. A binding is never split across columns.
fn key_table(
    rows: &[&Binding],
    columns: usize,
    col_w: usize,
    key_w: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let help_w = col_w.saturating_sub(key_w + 1).max(8);
    let cells: Vec<Vec<Vec<Span<'static>>>> = rows
        .iter()
        .map(|b| {
            textwrap::wrap(b.help, help_w)
                .iter()
                .enumerate()
                .map(|(i, part)| {
                    let keys = if i == 0 {
                        format!(" {}", b.keys_label())
                    } else {
                        String::new()
                    };
                    vec![
                        Span::styled(pad(&keys, key_w), theme.key),
                        Span::raw(" "),
                        Span::styled(pad(part, help_w), theme.text),
                    ]
                })
                .collect()
        })
        .collect();
    // Fill each column up to an even share of the lines, whole bindings at a time.
    let total: usize = cells.iter().map(Vec::len).sum();
    let share = total.div_ceil(columns);
    let mut cols: Vec<Vec<Vec<Span<'static>>>> = vec![vec![]];
    for cell in cells {
        let last = cols.len() - 1;
        if !cols[last].is_empty() && cols[last].len() + cell.len() > share && cols.len() < columns {
            cols.push(vec![]);
        }
        let last = cols.len() - 1;
        cols[last].extend(cell);
    }
    let height = cols.iter().map(Vec::len).max().unwrap_or(0);
    (0..height)
        .map(|r| {
            let mut spans = vec![];
            for col in &cols {
                match col.get(r) {
                    Some(cell) => spans.extend(cell.iter().cloned()),
                    None => spans.push(Span::raw(" ".repeat(key_w + 1 + help_w))),
                }
            }
            Line::from(spans)
        })
        .collect()
}

/// One line of the editing keys every text box shares, grouped: the keys that move the cursor, then
/// those that delete (the first key of each binding, from the keymap).
pub fn editing_hint(theme: &Theme) -> Line<'static> {
    let first = |a: Action| {
        keymap::editing_bindings()
            .find(|b| b.action == a)
            .map(|b| b.keys_label())
    };
    let group = |actions: &[Action]| {
        actions
            .iter()
            .filter_map(|&a| first(a))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let moves = group(&[
        Action::CursorLeft,
        Action::CursorRight,
        Action::LineStart,
        Action::LineEnd,
    ]);
    let deletes = group(&[
        Action::DeleteChar,
        Action::DeleteForward,
        Action::DeleteToLineStart,
        Action::DeleteWordBack,
    ]);
    Line::from(vec![
        Span::styled(moves, theme.key),
        Span::styled(" move  ", theme.dim),
        Span::styled(deletes, theme.key),
        Span::styled(" delete", theme.dim),
    ])
}

/// Hint lines for a panel: the first key of each of its bindings and what it does, wrapped at
/// binding boundaries to `width`.
pub fn panel_hints(mode: Mode, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = vec![];
    let mut spans: Vec<Span> = vec![];
    let mut used = 0;
    // The lesson's step keys are hinted by the narration panel itself, and only when a lesson is open.
    let lesson = |a| matches!(a, Action::NextLessonStep | Action::PrevLessonStep);
    for b in keymap::bindings(mode).filter(|b| !lesson(b.action)) {
        let key = b.keys.first().map(|k| k.label()).unwrap_or_default();
        let w = key.width() + b.help.width() + 2;
        if used + w > width && !spans.is_empty() {
            lines.push(Line::from(std::mem::take(&mut spans)));
            used = 0;
        }
        used += w;
        spans.push(Span::styled(key, theme.key));
        spans.push(Span::styled(format!(" {} ", b.help), theme.dim));
    }
    lines.push(Line::from(spans));
    lines
}

//! The branch list (`b`): every leaf of the session tree under labelled columns, each with the text
//! around its fork, line breaks kept; the selected branch always in view.

use super::help::panel_hints;
use super::overlays::panel;
use super::theme::Theme;
use crate::app::keymap::Mode;
use crate::app::App;
use crate::fmt::{fit, visible};
use crate::protocol::BranchInfo;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::Frame;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Marks where a branch leaves the shared text.
pub const FORK_MARK: &str = "▸";
/// Lines of text shown per branch at most.
const FORK_LINES: usize = 3;
/// Indent of a branch's text under its row.
const INDENT: usize = 3;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
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
    } else {
        // Labels right-aligned over the columns of `row`.
        let last = if w >= 44 {
            "  mean log p per token"
        } else {
            " log p/tok"
        };
        lines.push(Line::styled(
            fit(&format!("    #  tokens {:>9}{last}", "forks at"), w),
            theme.title,
        ));
    }
    // Each branch as a block of lines; blocks before the selected one give way when they do not fit.
    let prompt_len = app.session.as_ref().map_or(0, |s| s.prompt_len);
    let blocks: Vec<Vec<Line>> = list
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let mut block = vec![row(i, b, prompt_len, i == app.selection.branch, theme)];
            block.extend(fork_lines(b, w, theme));
            block
        })
        .collect();
    let footer = usize::from(list.iter().any(|b| b.current));
    let hints = panel_hints(Mode::Branches, w, theme).len();
    let room = (area.height as usize).saturating_sub(2 + hints + lines.len() + footer);
    let sel = app.selection.branch.min(blocks.len().saturating_sub(1));
    let mut first = 0;
    while first < sel && blocks[first..=sel].iter().map(Vec::len).sum::<usize>() > room {
        first += 1;
    }
    if first > 0 {
        lines.push(Line::styled(format!("↑ {first} more above"), theme.dim));
    }
    lines.extend(blocks.into_iter().skip(first).flatten());
    if footer > 0 {
        lines.push(Line::styled("● the path on screen", theme.dim));
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

/// `▶  2       7    step 3     -1.21`: selected, current, the branch's number in the list (from 1),
/// tokens, the step where it leaves the path on screen (counted as the status bar counts: the first
/// generated token is step 1; `—` for the path on screen itself), mean log p. The session's node ids
/// stay off screen: nothing a user types takes them.
fn row(
    i: usize,
    b: &BranchInfo,
    prompt_len: usize,
    selected: bool,
    theme: &Theme,
) -> Line<'static> {
    let fork = if b.current {
        "—".to_string()
    } else {
        format!("step {}", fork_step(b, prompt_len))
    };
    let head = format!(
        "{}{}{:>3} {:>7} {:>9}",
        if selected { "▶" } else { " " },
        if b.current { "●" } else { " " },
        i + 1,
        b.len,
        fork,
    );
    let style = if selected { theme.selected } else { theme.text };
    let mut spans = vec![
        Span::styled(head, style),
        Span::styled(format!("  {:>8.2}", b.mean_logprob), theme.dim),
    ];
    if b.class_choices > 0 {
        let mark = crate::fmt::FORCED_MARK;
        let text = match b.class_choices {
            1 => format!("  {mark} the class chose a token"),
            n => format!("  {mark} the class chose {n} tokens"),
        };
        spans.push(Span::styled(text, theme.forced));
    }
    Line::from(spans)
}

/// The generated step at which a branch leaves the current path, counted from 1: its first token of
/// its own is at absolute position `fork_position`, and the first generated token (position
/// `prompt_len`) is step 1.
pub fn fork_step(b: &BranchInfo, prompt_len: usize) -> usize {
    crate::fmt::shown_step(b.fork_position.saturating_sub(prompt_len))
}

/// The text around a branch's fork: the end of the shared text (dim), the fork mark, then the
/// branch's own text, wrapped to `w`; a line break shows as ↵ and breaks the line. The shared part
/// takes at most half a line, so the fork and what follows it show.
fn fork_lines(b: &BranchInfo, w: usize, theme: &Theme) -> Vec<Line<'static>> {
    let width = w.saturating_sub(INDENT).max(8);
    let before = tail(
        &b.before_fork,
        if b.current { width * 2 } else { width / 2 },
    );
    let mut pieces = vec![(format!("…{before}"), theme.dim)];
    if !b.current {
        pieces.push((FORK_MARK.to_string(), theme.key));
        if b.forced_at_fork {
            pieces.push((crate::fmt::FORCED_MARK.to_string(), theme.forced));
        }
        pieces.push((b.after_fork.clone(), theme.text));
    }
    wrap(&pieces, width, theme)
        .into_iter()
        .take(FORK_LINES)
        .map(|mut spans| {
            spans.insert(0, Span::raw(" ".repeat(INDENT)));
            Line::from(spans)
        })
        .collect()
}

/// The last `width` columns of `text`'s last line (what leads up to the fork).
fn tail(text: &str, width: usize) -> String {
    let mut out: Vec<char> = vec![];
    let mut used = 0;
    for c in text.chars().rev() {
        let cw = c.width().unwrap_or(0);
        if c == '\n' || used + cw > width {
            break;
        }
        used += cw;
        out.push(c);
    }
    out.into_iter().rev().collect()
}

/// Styled pieces wrapped at `width` columns, at a space where one is in reach; `\n` shows as ↵ and
/// breaks the line.
fn wrap(pieces: &[(String, Style)], width: usize, theme: &Theme) -> Vec<Vec<Span<'static>>> {
    let chars: Vec<(char, Style)> = pieces
        .iter()
        .flat_map(|(t, s)| t.chars().map(move |c| (c, *s)))
        .collect();
    let paragraphs: Vec<&[(char, Style)]> = chars.split(|(c, _)| *c == '\n').collect();
    let mut lines = vec![];
    for (i, para) in paragraphs.iter().enumerate() {
        let mut rest = *para;
        loop {
            let (mut n, mut used) = (0, 0);
            while n < rest.len() {
                let cw = visible(&rest[n].0.to_string()).width();
                if used + cw > width {
                    break;
                }
                used += cw;
                n += 1;
            }
            if n < rest.len() {
                if let Some(sp) = rest[..n].iter().rposition(|(c, _)| *c == ' ') {
                    n = n.min(sp + 1).max(1);
                }
            }
            lines.push(spans_of(&rest[..n.max(1).min(rest.len())]));
            rest = &rest[n.max(1).min(rest.len())..];
            if rest.is_empty() {
                break;
            }
        }
        if i + 1 < paragraphs.len() {
            lines.last_mut().unwrap().push(Span::styled("↵", theme.dim));
        }
    }
    lines
}

/// Characters grouped into one span per run of the same style, made visible.
fn spans_of(chars: &[(char, Style)]) -> Vec<Span<'static>> {
    let mut spans: Vec<Span<'static>> = vec![];
    for &(c, style) in chars {
        let shown = visible(&c.to_string());
        match spans.last_mut() {
            Some(last) if last.style == style => last.content.to_mut().push_str(&shown),
            _ => spans.push(Span::styled(shown, style)),
        }
    }
    spans
}

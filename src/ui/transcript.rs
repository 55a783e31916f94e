//! The transcript panel: prompt and generated tokens with visible boundaries, coloured by probability.

mod info;

use info::info_line;

use super::theme::Theme;
use crate::app::keymap::{hint_key, Action, Mode};
use crate::app::{App, TokenSpot};
use crate::fmt::{visible, FORCED_MARK};
use crate::protocol::{SessionView, Source, TokenKind};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let mut block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(" Transcript ", theme.title));
    let Some(session) = app.session.as_ref() else {
        let text = super::status::busy_text(app).unwrap_or_else(|| match &app.model {
            // The model is loaded, and what failed was reading a prompt or opening a session.
            Some(_) => {
                let p = crate::app::keymap::hint_key(
                    crate::app::keymap::Mode::Normal,
                    crate::app::keymap::Action::OpenPrompt,
                );
                format!("no text yet: see the status line below, or {p} to type a prompt")
            }
            None => "no model loaded: see the status line below".into(),
        });
        let p = Paragraph::new(Line::styled(text, theme.dim)).block(block);
        frame.render_widget(p, area);
        return;
    };
    block = bottom_titles(block, session, area, theme);
    let inner = block.inner(area);
    if inner.height == 0 || inner.width == 0 {
        frame.render_widget(block, area);
        return;
    }
    let text_height = inner.height.saturating_sub(1) as usize;
    let rows = wrap(&chunks(session, theme), inner.width as usize);
    let skip = first_shown(rows.len(), text_height, app.screen.scroll_back);
    let below = rows.len().saturating_sub(skip + text_height);
    let notes = scroll_notes(skip, below, app.prompt.chat);
    let alert = crate::app::lab::tip_loop(session)
        .map(|c| format!(" {} ", super::repetition::alert(&c, session)));
    let (alert, note) = top_notes(area.width as usize, alert, &notes);
    if !note.is_empty() {
        block = block.title_top(Line::styled(note, theme.dim).right_aligned());
    }
    if let Some(alert) = alert {
        // The repeated spans are underlined; the loop at the tip is named on the border.
        block = block.title_top(Line::styled(alert, theme.error).centered());
    }
    frame.render_widget(block, area);
    let mut shown: Vec<Line> = rows
        .iter()
        .skip(skip)
        .take(text_height)
        .map(|row| to_line(row))
        .collect();
    while shown.len() < text_height {
        shown.push(Line::default());
    }
    shown.push(info_line(app, theme, inner.width as usize));
    frame.render_widget(Paragraph::new(shown), inner);
}

/// Rows the transcript would like at this width: its text, the info line and two borders.
pub fn height(app: &App, width: u16) -> u16 {
    let Some(session) = app.session.as_ref() else {
        return 3;
    };
    let theme = Theme::new(app.screen.theme);
    let rows = wrap(&chunks(session, &theme), width.saturating_sub(2) as usize).len();
    (rows as u16).saturating_add(3)
}

/// Draws the bottom border's titles: the token counts, and the colour key where the border has room
/// for it beside them.
fn bottom_titles(
    mut block: Block<'static>,
    session: &SessionView,
    area: Rect,
    theme: &Theme,
) -> Block<'static> {
    let generated = session.tokens.len().saturating_sub(session.prompt_len);
    let counts = format!(
        " prompt {} · {generated} generated ",
        crate::fmt::tokens(session.prompt_len)
    );
    // The colour key, where the border has room for it beside the counts: in full, else short.
    let forms = if theme.has_color() {
        [(" colour = p when chosen: ", " "), (" colour = p: ", " ")]
    } else {
        [(" ", " when chosen "), (" ", " ")]
    };
    block = block.title_bottom(Line::styled(counts.clone(), theme.dim));
    let room = (area.width as usize).saturating_sub(counts.width() + 4);
    let key = forms.iter().map(|&(lead, tail)| {
        let mut key = vec![Span::styled(lead, theme.dim)];
        key.extend(super::legend::prob_key(theme));
        key.push(Span::styled(tail, theme.dim));
        Line::from(key).right_aligned()
    });
    if let Some(key) = key.into_iter().find(|k| k.width() <= room) {
        block = block.title_bottom(key);
    }
    block
}

/// The scroll note at the top right in its three forms, from the fullest to the shortest: the lines
/// `above` and `below` the view, and whether the prompt went through the `chat` template.
fn scroll_notes(above: usize, below: usize, chat: bool) -> [String; 3] {
    let mut notes = [vec![], vec![], vec![]];
    for (n, arrow, dir, action) in [
        (above, "↑", "above", Action::ScrollUp),
        (below, "↓", "below", Action::ScrollBottom),
    ] {
        if n > 0 {
            let key = hint_key(Mode::Normal, action);
            notes[0].push(format!("{arrow} {n} more {dir} ({key})"));
            notes[1].push(format!("{arrow} {n} more {dir}"));
            notes[2].push(format!("{arrow}{n}"));
        }
    }
    if chat {
        notes[0].push("chat template".into());
        notes[1].push("chat template".into());
        notes[2].push("chat".into());
    }
    notes.map(|n| match n.is_empty() {
        true => String::new(),
        false => format!(" {} ", n.join(" · ")),
    })
}

/// The top border's notes, made not to collide: the loop alert centred (after the panel's title) and
/// the first form of the scroll note that leaves it whole at the right. When none does, the alert
/// stays and the note goes; when the alert cannot fit beside the title, it goes (the status bar has it).
fn top_notes(width: usize, alert: Option<String>, notes: &[String]) -> (Option<String>, String) {
    let inner = width.saturating_sub(2);
    let title = " Transcript ".width() + 1;
    let fits = |alert: &str, note: &str| {
        let start = inner.saturating_sub(alert.width()) / 2;
        let gap = usize::from(!note.is_empty());
        start >= title && start + alert.width() + gap + note.width() <= inner
    };
    match alert {
        Some(a) if fits(&a, "") => {
            let note = notes
                .iter()
                .find(|n| fits(&a, n))
                .cloned()
                .unwrap_or_default();
            (Some(a), note)
        }
        _ => (None, notes[0].clone()),
    }
}

/// The first wrapped line in view: the newest lines stay in view unless the user scrolled back (the
/// scroll is clamped here, where the number of lines is known).
fn first_shown(lines: usize, text_height: usize, scroll_back: usize) -> usize {
    let bottom = lines.saturating_sub(text_height);
    bottom - scroll_back.min(bottom)
}

/// Where each token on screen was drawn when the transcript panel is drawn in `area` (the same wrapping
/// and scroll as [`draw`], so a click lands on what it shows), and how far back the transcript can
/// scroll: its lines past one screenful.
pub fn measure(app: &App, theme: &Theme, area: Rect) -> (Vec<TokenSpot>, usize) {
    let Some(session) = app.session.as_ref() else {
        return (vec![], 0);
    };
    let inner = super::layout::inset(area);
    // The last row is the info line.
    let text_height = inner.height.saturating_sub(1) as usize;
    let rows = wrap(&chunks(session, theme), inner.width as usize);
    let skip = first_shown(rows.len(), text_height, app.screen.scroll_back);
    let mut spots = vec![];
    for (y, line) in rows.iter().skip(skip).take(text_height).enumerate() {
        let mut x = inner.x;
        for piece in line {
            if let Some(position) = piece.token {
                spots.push(TokenSpot {
                    x,
                    y: inner.y + y as u16,
                    width: piece.width as u16,
                    position,
                });
            }
            x = x.saturating_add(piece.width as u16);
        }
    }
    (spots, rows.len().saturating_sub(text_height))
}

/// One styled piece of a token (with the token's position; `None` for separators and the end mark),
/// or a line break.
enum Chunk {
    Text(String, Style, Option<usize>),
    Break,
}

/// Generated tokens that repeat an n-gram of this length seen earlier are underlined.
pub const REPEAT_NGRAM: usize = 3;

fn chunks(session: &SessionView, theme: &Theme) -> Vec<Chunk> {
    let tokens = &session.tokens;
    let ids: Vec<u32> = tokens.iter().map(|t| t.token.id).collect();
    let repeated = crate::analysis::repeated_ngrams(&ids, REPEAT_NGRAM, session.prompt_len);
    let mut out = Vec::new();
    let last = tokens.len().saturating_sub(1);
    for (i, t) in tokens.iter().enumerate() {
        let mut style = match (t.token.kind, t.source) {
            (TokenKind::Special, _) => theme.special,
            (TokenKind::Bytes, _) => theme.bytes,
            (_, Source::Prompt) => theme.prompt,
            _ => theme.prob(t.prob),
        };
        if t.source.by_hand() {
            style = style.patch(theme.forced);
        }
        style = theme.token_bg(i).patch(style);
        if repeated[i] {
            style = style.add_modifier(Modifier::UNDERLINED);
        }
        if i == last {
            style = style.patch(theme.cursor);
        }
        if !theme.has_color() && i > 0 {
            out.push(Chunk::Text("|".into(), theme.dim, None));
        }
        let at = Some(i);
        // A newline inside a token shows as ↵ and then really breaks the line.
        let mut text = visible(&t.token.text);
        if t.source.by_hand() {
            // The flag goes after the token's leading spaces, against its own first character, so it
            // cannot be read as marking the word before.
            let lead = text.len() - text.trim_start_matches(' ').len();
            if lead > 0 {
                out.push(Chunk::Text(text[..lead].to_string(), style, at));
                text = text[lead..].to_string();
            }
            out.push(Chunk::Text(FORCED_MARK.into(), theme.forced, at));
        }
        let parts: Vec<&str> = text.split('↵').collect();
        for (j, part) in parts.iter().enumerate() {
            if j > 0 {
                out.push(Chunk::Text("↵".into(), style, at));
                out.push(Chunk::Break);
            }
            if !part.is_empty() {
                out.push(Chunk::Text((*part).into(), style, at));
            }
        }
    }
    out.push(Chunk::Text("▌".into(), theme.newest, None));
    out
}

/// One styled piece that textwrap places as a unit: a whole token, so lines break only at token
/// boundaries (a token wider than the line has already been cut into line-sized pieces).
#[derive(Debug)]
struct Piece {
    text: String,
    style: Style,
    width: usize,
    /// The position of the token it shows.
    token: Option<usize>,
}

fn to_line(row: &[Piece]) -> Line<'static> {
    Line::from(
        row.iter()
            .map(|p| Span::styled(p.text.clone(), p.style))
            .collect::<Vec<_>>(),
    )
}

/// Wraps the chunks with textwrap's first-fit algorithm at token boundaries between words (`words`);
/// a newline token ends a paragraph. Each row is the pieces it shows, left to right.
fn wrap(chunks: &[Chunk], width: usize) -> Vec<Vec<Piece>> {
    let width = width.max(1);
    let mut lines: Vec<Vec<Piece>> = vec![];
    let mut paragraph: Vec<Piece> = vec![];
    let flush = |paragraph: &mut Vec<Piece>, lines: &mut Vec<Vec<Piece>>| {
        let words = words(paragraph, width);
        let breaks: Vec<usize> = textwrap::wrap_algorithms::wrap_first_fit(&words, &[width as f64])
            .iter()
            .map(|row| row.iter().map(|w| w.pieces).sum())
            .collect();
        if breaks.is_empty() {
            lines.push(vec![]);
        }
        let mut rest = std::mem::take(paragraph).into_iter();
        for n in breaks {
            lines.push(rest.by_ref().take(n).collect());
        }
    };
    for chunk in chunks {
        match chunk {
            Chunk::Break => flush(&mut paragraph, &mut lines),
            Chunk::Text(text, style, token) => {
                for piece in split_to_width(text, width) {
                    let w = piece.width();
                    paragraph.push(Piece {
                        text: piece,
                        style: *style,
                        width: w,
                        token: *token,
                    });
                }
            }
        }
    }
    flush(&mut paragraph, &mut lines);
    lines
}

/// Pieces a line may not break between, wrapped as one: a word or a number made of several tokens
/// ("3" "1" "1" million: at 100x30 a row had ended "approximately 3" over "11 million"), with
/// the punctuation after it. A run wider than the line breaks between its tokens.
#[derive(Debug)]
struct Word {
    width: usize,
    pieces: usize,
}

impl textwrap::core::Fragment for Word {
    fn width(&self) -> f64 {
        self.width as f64
    }
    fn whitespace_width(&self) -> f64 {
        0.0
    }
    fn penalty_width(&self) -> f64 {
        0.0
    }
}

/// `paragraph`'s pieces grouped into `Word`s: a piece joins the one before when that one ends in
/// neither a space nor a line's end and it starts with a letter, a digit or closing punctuation.
fn words(paragraph: &[Piece], width: usize) -> Vec<Word> {
    let joins = |before: &Piece, next: &Piece| {
        let end = before
            .text
            .chars()
            .last()
            .is_some_and(|c| !c.is_whitespace());
        let start = next.text.chars().next();
        end && start.is_some_and(|c| c.is_alphanumeric() || ".,;:!?)%'\"”’".contains(c))
    };
    let mut out: Vec<Word> = Vec::new();
    for (i, p) in paragraph.iter().enumerate() {
        match out.last_mut() {
            Some(w) if i > 0 && joins(&paragraph[i - 1], p) && w.width + p.width <= width => {
                w.width += p.width;
                w.pieces += 1;
            }
            _ => out.push(Word {
                width: p.width,
                pieces: 1,
            }),
        }
    }
    out
}

/// Cuts a token wider than the line into line-sized pieces (by characters); others pass whole.
fn split_to_width(text: &str, width: usize) -> Vec<String> {
    if text.width() <= width {
        return vec![text.to_string()];
    }
    let (mut out, mut cur, mut used) = (vec![], String::new(), 0);
    for c in text.chars() {
        let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + cw > width && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
            used = 0;
        }
        cur.push(c);
        used += cw;
    }
    out.push(cur);
    out
}

#[cfg(test)]
mod tests;

//! The speculative round panel (`d` turns rounds on; `Tab` when a draft is loaded): the tokens the
//! draft proposed, greyed; the model's check of each, ✓ or ✗, with p, q and min(1, p/q); at a
//! rejection the residual max(0, p − q) the next token was drawn from (or the bonus token when every
//! draft was kept); what the round cost beside the plain steps it replaced; and the rounds so far,
//! with the acceptance at which they would pay. Every figure is the engine's, measured.
//!
//! A short panel (80x24 leaves it eight lines) takes shorter forms, one at a time, until the round
//! fits ([`fitted`]): the round's cost and the rounds so far are the last thing it gives up, as a
//! lesson's "does it pay?" points at them.

mod cost;
mod rows;

use super::theme::Theme;
use crate::app::App;
use crate::protocol::{DraftInfo, RoundReport};
use cost::{cost_lines, tally_lines};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;
use rows::{drafted_row, header, headline, last_line, marks_line, unchecked_line, why_rejected};

/// Below this inner width the table drops its u column and the long words.
const WIDE: usize = 64;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let title = match &app.speculative.last {
        // Counted as the tally under it counts: the rounds on this text since `d` (the lesson's
        // tenth round of the session had stood over "6 rounds: 50% kept").
        Some(_) if app.round_on_path() && app.speculative.tally.rounds > 0 => {
            format!(" Speculative round {} ", app.speculative.tally.rounds)
        }
        Some(r) => format!(" Speculative round {} ", r.round + 1),
        None => " Speculative decoding ".into(),
    };
    let mut block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(title, theme.title));
    let state = if app.speculative.on { "on" } else { "off" };
    block =
        block.title_bottom(Line::styled(format!(" d rounds {state} "), theme.key).right_aligned());
    let inner = block.inner(area);
    let Some(draft) = app.draft() else {
        frame.render_widget(block, area);
        return;
    };
    let (width, height) = (inner.width as usize, inner.height as usize);
    let lines = match &app.speculative.last {
        _ if app.distribution_hidden() => vec![Line::styled(
            "Hidden until the class has guessed (predict-then-reveal).",
            theme.dim,
        )],
        None => intro(draft, app, width, theme),
        Some(r) => fitted(app, r, draft, width, height, theme),
    };
    if lines.len() > height {
        block = block.title_bottom(Line::styled(" … taller: more ", theme.dim).left_aligned());
    }
    frame.render_widget(block, area);
    frame.render_widget(Paragraph::new(lines), inner);
}

/// Before the first round: what a round does under the sampler in force (greedy keeps a guess while it
/// is the model's top token; sampling keeps it with probability min(1, p/q)), and how to run one.
fn intro(d: &DraftInfo, app: &App, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let rule = if app.sampler.settings.is_greedy() {
        "keeps each guess while it is the token the model itself would pick (greedy)"
    } else {
        "keeps each with probability min(1, p/q)"
    };
    let how = if app.speculative.on {
        "Press space for a round."
    } else {
        "Press d, then space for a round."
    };
    // Greedy's rounds write plain greedy's text; a sampler's draw their own tokens with the model's
    // odds, so the same seed may write another text than plain steps do.
    let same = if app.sampler.settings.is_greedy() {
        "The text is plain greedy's: the draft changes the cost, never the output."
    } else {
        "Each token still comes with the model's own odds, though not the plain step's draw \
         (the same seed may write another text): the draft changes the cost, never the odds."
    };
    let text = format!(
        "The draft, {}, guesses the next {} tokens one by one; the model checks them all in \
         one pass and {rule}. {same} {how}",
        d.in_words(),
        d.k
    );
    textwrap::wrap(&text, width.max(10))
        .into_iter()
        .map(|l| Line::styled(l.into_owned(), theme.text))
        .collect()
}

/// The round in the fullest form that fits `height` lines: the whole table first; then, one at a
/// time, the rows never checked as one line, a greedy round's table as one line of marks (its p, q and
/// keep only ever read 1.00 or 0.00), the last token without the distribution it was drawn from, the
/// never-checked line gone, the rejection's why gone, the table's header gone. The cost and the
/// rounds so far stay to the end. What still does not fit is cut at the bottom (the border says so).
fn fitted(
    app: &App,
    r: &RoundReport,
    d: &DraftInfo,
    width: usize,
    height: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let mut lines = vec![];
    for shorter in 0..=SHORTER_FORMS {
        lines = round_lines(app, r, d, width, shorter, theme);
        if lines.len() <= height {
            break;
        }
    }
    lines
}

/// How many shorter forms [`fitted`] can take, in order.
const SHORTER_FORMS: u8 = 6;

/// The round's lines in its `shorter`-th shorter form (0: the whole table).
fn round_lines(
    app: &App,
    r: &RoundReport,
    d: &DraftInfo,
    width: usize,
    shorter: u8,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let wide = width >= WIDE;
    let marks_only = r.greedy && shorter >= 2;
    let mut lines = vec![headline(app, r, d, width, theme)];
    if marks_only {
        lines.extend(marks_line(r, width, theme));
    } else {
        if shorter < 6 {
            lines.push(Line::styled(header(wide, width), theme.dim));
        }
        for (i, t) in r.drafted.iter().enumerate() {
            if t.verdict != crate::protocol::Verdict::Unchecked || shorter == 0 {
                lines.push(drafted_row(i, t, r.greedy, wide, width, theme));
            }
        }
        if (1..4).contains(&shorter) {
            lines.extend(unchecked_line(r, width, theme));
        }
    }
    // Under greedy the last line names the rejected position itself.
    if !wide && !r.greedy && shorter < 5 {
        lines.extend(why_rejected(r, width, theme));
    }
    lines.extend(last_line(r, shorter < 3, width, theme));
    lines.extend(cost_lines(r, wide, width, theme));
    lines.extend(tally_lines(
        &app.speculative.tally,
        d,
        r.drafted.len(),
        wide,
        width,
        theme,
    ));
    lines
}

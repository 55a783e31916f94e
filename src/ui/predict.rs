//! Predict-then-reveal on screen: the card that stands in for the hidden distribution (the question,
//! how to guess, the running score), and the line that says how the model rated the last guess.

use super::theme::Theme;
use crate::app::keymap::{hint_key, Action, Mode};
use crate::app::App;
use crate::fmt::{fit, pct, quoted};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Wrap};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

/// The distribution panel while it is hidden.
pub fn hidden(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let position = app.session.as_ref().map_or(0, |s| s.next.position);
    let block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(
            format!(" Next token · position {position} · hidden "),
            theme.title,
        ))
        .title_bottom(Line::styled(
            score_line_fit(app, area.width.saturating_sub(2) as usize),
            theme.dim,
        ));
    // The text starts one column in from the border.
    let inner = Rect {
        x: area.x + 1,
        width: area.width.saturating_sub(1),
        ..area
    };
    let lines = card_lines(app, theme);
    frame.render_widget(block, area);
    let text = Rect {
        y: inner.y + 1,
        height: inner.height.saturating_sub(2),
        width: inner.width.saturating_sub(2),
        ..inner
    };
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), text);
}

/// What the hidden panel says: the question and how to answer it, or why it is hidden and how to
/// show it.
fn card_lines(app: &App, theme: &Theme) -> Vec<Line<'static>> {
    let search = hint_key(Mode::Normal, Action::OpenSearch);
    let reveal = hint_key(Mode::Normal, Action::ToggleHidden);
    if app.awaiting_guess() {
        let question = app.question().unwrap_or("What comes next?");
        // A lesson's question about something else than the next token is answered in words.
        let other = app
            .lesson
            .as_ref()
            .and_then(|l| l.waiting())
            .filter(|q| !q.is_token());
        let how = match other {
            Some(q) => format!(
                "Your answer: {search}, then {}, then {}.",
                q.how_to_answer(),
                hint_key(Mode::Answer, Action::Submit)
            ),
            None => format!(
                "Your guess: {search}, type a word or a few, then {}.",
                hint_key(Mode::Search, Action::Submit)
            ),
        };
        vec![
            Line::styled(format!("? {question}"), theme.title),
            Line::default(),
            Line::styled(how, theme.text),
            Line::styled(
                format!(
                    "{reveal}: reveal without {}.",
                    if other.is_some() {
                        "an answer"
                    } else {
                        "a guess"
                    }
                ),
                theme.dim,
            ),
        ]
    } else if app.held_for_next_step() {
        let next = hint_key(Mode::Normal, Action::NextLessonStep);
        vec![
            Line::styled(
                "Held back: the next step asks the class for this token.",
                theme.title,
            ),
            Line::default(),
            Line::styled(
                format!("{next}: ask it · {reveal}: reveal it now."),
                theme.text,
            ),
        ]
    } else {
        vec![
            Line::styled("Hidden for a question asked aloud.", theme.title),
            Line::default(),
            Line::styled(format!("{reveal}: reveal it."), theme.text),
        ]
    }
}

/// The running score, for a panel's border: " score: 2/5 top-1 · … ", or empty before any guess.
pub fn score_line(app: &App) -> String {
    score_line_fit(app, usize::MAX)
}

/// The running score in at most `width` columns: the parts that fit, most important first (top-1,
/// top-5, mean rank, log-probs), each whole; "score" is dropped before the top-1 count would be.
pub fn score_line_fit(app: &App, width: usize) -> String {
    let parts = app.predict.score.parts();
    if parts.is_empty() {
        return String::new();
    }
    for lead in [" score: ", " "] {
        for n in (1..=parts.len()).rev() {
            let line = format!("{lead}{} ", parts[..n].join(" · "));
            if line.width() <= width {
                return line;
            }
        }
    }
    String::new()
}

/// The reveal of the guess at the position on screen, if the class guessed there: for the
/// distribution panel's border. " your guess ⟨␣Paris⟩: 76.8%, rank 1 · 0.4 bits "; a guess of several
/// tokens says how many, and that the rank is its first token's. Where the line does not fit, the bits
/// go first, then the rank.
pub fn reveal_line(app: &App, width: usize) -> Option<String> {
    let r = app.predict.last.as_ref()?;
    if app.session.as_ref()?.next.position != r.position {
        return None;
    }
    let g = &r.score;
    let n = g.tokens.len();
    let count = match n {
        1 => String::new(),
        n => format!(" ({n} tokens)"),
    };
    let head = format!(
        " your guess {}{count}: {}",
        quoted(&g.text),
        pct(g.prob() as f32)
    );
    let rank = format!(
        ", rank {}{}",
        g.first_rank() + 1,
        if n == 1 { "" } else { " (first token)" }
    );
    let bits = format!(" · {:.1} bits", -g.logprob / std::f64::consts::LN_2);
    let lines = [
        format!("{head}{rank}{bits} "),
        format!("{head}{rank} "),
        format!("{head} "),
    ];
    let fits = lines.iter().find(|l| l.width() <= width);
    Some(fits.cloned().unwrap_or_else(|| fit(&lines[2], width)))
}

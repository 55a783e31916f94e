//! The class panel (`--class`): how to join, how many have guessed (never what) while the question is
//! open, and at the reveal the class's guesses beside the model's probability of each, the two
//! entropies, the share that guessed the model's top choice, the log-probabilities each way, and the
//! leaderboard. The join card (`J`) shows the QR code large.

use super::layout::centered;
use super::theme::Theme;
use crate::app::{App, ThemeKind};
use crate::fmt::{bar, fit, pad, pct, quoted_token};
use crate::protocol::class::{ClassPoll, JoinCard};
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;

/// Leaderboard rows shown at most.
const BOARD: usize = 5;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let Some(class) = &app.class else {
        return;
    };
    let block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(
            format!(" Class · join code {} ", class.card.code),
            theme.title,
        ))
        .title_bottom(Line::styled(" C sample · J join · W board ", theme.key).right_aligned());
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let students = class.roster.len();
    // The address whole (a student types it); how many joined is on the status line.
    let mut lines = vec![Line::styled(fit(&class.card.url, width), theme.key)];
    let pos = app.session.as_ref().map(|s| s.next.position);
    if let Some(poll) = app.class_poll() {
        lines.extend(reveal_lines(poll, width, theme));
        if !class.hide_board {
            lines.extend(board_lines(app, width, theme));
        }
    } else if class.closed.is_some() {
        lines.push(Line::styled("Scoring the class's guesses…", theme.dim));
    } else if app.awaiting_guess() {
        let count = class
            .guessed
            .filter(|g| Some(g.0) == pos)
            .map_or(0, |g| g.1);
        lines.push(Line::styled(
            format!("{count} of {students} have guessed"),
            theme.text,
        ));
        let frac = count as f32 / students.max(1) as f32;
        lines.push(Line::styled(bar(frac, width.min(40)), theme.bar));
        lines.push(Line::styled(
            "What they guessed stays hidden until the reveal (h).",
            theme.dim,
        ));
        let room = inner.height as usize > lines.len() + class.card.qr.len();
        if room && qr_width(&class.card) <= width {
            lines.extend(qr_lines(&class.card, app.screen.theme));
        }
    } else {
        lines.push(Line::styled(
            "No question at this step: the class guesses where the distribution is hidden.",
            theme.dim,
        ));
    }
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}

/// The class beside the model at the reveal.
fn reveal_lines(poll: &ClassPoll, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let n = poll.guesses();
    let mut lines = vec![];
    let Some(top) = poll.model_top1() else {
        return lines;
    };
    if n == 0 {
        lines.push(Line::styled("Nobody guessed this one.", theme.dim));
    } else {
        lines.extend(guess_rows(poll, width, theme));
    }
    let hits = (poll.share_top1() * f64::from(n)).round();
    lines.push(Line::styled(
        format!(
            "model's top {} {}: guessed by {hits} of {n}",
            quoted_token(&top.token),
            pct(top.prob)
        ),
        theme.text,
    ));
    if n > 0 {
        lines.push(Line::styled(
            format!(
                "entropy: class {:.1} bits · model {:.1} bits ({:.2} nats)",
                poll.class_entropy_bits(),
                poll.model_entropy_bits(),
                poll.model_entropy
            ),
            theme.text,
        ));
    }
    if let Some(lp) = poll.model_logprob_of_class() {
        let back = match poll.class_logprob_of_model() {
            Some(c) => format!("{c:.2}"),
            None => "−∞ (nobody)".into(),
        };
        lines.push(Line::styled(
            format!("log p: model of the class {lp:.2} · class of the model's top {back} nats"),
            theme.dim,
        ));
    }
    lines
}

/// The class's guesses, a row each (at most six): the token, how many, their share, and the model's
/// probability and rank of it; the header first.
fn guess_rows(poll: &ClassPoll, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let n = poll.guesses();
    let mut lines = vec![];
    // token, count, share bar, the model's probability and rank: the bar gives way first.
    let bar_w = if width < 50 { 5 } else { 10 };
    let tok = width.saturating_sub(bar_w + 16).clamp(8, 18);
    lines.push(Line::styled(
        format!(
            "{} {:>3}  {} {:>6}",
            pad("the class", tok),
            "n",
            pad("share", bar_w),
            "model"
        ),
        theme.dim,
    ));
    for r in poll.rows.iter().take(6) {
        let share = r.count as f32 / n as f32;
        let style = if r.guess.rank == 0 {
            theme.planned
        } else {
            theme.text
        };
        lines.push(Line::from(vec![
            Span::styled(pad(&quoted_token(&r.guess.token), tok), style),
            Span::styled(format!(" {:>3}  ", r.count), theme.text),
            Span::styled(pad(&bar(share, bar_w), bar_w), theme.bar),
            Span::styled(
                format!(" {:>6}", pct(r.guess.prob)),
                theme.prob(r.guess.prob),
            ),
            Span::styled(format!(" #{}", r.guess.rank + 1), theme.dim),
        ]));
    }
    if poll.rows.len() > 6 {
        lines.push(Line::styled(
            format!("… and {} more tokens", poll.rows.len() - 6),
            theme.dim,
        ));
    }
    lines
}

/// The leaderboard: most top-1 first, then most top-5, then the least surprise.
fn board_lines(app: &App, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let Some(class) = &app.class else {
        return vec![];
    };
    let mut rows: Vec<_> = class
        .roster
        .values()
        .filter(|s| s.score.guesses > 0)
        .collect();
    rows.sort_by(|a, b| a.score.ahead_of(&b.score));
    if rows.is_empty() {
        return vec![];
    }
    let mut lines = vec![Line::styled("leaderboard (W hides it)", theme.dim)];
    for s in rows.iter().take(BOARD) {
        let sc = &s.score;
        let text = format!(
            "{:>2} {} {}/{} top-1 · {} top-5 · {:.1} bits",
            sc.place,
            pad(&fit(&s.name, 12), 12),
            sc.top1,
            sc.guesses,
            sc.top5,
            sc.surprise_bits
        );
        lines.push(Line::styled(fit(&text, width), theme.text));
    }
    lines
}

fn qr_width(card: &JoinCard) -> usize {
    card.qr.first().map_or(0, |l| l.chars().count())
}

/// The QR code's rows: dark modules in black on white, whatever the theme (a reader needs the
/// contrast); without colours, the terminal's own.
fn qr_lines(card: &JoinCard, kind: ThemeKind) -> Vec<Line<'static>> {
    let style = match kind {
        ThemeKind::NoColor => Style::default(),
        _ => Style::default().fg(Color::Black).bg(Color::White),
    };
    card.qr
        .iter()
        .map(|l| Line::styled(l.clone(), style))
        .collect()
}

/// The join card (`J`): the QR code large, the address and the code, over the screen.
pub fn card(frame: &mut Frame, screen: Rect, app: &App, theme: &Theme) {
    let Some(class) = &app.class else {
        return;
    };
    let c = &class.card;
    let rows = screen.height as usize;
    let mut lines: Vec<Line> = vec![];
    // The code and the address first; the QR code when it fits with them; the notes when there is room.
    let qr = c.qr.len() + 4 <= rows && qr_width(c) + 2 <= screen.width as usize;
    if qr {
        lines.extend(qr_lines(c, app.screen.theme));
    }
    lines.push(Line::styled(format!("open {}", c.url), theme.key));
    lines.push(Line::styled(format!("join code {}", c.code), theme.title));
    let mut notes = vec![];
    if !qr {
        notes.push(Line::styled(
            "(a taller terminal shows the QR code)",
            theme.dim,
        ));
    }
    if let Some(port) = c.local_only {
        notes.push(Line::styled(
            format!("only this machine can join: --class 0.0.0.0:{port} lets the room in"),
            theme.dim,
        ));
    }
    notes.push(Line::styled(
        format!(
            "{} of {} joined · J closes this card",
            class.roster.len(),
            c.max
        ),
        theme.dim,
    ));
    for note in notes {
        if lines.len() + 3 <= rows {
            lines.push(note);
        }
    }
    let w = lines.iter().map(Line::width).max().unwrap_or(20) as u16 + 2;
    let h = lines.len() as u16 + 2;
    let area = centered(screen, w, h);
    frame.render_widget(Clear, area);
    let block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(" Join the class ", theme.title));
    frame.render_widget(Paragraph::new(lines).centered().block(block), area);
}

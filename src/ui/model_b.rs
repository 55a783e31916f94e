//! The A/B panel (one of the side panels, `Tab`, when `--model-b` or `--requant-b` loaded a second
//! model): both next-token distributions side by side at the tip, with where their top-1 differs
//! marked; the Jensen–Shannon divergence between them; and, along the path, each step's divergence and
//! whether the two agreed on the top token, with the running count of flips.

use super::model_b_label;
use super::theme::Theme;
use crate::app::App;
use crate::fmt::{bar, fit, pad, pad_left, pct, quoted_token, JS_MAX};
use crate::protocol::{AbView, Candidate, SessionView, TokenView};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

/// Rows under the two lists: the divergence strip (its label, the JS levels, the flip marks).
const STRIP_ROWS: u16 = 3;
const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let Some((view, ab)) = app.session.as_ref().and_then(|v| Some((v, v.ab.as_ref()?))) else {
        let block = Block::bordered()
            .border_style(theme.border)
            .title(Span::styled(" Model B ", theme.title));
        frame.render_widget(block, area);
        return;
    };
    let (title, right) = titles(ab, area.width as usize);
    let border = (area.width as usize).saturating_sub(2);
    let mut block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(title, theme.title));
    if !right.is_empty() {
        block = block.title_top(Line::styled(right, theme.key).right_aligned());
    }
    if let Some(note) = model_b_label::footer(ab, border) {
        block = block.title_bottom(Line::styled(note, theme.dim));
    }
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if app.distribution_hidden() {
        let hidden = "Hidden until the class has guessed (predict-then-reveal).";
        frame.render_widget(Paragraph::new(Line::styled(hidden, theme.dim)), inner);
        return;
    }
    let strip = STRIP_ROWS.min(inner.height.saturating_sub(3));
    let head_rows = 1 + u16::from(ab.by_text);
    let [head, lists, bottom] = Layout::vertical([
        Constraint::Length(head_rows),
        Constraint::Fill(1),
        Constraint::Length(strip),
    ])
    .areas(inner);
    let mut head_lines = vec![headline(ab, head.width as usize, theme)];
    if ab.by_text {
        head_lines.push(b_reads(ab, head.width as usize, theme));
    }
    frame.render_widget(Paragraph::new(head_lines), head);
    let rows = lists.height as usize;
    if lists.width >= 60 {
        let [left, right] = Layout::horizontal([Constraint::Percentage(50), Constraint::Fill(1)])
            .spacing(1)
            .areas(lists);
        frame.render_widget(
            Paragraph::new(a_rows(view, ab, rows, left.width, theme)),
            left,
        );
        frame.render_widget(
            Paragraph::new(b_rows(view, ab, rows, right.width, theme)),
            right,
        );
    } else {
        // No room for two lists: B's, with what A gives each of its tokens.
        frame.render_widget(
            Paragraph::new(b_with_a(view, ab, rows, lists.width, theme)),
            lists,
        );
    }
    frame.render_widget(Paragraph::new(strip_lines(ab, bottom.width, theme)), bottom);
}

/// The top border's two titles, what B is on the left and the tip's JS and flips on the right, the
/// longest forms that fit beside each other (the right one gives way first, then goes).
fn titles(ab: &AbView, width: usize) -> (String, String) {
    let border = width.saturating_sub(2);
    let mut rights = vec![];
    if let Some(tip) = ab.tip() {
        let (n, flips) = (ab.steps.len(), ab.flips());
        rights.push(format!(" JS {:.3} · top-1 flips {flips} of {n} ", tip.js));
        rights.push(format!(" JS {:.3} · flips {flips}/{n} ", tip.js));
        rights.push(format!(" JS {:.3} ", tip.js));
    }
    rights.push(String::new());
    for right in rights {
        let room = if right.is_empty() {
            0
        } else {
            right.width() + 1
        };
        if let Some(title) = model_b_label::title(ab, border, room) {
            return (title, right);
        }
    }
    (" B ".into(), String::new())
}

/// What the two models would pick next, and whether they agree; or why B could not be read. In
/// `width` columns the figures give way whole, never cut ("B ⟨␣The⟩ 13." had read as 13%): a shared
/// top token said once, then the percentages dropped; differing ones, the percentages, then A's.
fn headline<'a>(ab: &AbView, width: usize, theme: &Theme) -> Line<'a> {
    if let Some(e) = &ab.error {
        return Line::styled(e.clone(), theme.error);
    }
    let Some(tip) = ab.tip() else {
        return Line::default();
    };
    let verdict = if tip.same_top1 {
        Span::styled(" same top-1 ", theme.ok_badge)
    } else {
        Span::styled(" top-1 differs ", theme.warn_badge)
    };
    let (a, b) = (quoted_token(&tip.a_top), quoted_token(&tip.b_top));
    let (pa, pb) = (pct(tip.a_top_prob), pct(tip.b_top_prob));
    let mut forms = vec![format!("  A {a} {pa} · B {b} {pb}")];
    if tip.same_top1 {
        forms.push(format!("  {a}: A {pa} · B {pb}"));
        forms.push(format!("  A {pa} · B {pb}"));
    } else {
        // A's top is the next-token panel's first row; B's is the news.
        forms.extend([format!("  A {a} · B {b}"), format!("  B {b}")]);
    }
    // None at all where not even the shortest fits.
    forms.push(String::new());
    let figures = crate::fmt::first_fitting(&forms, width.saturating_sub(verdict.width()));
    Line::from(vec![verdict, Span::styled(figures, theme.text)])
}

/// With B's own vocabulary: how B's tokenizer splits the text so far, its newest tokens that fit.
fn b_reads<'a>(ab: &AbView, width: usize, theme: &Theme) -> Line<'a> {
    let label = "B reads: ";
    let room = width.saturating_sub(label.width() + 1);
    let mut shown: Vec<String> = vec![];
    let mut used = 0;
    for t in ab.b_tokens.iter().rev() {
        let q = quoted_token(t);
        if used + q.width() > room {
            shown.push("…".into());
            break;
        }
        used += q.width();
        shown.push(q);
    }
    shown.reverse();
    Line::from(vec![
        Span::styled(label, theme.dim),
        Span::styled(shown.concat(), theme.text),
    ])
}

/// One list row: rank, token, bar (where there is room), probability; `mark` styles the token.
fn row<'a>(i: usize, token: String, p: f32, w: u16, mark: Style, theme: &Theme) -> Line<'a> {
    let w = w as usize;
    let (tok_w, bar_w) = match w {
        w if w >= 30 => {
            let tok_w = (w.saturating_sub(10) / 2).clamp(4, 16);
            (tok_w, w.saturating_sub(tok_w + 10))
        }
        w => (w.saturating_sub(10), 0),
    };
    let mut spans = vec![
        Span::styled(format!("{:>2} ", i + 1), theme.dim),
        Span::styled(pad(&token, tok_w), mark),
    ];
    if bar_w > 0 {
        spans.push(Span::styled(pad(&bar(p, bar_w), bar_w), theme.bar));
    }
    spans.push(Span::styled(pad_left(&pct(p), 7), theme.text));
    Line::from(spans)
}

/// A's candidates (the session's own distribution, raw probabilities), under a column title; the row
/// B ranks first is marked when it is not A's top.
fn a_rows<'a>(
    view: &SessionView,
    ab: &AbView,
    rows: usize,
    w: u16,
    theme: &Theme,
) -> Vec<Line<'a>> {
    let b_top = ab.tip().map(|t| &t.b_top);
    let title = if w >= 30 {
        "A · the session's model"
    } else {
        "A"
    };
    let mut lines = vec![Line::styled(fit(title, w as usize), theme.title)];
    let shown: &[Candidate] = &view.next.candidates;
    for (i, c) in shown.iter().take(rows.saturating_sub(1)).enumerate() {
        let mark = if i > 0 && b_top.is_some_and(|b| same_token(ab, &c.token, b)) {
            theme.newest
        } else {
            theme.text
        };
        lines.push(row(i, quoted_token(&c.token), c.prob, w, mark, theme));
    }
    lines
}

/// B's candidates; its top row is flagged when A would pick another token.
fn b_rows<'a>(
    view: &SessionView,
    ab: &AbView,
    rows: usize,
    w: u16,
    theme: &Theme,
) -> Vec<Line<'a>> {
    let a_top = view.next.candidates.first().map(|c| &c.token);
    let title = format!("B · {}", model_b_label::kind(ab));
    let mut lines = vec![Line::styled(fit(&title, w as usize), theme.title)];
    for (i, c) in ab.next.iter().take(rows.saturating_sub(1)).enumerate() {
        let mark = b_mark(i, a_top.is_some_and(|a| same_token(ab, a, &c.token)), theme);
        lines.push(row(i, quoted_token(&c.token), c.prob, w, mark, theme));
    }
    lines
}

/// B's candidates with A's probability of each beside B's (the narrow layout).
fn b_with_a<'a>(
    view: &SessionView,
    ab: &AbView,
    rows: usize,
    w: u16,
    theme: &Theme,
) -> Vec<Line<'a>> {
    let a_top = view.next.candidates.first().map(|c| &c.token);
    let tok_w = (w as usize).saturating_sub(3 + 16);
    let head = format!("   {}{:>8}{:>8}", pad("B's top tokens", tok_w), "B", "A");
    let mut lines = vec![Line::styled(head, theme.title)];
    for (i, c) in ab.next.iter().take(rows.saturating_sub(1)).enumerate() {
        let mark = b_mark(i, a_top.is_some_and(|a| same_token(ab, a, &c.token)), theme);
        lines.push(Line::from(vec![
            Span::styled(format!("{:>2} ", i + 1), theme.dim),
            Span::styled(pad(&quoted_token(&c.token), tok_w), mark),
            Span::styled(pad_left(&pct(c.prob), 8), theme.text),
            Span::styled(pad_left(&a_pct(c), 8), theme.dim),
        ]));
    }
    lines
}

/// Whether a token of A's and one of B's are the same token: the same id with one vocabulary, the
/// same text with two (ids from two vocabularies say nothing about each other).
fn same_token(ab: &AbView, a: &TokenView, b: &TokenView) -> bool {
    match ab.by_text {
        true => a.text == b.text && a.kind == b.kind,
        false => a.id == b.id,
    }
}

/// A's probability of one of B's candidates; `—` when A has no token of that text.
fn a_pct(c: &crate::protocol::AbCandidate) -> String {
    match c.a_rank {
        usize::MAX => "—".into(),
        _ => pct(c.a_prob),
    }
}

/// How B's row `i` is styled: its top row flagged when it is not A's top, A's top marked lower down.
fn b_mark(i: usize, is_a_top: bool, theme: &Theme) -> Style {
    match (i, is_a_top) {
        (0, false) => theme.warn_badge,
        (_, true) if i > 0 => theme.newest,
        _ => theme.text,
    }
}

/// Each step's JS as a level on the fixed scale 0 to ln 2 nats (the most it can be, so a level means
/// the same on every screen) and a `✗` where the top-1 differed, the newest steps that fit, oldest
/// first, ending at the tip.
fn strip_lines<'a>(ab: &AbView, width: u16, theme: &Theme) -> Vec<Line<'a>> {
    let w = width as usize;
    let steps = &ab.steps[ab.steps.len().saturating_sub(w)..];
    let max = steps.iter().map(|s| s.js).fold(0.0, f64::max);
    let level = |js: f64| LEVELS[((js / JS_MAX) * 7.0).round().clamp(0.0, 7.0) as usize];
    let over = if ab.by_text {
        " over the next character"
    } else {
        ""
    };
    let pass = match ab.b_pass {
        (n @ 1.., ms) => format!(" · B read {n} tok in {}", crate::fmt::ms(ms)),
        _ => String::new(),
    };
    // The scale always shows; the rest gives way when the width is short.
    let forms = [
        format!("JS{over} per step, ▁ 0 to █ {JS_MAX:.2} nats (top here {max:.3}); ✗ top-1 differs{pass}"),
        format!("JS{over} per step, ▁ 0 to █ {JS_MAX:.2} nats; ✗ top-1 differs"),
        format!("JS ▁ 0 to █ {JS_MAX:.2} nats; ✗ top-1 differs"),
        format!("JS ▁0–█{JS_MAX:.2}; ✗ differs"),
    ];
    let label = crate::fmt::first_fitting(&forms, w);
    let levels: String = steps.iter().map(|s| level(s.js)).collect();
    let flips: Vec<Span> = steps
        .iter()
        .map(|s| match s.same_top1 {
            true => Span::styled("·", theme.dim),
            false => Span::styled("✗", theme.error),
        })
        .collect();
    vec![
        Line::styled(fit(&label, w), theme.dim),
        Line::styled(levels, theme.bar),
        Line::from(flips),
    ]
}

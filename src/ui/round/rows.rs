//! The round's table: the headline, each drafted token's row (✓ kept, ✗ rejected, · not checked) with
//! p, q and the chance to keep it, why a token was rejected, and how the round's last token was chosen;
//! and the shorter forms of each that a short panel takes (`super::fit`).

use super::cost::wrapped;
use super::WIDE;
use crate::app::App;
use crate::fmt::{fit, pad, pct, quoted_token};
use crate::protocol::{DraftInfo, DraftedToken, RoundEnd, RoundReport, Verdict};
use crate::ui::theme::Theme;
use ratatui::text::{Line, Span};

/// Which draft, how many tokens it proposed, and whether the round is still the end of the path.
pub(super) fn headline(
    app: &App,
    r: &RoundReport,
    d: &DraftInfo,
    width: usize,
    theme: &Theme,
) -> Line<'static> {
    let gone = if app.round_on_path() {
        ""
    } else {
        "no longer the path's end: "
    };
    let rule = if r.greedy {
        "greedy: kept while it is the model's top token"
    } else {
        "kept with probability min(1, p/q)"
    };
    let text = if width >= WIDE {
        format!(
            "{gone}draft {} proposed {} from position {}; {rule}",
            d.label,
            crate::fmt::tokens(r.drafted.len()),
            r.first_position + 1
        )
    } else {
        let greedy = if r.greedy { " · greedy" } else { "" };
        format!("{gone}{} drafted {}{greedy}", d.label, r.drafted.len())
    };
    Line::styled(fit(&text, width), theme.text)
}

pub(super) fn header(wide: bool, width: usize) -> String {
    let text = if wide {
        "    drafted            p model  q draft  min(1,p/q)      u  the check"
    } else {
        "    drafted         p     q   keep"
    };
    fit(text, width)
}

/// One drafted token: its verdict mark, the token (greyed: proposed, not yet the model's), p, q and
/// the chance to keep it, and what the check did.
pub(super) fn drafted_row(
    i: usize,
    t: &DraftedToken,
    greedy: bool,
    wide: bool,
    width: usize,
    theme: &Theme,
) -> Line<'static> {
    let (mark, style) = mark(t.verdict);
    let style = style(theme);
    let token_w = if wide { 15 } else { 12 };
    let token = pad(&quoted_token(&t.token), token_w);
    let numbers = match (t.verdict, wide) {
        (Verdict::Unchecked, true) => format!(
            "{:>8}  {:>7}  {:>10}  {:>5}  not checked",
            prob(t.p),
            prob(t.q),
            "",
            ""
        ),
        (Verdict::Unchecked, false) => "  not checked".to_string(),
        (_, true) => format!(
            "{:>8}  {:>7}  {:>10}  {:>5}  {}",
            prob(t.p),
            prob(t.q),
            format!("{:.2}", t.accept_prob),
            if greedy {
                "—".to_string()
            } else {
                format!("{:.2}", t.u)
            },
            verdict_words(t)
        ),
        (_, false) => format!("{:>5} {:>5} {:>6.2}", prob(t.p), prob(t.q), t.accept_prob),
    };
    let rest = fit(&numbers, width.saturating_sub(4 + token_w));
    Line::from(vec![
        Span::styled(pad(&format!("{mark} {}", i + 1), 4), style),
        Span::styled(token, theme.dim),
        Span::styled(rest, theme.text),
    ])
}

/// Where the table has no u column: the draw that rejected a token it would likely have kept.
pub(super) fn why_rejected(r: &RoundReport, width: usize, theme: &Theme) -> Option<Line<'static>> {
    let (i, t) = r
        .drafted
        .iter()
        .enumerate()
        .find(|(_, t)| t.verdict == Verdict::Rejected)?;
    let text = if r.greedy {
        format!(
            "✗ {}: the model's top is {}",
            i + 1,
            quoted_token(&t.model_top)
        )
    } else {
        format!("✗ {}: u {:.2} ≥ keep {:.2}", i + 1, t.u, t.accept_prob)
    };
    Some(Line::styled(fit(&text, width), theme.dim))
}

fn verdict_words(t: &DraftedToken) -> String {
    match t.verdict {
        Verdict::Accepted => "kept".into(),
        Verdict::Rejected => format!("rejected (model's top {})", quoted_token(&t.model_top)),
        Verdict::Unchecked => "not checked".into(),
    }
}

/// A probability in three places (0.98), or a percentage below 1%.
fn prob(p: f32) -> String {
    if p >= 0.01 || p == 0.0 {
        format!("{p:.2}")
    } else {
        pct(p)
    }
}

/// How the round's last token was chosen: from the residual at the rejection, or the bonus from p; with
/// `from`, the distribution it was drawn from (its top three). Under greedy nothing is drawn: p and q put
/// all their mass on one token each, so the residual and the bonus are both the model's own top token,
/// and the line names the position the guess failed at (the table's "✗ n: the model's top is …" line
/// is then left out as saying the same).
pub(super) fn last_line(
    r: &RoundReport,
    from: bool,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let token = quoted_token(&r.last.token);
    let rejected = r
        .drafted
        .iter()
        .position(|t| t.verdict == Verdict::Rejected);
    let dist = if from {
        let top: Vec<String> = r
            .last
            .from
            .iter()
            .take(3)
            .map(|(t, p)| format!("{} {}", quoted_token(t), pct(*p)))
            .collect();
        format!(": {}", top.join(" · "))
    } else {
        String::new()
    };
    let text = match (r.last.end, r.greedy) {
        (RoundEnd::Residual, true) => match rejected {
            Some(i) => format!("✗ {} → {token}, the model's top", i + 1),
            None => format!("✗ → {token}, the model's top"),
        },
        (RoundEnd::Bonus, true) => format!("✓ all kept → {token}, the model's top"),
        (RoundEnd::Residual, false) => format!("✗ → {token}, drawn from max(0, p − q){dist}"),
        (RoundEnd::Bonus, false) => format!("✓ all kept → {token}, a bonus drawn from p{dist}"),
    };
    wrapped(vec![text], width, theme.planned)
}

/// A greedy round's checked tokens on one line, each with its mark, then how many were never checked:
/// under greedy the p, q and keep
/// columns only ever read 1.00 or 0.00, so a short panel gives their rows' lines to the round's cost.
pub(super) fn marks_line(r: &RoundReport, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut marks: Vec<String> = r
        .drafted
        .iter()
        .filter(|t| t.verdict != Verdict::Unchecked)
        .map(|t| format!("{} {}", mark(t.verdict).0, quoted_token(&t.token)))
        .collect();
    let unchecked = r.drafted.len() - marks.len();
    if unchecked > 0 {
        marks.push(format!("· {unchecked} not checked"));
    }
    wrapped(vec![marks.join("  ")], width, theme.text)
}

/// The rows of the tokens never checked (after the first rejection), as one line: "· 3–4 not checked".
pub(super) fn unchecked_line(
    r: &RoundReport,
    width: usize,
    theme: &Theme,
) -> Option<Line<'static>> {
    let first = r
        .drafted
        .iter()
        .position(|t| t.verdict == Verdict::Unchecked)?;
    let last = r.drafted.len();
    let which = if first + 1 == last {
        format!("{last}")
    } else {
        format!("{}–{last}", first + 1)
    };
    Some(Line::styled(
        fit(&format!("· {which} not checked"), width),
        theme.dim,
    ))
}

/// A verdict's mark and its style.
fn mark(v: Verdict) -> (&'static str, fn(&Theme) -> ratatui::style::Style) {
    match v {
        Verdict::Accepted => ("✓", |t| t.ok_badge),
        Verdict::Rejected => ("✗", |t| t.error),
        Verdict::Unchecked => ("·", |t| t.dim),
    }
}

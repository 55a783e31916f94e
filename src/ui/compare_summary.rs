//! The compare view's summary under its table: each path's total log-prob, what of it was forced,
//! and the mean over its own tokens from the fork on.

use super::theme::Theme;
use crate::fmt::{fit, shown_step};
use crate::protocol::{Comparison, PathSummary};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

/// One path's totals, and the mean log-prob of its own tokens (not forced) from the fork on with how
/// many tokens that is: "A: log p -22.0 over 10 tokens (-15.6 of it forced); mean -0.59 over its 4
/// own tokens from the fork on", or `short`, "A: log p -22.0 over 10 tokens (-15.6 forced) · 4 own
/// from the fork: mean -0.59". A path's own tokens before the fork are not in the mean; where the
/// paths do not differ, it is over the whole path ("its 8 own tokens").
fn side_line(name: &str, p: &PathSummary, fork: bool, short: bool) -> String {
    let total = format!("{name}: log p {:.1} over {} tokens", p.logprob, p.tokens);
    let forced = |words: &str| match p.forced_logprob {
        f if f != 0.0 => format!(" ({f:.1}{words})"),
        _ => String::new(),
    };
    let Some(m) = p.free_mean_logprob else {
        return format!("{total}{}", forced(" of it forced"));
    };
    let n = p.free_tokens;
    match (short, fork) {
        (false, _) => format!(
            "{total}{}; mean {m:.2} over its {}{}",
            forced(" of it forced"),
            crate::protocol::words::count(n, "own token"),
            if fork { " from the fork on" } else { "" }
        ),
        (true, true) => format!(
            "{total}{} · {n} own from the fork: mean {m:.2}",
            forced(" forced")
        ),
        (true, false) => format!("{total}{} · {n} own: mean {m:.2}", forced(" forced")),
    }
}

/// Both paths' lines ([`side_line`]), in the long form where both fit in `w`, else both short.
fn side_lines(c: &Comparison, w: usize) -> [String; 2] {
    let fork = c.fork_step.is_some();
    let lines = |short| [("A", &c.a), ("B", &c.b)].map(|(n, p)| side_line(n, p, fork, short));
    let long = lines(false);
    match long.iter().all(|l| l.width() <= w) {
        true => long,
        false => lines(true),
    }
}

/// The sequence view: each path's total log-prob and how it got there, and the mean of its own tokens
/// from the fork on; where the paths rejoin.
pub(super) fn summary_lines(
    c: &Comparison,
    reference: bool,
    w: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let mut out = vec![];
    if reference {
        let n = c.b.tokens.max(1) as f64;
        let nll = -c.b.logprob / n;
        out.push(Line::from(vec![
            Span::styled("reference: ", theme.title),
            Span::styled(
                format!(
                    "NLL {nll:.2} nats/token · perplexity {:.1} · log p {:.1} over {} tokens",
                    nll.exp(),
                    c.b.logprob,
                    c.b.tokens
                ),
                theme.text,
            ),
        ]));
        let leaves = match c.fork_step {
            None => "free running never leaves the reference".to_string(),
            Some(f) => format!(
                "free running leaves the reference at step {}; mean JS from there {:.3}",
                shown_step(f),
                c.mean_js
            ),
        };
        out.push(Line::styled(fit(&leaves, w), theme.text));
    } else {
        let [a, b] = side_lines(c, w);
        out.push(Line::styled(fit(&a, w), theme.key));
        out.push(Line::styled(fit(&b, w), theme.planned));
        let fork = match (c.fork_step, c.rejoined_at) {
            (None, _) => "the paths do not differ".to_string(),
            (Some(f), None) => format!(
                "fork at step {} · mean JS from it {:.3} · never rejoin",
                shown_step(f),
                c.mean_js
            ),
            (Some(f), Some(r)) => format!(
                "fork at step {} · mean JS from it {:.3} · same tokens again from step {}",
                shown_step(f),
                c.mean_js,
                shown_step(r)
            ),
        };
        out.push(Line::styled(fit(&fork, w), theme.text));
    }
    out
}

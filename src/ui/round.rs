//! The speculative round panel (`d` turns rounds on; `Tab` when a draft is loaded): the tokens the
//! draft proposed, greyed; the model's check of each, ✓ or ✗, with p, q and min(1, p/q); at a
//! rejection the residual max(0, p − q) the next token was drawn from (or the bonus token when every
//! draft was kept); what the round cost beside the plain steps it replaced; and the rounds so far,
//! with the acceptance at which they would pay. Every figure is the engine's, measured.

use super::theme::Theme;
use crate::analysis::speculation::{break_even_acceptance, Tally};
use crate::app::App;
use crate::fmt::{fit, ms, pad, pct, quoted_token};
use crate::protocol::{DraftInfo, DraftedToken, RoundEnd, RoundReport, Verdict};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;

/// Below this inner width the table drops its u column and the long words.
const WIDE: usize = 64;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let title = match &app.speculative.last {
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
    frame.render_widget(block, area);
    let Some(draft) = app.draft() else {
        return;
    };
    let width = inner.width as usize;
    let lines = match &app.speculative.last {
        _ if app.distribution_hidden() => vec![Line::styled(
            "Hidden until the class has guessed (predict-then-reveal).",
            theme.dim,
        )],
        None => intro(draft, app, width, theme),
        Some(r) => round_lines(app, r, draft, width, theme),
    };
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
    let text = format!(
        "The draft {} ({} layers) guesses the next {} tokens one by one; the model checks them all in \
         one pass and {rule}. The text is the model's own either way: \
         the draft changes the cost, never the output. {how}",
        d.label, d.n_layer, d.k
    );
    textwrap::wrap(&text, width.max(10))
        .into_iter()
        .map(|l| Line::styled(l.into_owned(), theme.text))
        .collect()
}

fn round_lines(
    app: &App,
    r: &RoundReport,
    d: &DraftInfo,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let wide = width >= WIDE;
    let mut lines = vec![headline(app, r, d, width, theme)];
    lines.push(Line::styled(header(wide, width), theme.dim));
    for (i, t) in r.drafted.iter().enumerate() {
        lines.push(drafted_row(i, t, r.greedy, wide, width, theme));
    }
    if !wide {
        lines.extend(why_rejected(r, width, theme));
    }
    lines.extend(last_line(r, width, theme));
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

/// Which draft, how many tokens it proposed, and whether the round is still the end of the path.
fn headline(
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
            "{gone}draft {} proposed {} tokens from position {}; {rule}",
            d.label,
            r.drafted.len(),
            r.first_position + 1
        )
    } else {
        let greedy = if r.greedy { " · greedy" } else { "" };
        format!("{gone}{} drafted {}{greedy}", d.label, r.drafted.len())
    };
    Line::styled(fit(&text, width), theme.text)
}

fn header(wide: bool, width: usize) -> String {
    let text = if wide {
        "    drafted            p model  q draft  min(1,p/q)      u  the check"
    } else {
        "    drafted         p     q   keep"
    };
    fit(text, width)
}

/// One drafted token: its verdict mark, the token (greyed: proposed, not yet the model's), p, q and
/// the chance to keep it, and what the check did.
fn drafted_row(
    i: usize,
    t: &DraftedToken,
    greedy: bool,
    wide: bool,
    width: usize,
    theme: &Theme,
) -> Line<'static> {
    let (mark, style) = match t.verdict {
        Verdict::Accepted => ("✓", theme.ok_badge),
        Verdict::Rejected => ("✗", theme.error),
        Verdict::Unchecked => ("·", theme.dim),
    };
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
fn why_rejected(r: &RoundReport, width: usize, theme: &Theme) -> Option<Line<'static>> {
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

/// How the round's last token was chosen: from the residual at the rejection, or the bonus from p.
fn last_line(r: &RoundReport, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let from: Vec<String> = r
        .last
        .from
        .iter()
        .take(3)
        .map(|(t, p)| format!("{} {}", quoted_token(t), pct(*p)))
        .collect();
    let token = quoted_token(&r.last.token);
    // Under greedy nothing is drawn: p and q put all their mass on one token each, so the residual
    // and the bonus are both the model's own top token.
    let text = match (r.last.end, r.greedy) {
        (RoundEnd::Residual, true) => format!("✗ → {token}, the model's top, instead"),
        (RoundEnd::Bonus, true) => {
            format!("✓ all kept → {token}, a bonus: the model's top next")
        }
        (RoundEnd::Residual, false) => format!(
            "✗ → {token}, drawn from max(0, p − q): {}",
            from.join(" · ")
        ),
        (RoundEnd::Bonus, false) => format!(
            "✓ all kept → {token}, a bonus drawn from p: {}",
            from.join(" · ")
        ),
    };
    wrapped(vec![text], width, theme.planned)
}

/// The round's cost beside the plain steps it replaced.
fn cost_lines(r: &RoundReport, wide: bool, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let ratio = r.plain_equivalent_ms() / r.ms();
    let verdict = if ratio >= 1.0 { "faster" } else { "slower" };
    let lines = if wide {
        vec![
            format!(
                "this round: {} for {} draft passes{} ({}) + 1 check of {} positions ({}) = {}",
                tokens(r.tokens()),
                r.draft_passes,
                match r.draft_read {
                    0..=2 => String::new(),
                    n => format!(", the first reading {n} tokens"),
                },
                ms(r.draft_ms),
                r.verify_positions,
                ms(r.verify_ms),
                ms(r.ms())
            ),
            format!(
                "as plain steps: {} × {} = {} → this round ran {ratio:.2}× ({verdict})",
                r.tokens(),
                ms(r.plain_ms),
                ms(r.plain_equivalent_ms())
            ),
        ]
    } else {
        vec![
            format!("{} in {}", tokens(r.tokens()), ms(r.ms())),
            format!(
                "plain: {} → {ratio:.2}× ({verdict})",
                ms(r.plain_equivalent_ms())
            ),
        ]
    };
    wrapped(lines, width, theme.text)
}

fn rounds(n: usize) -> String {
    match n {
        1 => "1 round".into(),
        n => format!("{n} rounds"),
    }
}

fn tokens(n: usize) -> String {
    match n {
        1 => "1 token".into(),
        n => format!("{n} tokens"),
    }
}

/// Lines wrapped at `width`, the continuation indented.
fn wrapped(lines: Vec<String>, width: usize, style: Style) -> Vec<Line<'static>> {
    let opts = textwrap::Options::new(width.max(10)).subsequent_indent("  ");
    lines
        .iter()
        .flat_map(|l| textwrap::wrap(l, &opts))
        .map(|l| Line::styled(l.into_owned(), style))
        .collect()
}

/// The rounds so far, and when a draft like this one would pay here.
fn tally_lines(
    t: &Tally,
    d: &DraftInfo,
    k: usize,
    wide: bool,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    if t.rounds == 0 {
        return vec![];
    }
    let plain = t.plain_ms / t.tokens as f64;
    let per_round = t.round_ms / t.rounds as f64;
    let draft_pass = t.draft_ms / (t.rounds * k.max(1)) as f64;
    let even = match break_even_acceptance(per_round, plain, k) {
        Some(a) if a > 0.0 => format!("rounds pay above {:.0}% kept", a * 100.0),
        Some(_) => "rounds pay even with nothing kept".into(),
        None if wide => format!("no acceptance pays: {k} + 1 plain steps cost less than a round"),
        None => "no acceptance pays here".into(),
    };
    let lines = if wide {
        vec![
            format!(
                "so far {}: {:.0}% of checked drafts kept · {:.2} tokens per pass of the model · {:.2}× plain speed",
                rounds(t.rounds),
                t.acceptance() * 100.0,
                t.tokens_per_pass(),
                t.speedup()
            ),
            format!(
                "a draft pass costs {:.2} of a plain step (it reads {:.0}% of the bytes); {even}",
                draft_pass / plain,
                d.bytes_ratio * 100.0
            ),
        ]
    } else {
        vec![
            format!(
                "{}: {:.0}% kept, {:.2}×",
                rounds(t.rounds),
                t.acceptance() * 100.0,
                t.speedup()
            ),
            even,
        ]
    };
    wrapped(lines, width, theme.info)
}

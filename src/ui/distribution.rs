//! The next-token panel: the candidates with what the sampler will draw from (after penalties,
//! temperature and the cut-offs) as the bar and first number, the model's own probability beside it
//! (under greedy, which draws nothing, the bars are the distribution it takes the top of, and the
//! second number is left out unless penalties made the two differ); or the sampler chain stage by
//! stage (`t`, drawn by `chain.rs`).

use super::chain;
use super::layout::{candidate_rows, inset, CHAIN_HEADER};
use super::pick_line::pick_line;
use super::theme::Theme;
use crate::app::keymap::{hint_key, Action, Mode};
use crate::app::App;
use crate::fmt::{ghost_bar, pad, pad_left, pct, quoted_token};
use crate::protocol::Distribution;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

/// The panel's title: the next token's position, or the decision that chose the last token.
fn decision_title(app: &App, dist: &Distribution) -> String {
    let next = app.session.as_ref().map_or(0, |s| s.next.position);
    if dist.position == next {
        return format!(" Next token · position {} ", dist.position);
    }
    let chosen = app
        .session
        .as_ref()
        .and_then(|s| s.tokens.get(dist.position))
        .map(|t| quoted_token(&t.token))
        .unwrap_or_default();
    format!(" The last choice · position {} → {chosen} ", dist.position)
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    if app.distribution_hidden() && app.session.is_some() {
        super::predict::hidden(frame, area, app, theme);
        return;
    }
    // What the key turns to, not the view on screen: "t: bars" above the bars had read as "press t
    // for bars".
    let other = if app.screen.show_chain {
        "bars"
    } else {
        "chain"
    };
    let hint = format!(
        " {} → {other} ",
        hint_key(Mode::Normal, Action::ToggleChain)
    );
    let mut block = Block::bordered()
        .border_style(theme.border)
        .title_top(Line::styled(hint, theme.dim).right_aligned());
    let Some(dist) = app.shown_decision() else {
        block = block.title(Span::styled(" Next token ", theme.title));
        frame.render_widget(block, area);
        return;
    };
    block = block
        .title(Span::styled(decision_title(app, dist), theme.title))
        .title_bottom(bottom_line(app, dist, area, theme));
    frame.render_widget(block, area);
    draw_candidates(frame, area, app, dist, theme);
}

/// Draws the border's bottom line: how the model rated a guess, else what a served model's list
/// covers, else the entropy and the chance of ending.
fn bottom_line(app: &App, dist: &Distribution, area: Rect, theme: &Theme) -> Line<'static> {
    // After a guess: how the model rated it (the guessed row is starred).
    let served = super::served::info(app);
    match super::predict::reveal_line(app, area.width.saturating_sub(4) as usize) {
        Some(reveal) => Line::styled(reveal, theme.key),
        None if served.is_some() => Line::styled(
            super::served::mass_line(served.expect("checked"), dist, app.screen.show_chain),
            theme.info,
        ),
        None => Line::styled(
            format!(
                " model entropy {:.2} nats · EOS {} ",
                dist.entropy,
                pct(dist.eos_prob)
            ),
            theme.dim,
        ),
    }
}

/// Draws inside the border: the chain's header, one row per candidate that fits (bars or chain), the
/// column key, and the pick line on the panel's last row.
fn draw_candidates(frame: &mut Frame, area: Rect, app: &App, dist: &Distribution, theme: &Theme) {
    let rows = candidate_rows(area, app.screen.show_chain);
    let inner = inset(area);
    let width = rows.width as usize;
    if app.screen.show_chain {
        let header = Rect {
            height: CHAIN_HEADER,
            ..inner
        };
        frame.render_widget(
            Paragraph::new(chain::header(app, dist, width, theme)),
            header,
        );
    }
    let rounds = rounds_draw_their_own(app, dist);
    let mut n = dist.candidates.len().min(rows.height as usize);
    // The model's own first token, when the penalties moved it off the rows on screen, takes the last.
    let model_top = super::model_top::hidden(dist, n).filter(|_| rows.height >= 2);
    if model_top.is_some() && n == rows.height as usize {
        n -= 1;
    }
    let cols = Columns::fit(dist, n, width, rounds);
    let mut lines: Vec<Line> = (0..n)
        .map(|i| {
            if app.screen.show_chain {
                chain::row(app, dist, i, width, theme)
            } else {
                bar_row(app, dist, i, &cols, theme)
            }
        })
        .collect();
    if let Some(top) = model_top {
        lines.push(super::model_top::line(dist, top, width, theme));
    }
    let n = lines.len();
    // The column key (or the chain's kept mass) sits right under the list, in the footer if the list
    // fills its rows.
    let key = if app.screen.show_chain {
        chain::mass_line(app, dist, width, theme)
    } else {
        column_key(dist, &cols, theme)
    };
    let mut foot = vec![pick_line(dist, width, rounds, theme)];
    if n < rows.height as usize {
        lines.push(key);
    } else {
        foot.insert(0, key);
    }
    frame.render_widget(Paragraph::new(lines), rows);
    let footer = Rect {
        y: rows.y + rows.height,
        height: (inner.y + inner.height).saturating_sub(rows.y + rows.height),
        ..inner
    };
    // The pick line stays on the panel's last row.
    let skip = (footer.height as usize).saturating_sub(foot.len());
    let foot: Vec<Line> = std::iter::repeat_n(Line::default(), skip)
        .chain(foot)
        .collect();
    frame.render_widget(Paragraph::new(foot), footer);
}

/// Width of a number column, its leading space included (" 78.0%").
const NUM_W: usize = 7;
/// Selection mark and row number ("▶ 1 ").
const LEAD_W: usize = 4;

/// How the bars view shares its width: token, sampler %, bar, model % (where it is shown:
/// [`model_number_shown`]), and the `◀ next` mark.
struct Columns {
    token: usize,
    bar: usize,
    mark: &'static str,
}

impl Columns {
    /// Widths for the first `rows` candidates (those on screen: a long token further down the list
    /// does not narrow the bars). `rounds`: the next press runs a speculative round, which draws its
    /// own token: the mark says `◀ plain` (what a plain step would draw), not `◀ next`.
    fn fit(dist: &Distribution, rows: usize, width: usize, rounds: bool) -> Columns {
        let shown = &dist.candidates[..rows.min(dist.candidates.len())];
        let mut token = crate::fmt::widest_token(shown).clamp(6, 16);
        let second = if model_number_shown(dist) { NUM_W } else { 0 };
        let fixed = LEAD_W + NUM_W + 1 + second;
        let room = |token: usize, mark: &str| width.saturating_sub(fixed + token + mark.width());
        // Room for the bar first: the short mark, then a narrower token column.
        let mut mark = if rounds { " ◀ plain" } else { " ◀ next" };
        if room(token, mark) < 6 {
            mark = " ◀";
        }
        if room(token, mark) < 6 {
            token = token.saturating_sub(6 - room(token, mark)).max(6);
        }
        Columns {
            token,
            bar: room(token, mark),
            mark,
        }
    }
}

/// Whether the next step press runs a speculative round under a sampler that draws: the round keeps
/// the draft's guesses with probability min(1, p/q) and draws from the rest, so its first token need
/// not be the plain step's draw shown here (greedy's is: the top row either way).
fn rounds_draw_their_own(app: &App, dist: &Distribution) -> bool {
    app.speculative.on && app.draft().is_some() && dist.draw.is_some()
}

/// The stage that cut candidate `i` (its first stage with probability 0), if any. Greedy cuts
/// nothing: it ranks every row and takes the top one, so under greedy no row is cut.
pub fn cut_by(dist: &Distribution, i: usize) -> Option<&str> {
    if dist.draw.is_none() || dist.candidates[i].sampled_prob > 0.0 {
        return None;
    }
    let stage = dist
        .stages
        .iter()
        .find(|st| st.probs.get(i).is_some_and(|&p| p <= 0.0));
    Some(stage.map_or("the sampler", |st| st.name.as_str()))
}

/// Whether the penalties (repeat, frequency, presence, DRY) took candidate `i` to less than half the
/// model's own probability: then a later stage's cut is theirs as much as its own.
fn penalised(dist: &Distribution, i: usize) -> bool {
    let p = |name: &str| {
        let st = dist.stages.iter().find(|st| st.name == name)?;
        st.probs.get(i).copied()
    };
    matches!((p("raw"), p("penalties")), (Some(raw), Some(pen)) if pen < 0.5 * raw)
}

/// The solid bar and first number of row `i`: what the sampler draws from; under greedy, which draws
/// nothing, the distribution it ranks by (the model's own, after any penalties, at temperature 1), so
/// the bars still say how sure the model is. Greedy takes the top row of it.
pub fn bar_prob(dist: &Distribution, i: usize) -> f32 {
    let c = &dist.candidates[i];
    match (&dist.draw, greedy_ranks(dist)) {
        (Some(_), _) => c.sampled_prob,
        (None, Some(stage)) => stage.probs.get(i).copied().unwrap_or(c.prob),
        (None, None) => c.prob,
    }
}

/// Under greedy, the distribution greedy takes the top of: the stage just before the temperature
/// (the model's own after the penalties and DRY; a temperature changes no order, and greedy draws
/// nothing for it to shape). `None` when the sampler draws.
pub fn greedy_ranks(dist: &Distribution) -> Option<&crate::protocol::StageReport> {
    if dist.draw.is_some() {
        return None;
    }
    let t = dist.stages.iter().position(|st| st.name == "temperature")?;
    dist.stages.get(t.checked_sub(1)?)
}

/// Under greedy, whether penalties moved the distribution greedy ranks by away from the model's own.
fn greedy_penalised(dist: &Distribution) -> bool {
    greedy_ranks(dist).is_some_and(|st| {
        st.probs
            .iter()
            .zip(&dist.candidates)
            .any(|(p, c)| (p - c.prob).abs() > 1e-4)
    })
}

/// `▶ 1 ⟨␣Paris⟩   91.2% ██████████▉░  78.0% ◀ next`: the sampler's probability as number and solid
/// bar ([`bar_prob`]), the model's raw probability as a ghost bar behind it and the second number. A
/// cut candidate reads `cut by top-p` where the bar would be.
fn bar_row(
    app: &App,
    dist: &Distribution,
    i: usize,
    cols: &Columns,
    theme: &Theme,
) -> Line<'static> {
    let c = &dist.candidates[i];
    let selected = i == app.selection.candidate;
    let planned = c.token.id == dist.planned.id;
    let cut = cut_by(dist, i);
    let second = model_number_shown(dist);
    let text_style = if cut.is_some() { theme.dim } else { theme.text };
    let guessed = app
        .predict
        .last
        .as_ref()
        .is_some_and(|r| r.position == dist.position && r.guess.token.id == c.token.id);
    let lead = match (selected, guessed) {
        (true, _) => "▶",
        (false, true) => "★",
        (false, false) => " ",
    };
    let mut spans = vec![
        Span::styled(format!("{lead}{:>2} ", i + 1), theme.key),
        Span::styled(pad(&quoted_token(&c.token), cols.token), text_style),
    ];
    match cut {
        Some(stage) => spans.push(cut_cell(dist, i, stage, cols, theme)),
        None => {
            let p = bar_prob(dist, i);
            let (solid, mut ghost) = ghost_bar(p, c.prob, cols.bar);
            if !second {
                // No second number, so no ghost bar for one: a lone `░` read as a bar of its own.
                ghost.clear();
            }
            let rest = cols.bar.saturating_sub(solid.width() + ghost.width());
            spans.extend([
                Span::styled(pad_left(&pct(p), NUM_W), text_style),
                Span::raw(" "),
                Span::styled(solid, theme.bar),
                Span::styled(ghost, theme.ghost),
                Span::raw(" ".repeat(rest)),
            ]);
        }
    }
    // Under greedy with no penalty the first number already is the model's own: a second copy of it
    // read as two distributions that happened to agree. Its width went to the bars and the mark.
    if second {
        spans.push(Span::styled(pad_left(&pct(c.prob), NUM_W), theme.ghost));
    }
    if planned {
        spans.push(Span::styled(cols.mark, theme.planned));
    }
    if selected {
        for s in &mut spans[..3] {
            s.style = s.style.patch(theme.selected);
        }
    }
    Line::from(spans)
}

/// Where a cut row's bar would be: "cut" under the numbers, "by top-p" under the bars, moved left if
/// the bars are narrow. A row the penalties pushed down says so: top-p cut a 28% token only because a
/// repeat penalty had taken it to 1%.
fn cut_cell(
    dist: &Distribution,
    i: usize,
    stage: &str,
    cols: &Columns,
    t: &Theme,
) -> Span<'static> {
    let region = NUM_W + 1 + cols.bar;
    let why = if penalised(dist, i) {
        ", penalised"
    } else {
        ""
    };
    let forms = [
        format!("{} by {stage}{why}", pad_left("cut", NUM_W)),
        format!(" cut by {stage}{why}"),
        format!("{} by {stage}", pad_left("cut", NUM_W)),
        format!(" cut by {stage}"),
    ];
    Span::styled(
        pad(&crate::fmt::first_fitting(&forms, region), region),
        t.dim,
    )
}

/// The column labels, under the list and aligned with it: which number is the sampler's and which the
/// model's, and which bar is which. Under greedy the first is the model's own (`model`), or after the
/// penalties (`penal.`) when they are on.
fn column_key(dist: &Distribution, cols: &Columns, theme: &Theme) -> Line<'static> {
    let first = match (dist.draw.is_some(), greedy_penalised(dist)) {
        (true, _) => "sampler",
        (false, true) => "penal.",
        (false, false) => "model",
    };
    let mut spans = vec![
        Span::styled(" ".repeat(LEAD_W), theme.dim),
        Span::styled(pad("token", cols.token), theme.dim),
        Span::styled(pad_left(first, NUM_W), theme.bar),
        Span::raw(" "),
    ];
    // The solid bar belongs to the number on its left, the ghost to the one on its right.
    spans.push(Span::styled(pad("█", cols.bar), theme.bar));
    if model_number_shown(dist) {
        spans.push(Span::styled(pad_left("░ model", NUM_W), theme.ghost));
    }
    Line::from(spans)
}

/// Whether a row's second number (the model's own probability, and its ghost bar) says anything the
/// first does not: always when the sampler draws, and under greedy only when penalties moved the
/// distribution greedy ranks by.
fn model_number_shown(dist: &Distribution) -> bool {
    dist.draw.is_some() || greedy_penalised(dist)
}

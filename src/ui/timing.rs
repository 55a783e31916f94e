//! The timing panel: prefill as one bar against each decode step, TTFT, TPOT, KV-cache size.

use super::theme::Theme;
use crate::app::keymap::{hint_key, Action, Mode};
use crate::app::App;
use crate::fmt::{bytes, ms};
use crate::protocol::{PrefillReport, SessionView};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let wide = area.width >= 52;
    // The name lessons call the panel by, on every screen: narrower than 36 columns the badge takes
    // the short form, and narrower than 29 only a cache that is off has one (at 60-79 columns the
    // lessons' "Reading vs writing panel" had been titled "Read vs write").
    let badge = match (app.kv_cache_on(), area.width) {
        (true, 36..) => Some((" KV cache on ", theme.ok_badge)),
        (true, 29..) => Some((" KV on ", theme.ok_badge)),
        (true, _) => None,
        (false, 36..) => Some((" KV CACHE OFF ", theme.warn_badge)),
        (false, _) => Some((" KV OFF ", theme.warn_badge)),
    };
    let mut block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(" Reading vs writing ", theme.title));
    if let Some((text, style)) = badge {
        block = block.title_top(Line::styled(text, style).right_aligned());
    }
    let session = app.session.as_ref();
    let inner = block.inner(area);
    let (text, chart) = match session {
        Some(s) => text_and_chart(app, s, (inner, wide), theme),
        None => (Vec::new(), false),
    };
    // The chart's key, under the chart only.
    if chart {
        let rounds = session.is_some_and(|s| s.decode_round.contains(&true));
        let key = match (session.and_then(rebuild).is_some(), rounds) {
            (true, true) => " ms · P prefill, 1 2 steps, 3* round, R re-read ",
            (true, false) => " ms · P prefill, 1 2 … steps, R re-read ",
            (false, true) => " ms · P prefill, 1 2 … steps, 3* a round's share ",
            (false, false) => " ms · P = prefill, 1 2 … = steps ",
        };
        block = block.title_bottom(Line::styled(key, theme.dim));
    }
    if wide {
        let hint = format!(
            " {}: KV cache ",
            hint_key(Mode::Normal, Action::ToggleKvCache)
        );
        block = block.title_bottom(Line::styled(hint, theme.dim).right_aligned());
    }
    frame.render_widget(block, area);
    let [top, below] =
        Layout::vertical([Constraint::Length(text.len() as u16), Constraint::Fill(1)]).areas(inner);
    frame.render_widget(Paragraph::new(text), top);
    if let (Some(s), true) = (session, chart) {
        frame.render_widget(super::timing_chart::bar_chart(s, below, theme), below);
    }
}

/// Rows a chart needs below the text: its label row and three of bars.
const CHART_ROWS: usize = 4;

/// The panel's text in `inner`, and whether the chart fits below it. Where it does not, the steps'
/// times take one row of the text instead (`timing_chart::step_line`): the lessons point at how the
/// steps' costs compare ("about the same", "the last passes took longer"), and at 80x24 the chart
/// had never been drawn, its key under nothing.
fn text_and_chart(
    app: &App,
    s: &SessionView,
    (inner, wide): (Rect, bool),
    theme: &Theme,
) -> (Vec<Line<'static>>, bool) {
    // The speed of light's lines give way before the steps' row, unless the lesson's step names them.
    let light_rank = (!narration_names(app, &LIGHT_WORDS)).then_some(3);
    let lines = |steps_row: bool| {
        let kv_f16 = app.model.as_ref().is_some_and(|m| m.kv_f16);
        let shape = (wide, inner.width as usize, steps_row);
        let mut rows = stats_lines(s, shape, kv_f16, theme);
        let always = |l: Line<'static>| (l, None);
        let light = super::light::lines(app, s, (wide, inner.width as usize), theme);
        rows.extend(light.into_iter().map(|l| (l, light_rank)));
        rows.extend(
            super::served::timing_lines(&s.last_pass, theme)
                .into_iter()
                .map(always),
        );
        fitted(rows, inner.height as usize)
    };
    let text = lines(false);
    match inner.height as usize >= text.len() + CHART_ROWS {
        true => (text, true),
        false => (lines(true), false),
    }
}

/// What a narration says when it points at the speed of light's lines: the floor (`step ≥`, the
/// bandwidth), the last step against it (`% of light`), the prefill against the peak. "Reading
/// shares the bytes" names the peak and the bandwidth but not the light, and its `prefill at` line
/// had given way to the steps' row.
const LIGHT_WORDS: [&str; 4] = ["of light", "step ≥", "bandwidth", "peak"];

/// Whether the lesson step on screen names any of `words` in its narration.
fn narration_names(app: &App, words: &[&str]) -> bool {
    let Some(l) = app.lesson.as_ref() else {
        return false;
    };
    let step = l.at.and_then(|at| l.lesson.steps.get(at));
    step.is_some_and(|st| words.iter().any(|w| st.narration.contains(w)))
}

/// A line of the panel, and when it gives way on a short panel: never (`None`), else the lowest
/// first.
type Row = (Line<'static>, Option<u8>);

/// The lines that fit in `room` rows: where all do not, the abbreviations in words go first, then
/// the cache's size, then TTFT and the pass count. At 80x24 under a lesson the panel has six rows,
/// and the speed-of-light lesson's "step ≥" and "% of light" lines, the ones its narration points
/// at, had been below them, cut.
fn fitted(mut rows: Vec<Row>, room: usize) -> Vec<Line<'static>> {
    for rank in 0..=SPARE_RANKS {
        if rows.len() <= room {
            break;
        }
        rows.retain(|(_, r)| *r != Some(rank));
    }
    rows.into_iter().map(|(l, _)| l).collect()
}

/// The ranks `fitted` may leave out: the key (0), the cache's size (1), TTFT and passes (2), the
/// speed of light where the lesson does not name it (3), the steps' row (4).
const SPARE_RANKS: u8 = 4;

/// The panel's lines of text: reading and writing speed (and each step's, in one row, with
/// `steps_row`), the counters and the cache, a rebuilt cache, how much faster reading is, the abbreviations in words, and a warning when the cache is off.
fn stats_lines(
    s: &SessionView,
    (wide, cols, steps_row): (bool, usize, bool),
    kv_f16: bool,
    theme: &Theme,
) -> Vec<Row> {
    let steps = step_times(s);
    let known = steps.iter().all(|t| t.kv.is_some());
    // TPOT is one decode step's time: a round's tokens are counted apart (`write_text`).
    let plain = |t: &&StepTime| !t.round;
    let on = mean(
        steps
            .iter()
            .filter(plain)
            .filter(|t| t.kv == Some(true))
            .map(|t| t.ms),
    );
    let room = cols.saturating_sub(LABEL);
    let mut lines = labelled("read  ", &read_text(&s.prefill, wide, room), room, theme);
    let write = write_text(&steps, on, known, wide);
    lines.extend(labelled("write ", &write, room, theme));
    let mut rows: Vec<Row> = lines.into_iter().map(|l| (l, None)).collect();
    if steps_row {
        let row = super::timing_chart::step_line(s, cols, theme);
        rows.extend(row.map(|l| (l, Some(4))));
    }
    rows.extend(counter_lines(s, wide, kv_f16, theme));
    rows.extend(rebuild_line(s, wide, theme).map(|l| (l, None)));
    if let Some(text) = ratio(s, on, known, wide) {
        rows.push((Line::styled(text, theme.info), None));
    }
    // The two abbreviations above, said in words.
    let key = if wide {
        "TTFT = time to first token · TPOT = time per output token"
    } else {
        "TTFT 1st token · TPOT per token"
    };
    rows.push((Line::styled(key, theme.dim), Some(0)));
    let pass = &s.last_pass;
    if !pass.kv_cache_on {
        let text = if wide {
            format!(
                "no KV cache: each step re-reads all {} tokens",
                pass.tokens_fed
            )
        } else {
            format!("no cache: re-reads all {} tokens", pass.tokens_fed)
        };
        rows.push((Line::styled(text, theme.error), None));
    }
    rows
}

/// Columns of the "read  " and "write " labels.
const LABEL: usize = 6;

/// A labelled value in `room` columns after its label: its pieces (each after the first begins with
/// its separator, " · " or " ") run on while they fit, and one that does not starts the next row,
/// under the value, without its separator. So a narrow panel breaks a value between its figures,
/// never inside one: at 60 columns the read line had lost its rate, the figure step 1 of
/// reading-vs-writing points at ("38 tok · 48.0 ms · "), and the write line read "(4 wit".
fn labelled(
    label: &'static str,
    pieces: &[String],
    room: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let mut rows: Vec<String> = Vec::new();
    for piece in pieces {
        match rows.last_mut() {
            Some(row) if row.chars().count() + piece.chars().count() <= room => row.push_str(piece),
            Some(_) => rows.push(piece.trim_start_matches([' ', '·']).to_string()),
            None => rows.push(piece.clone()),
        }
    }
    let indent = " ".repeat(LABEL);
    rows.into_iter()
        .enumerate()
        .map(|(i, text)| {
            let label = if i == 0 {
                label.to_string()
            } else {
                indent.clone()
            };
            Line::from(vec![
                Span::styled(label, theme.key),
                Span::styled(text, theme.text),
            ])
        })
        .collect()
}

/// How fast the prompt was read: its tokens, the time, tokens per second, as `labelled` pieces. The
/// narrow form keeps to one row in `room` columns where it can, "tok/s" giving way to "/s" (at 80
/// columns "1374 tok/s" had lost its "s"); narrower still, it breaks before the rate.
fn read_text(p: &PrefillReport, wide: bool, room: usize) -> Vec<String> {
    if wide {
        return vec![format!(
            "prefill {} tok in {} = {:.0} tok/s",
            p.tokens,
            ms(p.ms),
            p.tok_per_s
        )];
    }
    let (tokens, time) = (format!("{} tok", p.tokens), format!(" · {}", ms(p.ms)));
    let rate = format!(" · {:.0} tok/s", p.tok_per_s);
    let (whole, short) = (
        format!("{tokens}{time}{rate}"),
        format!("{tokens}{time} · {:.0}/s", p.tok_per_s),
    );
    let fits = |t: &str| t.chars().count() <= room;
    match () {
        _ if fits(&whole) => vec![whole],
        _ if fits(&short) => vec![short],
        _ => vec![tokens, time, rate],
    }
}

/// How fast the steps wrote, as `labelled` pieces: the TPOT of the cache-on steps (`on`) and the
/// cache-off ones apart when every step's cache state is `known`, else the mean of them all.
fn write_text(
    steps: &[StepTime],
    on: Option<(f64, usize)>,
    known: bool,
    wide: bool,
) -> Vec<String> {
    let off = mean(
        steps
            .iter()
            .filter(|t| t.kv == Some(false) && !t.round)
            .map(|t| t.ms),
    );
    let rounds = steps.iter().filter(|t| t.round).count();
    let all = mean(steps.iter().map(|t| t.ms));
    match (all, known) {
        (None, _) => vec!["no steps yet".to_string()],
        // Every step's cache state is known: TPOT from the cache-on steps, cache-off ones apart.
        (Some(_), true) => {
            let mut pieces = Vec::new();
            if let Some((t, n)) = on {
                pieces.extend([format!("TPOT {}", ms(t)), format!(" ({n} with cache)")]);
            }
            if let Some((t, n)) = off {
                let sep = if pieces.is_empty() { "" } else { " · " };
                pieces.extend([format!("{sep}{}", ms(t)), format!(" ({n} without)")]);
            }
            // A round's tokens share its time: not one step's, so not in TPOT.
            if rounds > 0 {
                let sep = if pieces.is_empty() {
                    "no plain step yet · "
                } else {
                    " · "
                };
                pieces.push(format!("{sep}{rounds} from rounds"));
            }
            pieces
        }
        (Some((t, n)), false) if wide => vec![format!(
            "decode {n} steps, mean {} = {:.0} tok/s",
            ms(t),
            1000.0 / t.max(1e-9)
        )],
        (Some((t, n)), false) => vec![format!("{n} steps"), format!(" · mean {}", ms(t))],
    }
}

/// Draws the counters (TTFT, forward passes) and the KV cache's size (`KV f16` where it holds f16,
/// `--kv f16`): one line when wide, else two (the size the first to give way).
fn counter_lines(s: &SessionView, wide: bool, kv_f16: bool, theme: &Theme) -> Vec<Row> {
    let pass = &s.last_pass;
    let kv = if pass.kv_cache_on {
        let kind = if kv_f16 { " f16" } else { "" };
        format!("KV{kind} {} pos, {}", pass.kv_len, bytes(pass.kv_bytes))
    } else {
        "KV cache off".to_string()
    };
    let counters = format!(
        "TTFT {} · passes {}",
        ms(s.prefill.ttft_ms),
        pass.forward_passes
    );
    if wide {
        vec![(
            Line::styled(format!("{counters} · {kv}"), theme.dim),
            Some(2),
        )]
    } else if pass.kv_cache_on {
        vec![
            (Line::styled(counters, theme.dim), Some(2)),
            (Line::styled(kv, theme.dim), Some(1)),
        ]
    } else {
        vec![(Line::styled(counters, theme.dim), Some(2))]
    }
}

/// Draws the last pass when it re-read the path with the cache on: a rebuilt cache or a branch switch.
fn rebuild_line(s: &SessionView, wide: bool, theme: &Theme) -> Option<Line<'static>> {
    let r = rebuild(s)?;
    // The whole path re-read: the cache was rebuilt (turned back on). Part of it: a branch switch.
    let whole = r.tokens_fed == s.tokens.len();
    let text = match (whole, wide) {
        (true, true) => format!(
            "rebuilt the cache: {} tokens in {} — a prefill",
            r.tokens_fed,
            ms(r.ms)
        ),
        (true, false) => format!("cache rebuilt: {} tok, {}", r.tokens_fed, ms(r.ms)),
        (false, true) => format!(
            "last pass re-read {} tokens in {} — a prefill",
            r.tokens_fed,
            ms(r.ms)
        ),
        (false, false) => format!("re-read {} tok, {}", r.tokens_fed, ms(r.ms)),
    };
    Some(Line::styled(text, theme.planned))
}

/// "reading is N× faster per token", only against steps known to have run with the cache: the
/// cache-on TPOT when every step's state is known, else the last pass if it was a one-token cached step.
fn ratio(s: &SessionView, on: Option<(f64, usize)>, known: bool, wide: bool) -> Option<String> {
    let p = &s.prefill;
    if p.tokens == 0 {
        return None;
    }
    let per_read = (p.ms / p.tokens as f64).max(1e-9);
    let last = &s.last_pass;
    let (write, against) = match on {
        Some((t, _)) if known => (t, "a cached step"),
        _ if !known && last.kv_cache_on && last.tokens_fed == 1 && !s.decode_ms.is_empty() => {
            (last.ms, "the last step")
        }
        _ => return None,
    };
    let ratio = write / per_read;
    Some(if wide {
        format!("reading is {ratio:.1}× faster per token than {against}")
    } else {
        format!("reading {ratio:.1}× faster per token")
    })
}

mod steps;
use steps::mean;
pub(super) use steps::{rebuild, step_times, StepTime};

#[cfg(test)]
mod tests;

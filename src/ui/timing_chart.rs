//! The timing panel's chart: the prefill as one bar against each decode step (and a rebuilt cache's
//! pass), in milliseconds.

use super::theme::Theme;
use super::timing::{rebuild, step_times, StepTime};
use crate::protocol::SessionView;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Bar, BarChart, BarGroup};

/// Columns per bar, gap included.
const BAR_STEP: u16 = 5;

/// One bar for the whole prefill, then one per decode step (the newest that fit), in ms. A bar prints
/// its value inside itself only when it is at least one row tall: on a shorter bar the number would
/// sit alone just above the step labels and read as one of them.
pub(super) fn bar_chart(s: &SessionView, area: Rect, theme: &Theme) -> BarChart<'static> {
    let fit = (area.width / BAR_STEP).max(2) as usize;
    let steps = step_times(s);
    let rebuilt = rebuild(s);
    let room = fit - 1 - usize::from(rebuilt.is_some());
    let first = steps.len() - steps.len().min(room);
    // Tenths of a millisecond: BarChart wants integers.
    let tenths = |x: f64| (x * 10.0).round().max(1.0) as u64;
    // The tallest bar fills the rows above the label row; a bar's height in rows scales with it.
    let shown = steps[first..].iter().map(|t| t.ms);
    let top = shown
        .chain([s.prefill.ms])
        .chain(rebuilt.map(|r| r.ms))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let rows = area.height.saturating_sub(1) as f64;
    // At least an eighth of a row: a bar far shorter than the tallest (a 15 ms prefill beside 1.3 s
    // rounds) had drawn nothing at all, and read as no time.
    let least = (tenths(top) as f64 / (rows * 8.0).max(1.0)).ceil() as u64;
    let bar = |ms: f64, label: String, style| {
        let tall = ms / top * rows >= 1.0;
        Bar::default()
            .value(tenths(ms).max(least))
            .text_value(if tall { one(ms) } else { String::new() })
            .label(Line::from(label))
            .style(style)
    };
    let mut bars = vec![bar(s.prefill.ms, "P".into(), theme.planned)];
    for (i, t) in steps.iter().enumerate().skip(first) {
        // A step known to have run without the cache is drawn as a warning; a round's token (its
        // share of the round's time) apart from one step's.
        let style = if t.kv == Some(false) {
            theme.error
        } else if t.round {
            theme.ghost
        } else {
            theme.bar
        };
        let mark = if t.round { "*" } else { "" };
        bars.push(bar(t.ms, format!("{}{mark}", i + 1), style));
    }
    if let Some(r) = rebuilt {
        bars.push(bar(r.ms, "R".into(), theme.planned));
    }
    BarChart::default()
        .data(BarGroup::default().bars(&bars))
        .bar_width(BAR_STEP - 1)
        .bar_gap(1)
        .value_style(theme.text.add_modifier(ratatui::style::Modifier::REVERSED))
        .label_style(theme.dim)
}

/// Eighths of a cell, lowest first: a step's time as the height of one character.
const TICKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The chart in one row, where the panel has no room for it (at 80x24 and on a projector under a
/// lesson): the steps written since the cache was last switched (on or off; a speculative round ends
/// a run too), each as one character's height on a scale from zero (so steps that cost about the same
/// look the same), then the first and last of them in ms, which say what the heights show: `steps
/// 14-21 ▇▇▇▇▇██ 66.0→77.2 ms`. Where they are more than the row has marks for (at most
/// [`RUN_MARKS`]), each mark is the fastest of its share of them (`run_line`). Before a run has two steps, and where the newest step
/// is a speculative round's, the newest steps that fit instead; a token a round wrote is then a `*`,
/// not a height (its time is a share of the round's, no step's), keyed at the end (`21-29 ██████**█
/// 72.0→76.0 ms * round`), and the scale and the times are the plain steps'. `None` before two steps.
///
/// A run, not the newest steps: the reading-vs-writing lesson says the cache-off passes grew slower
/// with the text; at 120 columns the newest steps had read "steps 3-29 ▃▃▂▂▂▂▇█▅▆ ... 19.2→49.1 ms",
/// a cached step's 19.2 ms at one end and a cache-off pass at the other.
pub(super) fn step_line(s: &SessionView, width: usize, theme: &Theme) -> Option<Line<'static>> {
    let steps = step_times(s);
    if steps.len() < 2 {
        return None;
    }
    let last = steps.last().filter(|t| !t.round);
    let start = last.map(|last| {
        steps
            .iter()
            .rposition(|t| t.round || t.kv != last.kv)
            .map_or(0, |i| i + 1)
    });
    match start {
        Some(start) if steps.len() - start >= 2 => {
            run_line(&steps, start, width, theme).or_else(|| newest_line(&steps, width, theme))
        }
        _ => newest_line(&steps, width, theme),
    }
}

/// The newest steps that fit in `width` columns, rounds' tokens keyed (see `step_line`).
fn newest_line(steps: &[StepTime], width: usize, theme: &Theme) -> Option<Line<'static>> {
    let n = steps.len();
    let numbers = |from: usize| format!("{}-{n} ", from + 1);
    // Room for the widest numbers and times any choice of steps could print (the widest time is not
    // always the largest: 400 prints as "400", 99.5 as "99.5"). Where a round's token is among the
    // steps shown, the key to its mark takes the room of the word "steps".
    let widest = steps.iter().map(|t| one(t.ms).len()).max().unwrap_or(0);
    let key = format!(" {ROUND_MARK} round");
    let lead = |keyed: bool| if keyed { "" } else { "steps " };
    let fit_for = |keyed: bool| {
        let key_w = if keyed { key.chars().count() } else { 0 };
        let fixed = lead(keyed).len() + numbers(n - 1).len() + " → ms".chars().count() + key_w;
        width.saturating_sub(fixed + 2 * widest).min(n)
    };
    let keyed = steps[n - fit_for(false)..].iter().any(|t| t.round);
    let fit = fit_for(keyed);
    if fit < 2 {
        return None;
    }
    let shown = &steps[n - fit..];
    let plain: Vec<f64> = shown.iter().filter(|t| !t.round).map(|t| t.ms).collect();
    let top = plain.iter().copied().fold(1e-9, f64::max);
    let mut spans = vec![
        Span::styled(lead(keyed), theme.dim),
        Span::styled(numbers(n - fit), theme.dim),
    ];
    spans.extend(shown.iter().map(|t| match (t.round, t.kv) {
        (true, _) => Span::styled(ROUND_MARK, theme.dim),
        (false, Some(false)) => Span::styled(tick(t.ms, top), theme.error),
        (false, _) => Span::styled(tick(t.ms, top), theme.bar),
    }));
    if let (Some(first), Some(last)) = (plain.first(), plain.last()) {
        spans.push(Span::styled(tail(*first, *last), theme.text));
    }
    if keyed {
        spans.push(Span::styled(key, theme.dim));
    }
    Some(Line::from(spans))
}

/// Most marks a run's row has: more steps than this share them, so that the row reads the trend a
/// lesson checks (the fastest of the first third against the last), not one step's noise. At 120
/// columns the 21 cache-off passes of the reading-vs-writing lesson had each had a mark, the first
/// (slow after a pause) as tall as the last: "44.5→44.5 ms" beside "the last passes took longer".
const RUN_MARKS: usize = 8;

/// Steps `start..` (one run: plain steps, the cache as the last left it), a mark each where they fit
/// in `width` columns and are at most [`RUN_MARKS`], else each mark the fastest step of its share of
/// them, the times the first and last share's fastest (`steps 9-29 ▆▆▆▇▇▇███ 35.0→44.2 ms`). The reading-vs-writing lesson checks
/// its growth so (the fastest of the first third against the last); the newest steps alone, at
/// 80x24, had read "steps 21-29 █████████ 42.0→44.3 ms", the growth off screen, and the first
/// cache-off pass, right after a pause, had run as slow as the last. `None` where fewer than two
/// marks fit.
fn run_line(
    steps: &[StepTime],
    start: usize,
    width: usize,
    theme: &Theme,
) -> Option<Line<'static>> {
    let run = &steps[start..];
    let lead = format!("steps {}-{} ", start + 1, steps.len());
    let widest = run.iter().map(|t| one(t.ms).len()).max().unwrap_or(0);
    let room = width.saturating_sub(lead.len() + " → ms".chars().count() + 2 * widest);
    let marks = room.min(run.len()).min(RUN_MARKS);
    if marks < 2 || (marks < run.len() && marks < 4) {
        return None;
    }
    let fastest: Vec<f64> = (0..marks)
        .map(|i| run[i * run.len() / marks..(i + 1) * run.len() / marks].iter())
        .map(|share| share.map(|t| t.ms).fold(f64::INFINITY, f64::min))
        .collect();
    let top = fastest.iter().copied().fold(1e-9, f64::max);
    let style = match run[0].kv {
        Some(false) => theme.error,
        _ => theme.bar,
    };
    let mut spans = vec![Span::styled(lead, theme.dim)];
    spans.extend(fastest.iter().map(|&ms| Span::styled(tick(ms, top), style)));
    spans.push(Span::styled(
        tail(fastest[0], fastest[marks - 1]),
        theme.text,
    ));
    Some(Line::from(spans))
}

/// The row's times: ` 35.0→44.2 ms`.
fn tail(first: f64, last: f64) -> String {
    format!(" {}→{} ms", one(first), one(last))
}

/// `ms` as one character's height on a scale from zero to `top`.
fn tick(ms: f64, top: f64) -> String {
    let eighths = ((ms / top * 8.0).ceil() as usize).clamp(1, 8);
    TICKS[eighths - 1].to_string()
}

/// A round's token in the one-row chart, as its bar's label marks it in the full chart.
const ROUND_MARK: &str = "*";

/// A time as the chart's bars print it: tenths below 100 ms.
fn one(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

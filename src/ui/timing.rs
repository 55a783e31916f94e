//! The timing panel: prefill as one bar against each decode step, TTFT, TPOT, KV-cache size.

use super::fmt::{bytes, ms};
use super::theme::Theme;
use crate::app::App;
use crate::protocol::SessionView;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Bar, BarChart, BarGroup, Block, Paragraph};
use ratatui::Frame;

/// Columns per bar, gap included.
const BAR_STEP: u16 = 5;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let wide = area.width >= 52;
    let title = if wide {
        " Reading vs writing "
    } else {
        " Read vs write "
    };
    let mut block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(title, theme.title));
    let kv_on = app
        .session
        .as_ref()
        .map_or(app.kv_cache, |s| s.last_pass.kv_cache_on);
    block = if kv_on {
        block.title_top(Line::styled(" KV cache on ", theme.ok_badge).right_aligned())
    } else {
        block.title_top(Line::styled(" KV CACHE OFF ", theme.warn_badge).right_aligned())
    };
    block = block.title_bottom(Line::styled(" ms · P = prefill, 1 2 … = steps ", theme.dim));
    if wide {
        block = block.title_bottom(Line::styled(" v: KV cache ", theme.dim).right_aligned());
    }
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(s) = app.session.as_ref() else {
        return;
    };
    let text = stats_lines(s, wide, theme);
    let [top, chart] =
        Layout::vertical([Constraint::Length(text.len() as u16), Constraint::Fill(1)]).areas(inner);
    frame.render_widget(Paragraph::new(text), top);
    if chart.height >= 4 {
        frame.render_widget(bar_chart(s, chart.width, theme), chart);
    }
}

fn stats_lines(s: &SessionView, wide: bool, theme: &Theme) -> Vec<Line<'static>> {
    let p = &s.prefill;
    let steps = s.decode_ms.len();
    let tpot = if steps > 0 {
        s.decode_ms.iter().sum::<f64>() / steps as f64
    } else {
        0.0
    };
    let pass = &s.last_pass;
    let line = |label: &'static str, text: String| {
        Line::from(vec![
            Span::styled(label, theme.key),
            Span::styled(text, theme.text),
        ])
    };
    let read = if wide {
        format!(
            "prefill {} tok in {} = {:.0} tok/s",
            p.tokens,
            ms(p.ms),
            p.tok_per_s
        )
    } else {
        format!("{} tok · {} · {:.0} tok/s", p.tokens, ms(p.ms), p.tok_per_s)
    };
    let write = match (steps, wide) {
        (0, _) => "no steps yet".to_string(),
        (_, true) => format!(
            "decode {steps} steps, TPOT {} = {:.0} tok/s",
            ms(tpot),
            1000.0 / tpot.max(1e-9)
        ),
        (_, false) => format!("{steps} steps · TPOT {}", ms(tpot)),
    };
    let mut lines = vec![line("read  ", read), line("write ", write)];
    let kv = if pass.kv_cache_on {
        format!("KV {} pos, {}", pass.kv_len, bytes(pass.kv_bytes))
    } else {
        "KV cache off".to_string()
    };
    let counters = format!("TTFT {} · passes {}", ms(p.ttft_ms), pass.forward_passes);
    if wide {
        lines.push(Line::styled(format!("{counters} · {kv}"), theme.dim));
    } else {
        lines.push(Line::styled(counters, theme.dim));
        if pass.kv_cache_on {
            lines.push(Line::styled(kv, theme.dim));
        }
    }
    if steps > 0 && p.tokens > 0 {
        let per_read = p.ms / p.tokens as f64;
        let ratio = tpot / per_read.max(1e-9);
        lines.push(Line::styled(
            format!("reading is {ratio:.1}× faster per token"),
            theme.info,
        ));
    }
    if !pass.kv_cache_on {
        let text = if wide {
            format!(
                "no KV cache: each step re-reads all {} tokens",
                pass.tokens_fed
            )
        } else {
            format!("no cache: re-reads all {} tokens", pass.tokens_fed)
        };
        lines.push(Line::styled(text, theme.error));
    }
    lines
}

/// One bar for the whole prefill, then one per decode step (the newest that fit), in ms.
fn bar_chart(s: &SessionView, width: u16, theme: &Theme) -> BarChart<'static> {
    let fit = (width / BAR_STEP).max(2) as usize;
    let decode = &s.decode_ms;
    let shown = decode.len().min(fit - 1);
    let first = decode.len() - shown;
    // Tenths of a millisecond: BarChart wants integers.
    let tenths = |x: f64| (x * 10.0).round().max(1.0) as u64;
    let value = |x: f64| {
        if x >= 100.0 {
            format!("{x:.0}")
        } else {
            format!("{x:.1}")
        }
    };
    let mut bars = vec![Bar::default()
        .value(tenths(s.prefill.ms))
        .text_value(value(s.prefill.ms))
        .label(Line::from("P"))
        .style(theme.planned)];
    for (i, &d) in decode.iter().enumerate().skip(first) {
        bars.push(
            Bar::default()
                .value(tenths(d))
                .text_value(value(d))
                .label(Line::from(format!("{}", i + 1)))
                .style(theme.bar),
        );
    }
    BarChart::default()
        .data(BarGroup::default().bars(&bars))
        .bar_width(BAR_STEP - 1)
        .bar_gap(1)
        .value_style(theme.text.add_modifier(ratatui::style::Modifier::REVERSED))
        .label_style(theme.dim)
}

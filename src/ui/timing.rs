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
const BAR_STEP: u16 = 4;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let mut block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(" Reading vs writing ", theme.title));
    let kv_on = app
        .session
        .as_ref()
        .map_or(app.kv_cache, |s| s.last_pass.kv_cache_on);
    block = if kv_on {
        block.title_top(Line::styled(" KV cache on ", theme.ok_badge).right_aligned())
    } else {
        block.title_top(Line::styled(" KV CACHE OFF ", theme.warn_badge).right_aligned())
    };
    block = block
        .title_bottom(Line::styled(" ms · P = prefill, 1 2 … = steps ", theme.dim))
        .title_bottom(Line::styled(" v: KV ", theme.dim).right_aligned());
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(s) = app.session.as_ref() else {
        return;
    };
    let text = stats_lines(s, inner.width as usize, theme);
    let [top, chart] =
        Layout::vertical([Constraint::Length(text.len() as u16), Constraint::Fill(1)]).areas(inner);
    frame.render_widget(Paragraph::new(text), top);
    if chart.height >= 4 {
        frame.render_widget(bar_chart(s, chart.width, theme), chart);
    }
}

fn stats_lines(s: &SessionView, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let p = &s.prefill;
    let steps = s.decode_ms.len();
    let tpot = if steps > 0 {
        s.decode_ms.iter().sum::<f64>() / steps as f64
    } else {
        0.0
    };
    let pass = &s.last_pass;
    let wide = width >= 50;
    let mut lines = vec![Line::from(vec![
        Span::styled("read  ", theme.key),
        Span::styled(
            format!(
                "prefill {} tok in {} = {:.0} tok/s",
                p.tokens,
                ms(p.ms),
                p.tok_per_s
            ),
            theme.text,
        ),
    ])];
    let decode = if steps == 0 {
        "decode: no steps yet".to_string()
    } else {
        format!(
            "decode {steps} steps, TPOT {} = {:.0} tok/s",
            ms(tpot),
            1000.0 / tpot.max(1e-9)
        )
    };
    lines.push(Line::from(vec![
        Span::styled("write ", theme.key),
        Span::styled(decode, theme.text),
    ]));
    let kv = format!("KV {} pos {}", pass.kv_len, bytes(pass.kv_bytes));
    let counters = format!(
        "TTFT {} · passes {} · {kv}",
        ms(p.ttft_ms),
        pass.forward_passes
    );
    if wide {
        lines.push(Line::styled(counters, theme.dim));
    } else {
        lines.push(Line::styled(
            format!("TTFT {} · passes {}", ms(p.ttft_ms), pass.forward_passes),
            theme.dim,
        ));
        lines.push(Line::styled(kv, theme.dim));
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
                "no cache: each step re-reads all {} tokens",
                pass.tokens_fed
            )
        } else {
            format!("re-reads all {} tokens", pass.tokens_fed)
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
    let mut bars = vec![Bar::default()
        .value(tenths(s.prefill.ms))
        .text_value(format!("{:.0}", s.prefill.ms))
        .label(Line::from("P"))
        .style(theme.planned)];
    for (i, &d) in decode.iter().enumerate().skip(first) {
        bars.push(
            Bar::default()
                .value(tenths(d))
                .text_value(format!("{d:.0}"))
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

//! The speed of light of the newest pass, for the timing panel: a one-token step must stream every
//! weight and the KV cache at its depth from memory (or from the CPU's cache, where the model fits in
//! it), so its floor is those bytes over this machine's measured bandwidth; a prefill (or a step with the cache off) does arithmetic on many tokens per
//! weight read, so it is set against the kernels' measured peak GFLOP/s. Every figure comes from the
//! model's shapes and the engine's clock (`engine/machine.rs`).

use super::theme::Theme;
use crate::app::App;
use crate::fmt::ms;
use crate::protocol::{MachineSpeed, SessionView};
use ratatui::text::Line;

/// The lines, or none for a served model (its passes run elsewhere: only the request time is known).
pub fn lines(
    app: &App,
    s: &SessionView,
    (wide, cols): (bool, usize),
    theme: &Theme,
) -> Vec<Line<'static>> {
    if app.model.as_ref().is_some_and(|i| i.served.is_some()) {
        let text = match wide {
            true => "light: unknown: a served model's passes run on its server",
            false => "light: unknown (served)",
        };
        return vec![Line::styled(text, theme.dim)];
    }
    let Some(m) = app.model.as_ref().and_then(|i| i.machine.as_ref()) else {
        return vec![];
    };
    let position = s.tokens.len().saturating_sub(1).max(s.prompt_len);
    let (w, kv) = m.step_bytes(position);
    let floor = m.step_floor_ms(position);
    let mb = |b: usize| b as f64 / 1e6;
    // The wide form where it fits, both led by the `step ≥` the lessons name (at 120x34 in presenter
    // mode the wide form had been cut at "23", its GB/s lost). Where the model fits in the CPU's
    // last-level cache, the bandwidth is that cache's, and the line says so where it has room.
    let cache = if m.from_cache { " from cache" } else { "" };
    let long = format!(
        "step ≥ {}: reads {:.1} MB (KV {:.1}) at {:.1} GB/s{cache}",
        ms(floor),
        mb(w + kv),
        mb(kv),
        m.bandwidth_gb_s
    );
    let short = |cache: &str| {
        format!(
            "step ≥ {}: {:.0} MB at {:.0} GB/s{cache}",
            ms(floor),
            mb(w + kv),
            m.bandwidth_gb_s
        )
    };
    let forms: Vec<String> = wide
        .then_some(long)
        .into_iter()
        .chain([short(cache), short("")])
        .collect();
    let first = crate::fmt::first_fitting(&forms, cols);
    let mut out = vec![Line::styled(first, theme.info)];
    let newest = newest(app, s, m, floor, wide);
    out.extend(newest.into_iter().map(|t| Line::styled(t, theme.info)));
    out
}

/// The newest pass against its limit, then the prefill against the peak arithmetic, a line each (side
/// by side they overran the panel's width): a cached step against the bandwidth floor, a pass over
/// many tokens against the peak; a round's tokens say where their time is.
fn newest(app: &App, s: &SessionView, m: &MachineSpeed, floor: f64, wide: bool) -> Vec<String> {
    let p = &s.prefill;
    let prefill = gflops(m.pass_flop(p.tokens, 0), p.ms);
    let pct = 100.0 * prefill / m.peak_gflops;
    let read = match wide {
        true => format!(
            "prefill at {pct:.0}% of peak: {prefill:.1} of {:.0} GFLOP/s",
            m.peak_gflops
        ),
        false => format!("prefill at {pct:.0}% of peak"),
    };
    let last = &s.last_pass;
    let stepped = s.tokens.len() > s.prompt_len;
    let from_round = app.speculative.last.is_some() && app.round_on_path();
    let write = match (stepped, from_round, last.kv_cache_on) {
        (false, _, _) => return vec![read],
        (true, true, _) => match wide {
            true => "the last token came from a round (its panel)".to_string(),
            false => "last token came from a round".to_string(),
        },
        (true, false, true) if last.tokens_fed == 1 => {
            let pct = 100.0 * floor / last.ms.max(1e-9);
            // Under its floor, the memory's speed was measured low (a busy spell while it was
            // timed, or weights left in the cache): said so in words a class reads without the
            // speed-of-light lesson ("light measured low" had stood in the typewriter lesson), not
            // shown as a step beating the floor.
            match (wide, pct > 100.5) {
                (true, false) => format!("the last took {}: {pct:.0}% of light", ms(last.ms)),
                (false, false) => format!("last step {}: {pct:.0}% of light", ms(last.ms)),
                (true, true) => format!(
                    "the last took {} < floor: memory measured slow",
                    ms(last.ms)
                ),
                (false, true) => format!("last {}: memory measured slow", ms(last.ms)),
            }
        }
        (true, false, _) => {
            let from = last.kv_len.saturating_sub(last.tokens_fed);
            let g = gflops(m.pass_flop(last.tokens_fed, from), last.ms);
            match wide {
                true => format!(
                    "the last re-read {} tokens: {g:.1} GFLOP/s",
                    last.tokens_fed
                ),
                false => format!("re-read {:.0} GFLOP/s", g),
            }
        }
    };
    vec![write, read]
}

fn gflops(flop: f64, ms: f64) -> f64 {
    flop / (ms.max(1e-9) / 1e3) / 1e9
}

//! Each decode step's time as the timing panel and its chart read it: its cache state, whether a
//! speculative round wrote it, a rebuilt cache's pass, and the means.

use crate::protocol::{PassReport, SessionView};

/// One decode step's time and, when the session says, whether it ran with the KV cache; and whether
/// a speculative round wrote the token (its time a share of the round's, not one step's).
pub(in crate::ui) struct StepTime {
    pub(in crate::ui) ms: f64,
    pub(in crate::ui) kv: Option<bool>,
    pub(in crate::ui) round: bool,
}

/// Each step's time with its cache state. `SessionView` records only the time per step, so the state
/// is unknown (`None`) and the panel never claims a TPOT is cache-on only.
pub(in crate::ui) fn step_times(s: &SessionView) -> Vec<StepTime> {
    let round = |i: usize| s.decode_round.get(i).copied().unwrap_or(false);
    s.decode_ms
        .iter()
        .zip(&s.decode_kv)
        .enumerate()
        .map(|(i, (&ms, &kv))| StepTime {
            ms,
            kv: Some(kv),
            round: round(i),
        })
        .collect()
}

/// A pass after the prompt that fed several tokens with the cache on: turning the cache back on (or
/// switching branch) re-reads the path in one pass. That is a prefill, not a write step.
pub(in crate::ui) fn rebuild(s: &SessionView) -> Option<&PassReport> {
    let p = &s.last_pass;
    (p.kv_cache_on && p.tokens_fed > 1 && s.tokens.len() > s.prompt_len).then_some(p)
}

pub(super) fn mean(xs: impl Iterator<Item = f64>) -> Option<(f64, usize)> {
    let (sum, n) = xs.fold((0.0, 0), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| (sum / n as f64, n))
}

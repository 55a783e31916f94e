//! The sentences both handout formats write under the timings table, once: each format gives its own
//! emphasis (`<b>` or `**`) and wraps each sentence as a paragraph. Each ratio says what it is made of,
//! and where the figures cannot be what the model alone costs (a step slower than the whole prompt's
//! pass, no gain from the cache), the sentence says so rather than teach it.

use super::facts::Timings;

/// Time to the first token, then the two ratios when the session has the passes to compute them,
/// then what the decode figures cover.
pub fn sentences(t: &Timings, strong: impl Fn(&str) -> String) -> Vec<String> {
    let mut out = vec![format!(
        "Time to the first token: {:.2} ms (prefill and the first sampling).",
        t.ttft_ms
    )];
    if let (Some(r), Some(d)) = (t.decode_over_prefill(), &t.cached) {
        out.push(format!(
            "One generated token costs {} a prompt token (the median of {} decode passes against \
             the prefill's time per token): the prompt's tokens share one pass, each generated token \
             needs its own.",
            strong(&format!("{r:.1}×")),
            d.passes
        ));
        if d.median_ms > 1.5 * t.prefill_ms {
            out.push(format!(
                "Those steps took longer than the whole prompt's pass ({:.2} ms for {} tokens at \
                 once), which a one-token pass does not need: something slowed them (a busy machine, \
                 or weights gone from the cache between key presses), so the ratio above overstates \
                 what a token costs.",
                t.prefill_ms, t.prefill_tokens
            ));
        }
    }
    if let (Some(r), Some(on), Some(off)) = (t.uncached_over_cached(), &t.cached, &t.uncached) {
        out.push(format!(
            "Without the KV cache a step costs {} a step with it (medians of {} passes without and \
             {} with).",
            strong(&format!("{r:.1}×")),
            off.passes,
            on.passes
        ));
        if r < 1.2 {
            out.push(
                "At these lengths re-reading the whole text costs about as much as reading one \
                 token, as reading the weights dominates a pass, and the machine's noise is larger \
                 than the difference; the cache's gain grows with the length of the text."
                    .into(),
            );
        }
    }
    out.push("Decode figures cover every generated token of the tree that had a pass of its own, on every branch.".into());
    out
}

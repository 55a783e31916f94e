//! The sentences both handout formats write under the timings table, once: each format gives its own
//! emphasis (`<b>` or `**`) and wraps each sentence as a paragraph.

use super::facts::Timings;

/// Time to the first token, then the two ratios when the session has the passes to compute them.
pub fn sentences(t: &Timings, strong: impl Fn(&str) -> String) -> Vec<String> {
    let mut out = vec![format!(
        "Time to the first token: {:.2} ms (prefill and the first sampling).",
        t.ttft_ms
    )];
    if let Some(r) = t.decode_over_prefill() {
        out.push(format!(
            "One generated token costs {} a prompt token (median decode pass against prefill per \
             token): the prompt's tokens share one pass, each generated token needs its own.",
            strong(&format!("{r:.1}×"))
        ));
    }
    if let Some(r) = t.uncached_over_cached() {
        out.push(format!(
            "Without the KV cache a step costs {} a step with it (medians).",
            strong(&format!("{r:.1}×"))
        ));
    }
    out
}

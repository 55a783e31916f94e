//! The handout's speculative rounds and speed of light: the rows and sentences both formats lay out
//! (HTML and Markdown only escape them). Every figure is from the saved session: the rounds as the
//! engine reported them, the machine as it was measured when the model loaded.

use super::facts::Timings;
use crate::analysis::speculation::Tally;
use crate::engine::session_file::SavedSession;
use crate::fmt::{ms, quoted_token};
use crate::protocol::{RoundEnd, Verdict};

/// The rounds table's header.
pub const ROUND_COLUMNS: [&str; 5] = [
    "round",
    "from step",
    "drafted: ✓ kept, ✗ rejected, · not checked",
    "last token",
    "round against plain steps",
];

/// One row per round, oldest first.
pub fn round_rows(saved: &SavedSession) -> Vec<[String; 5]> {
    saved
        .rounds
        .iter()
        .map(|r| {
            let drafted: Vec<String> = r
                .drafted
                .iter()
                .map(|d| {
                    let mark = match d.verdict {
                        Verdict::Accepted => "✓",
                        Verdict::Rejected => "✗",
                        Verdict::Unchecked => "·",
                    };
                    format!("{mark} {}", quoted_token(&d.token))
                })
                .collect();
            // Greedy draws nothing: the residual and the bonus are the model's own top token.
            let how = match (r.last.end, r.greedy) {
                (RoundEnd::Residual, true) => "the model's top, instead",
                (RoundEnd::Bonus, true) => "bonus: the model's top",
                (RoundEnd::Residual, false) => "redrawn from max(0, p − q)",
                (RoundEnd::Bonus, false) => "bonus from p",
            };
            [
                (r.round + 1).to_string(),
                (r.first_position + 1)
                    .saturating_sub(saved.prompt_len)
                    .to_string(),
                drafted.join(" "),
                format!("{} ({how})", quoted_token(&r.last.token)),
                format!(
                    "{} for {}; plain {} ({:.2}×)",
                    ms(r.ms()),
                    crate::fmt::tokens(r.tokens()),
                    ms(r.plain_equivalent_ms()),
                    r.plain_equivalent_ms() / r.ms()
                ),
            ]
        })
        .collect()
}

/// The rounds added up, in one paragraph; `None` without rounds.
pub fn rounds_summary(saved: &SavedSession) -> Option<String> {
    let first = saved.rounds.first()?;
    let mut t = Tally::default();
    saved.rounds.iter().for_each(|r| r.add_to(&mut t));
    Some(format!(
        "{} rounds with the draft {}: {:.0}% of the checked drafts kept, {:.2} tokens per pass of the \
         model, {:.2}× the speed of plain steps on the machine that ran it. Each round's tokens are \
         the model's own (under greedy exactly plain greedy's); the decode timings include them, each \
         at its round's time shared among its tokens.",
        t.rounds,
        first.draft,
        t.acceptance() * 100.0,
        t.tokens_per_pass(),
        t.speedup()
    ))
}

/// The speed of light of a step and of the prefill, in sentences; empty when the machine was not
/// measured. `depth`: the current path's length, the KV cache a step at its end reads.
pub fn light_sentences(saved: &SavedSession, t: &Timings, depth: usize) -> Vec<String> {
    let Some(m) = &saved.machine else {
        return vec![];
    };
    let floor = m.step_floor_ms(depth);
    let (w, kv) = m.step_bytes(depth);
    let from = if m.from_cache {
        " from the CPU's cache, which held a copy the size of the model,"
    } else {
        ""
    };
    let mut out = vec![format!(
        "Memory streamed at {:.1} GB/s{from} when the model loaded on the machine that ran this. A \
         one-token step reads every weight ({:.1} MB) and the KV cache at its depth (up to {:.1} MB \
         here), so a step should take at least about {}: an estimate, from one measurement.",
        m.bandwidth_gb_s,
        w as f64 / 1e6,
        kv as f64 / 1e6,
        ms(floor)
    )];
    if let Some(d) = &t.cached {
        let share = 100.0 * floor / d.median_ms.max(1e-9);
        let mut s = format!(
            "The median cached step took {}: {share:.0}% of that speed of light.",
            ms(d.median_ms)
        );
        if share > 100.0 {
            s.push_str(" The steps beat the estimate, so the bandwidth measured at load was low (the machine was busier then).");
        }
        out.push(s);
    }
    if t.prefill_ms > 0.0 {
        out.push(prefill_sentence(m, t));
    }
    out
}

/// The prefill's GFLOP/s against the kernels' peak, and which floor bounds it at this prompt's
/// length: the arithmetic (every weight used once per prompt token) or the one read of the weights.
fn prefill_sentence(m: &crate::protocol::MachineSpeed, t: &Timings) -> String {
    let flop = m.pass_flop(t.prefill_tokens, 0);
    let gflops = flop / (t.prefill_ms / 1e3) / 1e9;
    let arithmetic_ms = flop / (m.peak_gflops * 1e9) * 1e3;
    let memory_ms = m.step_floor_ms(0);
    let bound = if arithmetic_ms >= memory_ms {
        format!(
            "a prefill uses each weight for every prompt token, so at {} tokens its arithmetic ({} \
             at that peak) outweighs reading the weights ({}): it is bound by arithmetic, not memory",
            t.prefill_tokens,
            ms(arithmetic_ms),
            ms(memory_ms)
        )
    } else {
        format!(
            "with only {} tokens, reading the weights once ({}) outweighs their arithmetic ({} at \
             that peak), so this prefill is bound by memory, as a step is; a longer prompt is bound \
             by arithmetic",
            t.prefill_tokens,
            ms(memory_ms),
            ms(arithmetic_ms)
        )
    };
    format!(
        "Reading the prompt did {gflops:.1} GFLOP/s against the {:.0} GFLOP/s the model's kernels \
         reach at their best: {bound}.",
        m.peak_gflops
    )
}

//! `bench --draft`: plain decoding against speculative decoding in the same run, on the same text
//! (greedy, so both write the same tokens), runs interleaved so that both see the same machine load.

use crate::analysis::speculation::{acceptance_words, break_even_acceptance, Tally};
use crate::engine::draft::DraftSpec;
use crate::engine::load::{load_session, LoadOptions};
use crate::engine::session::{Session, Written};
use crate::protocol::SamplerSettings;
use anyhow::Result;
use serde::Serialize;
use std::path::Path;
use std::time::Instant;

/// The prompt both write from: a list the draft can guess well, then open text.
pub const PROMPT: &str = "Monday, Tuesday, Wednesday, Thursday,";

#[derive(Debug, Clone, Serialize)]
pub struct SpecBench {
    pub draft: String,
    pub k: usize,
    pub prompt: String,
    /// Tokens each run wrote (the same for both: greedy).
    pub tokens: usize,
    /// Median rates over the runs, full session steps on both sides (the sampler chain included).
    pub plain_tok_s: f64,
    pub speculative_tok_s: f64,
    /// speculative_tok_s / plain_tok_s: above 1 the draft pays.
    pub speedup: f64,
    /// Kept drafted tokens over checked ones, over every timed run.
    pub acceptance: f64,
    /// Tokens written per pass of the model (plain decoding: 1).
    pub tokens_per_target_pass: f64,
    /// Passes of the model per token written, counted (the rounds' checks, and the occasional plain
    /// pass a round times itself against).
    pub target_passes_per_token: f64,
    /// One draft pass over one plain pass of the model, from the rounds' own timings.
    pub draft_cost_ratio: f64,
    /// The acceptance at which the rounds measured here would cost what plain steps do; null when
    /// no acceptance would pay.
    pub break_even_acceptance: Option<f64>,
    /// Bytes of weights one draft pass reads over the model's (the draft's speed of light).
    pub draft_bytes_ratio: f64,
}

fn session(path: &Path) -> Result<Session> {
    let greedy = SamplerSettings {
        greedy: true,
        ..SamplerSettings::default()
    };
    let load = LoadOptions::default();
    Ok(load_session(path, &load, greedy, Default::default(), &mut |_| {})?.0)
}

/// Writes up to `n` tokens in rounds of `k`; returns the tokens written and the rounds' tally.
fn speculative_run(s: &mut Session, n: usize, k: usize) -> Result<(usize, Tally)> {
    let mut tally = Tally::default();
    let mut written = 0;
    for w in s.write_in_rounds(n, k)? {
        written += match w {
            Written::Round(r) => {
                r.report.add_to(&mut tally);
                r.steps.len()
            }
            Written::Step(_) => 1,
        };
    }
    Ok((written, tally))
}

/// With `--draft`: the comparison, over `-n` tokens and `-r` runs.
pub fn from_args(path: &Path, args: &crate::cli::BenchArgs) -> Result<Option<SpecBench>> {
    let Some(spec) = args.draft.spec() else {
        return Ok(None);
    };
    measure(path, &spec, args.draft.k(), args.gen_len, args.reps).map(Some)
}

pub fn measure(
    path: &Path,
    spec: &DraftSpec,
    k: usize,
    n: usize,
    reps: usize,
) -> Result<SpecBench> {
    let mut plain = session(path)?;
    let mut spec_s = session(path)?;
    spec_s.load_draft(spec, k)?;
    let draft_bytes_ratio = spec_s.draft_info().map_or(1.0, |d| d.bytes_ratio);
    let (mut plain_rates, mut spec_rates) = (Vec::new(), Vec::new());
    let mut total = Tally::default();
    let (mut tokens, mut passes) = (0, 0);
    for rep in 0..=reps.max(1) {
        plain.prefill_text(PROMPT, false)?;
        let t = Instant::now();
        let written = plain.generate(n, |_, _| false)?.len();
        let plain_s = t.elapsed().as_secs_f64();
        spec_s.prefill_text(PROMPT, false)?;
        let (before, timing) = (spec_s.forward_passes(), spec_s.plain_timing_s());
        let t = Instant::now();
        let (spec_written, tally) = speculative_run(&mut spec_s, n, k)?;
        // Less the plain steps each round timed for its report: the measure, not the method.
        let spec_s_time = t.elapsed().as_secs_f64() - (spec_s.plain_timing_s() - timing);
        if spec_written != written {
            anyhow::bail!(
                "internal: greedy wrote {written} tokens plainly but {spec_written} with the draft"
            );
        }
        // The first run is the warm-up.
        if rep > 0 {
            plain_rates.push(written as f64 / plain_s);
            spec_rates.push(written as f64 / spec_s_time);
            total.merge(&tally);
            tokens += written;
            passes += spec_s.forward_passes() - before;
        }
    }
    let median = |xs: &[f64]| super::bench::median_std(xs).0;
    let (plain_tok_s, speculative_tok_s) = (median(&plain_rates), median(&spec_rates));
    let per_round = |ms: f64| ms / total.rounds.max(1) as f64;
    // A plain step as the plain runs measured it, beside the rounds, in this run.
    let plain_ms = 1e3 / plain_tok_s;
    Ok(SpecBench {
        draft: spec.label(),
        k,
        prompt: PROMPT.into(),
        tokens: tokens / reps.max(1),
        plain_tok_s,
        speculative_tok_s,
        speedup: speculative_tok_s / plain_tok_s,
        acceptance: total.acceptance(),
        tokens_per_target_pass: total.tokens_per_pass(),
        target_passes_per_token: passes as f64 / tokens.max(1) as f64,
        draft_cost_ratio: total.draft_ms / (k * total.rounds.max(1)) as f64 / plain_ms,
        break_even_acceptance: break_even_acceptance(per_round(total.round_ms), plain_ms, k),
        draft_bytes_ratio,
    })
}

/// The lines `bench` prints for it.
pub fn describe(b: &SpecBench) -> String {
    let even = match b.break_even_acceptance {
        Some(a) => match acceptance_words(a) {
            Some(p) => format!("it pays above {p} acceptance"),
            None => "it pays only if almost every draft is accepted".into(),
        },
        None => "no acceptance would pay at these costs".into(),
    };
    format!(
        "draft {} (k {}), greedy from {:?}, {} tokens: plain {:.1} tok/s, speculative {:.1} tok/s ({:.2}x)\n\
         acceptance {:.0}% · {:.2} tokens per pass of the model · a draft pass costs {:.2} of a plain step \
         (reads {:.0}% of its weight bytes) · {even}",
        b.draft,
        b.k,
        b.prompt,
        b.tokens,
        b.plain_tok_s,
        b.speculative_tok_s,
        b.speedup,
        b.acceptance * 100.0,
        b.tokens_per_target_pass,
        b.draft_cost_ratio,
        b.draft_bytes_ratio * 100.0,
    )
}

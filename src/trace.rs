//! `nexttoken trace`: drives a session with no terminal and prints JSON Lines, one for the prefill and one
//! per step. The schema is documented in docs/TRACE.md.

use crate::cli::{AttentionMode, TraceArgs};
use crate::engine::session::{Choice, Session};
use crate::protocol::{Source, StepReport, TokenView};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;

/// What to force at one step: a token id, or text tokenised and forced from that step on.
#[derive(Debug, Clone, PartialEq)]
pub enum ForceSpec {
    Id(u32),
    Text(String),
}

/// Parses `STEP:ID` or `STEP:text` specs into a step -> spec map.
pub fn parse_forces(specs: &[String]) -> Result<BTreeMap<usize, ForceSpec>> {
    let mut out = BTreeMap::new();
    for spec in specs {
        let (step, what) = spec.split_once(':').with_context(|| {
            format!("--force `{spec}`: expected STEP:ID or STEP:text, e.g. 2:7042 or 0:' Rome'")
        })?;
        let step: usize = step
            .trim()
            .parse()
            .with_context(|| format!("--force `{spec}`: `{step}` is not a step number"))?;
        let f = match what.parse::<u32>() {
            Ok(id) => ForceSpec::Id(id),
            Err(_) if what.is_empty() => {
                bail!("--force `{spec}`: nothing to force after the colon")
            }
            Err(_) => ForceSpec::Text(what.to_string()),
        };
        out.insert(step, f);
    }
    Ok(out)
}

/// Runs the trace, writing JSON Lines to `out`.
pub fn run(
    session: &mut Session,
    prompt: &str,
    chat: bool,
    args: &TraceArgs,
    out: &mut dyn Write,
) -> Result<()> {
    let forces = parse_forces(&args.force)?;
    session.set_kv_cache(!args.no_kv_cache);
    let text = session.render_prompt(prompt, chat)?;
    let ids = session.vocab.encode(&text)?;
    let prefill = session.prefill_ids(&ids)?;
    let tokens: Vec<TokenView> = ids.iter().map(|&t| session.vocab.view(t)).collect();
    let line = json!({
        "type": "prefill",
        "prompt": text,
        "prompt_tokens": tokens,
        "tokens": prefill.tokens,
        "ms": prefill.ms,
        "tok_per_s": prefill.tok_per_s,
        "ttft_ms": prefill.ttft_ms,
        "kv_cache": !args.no_kv_cache,
        "sampler": session.settings(),
        "attention": attention(session, args.attention),
    });
    writeln!(out, "{line}")?;

    // Queue of tokens still to force (text forces span several steps).
    let mut queue: Vec<u32> = Vec::new();
    for step in 0..args.steps {
        match forces.get(&step) {
            Some(ForceSpec::Id(id)) => queue = vec![*id],
            Some(ForceSpec::Text(t)) => {
                queue = session.vocab.encode(t)?.into_iter().rev().collect()
            }
            None => {}
        }
        let choice = queue.pop().map_or(Choice::Sample, Choice::Force);
        let report = session.step(choice)?;
        let line = step_line(&report, args.top_k, attention(session, args.attention));
        writeln!(out, "{line}")?;
        let eos = session.vocab.eos_ids().contains(&report.committed.token.id);
        if eos && report.committed.source != Source::Forced {
            break;
        }
    }
    Ok(())
}

fn step_line(r: &StepReport, top_k: usize, attention: Value) -> Value {
    let d = &r.chosen_from;
    let top: Vec<Value> = d
        .candidates
        .iter()
        .take(top_k)
        .map(|c| json!({"id": c.token.id, "text": c.token.text, "kind": c.token.kind, "prob": c.prob, "logprob": c.logprob}))
        .collect();
    json!({
        "type": "step",
        "step": r.step,
        "position": r.committed.position,
        "token": r.committed.token,
        "source": r.committed.source,
        "forced": r.committed.source == Source::Forced,
        "prob": r.committed.prob,
        "logprob": r.committed.logprob,
        "rank": r.committed.rank,
        "entropy": d.entropy,
        "eos_prob": d.eos_prob,
        "top_k": top,
        "draw": d.draw,
        "decode_ms": r.pass.ms,
        "tokens_fed": r.pass.tokens_fed,
        "kv_len": r.pass.kv_len,
        "kv_bytes": r.pass.kv_bytes,
        "forward_passes": r.pass.forward_passes,
        "attention": attention,
    })
}

/// The newest query row of the last pass: per layer the mean over heads, or every head.
fn attention(session: &Session, mode: Option<AttentionMode>) -> Value {
    let Some(mode) = mode else { return Value::Null };
    let a = session.last_attention();
    let c = &session.model.config;
    if a.rows == 0 {
        return Value::Null;
    }
    let row = |l: usize, h: usize| -> &[f32] {
        let base = ((l * c.n_head + h) * a.rows + a.rows - 1) * a.kv_len;
        &a.data[base..base + a.kv_len]
    };
    let layers: Vec<Value> = (0..c.n_layer)
        .map(|l| match mode {
            AttentionMode::All => json!((0..c.n_head)
                .map(|h| row(l, h).to_vec())
                .collect::<Vec<_>>()),
            AttentionMode::Mean => {
                let mean: Vec<f32> = (0..a.kv_len)
                    .map(|k| (0..c.n_head).map(|h| row(l, h)[k]).sum::<f32>() / c.n_head as f32)
                    .collect();
                json!(mean)
            }
        })
        .collect();
    json!({"query_position": a.first_row + a.rows - 1, "mode": format!("{mode:?}").to_lowercase(), "layers": layers})
}

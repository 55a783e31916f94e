//! `nexttoken trace`: drives a session with no terminal and prints JSON Lines, one for the prefill and one
//! per step. The schema is documented in docs/TRACE.md.

use crate::analysis;
use crate::cli::force::{parse_forces, ForceSpec};
use crate::cli::{AttentionMode, TraceArgs};
use crate::engine::session::{Choice, Session};
use crate::protocol::{Inspection, Source, StepReport, TokenView};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::io::Write;

/// Runs the trace, writing JSON Lines to `out`.
pub fn run(session: &mut Session, args: &TraceArgs, out: &mut dyn Write) -> Result<()> {
    let forces = parse_forces(&args.force)?;
    session.set_kv_cache(!args.no_kv_cache)?;
    let text = session.render_prompt(&args.session.prompt, args.session.chat)?;
    let ids = session.prompt_ids(&args.session.prompt, args.session.chat)?;
    let prefill = session.prefill_ids(&ids)?;
    session.note_prompt(&args.session.prompt, args.session.chat);
    let tokens: Vec<TokenView> = ids.iter().map(|&t| session.token_view(t)).collect();
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
        "server": session.served(),
        "served": session.view()?.last_pass.served,
    });
    writeln!(out, "{line}")?;

    let mut step = 0;
    while step < args.steps {
        // Each token's attention is read right after its own pass.
        let mut attns = Vec::new();
        // The lens and the head map of the pass this step's token is chosen from.
        let inspected = inspect(session, args, forces.get(&step))?;
        let reports = match forces.get(&step) {
            Some(ForceSpec::Text(t)) => session.force_text(t, &mut |s, _, _| {
                attns.push(attention(s, args.attention));
            })?,
            spec => {
                let choice = match spec {
                    Some(ForceSpec::Id(id)) => Choice::Force(*id),
                    _ => Choice::Sample,
                };
                let report = session.step(choice)?;
                attns.push(attention(session, args.attention));
                vec![report]
            }
        };
        if let Some((&inside, _)) = forces.range(step + 1..step + reports.len()).next() {
            bail!("--force at step {inside} falls inside the text forced at step {step}");
        }
        let tokens = session.tokens();
        for (report, attn) in reports.iter().zip(attns) {
            let mut line = step_line(report, args.top_k, attn);
            if report.step == step {
                add_inspection(&mut line, args, &inspected, report.committed.token.id)?;
            } else if args.logit_lens || args.head_map {
                line["logit_lens"] = Value::Null;
                line["head_map"] = Value::Null;
            }
            let upto = &tokens[..=report.committed.position];
            line["repetition"] = json!(analysis::tip_cycle(upto));
            writeln!(out, "{line}")?;
        }
        step += reports.len();
        if session.ends_text(&reports[reports.len() - 1]) {
            break;
        }
    }
    if let Some(path) = &args.save {
        crate::engine::session_file::write(path, &session.to_saved()?)?;
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
        "known_mass": d.known_mass,
        "served": r.pass.served,
    })
}

/// Inspects the tip before a step when asked: the logit lens follows the token that will be forced,
/// or the sampler's plan.
fn inspect(
    session: &mut Session,
    args: &TraceArgs,
    force: Option<&ForceSpec>,
) -> Result<Option<Inspection>> {
    if !args.logit_lens && !args.head_map {
        return Ok(None);
    }
    let chosen = match force {
        Some(ForceSpec::Id(id)) => Some(*id),
        Some(ForceSpec::Text(t)) => session.encode(t)?.first().copied(),
        None => None,
    };
    Ok(Some(session.inspect(
        args.logit_lens,
        args.head_map,
        chosen,
    )?))
}

/// Adds `logit_lens` and `head_map` to a step line. The lens followed the token `inspect` expected
/// (the forced one, or the plan, which is also the seeded draw).
fn add_inspection(
    line: &mut Value,
    args: &TraceArgs,
    inspected: &Option<Inspection>,
    committed: u32,
) -> Result<()> {
    let Some(i) = inspected else {
        return Ok(());
    };
    if args.logit_lens {
        let lens = i.lens.as_ref().context("lens missing")?;
        if lens.chosen.id != committed {
            bail!(
                "internal: the lens followed token {} but {committed} was committed",
                lens.chosen.id
            );
        }
        let layers: Vec<Value> = lens
            .layers
            .iter()
            .map(|l| {
                let top: Vec<Value> = l
                    .top
                    .iter()
                    .map(|t| json!({"id": t.token.id, "text": t.token.text, "p": t.p}))
                    .collect();
                json!({"layer": l.layer, "top": top, "chosen_rank": l.chosen_rank, "chosen_p": l.chosen_p})
            })
            .collect();
        line["logit_lens"] = json!(layers);
    }
    if args.head_map {
        let map = i.heads.as_ref().context("head map missing")?;
        line["head_map"] = json!(map.scores);
    }
    Ok(())
}

/// The newest query row of the last pass: per layer the mean over heads, or every head.
fn attention(session: &Session, mode: Option<AttentionMode>) -> Value {
    let (Some(mode), Some(a)) = (mode, session.newest_attention()) else {
        return Value::Null;
    };
    let layers: Vec<Value> = a
        .rows
        .iter()
        .map(|heads| match mode {
            AttentionMode::All => json!(heads),
            AttentionMode::Mean => {
                let keys = heads.first().map_or(0, Vec::len);
                let mean: Vec<f32> = (0..keys)
                    .map(|k| heads.iter().map(|h| h[k]).sum::<f32>() / heads.len() as f32)
                    .collect();
                json!(mean)
            }
        })
        .collect();
    json!({"query_position": a.query_position, "mode": format!("{mode:?}").to_lowercase(), "layers": layers})
}

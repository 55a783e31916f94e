//! `nexttoken trace`: drives a session with no terminal and prints JSON Lines, one for the prefill and one
//! per step. The schema is documented in docs/TRACE.md.

use crate::analysis;
use crate::cli::force::{parse_forces, ForceSpec};
use crate::cli::{AttentionMode, TraceArgs};
use crate::engine::session::{Choice, Session, Written};
use crate::protocol::{Distribution, Inspection, StepReport, TokenRecord, TokenView};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::io::Write;

/// Runs the trace, writing JSON Lines to `out`.
pub fn run(session: &mut Session, args: &TraceArgs, out: &mut dyn Write) -> Result<()> {
    let forces = parse_forces(&args.force)?;
    if let Some((&last, _)) = forces.iter().next_back().filter(|(&s, _)| s >= args.steps) {
        bail!(
            "--force at step {last} is past the last step ({}): raise --steps (steps count from 0)",
            args.steps.max(1) - 1
        );
    }
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
        "kv_type": session.local_model().map(|m| m.cache.precision().name()),
        "sampler": session.settings(),
        "attention": attention(session, args.attention),
        "server": session.served(),
        "served": session.view()?.last_pass.served,
    });
    writeln!(out, "{line}")?;

    if session.draft_label().is_some() {
        speculative(session, args, out)?;
    } else {
        plain(session, args, &forces, out)?;
    }
    if let Some(path) = &args.save {
        crate::engine::session_file::write(path, &session.to_saved()?)?;
    }
    Ok(())
}

/// One step line per step, the tokens chosen by the sampler or forced.
fn plain(
    session: &mut Session,
    args: &TraceArgs,
    forces: &std::collections::BTreeMap<usize, ForceSpec>,
    out: &mut dyn Write,
) -> Result<()> {
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
            let mut line = report_line(report, args.top_k, attn);
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
    Ok(())
}

/// Speculative decoding: one round line per round, then a step line for each token it wrote (the
/// same fields as a plain step's; `decode_ms` is the round's time shared among its tokens).
fn speculative(session: &mut Session, args: &TraceArgs, out: &mut dyn Write) -> Result<()> {
    let written = session.write_in_rounds(args.steps, args.draft.k())?;
    let tokens = session.tokens();
    for w in written {
        let round = match w {
            Written::Step(report) => {
                let line = report_line(&report, args.top_k, attention(session, args.attention));
                writeln!(out, "{line}")?;
                continue;
            }
            Written::Round(round) => round,
        };
        writeln!(out, "{}", round_line(&round.report))?;
        let share = round.report.ms() / round.report.tokens() as f64;
        for s in &round.steps {
            let mut line = step_line(s.step, &s.committed, &s.chosen_from, args.top_k);
            add_pass(&mut line, &round.pass);
            line["decode_ms"] = json!(share);
            line["attention"] = Value::Null;
            let upto = &tokens[..=s.committed.position];
            line["repetition"] = json!(analysis::tip_cycle(upto));
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// A round: what was drafted, what the check said of each token, and the costs.
fn round_line(r: &crate::protocol::RoundReport) -> Value {
    let each = |f: fn(&crate::protocol::DraftedToken) -> Value| -> Vec<Value> {
        r.drafted.iter().map(f).collect()
    };
    json!({
        "type": "round",
        "round": r.round,
        "draft": r.draft,
        "k": r.drafted.len(),
        "first_position": r.first_position,
        "drafted": each(|d| json!(d.token.id)),
        "drafted_tokens": each(|d| json!(d.token)),
        "accepted": r.accepted,
        "p": each(|d| json!(d.p)),
        "q": each(|d| json!(d.q)),
        "accept_prob": each(|d| json!(d.accept_prob)),
        "u": each(|d| json!(d.u)),
        "verdicts": each(|d| json!(d.verdict)),
        "end": r.last.end,
        "last": r.last.token,
        "last_prob": r.last.prob,
        "tokens": r.tokens(),
        "draft_passes": r.draft_passes,
        "draft_ms": r.draft_ms,
        "draft_read": r.draft_read,
        "verify_positions": r.verify_positions,
        "verify_ms": r.verify_ms,
        "plain_ms": r.plain_ms,
        "greedy": r.greedy,
    })
}

/// A plain step's line: the token, its distribution, its pass and the attention read after it.
fn report_line(r: &StepReport, top_k: usize, attention: Value) -> Value {
    let mut line = step_line(r.step, &r.committed, &r.chosen_from, top_k);
    add_pass(&mut line, &r.pass);
    line["attention"] = attention;
    line
}

/// A step's pass: its time and the KV cache after it.
fn add_pass(line: &mut Value, p: &crate::protocol::PassReport) {
    line["decode_ms"] = json!(p.ms);
    line["tokens_fed"] = json!(p.tokens_fed);
    line["kv_len"] = json!(p.kv_len);
    line["kv_bytes"] = json!(p.kv_bytes);
    line["forward_passes"] = json!(p.forward_passes);
    line["served"] = json!(p.served);
}

/// The fields every step line has: the token committed and the distribution it was chosen from.
fn step_line(step: usize, c: &TokenRecord, d: &Distribution, top_k: usize) -> Value {
    let top: Vec<Value> = d
        .candidates
        .iter()
        .take(top_k)
        .map(|c| json!({"id": c.token.id, "text": c.token.text, "kind": c.token.kind, "prob": c.prob, "logprob": c.logprob, "sampled_prob": c.sampled_prob}))
        .collect();
    json!({
        "type": "step",
        "step": step,
        "position": c.position,
        "token": c.token,
        "source": c.source,
        "forced": c.source.by_hand(),
        "prob": c.prob,
        "logprob": c.logprob,
        "rank": c.rank,
        "entropy": d.entropy,
        "eos_prob": d.eos_prob,
        "top_k": top,
        "model_top": d.model_top,
        "draw": d.draw,
        "known_mass": d.known_mass,
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

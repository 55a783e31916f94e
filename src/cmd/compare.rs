//! `nexttoken compare`: two paths from one prompt, aligned step by step, as JSON Lines (schema in
//! docs/TRACE.md).
//!
//! - With `--force STEP:TEXT`, path A runs free and path B is the same up to step STEP, takes the forced
//!   text there, then runs free: the exposure-bias experiment.
//! - With `--reference TEXT`, path B teacher-forces the reference and path A runs free from the same
//!   start: the training-time view (per-token NLL, perplexity) against generation.
//!
//! Both paths live in one session tree and use the same sampler and seed; `Session::compare` measures
//! them over the whole vocabulary.

use crate::cli::force::{parse_forces, ForceSpec};
use crate::cli::CompareArgs;
use crate::engine::session::{Choice, Session};
use crate::protocol::{AlignedStep, Comparison, PathToken};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::io::Write;

/// Runs the comparison, writing JSON Lines to `out`.
pub fn run(session: &mut Session, args: &CompareArgs, out: &mut dyn Write) -> Result<()> {
    let ids = session.prompt_ids(&args.session.prompt, args.session.chat)?;
    session.prefill_ids(&ids)?;
    match &args.reference {
        Some(reference) => run_reference(session, args, reference, out),
        None => run_forced(session, args, out),
    }
}

fn run_forced(session: &mut Session, args: &CompareArgs, out: &mut dyn Write) -> Result<()> {
    let forces = parse_forces(&args.force)?;
    let Some((&fork, _)) = forces.iter().next() else {
        bail!("compare needs --force STEP:TEXT (path B) or --reference TEXT");
    };
    let steps = args.steps.unwrap_or(16);
    if fork >= steps {
        bail!(
            "--force at step {fork} is past the last step ({}): raise --steps",
            steps.max(1) - 1
        );
    }
    generate_to(session, steps, &Default::default())?;
    let leaf_a = session.tip_id().context("no path")?;
    if session.generated() < fork {
        bail!(
            "path A ended (end of text) at step {} before the fork at step {fork}",
            session.generated()
        );
    }
    session.rewind(session.generated() - fork)?;
    generate_to(session, steps, &forces)?;
    let leaf_b = session.tip_id().context("no path")?;
    let c = session.compare(leaf_a, leaf_b)?;
    for s in &c.steps {
        let mut line = divergence_fields(s);
        line["a"] = side(s.a.as_ref());
        line["b"] = side(s.b.as_ref());
        writeln!(out, "{line}")?;
    }
    let summary = json!({
        "type": "summary",
        "fork_step": c.fork_step,
        "a_text": c.a.text,
        "b_text": c.b.text,
        "a_logprob": c.a.logprob,
        "b_logprob": c.b.logprob,
        "a_forced_logprob": c.a.forced_logprob,
        "b_forced_logprob": c.b.forced_logprob,
        "a_free_mean_logprob": c.a.free_mean_logprob,
        "b_free_mean_logprob": c.b.free_mean_logprob,
        "a_free_tokens": c.a.free_tokens,
        "b_free_tokens": c.b.free_tokens,
        "mean_js": c.mean_js,
        "rejoined_at": c.rejoined_at,
    });
    writeln!(out, "{summary}")?;
    Ok(())
}

fn run_reference(
    session: &mut Session,
    args: &CompareArgs,
    reference: &str,
    out: &mut dyn Write,
) -> Result<()> {
    if !args.force.is_empty() {
        bail!("--reference and --force do not go together: give one");
    }
    // The same call as the TUI's `r`: force the reference, go back, run free, compare.
    let c = session
        .reference_run(reference, args.steps, &mut |_, _| {})
        .context("could not teacher-force the reference")?;
    for s in &c.steps {
        let mut line = divergence_fields(s);
        line["free"] = side(s.a.as_ref());
        line["reference"] = side(s.b.as_ref());
        writeln!(out, "{line}")?;
    }
    writeln!(out, "{}", reference_summary(&c))?;
    Ok(())
}

/// The summary line of a teacher-forcing run: per-token NLL and perplexity of the reference, and where
/// free running first left it.
fn reference_summary(c: &Comparison) -> Value {
    let n = c.b.tokens.max(1) as f64;
    let nll = -c.b.logprob / n;
    let after: Vec<&AlignedStep> = c
        .steps
        .iter()
        .skip(c.fork_step.unwrap_or(c.steps.len()))
        .filter(|s| s.a.is_some() && s.b.is_some())
        .collect();
    let differing = after
        .iter()
        .filter(|s| s.a.as_ref().map(|t| t.token.id) != s.b.as_ref().map(|t| t.token.id))
        .count();
    json!({
        "type": "summary",
        "reference_text": c.b.text,
        "free_text": c.a.text,
        "reference_tokens": c.b.tokens,
        "reference_logprob": c.b.logprob,
        "free_logprob": c.a.logprob,
        "nll": nll,
        "perplexity": nll.exp(),
        "first_divergence": c.fork_step,
        "steps_differing_after": differing,
        "mean_js": c.mean_js,
        "rejoined_at": c.rejoined_at,
    })
}

/// Steps the session on to `steps` generated tokens, applying `forces` on the way; stops early at an
/// end-of-text token the sampler chose.
fn generate_to(
    session: &mut Session,
    steps: usize,
    forces: &std::collections::BTreeMap<usize, ForceSpec>,
) -> Result<()> {
    while session.generated() < steps {
        let step = session.generated();
        let last = match forces.get(&step) {
            Some(ForceSpec::Text(t)) => session.force_text(t, &mut |_, _, _| {})?.pop(),
            Some(ForceSpec::Id(id)) => Some(session.step(Choice::Force(*id))?),
            None => Some(session.step(Choice::Sample)?),
        };
        if session.ends_text(&last.context("nothing was committed")?) {
            break;
        }
    }
    Ok(())
}

fn divergence_fields(s: &AlignedStep) -> Value {
    json!({
        "type": "step",
        "step": s.step,
        "kl_ab": s.kl_ab,
        "kl_ba": s.kl_ba,
        "js": s.js,
        "same_top1": s.same_top1,
    })
}

fn side(t: Option<&PathToken>) -> Value {
    match t {
        None => Value::Null,
        Some(t) => json!({
            "id": t.token.id,
            "text": t.token.text,
            "forced": t.forced,
            "prob": t.prob,
            "logprob": t.logprob,
            "rank": t.rank,
            "entropy": t.entropy,
            "top1": {"id": t.top1.id, "text": t.top1.text},
        }),
    }
}

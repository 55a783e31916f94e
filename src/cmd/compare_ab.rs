//! `nexttoken compare --model-b PATH|NAME` or `--requant-b KIND`: two models at the same step. Model A
//! (the session) generates the path; at every step model B (`engine::twin`) reads the same tokens, and
//! the two next-token distributions are compared over the whole vocabulary: each one's top-k, the
//! Jensen–Shannon divergence, whether the top-1 agrees, and a running count of top-1 flips. JSON Lines,
//! schema in docs/TRACE.md.

use crate::analysis::{Divergence, LogProbs};
use crate::cli::CompareArgs;
use crate::engine::session::{Choice, Session};
use crate::engine::twin::Twin;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::io::Write;

/// Candidates each side lists per step.
const TOP: usize = 5;

/// Generates `--steps` tokens with model A, comparing B's distribution with A's before each one.
pub fn run(
    session: &mut Session,
    twin: &mut Twin,
    a_label: &str,
    args: &CompareArgs,
    out: &mut dyn Write,
) -> Result<()> {
    if twin.vocab.is_some() {
        anyhow::bail!(
            "model B ({}) has another vocabulary than model A: `compare` aligns the two models token \
             by token, so model B must share model A's tokenizer (the same family, or a \
             re-quantisation with --requant-b). The app aligns two vocabularies by text: \
             nexttoken --model-b {}",
            twin.label,
            twin.label
        );
    }
    let ids = session.prompt_ids(&args.session.prompt, args.session.chat)?;
    session.prefill_ids(&ids)?;
    let steps = args.steps.unwrap_or(16);
    let (mut flips, mut js_sum, mut done) = (0usize, 0f64, 0usize);
    let mut text = String::new();
    for step in 0..steps {
        let a = LogProbs::from_logits(&session.tip_logits()?);
        let tokens = session.tokens();
        let b = LogProbs::from_logits(twin.logits_after(&tokens).context("model B's pass")?);
        let d = Divergence::between(&a, &b);
        let same_top1 = a.argmax() == b.argmax();
        flips += usize::from(!same_top1);
        js_sum += d.js;
        done += 1;
        let report = session.step(Choice::Sample)?;
        text.push_str(&report.committed.token.text);
        let line = json!({
            "type": "step",
            "step": step,
            "token": {"id": report.committed.token.id, "text": report.committed.token.text},
            "a": side(session, &a),
            "b": side(session, &b),
            "kl_ab": d.kl_ab,
            "kl_ba": d.kl_ba,
            "js": d.js,
            "same_top1": same_top1,
            "top1_flips": flips,
        });
        writeln!(out, "{line}")?;
        if session.ends_text(&report) {
            break;
        }
    }
    let summary = json!({
        "type": "summary",
        "a": a_label,
        "b": twin.label,
        "b_detail": twin.detail,
        "steps": done,
        "text": text,
        "top1_flips": flips,
        "mean_js": js_sum / done.max(1) as f64,
    });
    writeln!(out, "{summary}")?;
    Ok(())
}

/// One side's top candidates: `[{"id", "text", "prob"}]`, best first.
fn side(session: &Session, lp: &LogProbs) -> Value {
    let mut order: Vec<usize> = (0..lp.0.len()).collect();
    let better = |x: &usize, y: &usize| lp.0[*y].total_cmp(&lp.0[*x]).then(x.cmp(y));
    let nth = TOP.min(order.len() - 1);
    order.select_nth_unstable_by(nth, better);
    order.truncate(TOP);
    order.sort_by(better);
    let top: Vec<Value> = order
        .iter()
        .map(|&i| {
            let t = session.token_view(i as u32);
            json!({"id": i, "text": t.text, "prob": lp.0[i].exp()})
        })
        .collect();
    json!({ "top": top, "entropy": lp.entropy() })
}

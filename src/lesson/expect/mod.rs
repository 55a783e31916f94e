//! Evaluating `expect`: each field of an [`Expect`] becomes one [`Check`] with the value observed on
//! the real model, so a failing claim says what the model did instead.
//!
//! | file | checks |
//! |---|---|
//! | (`protocol::lesson::expect`) | the claims as parsed ([`Expect`], [`AttentionExpect`]) and their load-time problems |
//! | `mod.rs` | the next distribution, the last token, loops |
//! | `path.rs` | the current path against the previous branch: divergence, different text |
//! | `cost.rs` | the session view: tokens fed, timings, text, prompt length |
//! | `attention.rs` | the newest position's attention in one head |
//! | `speed.rs` | speculative rounds' acceptance, the bytes a step reads |

mod attention;
mod cost;
mod path;
mod speed;

pub use crate::protocol::lesson::{AttentionExpect, Check, Expect};
pub use cost::decode_growth;

use super::run::tip_loop;
use crate::engine::session::{Session, SessionError};
use crate::protocol::{Distribution, TokenKind};

/// The checks of one `expect`, in the order of its fields.
#[derive(Default)]
struct Checks(Vec<Check>);

impl Checks {
    fn push(&mut self, what: String, observed: String, ok: bool) {
        self.0.push(Check { what, observed, ok });
    }
}

fn err(e: SessionError) -> String {
    e.to_string()
}

/// The id of a token given by its text, which must be exactly one token.
pub fn single_token(session: &Session, text: &str) -> Result<u32, String> {
    let mut ids = session.encode(text).map_err(|e| e.to_string())?;
    // A tokenizer that adds BOS puts it in front of every encoding: it is not part of the text.
    if ids.len() > 1 {
        let first = session.token_view(ids[0]);
        if first.kind == TokenKind::Special && !text.starts_with(&first.text) {
            ids.remove(0);
        }
    }
    match ids.as_slice() {
        [id] => Ok(*id),
        _ => {
            let pieces: Vec<String> = ids
                .iter()
                .map(|&i| format!("{:?}", session.token_view(i).text))
                .collect();
            Err(format!(
                "{text:?} is {} tokens ({}), not one: give a single token, or use force_text",
                ids.len(),
                pieces.join(" ")
            ))
        }
    }
}

/// Checks every field of `e` on the session as it is now. `previous` is the leaf of the previous
/// branch, for the checks against it. An error is a claim that cannot even be measured (a token that
/// is not one token, no previous branch).
pub fn evaluate(
    session: &mut Session,
    e: &Expect,
    previous: Option<usize>,
) -> Result<Vec<Check>, String> {
    let mut out = Checks::default();
    let next = session.distribution().map_err(err)?;
    next_checks(session, e, &next, &mut out)?;
    last_checks(session, e, &mut out)?;
    loop_checks(session, e, &mut out);
    path::check(session, e, previous, &mut out)?;
    cost::check(session, e, &mut out)?;
    speed::check(session, e, &mut out)?;
    Ok(out.0)
}

/// The claims about the next distribution.
fn next_checks(
    session: &mut Session,
    e: &Expect,
    next: &Distribution,
    out: &mut Checks,
) -> Result<(), String> {
    let top = next.candidates.first();
    let (text, p) = top.map_or((String::new(), 0.0), |c| (c.token.text.clone(), c.prob));
    if let Some(t) = &e.top1 {
        let seen = format!("top-1 is {text:?} (p = {p:.3})");
        out.push(format!("top1 {t:?}"), seen, &text == t);
    }
    if let Some(t) = &e.token {
        let id = single_token(session, t)?;
        let c = session.candidate(id).map_err(err)?;
        let seen = format!("{t:?} has p = {:.4}, rank {}", c.prob, c.rank + 1);
        if let Some(k) = e.in_top_k {
            out.push(format!("{t:?} in top {k}"), seen.clone(), c.rank < k);
        }
        if let Some(x) = e.prob_above {
            out.push(format!("p({t:?}) > {x}"), seen.clone(), c.prob as f64 > x);
        }
        if let Some(x) = e.prob_below {
            out.push(format!("p({t:?}) < {x}"), seen, (c.prob as f64) < x);
        }
    }
    if let Some(want) = e.chain_changes_top1 {
        // The list is ordered after the penalties: the raw top-1 is the candidate of raw rank 0.
        let planned = session.candidate(next.planned.id).map_err(err)?;
        let raw = next.candidates.iter().find(|c| c.rank == 0);
        let raw = raw.map_or("(not shown)".into(), |c| format!("{:?}", c.token.text));
        let seen = format!(
            "raw top-1 {raw}, the sampler plans {:?} (raw rank {})",
            planned.token.text,
            planned.rank + 1
        );
        let changed = planned.rank != 0;
        out.push(format!("chain_changes_top1 {want}"), seen, changed == want);
    }
    let h = next.entropy as f64;
    let seen = format!("entropy {h:.3} nats");
    if let Some(x) = e.entropy_above {
        out.push(format!("entropy > {x}"), seen.clone(), h > x);
    }
    if let Some(x) = e.entropy_below {
        out.push(format!("entropy < {x}"), seen, h < x);
    }
    Ok(())
}

/// The claims about the last generated token.
fn last_checks(session: &mut Session, e: &Expect, out: &mut Checks) -> Result<(), String> {
    let wanted = e.last_token.is_some()
        || e.last_token_not.is_some()
        || e.last_prob_above.is_some()
        || e.last_prob_below.is_some()
        || e.last_not_top1.is_some();
    if !wanted {
        return Ok(());
    }
    let view = session.view().map_err(err)?;
    let rec = view
        .tokens
        .last()
        .filter(|_| view.tokens.len() > view.prompt_len);
    let last_text = rec.map(|r| r.token.text.clone());
    let last_seen = match &last_text {
        Some(t) => format!("last token is {t:?}"),
        None => "no token generated yet".to_string(),
    };
    if let Some(t) = &e.last_token {
        let ok = last_text.as_ref() == Some(t);
        out.push(format!("last_token {t:?}"), last_seen.clone(), ok);
    }
    if let Some(t) = &e.last_token_not {
        let ok = last_text.is_some() && last_text.as_ref() != Some(t);
        out.push(format!("last_token_not {t:?}"), last_seen.clone(), ok);
    }
    let p = rec.map_or(f64::NAN, |r| r.prob as f64);
    let seen = format!("{last_seen}, p = {p:.4}");
    if let Some(x) = e.last_prob_above {
        out.push(format!("last_prob > {x}"), seen.clone(), p > x);
    }
    if let Some(x) = e.last_prob_below {
        out.push(format!("last_prob < {x}"), seen, p < x);
    }
    if let Some(want) = e.last_not_top1 {
        let seen = match rec {
            Some(r) => format!("{last_seen}, rank {} in the raw distribution", r.rank + 1),
            None => last_seen,
        };
        let ok = rec.is_some_and(|r| (r.rank > 0) == want);
        out.push(format!("last_not_top1 {want}"), seen, ok);
    }
    Ok(())
}

/// The claims about a loop at the tip.
fn loop_checks(session: &Session, e: &Expect, out: &mut Checks) {
    if e.loop_period.is_none() && e.no_loop.is_none() {
        return;
    }
    let cycle = tip_loop(session);
    let seen = match cycle {
        // Counted as the repetition panel counts it ("since step 2"): generated steps, from 1.
        Some(c) => format!(
            "loop of period {} ({:.1} repeats, since step {})",
            c.period,
            c.repeats,
            c.since_position.saturating_sub(session.prompt_len()) + 1
        ),
        None => "no loop".to_string(),
    };
    if let Some([lo, hi]) = e.loop_period {
        let ok = cycle.is_some_and(|c| (lo..=hi).contains(&c.period));
        out.push(format!("loop with period {lo} to {hi}"), seen.clone(), ok);
    }
    if let Some(want) = e.no_loop {
        out.push(format!("no_loop {want}"), seen, cycle.is_none() == want);
    }
}

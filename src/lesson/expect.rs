//! Evaluating `expect`: each field of an [`Expect`] becomes one [`Check`] with the value observed on
//! the real model, so a failing claim says what the model did instead.

use super::format::{AttentionExpect, Expect};
use super::run::tip_loop;
use crate::engine::session::Session;
use crate::protocol::TokenKind;

/// One claim checked against the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// The claim, as written (`top1 " Paris"`).
    pub what: String,
    /// What the model did.
    pub observed: String,
    pub ok: bool,
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
/// branch, for the divergence checks. An error is a claim that cannot even be measured (a token that
/// is not one token, no previous branch).
pub fn evaluate(
    session: &mut Session,
    e: &Expect,
    previous: Option<usize>,
) -> Result<Vec<Check>, String> {
    let err = |e: crate::engine::session::SessionError| e.to_string();
    let mut out = Vec::new();
    let mut push = |what: String, observed: String, ok: bool| {
        out.push(Check { what, observed, ok });
    };
    let next = session.distribution().map_err(err)?;
    if let Some(t) = &e.top1 {
        let top = next
            .candidates
            .first()
            .map(|c| (c.token.text.clone(), c.prob));
        let (text, p) = top.unwrap_or_default();
        push(
            format!("top1 {t:?}"),
            format!("top-1 is {text:?} (p = {p:.3})"),
            &text == t,
        );
    }
    if let Some(t) = &e.token {
        let id = single_token(session, t)?;
        let c = session.candidate(id).map_err(err)?;
        let seen = format!("{t:?} has p = {:.4}, rank {}", c.prob, c.rank + 1);
        if let Some(k) = e.in_top_k {
            push(format!("{t:?} in top {k}"), seen.clone(), c.rank < k);
        }
        if let Some(x) = e.prob_above {
            push(format!("p({t:?}) > {x}"), seen.clone(), c.prob as f64 > x);
        }
        if let Some(x) = e.prob_below {
            push(format!("p({t:?}) < {x}"), seen, (c.prob as f64) < x);
        }
    }
    let tokens = session.tokens();
    let last = (tokens.len() > session.prompt_len())
        .then(|| tokens.last().copied())
        .flatten();
    let last_text = last.map(|id| session.token_view(id).text);
    let last_seen = match &last_text {
        Some(t) => format!("last token is {t:?}"),
        None => "no token generated yet".to_string(),
    };
    if let Some(t) = &e.last_token {
        push(
            format!("last_token {t:?}"),
            last_seen.clone(),
            last_text.as_ref() == Some(t),
        );
    }
    if let Some(t) = &e.last_token_not {
        push(
            format!("last_token_not {t:?}"),
            last_seen.clone(),
            last_text.is_some() && last_text.as_ref() != Some(t),
        );
    }
    if e.last_prob_above.is_some() || e.last_prob_below.is_some() {
        let view = session.view().map_err(err)?;
        let rec = view.tokens.last().filter(|_| last.is_some());
        let p = rec.map_or(f64::NAN, |r| r.prob as f64);
        let seen = format!("{last_seen}, p = {p:.4}");
        if let Some(x) = e.last_prob_above {
            push(format!("last_prob > {x}"), seen.clone(), p > x);
        }
        if let Some(x) = e.last_prob_below {
            push(format!("last_prob < {x}"), seen, p < x);
        }
    }
    let h = next.entropy as f64;
    if let Some(x) = e.entropy_above {
        push(
            format!("entropy > {x}"),
            format!("entropy {h:.3} nats"),
            h > x,
        );
    }
    if let Some(x) = e.entropy_below {
        push(
            format!("entropy < {x}"),
            format!("entropy {h:.3} nats"),
            h < x,
        );
    }
    if e.loop_period.is_some() || e.no_loop.is_some() {
        let cycle = tip_loop(session);
        let seen = match cycle {
            Some(c) => format!(
                "loop of period {} ({:.1} repeats, since position {})",
                c.period, c.repeats, c.since_position
            ),
            None => "no loop".to_string(),
        };
        if let Some([lo, hi]) = e.loop_period {
            let ok = cycle.is_some_and(|c| (lo..=hi).contains(&c.period));
            push(format!("loop with period {lo} to {hi}"), seen.clone(), ok);
        }
        if let Some(want) = e.no_loop {
            push(format!("no_loop {want}"), seen, cycle.is_none() == want);
        }
    }
    if e.js_above.is_some() || e.js_below.is_some() {
        let prev = previous.ok_or("there is no previous branch to compare with: rewind first")?;
        let tip = session.tip_id().ok_or("no prompt yet")?;
        let c = session.compare(prev, tip).map_err(err)?;
        let seen = format!(
            "mean JS {:.4} nats from step {}",
            c.mean_js,
            c.fork_step.map_or("-".into(), |f| f.to_string())
        );
        if let Some(x) = e.js_above {
            push(format!("js > {x}"), seen.clone(), c.mean_js > x);
        }
        if let Some(x) = e.js_below {
            push(format!("js < {x}"), seen, c.mean_js < x);
        }
    }
    let wants_view = e.tokens_fed.is_some()
        || e.tokens_fed_above.is_some()
        || e.tokens_fed_is_length.is_some()
        || e.prefill_faster.is_some()
        || e.text_contains.is_some()
        || e.prompt_tokens.is_some()
        || e.prompt_tokens_above.is_some()
        || e.attention.is_some();
    if !wants_view {
        return Ok(out);
    }
    let view = session.view().map_err(err)?;
    let fed = view.last_pass.tokens_fed;
    let fed_seen = format!(
        "the last pass read {fed} token(s) (sequence: {})",
        view.tokens.len()
    );
    if let Some(n) = e.tokens_fed {
        push(format!("tokens_fed {n}"), fed_seen.clone(), fed == n);
    }
    if let Some(n) = e.tokens_fed_above {
        push(format!("tokens_fed > {n}"), fed_seen.clone(), fed > n);
    }
    if let Some(want) = e.tokens_fed_is_length {
        let ok = (fed == view.tokens.len()) == want;
        push(format!("tokens_fed_is_length {want}"), fed_seen, ok);
    }
    if let Some(x) = e.prefill_faster {
        let pre = view.prefill.ms / view.prefill.tokens.max(1) as f64;
        let dec: Vec<f64> = view
            .decode_ms
            .iter()
            .zip(&view.decode_kv)
            .filter(|(_, &kv)| kv)
            .map(|(&ms, _)| ms)
            .collect();
        let (ok, seen) = if dec.is_empty() || view.prefill.tokens == 0 {
            (
                false,
                "no prefill or no decode step with the KV cache on".into(),
            )
        } else {
            let d = dec.iter().sum::<f64>() / dec.len() as f64;
            let ratio = d / pre.max(1e-9);
            (
                ratio >= x,
                format!("prefill {pre:.2} ms/token, decode {d:.2} ms/token: {ratio:.1}x"),
            )
        };
        push(format!("prefill at least {x}x faster per token"), seen, ok);
    }
    if let Some(t) = &e.text_contains {
        let text: String = view.tokens[view.prompt_len..]
            .iter()
            .map(|r| r.token.text.as_str())
            .collect();
        let ok = text.contains(t.as_str());
        push(format!("text contains {t:?}"), format!("{text:?}"), ok);
    }
    let p = view.prompt_len;
    if let Some(n) = e.prompt_tokens {
        push(
            format!("prompt_tokens {n}"),
            format!("{p} prompt token(s)"),
            p == n,
        );
    }
    if let Some(n) = e.prompt_tokens_above {
        push(
            format!("prompt_tokens > {n}"),
            format!("{p} prompt token(s)"),
            p > n,
        );
    }
    if let Some(a) = &e.attention {
        attention(session, a, &tokens, &view.attention, &mut push)?;
    }
    Ok(out)
}

fn attention(
    session: &Session,
    a: &AttentionExpect,
    tokens: &[u32],
    window: &crate::protocol::AttentionWindow,
    push: &mut impl FnMut(String, String, bool),
) -> Result<(), String> {
    let rows = session
        .newest_attention()
        .ok_or("no forward pass yet: read a prompt first")?;
    let (layers, heads) = (window.n_layer, window.n_head);
    if a.layer >= layers || a.head >= heads {
        return Err(format!(
            "layer {} head {}: the model has layers 0 to {} and heads 0 to {}",
            a.layer,
            a.head,
            layers - 1,
            heads - 1
        ));
    }
    let row = &rows.rows[a.layer][a.head];
    let q = rows.query_position;
    let name = format!("L{} H{}", a.layer, a.head);
    if let Some(x) = a.previous_above {
        let w = if q > 0 { row[q - 1] as f64 } else { 0.0 };
        let seen = format!("{name}: weight {w:.3} on the previous token");
        push(format!("{name} previous > {x}"), seen, w > x);
    }
    if let Some(x) = a.first_above {
        let w = row.first().copied().unwrap_or(0.0) as f64;
        let seen = format!("{name}: weight {w:.3} on the first token");
        push(format!("{name} first > {x}"), seen, w > x);
    }
    if let Some(x) = a.copy_above {
        // Keys just after an earlier copy of the newest token: where an induction head looks.
        let cur = tokens.get(q).copied();
        let w: f64 = (0..q)
            .filter(|&j| Some(tokens[j]) == cur && j + 1 < q)
            .map(|j| row[j + 1] as f64)
            .sum();
        let seen = format!("{name}: weight {w:.3} on the tokens after earlier copies");
        push(format!("{name} copy > {x}"), seen, w > x);
    }
    if let Some(want) = a.causal {
        let mut future = 0.0f64;
        for r in 0..window.len {
            for c in r + 1..window.len {
                future += window.get(a.layer, a.head, r, c) as f64;
            }
        }
        let ok = (future == 0.0) == want;
        let seen = format!("{name}: total weight {future} on later positions");
        push(format!("{name} causal {want}"), seen, ok);
    }
    Ok(())
}

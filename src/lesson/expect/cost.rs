//! Claims read off the session view: what the last pass read, what reading and writing cost, the
//! generated text, the prompt's length, and the newest position's attention.

use super::{attention, err, Checks, Expect};
use crate::engine::session::Session;
use crate::lesson::measure::prefill_speedup;
use crate::protocol::lesson::expect::GROWTH_MIN_STEPS;
use crate::protocol::SessionView;

/// Checks the claims that need the session view.
pub(super) fn check(session: &mut Session, e: &Expect, out: &mut Checks) -> Result<(), String> {
    let wanted = e.tokens_fed.is_some()
        || e.tokens_fed_above.is_some()
        || e.tokens_fed_is_length.is_some()
        || e.prefill_faster.is_some()
        || e.decode_growth_above.is_some()
        || e.decode_growth_below.is_some()
        || e.text_contains.is_some()
        || e.text_not_contains.is_some()
        || e.prompt_tokens.is_some()
        || e.prompt_tokens_above.is_some()
        || e.attention.is_some();
    if !wanted {
        return Ok(());
    }
    let view = session.view().map_err(err)?;
    fed(e, &view, out);
    if let Some(x) = e.prefill_faster {
        let (ok, seen) = match prefill_speedup(&view) {
            Ok((ratio, seen)) => (ratio >= x, seen),
            Err(why) => (false, why),
        };
        out.push(format!("prefill at least {x}x faster per token"), seen, ok);
    }
    if e.decode_growth_above.is_some() || e.decode_growth_below.is_some() {
        let (ratio, seen) = match decode_growth(&view) {
            Some((r, seen)) => (r, seen),
            None => (
                f64::NAN,
                format!(
                    "fewer than {GROWTH_MIN_STEPS} decode steps with the KV cache as it is now"
                ),
            ),
        };
        if let Some(x) = e.decode_growth_above {
            out.push(
                format!("decode time grows more than {x}x"),
                seen.clone(),
                ratio > x,
            );
        }
        if let Some(x) = e.decode_growth_below {
            out.push(format!("decode time grows less than {x}x"), seen, ratio < x);
        }
    }
    text_and_prompt(e, &view, out);
    if let Some(a) = &e.attention {
        let tokens = session.tokens();
        attention::check(session, a, &tokens, &view.attention, out)?;
    }
    Ok(())
}

/// `tokens_fed`, `tokens_fed_above`, `tokens_fed_is_length`.
fn fed(e: &Expect, view: &SessionView, out: &mut Checks) {
    let fed = view.last_pass.tokens_fed;
    let seen = format!(
        "the last pass read {} (sequence: {})",
        crate::protocol::words::count(fed, "token"),
        view.tokens.len()
    );
    if let Some(n) = e.tokens_fed {
        out.push(format!("tokens_fed {n}"), seen.clone(), fed == n);
    }
    if let Some(n) = e.tokens_fed_above {
        out.push(format!("tokens_fed > {n}"), seen.clone(), fed > n);
    }
    if let Some(want) = e.tokens_fed_is_length {
        let ok = (fed == view.tokens.len()) == want;
        out.push(format!("tokens_fed_is_length {want}"), seen, ok);
    }
}

/// Over the decode steps at the end of the path with the KV cache as it is now, the fastest step of the
/// last third over the fastest step of the first third, and how it reads. The fastest, not the mean:
/// a step slowed by another program on the machine is noise, and the fastest step of each third is the
/// one least disturbed. A cache switched back on is
/// rebuilt at its first step (a whole re-read): that step is left out. `None` with fewer than
/// [`GROWTH_MIN_STEPS`] steps.
pub fn decode_growth(view: &SessionView) -> Option<(f64, String)> {
    let kv = *view.decode_kv.last()?;
    let run = view
        .decode_kv
        .iter()
        .rev()
        .take_while(|&&k| k == kv)
        .count();
    let mut start = view.decode_ms.len() - run;
    if kv && start > 0 {
        start += 1;
    }
    let ms = &view.decode_ms[start.min(view.decode_ms.len())..];
    if ms.len() < GROWTH_MIN_STEPS {
        return None;
    }
    let third = ms.len() / 3;
    let fastest = |xs: &[f64]| xs.iter().copied().fold(f64::INFINITY, f64::min);
    let (first, last) = (fastest(&ms[..third]), fastest(&ms[ms.len() - third..]));
    let ratio = last / first.max(1e-9);
    let cache = if kv { "on" } else { "off" };
    let seen = format!(
        "{} steps with the KV cache {cache}: fastest of the first third {first:.1} ms, of the last third {last:.1} ms: {ratio:.2}x",
        ms.len()
    );
    Some((ratio, seen))
}

/// `text_contains`, `text_not_contains`, `prompt_tokens`, `prompt_tokens_above`.
fn text_and_prompt(e: &Expect, view: &SessionView, out: &mut Checks) {
    let text: String = view.tokens[view.prompt_len..]
        .iter()
        .map(|r| r.token.text.as_str())
        .collect();
    if let Some(t) = &e.text_contains {
        let ok = text.contains(t.as_str());
        out.push(format!("text contains {t:?}"), format!("{text:?}"), ok);
    }
    if let Some(t) = &e.text_not_contains {
        let ok = !text.contains(t.as_str());
        out.push(format!("text lacks {t:?}"), format!("{text:?}"), ok);
    }
    let p = view.prompt_len;
    let seen = format!("{} prompt", crate::protocol::words::count(p, "token"));
    if let Some(n) = e.prompt_tokens {
        out.push(format!("prompt_tokens {n}"), seen.clone(), p == n);
    }
    if let Some(n) = e.prompt_tokens_above {
        out.push(format!("prompt_tokens > {n}"), seen, p > n);
    }
}

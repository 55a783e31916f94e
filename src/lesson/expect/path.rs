//! Claims about the current path against the previous branch (the path left by the last `rewind` or
//! `branch`): how far the model's predictions diverge, and whether the text went another way.

use super::{err, Checks, Expect};
use crate::engine::session::Session;
use crate::protocol::Comparison;

/// Checks `js_above`, `js_below` (over `js_steps` steps when given) and `differs_from_previous`.
pub(super) fn check(
    session: &mut Session,
    e: &Expect,
    previous: Option<usize>,
    out: &mut Checks,
) -> Result<(), String> {
    let js = e.js_above.is_some() || e.js_below.is_some();
    if !js && e.differs_from_previous.is_none() {
        return Ok(());
    }
    let prev = previous.ok_or("there is no previous branch to compare with: rewind first")?;
    let tip = session.tip_id().ok_or("no prompt yet")?;
    // The previous branch first, as `nexttoken compare` and the compare panel put it.
    let c = session.compare(prev, tip).map_err(err)?;
    if js {
        let (mean, seen) = mean_js(&c, e.js_steps);
        if let Some(x) = e.js_above {
            out.push(format!("js > {x}"), seen.clone(), mean > x);
        }
        if let Some(x) = e.js_below {
            out.push(format!("js < {x}"), seen, mean < x);
        }
    }
    if let Some(want) = e.differs_from_previous {
        let (differs, seen) = differs_after_fork(&c);
        out.push(
            format!("differs_from_previous {want}"),
            seen,
            differs == want,
        );
    }
    Ok(())
}

/// The mean JS divergence from the fork on (over the first `steps` steps when given), and how it
/// reads. The fork step itself counts, as in `nexttoken compare`: both paths still share its
/// distribution, so its divergence is 0.
fn mean_js(c: &Comparison, steps: Option<usize>) -> (f64, String) {
    let Some(fork) = c.fork_step else {
        return (
            0.0,
            "the paths do not fork (one is a prefix of the other)".into(),
        );
    };
    let take = steps.unwrap_or(usize::MAX);
    let js: Vec<f64> = c
        .steps
        .iter()
        .skip(fork)
        .filter_map(|s| s.js)
        .take(take)
        .collect();
    let mean = if js.is_empty() {
        0.0
    } else {
        js.iter().sum::<f64>() / js.len() as f64
    };
    let over = match steps {
        Some(n) if js.len() < n => format!(" (only {} steps, not {n})", js.len()),
        _ => String::new(),
    };
    let seen = format!(
        "mean JS {mean:.4} nats over {} steps from step {}{over}",
        js.len(),
        fork + 1
    );
    // Fewer steps than asked for cannot bear the claim out: NaN fails both `js_above` and `js_below`.
    let mean = if over.is_empty() { mean } else { f64::NAN };
    (mean, seen)
}

/// Whether the two paths write different tokens after the token where they fork (over the shorter
/// path), and the two texts after the fork.
fn differs_after_fork(c: &Comparison) -> (bool, String) {
    let Some(fork) = c.fork_step else {
        return (
            false,
            "the paths do not fork (one is a prefix of the other)".into(),
        );
    };
    let both: Vec<(&str, &str)> = c
        .steps
        .iter()
        .skip(fork + 1)
        .filter_map(|s| {
            Some((
                s.a.as_ref()?.token.text.as_str(),
                s.b.as_ref()?.token.text.as_str(),
            ))
        })
        .collect();
    let differs = both.iter().any(|(a, b)| a != b);
    let prev: String = both.iter().map(|(a, _)| *a).collect();
    let now: String = both.iter().map(|(_, b)| *b).collect();
    let seen = format!("after the fork, previous {prev:?}, now {now:?}");
    (differs, seen)
}

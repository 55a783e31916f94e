//! The measurements a number question asks for, taken on the session as it is now.

use super::run::tip_loop;
use crate::engine::session::Session;
use crate::protocol::lesson::question::Measure;
use crate::protocol::words::count;
use crate::protocol::SessionView;

/// One measurement on the session, with a sentence on how it was measured.
pub fn measure(
    session: &mut Session,
    m: Measure,
    previous: Option<usize>,
) -> Result<(f64, String), String> {
    let err = |e: crate::engine::session::SessionError| e.to_string();
    Ok(match m {
        Measure::PrefillSpeedup => prefill_speedup(&session.view().map_err(err)?)?,
        Measure::PromptTokens => {
            let n = session.prompt_len();
            (n as f64, format!("{} prompt", count(n, "token")))
        }
        Measure::TokensFed => {
            let n = session.view().map_err(err)?.last_pass.tokens_fed;
            (
                n as f64,
                format!("the last pass read {}", count(n, "token")),
            )
        }
        Measure::LoopPeriod => match tip_loop(session) {
            Some(c) => (c.period as f64, format!("a loop of period {}", c.period)),
            None => (0.0, "no loop".into()),
        },
        Measure::Entropy => {
            let h = session.distribution().map_err(err)?.entropy as f64;
            (h, format!("entropy {h:.3} nats"))
        }
        Measure::Top1Percent => {
            let d = session.distribution().map_err(err)?;
            let p = d.candidates.first().map_or(0.0, |c| c.prob as f64) * 100.0;
            (p, format!("top-1 at {p:.1}%"))
        }
        Measure::LastTokenPercent => {
            let view = session.view().map_err(err)?;
            let last = view
                .tokens
                .last()
                .filter(|_| view.tokens.len() > view.prompt_len);
            let t = last.ok_or("no token written yet: step first")?;
            let p = t.prob as f64 * 100.0;
            (p, format!("the model gave {:?} {p:.1}%", t.token.text))
        }
        Measure::Js => {
            let prev =
                previous.ok_or("there is no previous branch to compare with: rewind first")?;
            let tip = session.tip_id().ok_or("no prompt yet")?;
            let c = session.compare(prev, tip).map_err(err)?;
            (c.mean_js, format!("mean JS {:.4} nats", c.mean_js))
        }
    })
}

/// Mean decode ms per token (cache on) over prefill ms per token, with how it was measured.
pub fn prefill_speedup(view: &SessionView) -> Result<(f64, String), String> {
    let pre = view.prefill.ms / view.prefill.tokens.max(1) as f64;
    let dec: Vec<f64> = view
        .decode_ms
        .iter()
        .zip(&view.decode_kv)
        .filter(|(_, &kv)| kv)
        .map(|(&ms, _)| ms)
        .collect();
    if dec.is_empty() || view.prefill.tokens == 0 {
        return Err("no prefill or no decode step with the KV cache on to measure".into());
    }
    let d = dec.iter().sum::<f64>() / dec.len() as f64;
    let ratio = d / pre.max(1e-9);
    let seen = format!("prefill {pre:.2} ms/token, decode {d:.2} ms/token: {ratio:.1}x");
    Ok((ratio, seen))
}

//! Claims about cost that the session's own tallies answer: the share of drafted tokens the model
//! kept (speculative decoding), the share of the model's bytes a one-token step reads, and that step
//! against its floor, its bytes over the bandwidth (the speed of light of a step).

use super::Checks;
use crate::engine::gguf::GgufFile;
use crate::engine::session::Session;
use crate::protocol::lesson::Expect;

/// Checks `acceptance_above`, `acceptance_below`, `step_reads_model_above` and
/// `step_slower_than_light`.
pub(super) fn check(session: &mut Session, e: &Expect, out: &mut Checks) -> Result<(), String> {
    if e.acceptance_above.is_some() || e.acceptance_below.is_some() {
        let t = session.tally();
        if t.rounds == 0 {
            return Err("no speculative rounds yet: run `rounds = N` after `draft = ...`".into());
        }
        let a = t.acceptance();
        let seen = format!(
            "{} of {} checked drafts kept ({:.0}%) over {}",
            t.accepted,
            t.checked,
            a * 100.0,
            crate::protocol::words::count(t.rounds, "round")
        );
        if let Some(x) = e.acceptance_above {
            out.push(format!("acceptance above {x}"), seen.clone(), a > x);
        }
        if let Some(x) = e.acceptance_below {
            out.push(format!("acceptance below {x}"), seen, a < x);
        }
    }
    if let Some(x) = e.step_reads_model_above {
        let (step, file) = step_and_file_bytes(session)?;
        let share = step as f64 / file as f64;
        let seen = format!(
            "a step reads {:.1} MB of weights; the file holds {:.1} MB of tensors ({:.0}%)",
            step as f64 / 1e6,
            file as f64 / 1e6,
            share * 100.0
        );
        out.push(
            format!("a step reads above {x} of the model"),
            seen,
            share > x,
        );
    }
    if let Some(want) = e.step_slower_than_light {
        let (seen, slower) = against_light(session)?;
        out.push(
            format!("step_slower_than_light {want}"),
            seen,
            slower == want,
        );
    }
    Ok(())
}

/// Efficiencies up to this count as "not faster than light": the bandwidth is measured as the best
/// of three reads, and a step's weights may start partly in the cache. Above it, the bandwidth is
/// measured once more before the claim is judged.
const LIGHT_NOISE: f64 = 1.2;

/// The last one-token step against its floor: what was seen, and whether it was no faster.
fn against_light(session: &mut Session) -> Result<(String, bool), String> {
    let view = session.view().map_err(|e| e.to_string())?;
    let pass = &view.last_pass;
    if pass.tokens_fed != 1 || view.tokens.len() <= view.prompt_len {
        return Err("the last pass was no one-token step: `step = 1` first".into());
    }
    let model = session
        .local_model()
        .ok_or("a served model: nothing to measure here")?;
    let bytes = model.weight_bytes_per_token() + model.kv_bytes_at(view.tokens.len() - 1);
    let model_bytes = session.model_file_bytes();
    // Measured at load in the TUI; the headless checker measures it here, once per check.
    let bandwidth = match session.machine() {
        Some(m) => m.bandwidth_gb_s,
        None => crate::engine::machine::bandwidth_gb_s(crate::engine::threads(), model_bytes),
    };
    let efficiency_at = |gb_s: f64| bytes as f64 / (gb_s * 1e9) * 1e3 / pass.ms;
    // A step faster than light means the measure fell in a busy spell: measure once more.
    let (bandwidth, again) = match efficiency_at(bandwidth) {
        e if e > LIGHT_NOISE => {
            let fresh =
                crate::engine::machine::bandwidth_gb_s_again(crate::engine::threads(), model_bytes);
            (
                bandwidth.max(fresh),
                format!(" (measured again: the first read {bandwidth:.1})"),
            )
        }
        _ => (bandwidth, String::new()),
    };
    let floor = bytes as f64 / (bandwidth * 1e9) * 1e3;
    let efficiency = efficiency_at(bandwidth);
    let seen = format!(
        "the step took {:.2} ms; {:.1} MB over the {bandwidth:.1} GB/s measured on this machine{again} is {floor:.2} ms ({:.0}% of light)",
        pass.ms,
        bytes as f64 / 1e6,
        efficiency * 100.0
    );
    Ok((seen, efficiency <= LIGHT_NOISE))
}

/// The weight bytes one step reads, and the bytes of tensor data in the model's file.
fn step_and_file_bytes(session: &Session) -> Result<(usize, u64), String> {
    let model = session
        .local_model()
        .ok_or("a served model's passes run on its server: nothing to count here")?;
    let path = session
        .model_file()
        .ok_or("the session has no model file")?;
    let g = GgufFile::open(&path).map_err(|e| e.to_string())?;
    let tensors = g.file_bytes.saturating_sub(g.content.tensor_data_offset);
    Ok((model.weight_bytes_per_token(), tensors))
}

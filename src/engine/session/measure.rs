//! Measuring with the session's model: this machine's speed of light (at load), and one bare pass
//! (what `bench` and a speculative round set their costs against).

use super::{Result, Session};
use crate::protocol::MachineSpeed;

impl Session {
    /// This machine's speed of light, if `measure_machine` ran (or a loaded file carried it).
    pub fn machine(&self) -> Option<&MachineSpeed> {
        self.machine.as_ref()
    }

    /// This machine's speed of light for the local model (`None` when served): memory bandwidth and
    /// the kernels' peak, measured now (about a second). The KV cache is emptied: call it before the
    /// first prompt is read.
    pub fn measure_machine(&mut self) -> Result<Option<MachineSpeed>> {
        let threads = crate::engine::threads();
        let bytes = self.model_file_bytes();
        let speed = match self.model.local_mut() {
            Some(m) => Some(crate::engine::machine::measure(m, threads, bytes)?),
            None => None,
        };
        self.fed = 0;
        self.machine = speed.clone();
        Ok(speed)
    }

    /// Whether the local model's decode steps are on trial now (their plans taken in turn:
    /// `quant/decode_plan.rs`), so that a step's time is not its plan's.
    pub fn decode_trial_running(&self) -> bool {
        self.model.local().is_some_and(|m| m.decode_trial_running())
    }

    /// Times one bare forward pass of `token` at the tip's position, outside the tree (for `bench`: the
    /// cost a step adds over the model alone). The session is unchanged: the next step re-feeds the tip.
    pub fn time_bare_forward(&mut self, token: u32) -> Result<f64> {
        let pos = self.path.len();
        self.fed = self.fed.min(pos);
        let index_pos = self.fed;
        let mut tokens: Vec<u32> = self.path[index_pos..]
            .iter()
            .map(|&n| self.nodes[n].token)
            .collect();
        tokens.push(token);
        // A pass that times the machine: the status bar's count of passes leaves it out.
        let out = self
            .model
            .uncounted(|m| m.forward(&tokens, index_pos, Default::default()))?;
        // The cache now holds the bare token at `pos`: only the path before it is still fed.
        self.fed = pos;
        self.model.cache_truncate(pos);
        // Its row back for the step's pass, which would otherwise write fresh memory.
        if let Some(m) = self.model.local_mut() {
            m.recycle_row(out.logits);
        }
        Ok(out.ms)
    }

    /// Times one plain step's pass at the tip, outside the tree, leaving the session as it was: the
    /// tip's own token at its position where the model has not read it yet (a speculative round's
    /// last token, which the next round's check reads with its drafts, stays unread), else a bare
    /// token after it (`time_bare_forward`).
    pub(super) fn time_plain_pass(&mut self) -> Result<f64> {
        let len = self.path.len();
        let tip = self.nodes[*self.path.last().expect("a path")].token;
        let unread_tip = self.opts.kv_cache && self.fed + 1 == len;
        let Some(m) = self.model.local_mut().filter(|_| unread_tip) else {
            return self.time_bare_forward(tip);
        };
        let out = m.uncounted(|m| m.forward(&[tip], len - 1, Default::default()))?;
        m.cache.truncate(len - 1);
        m.recycle_row(out.logits);
        Ok(out.ms)
    }
}

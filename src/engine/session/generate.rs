//! Generating: the one stop rule (an end of text the sampler chose ends the text; a forced one never
//! does) and the one loop that steps with it. `trace`, `compare`, the A/B compare, lessons and the
//! teacher-forcing lab all stop by [`Session::ends_text`]; those that only step call
//! [`Session::generate`].

use super::{Choice, Result, Session};
use crate::protocol::{RoundSteps, Source, StepReport};

impl Session {
    /// Whether the token this step committed ends the text: an end-of-text token the sampler chose. A
    /// forced end of text is the user's choice and does not stop generation.
    pub fn ends_text(&self, r: &StepReport) -> bool {
        self.is_eos(r.committed.token.id) && r.committed.source != Source::Forced
    }

    /// Steps up to `n` times with the sampler; stops early when a step [`ends_text`](Self::ends_text),
    /// or when `stop(session, report)` says so (asked first, so that a stop token that also ends the
    /// text reads as the condition). Each step is its own edit: a failure keeps the steps before it.
    pub fn generate(
        &mut self,
        n: usize,
        mut stop: impl FnMut(&mut Session, &StepReport) -> bool,
    ) -> Result<Vec<StepReport>> {
        let mut out = Vec::new();
        for _ in 0..n {
            let r = self.step(Choice::Sample)?;
            let halt = stop(self, &r) || self.ends_text(&r);
            out.push(r);
            if halt {
                break;
            }
        }
        Ok(out)
    }

    /// A speculative round that writes at most `most` tokens (≥ 2: fewer drafts near the end) and
    /// stops where plain generation would: tokens the round wrote after an end of text are rewound
    /// (they stay as a branch), so the text is exactly what plain stepping writes.
    pub fn speculate_within(&mut self, k: usize, most: usize) -> Result<RoundSteps> {
        let mut round = self.speculate(k.min(most.saturating_sub(1)).max(1))?;
        let end = round
            .steps
            .iter()
            .position(|s| self.is_eos(s.committed.token.id));
        if let Some(end) = end {
            let extra = round.steps.len() - 1 - end;
            if extra > 0 {
                self.rewind(extra)?;
                round.steps.truncate(end + 1);
            }
        }
        Ok(round)
    }
}

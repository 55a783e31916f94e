//! Generating: the one stop rule (an end of text the sampler chose ends the text; a forced one never
//! does) and the one loop that steps with it. `trace`, `compare`, the A/B compare, lessons and the
//! teacher-forcing lab all stop by [`Session::ends_text`]; those that only step call
//! [`Session::generate`].

use super::{Choice, Result, Session};
use crate::protocol::{RoundSteps, StepReport};

/// What writing in rounds wrote: a round, or one plain step for a last token alone.
// A round is the common case; boxing it would only add noise.
#[allow(clippy::large_enum_variant)]
pub enum Written {
    Round(RoundSteps),
    Step(StepReport),
}

impl Session {
    /// Whether the token this step committed ends the text: an end-of-text token the sampler chose. A
    /// forced end of text is the user's choice and does not stop generation.
    pub fn ends_text(&self, r: &StepReport) -> bool {
        self.is_eos(r.committed.token.id) && !r.committed.source.by_hand()
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

    /// Writes up to `n` tokens in speculative rounds of `k` drafts, stopping where plain stepping
    /// stops (an end of text the sampler chose); a last token alone is one plain step. Each round is
    /// its own edit: a failure keeps the rounds before it.
    pub fn write_in_rounds(&mut self, n: usize, k: usize) -> Result<Vec<Written>> {
        let (mut out, mut written) = (Vec::new(), 0);
        while written < n {
            let (w, last) = if n - written == 1 {
                let r = self.step(Choice::Sample)?;
                (Written::Step(r), None)
            } else {
                let round = self.speculate_within(k, n - written)?;
                let last = round.steps.last().map(|s| s.committed.token.id);
                (Written::Round(round), last)
            };
            written += match &w {
                Written::Round(r) => r.steps.len(),
                Written::Step(_) => 1,
            };
            out.push(w);
            if last.is_some_and(|t| self.is_eos(t)) {
                break;
            }
        }
        Ok(out)
    }
}

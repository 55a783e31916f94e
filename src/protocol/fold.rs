//! Folding a step into a session view: what the app does with `Event::Stepped`, kept next to the data so
//! that a test can hold it equal to the engine's own view after every command.

use super::{Distribution, SessionView, StepReport};

impl SessionView {
    /// Adds one step to this view, as if the engine had sent a whole new `SessionView`.
    pub fn apply(&mut self, report: &StepReport) {
        let position = report.committed.position;
        self.tokens.truncate(position);
        self.tokens.push(report.committed.clone());
        let steps_before = position.saturating_sub(self.prompt_len);
        self.decode_ms.truncate(steps_before);
        self.decode_ms.push(report.pass.ms);
        self.decode_kv.truncate(steps_before);
        self.decode_kv.push(report.pass.kv_cache_on);
        self.decode_round.truncate(steps_before);
        self.decode_round.push(false);
        self.next = Distribution::clone(&report.next);
        self.attention = report.attention.clone();
        self.last_pass = report.pass.clone();
        self.branches = report.branches.clone();
        self.ab = report.ab.clone();
        self.last_choice = Some(Distribution::clone(&report.chosen_from));
    }
}

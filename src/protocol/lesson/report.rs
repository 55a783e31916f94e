//! What running a lesson step did, as plain data: the TUI shows it in the narration panel and the
//! headless checker prints it. Nothing here touches the engine, so it crosses the channel as it is.

use super::format::PanelSpec;
use super::question::{ModelAnswer, Question};

/// Something only the TUI does.
#[derive(Debug, Clone, PartialEq)]
pub enum TuiAction {
    Panel(PanelSpec),
    /// A speculative round the step ran, for the round panel (boxed: a round carries its drafts).
    Round(Box<crate::protocol::RoundReport>),
}

/// How one action went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Done on the session.
    Done,
    /// Left to the TUI.
    TuiOnly,
    /// An `expect` check that held.
    Passed,
    /// An `expect` check that did not hold, or an action the session refused.
    Failed,
}

/// One line of a step's report: an action (or one check of an `expect`) and what was observed.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The line of the action in the lesson file.
    pub line: usize,
    pub what: String,
    pub observed: String,
    pub status: Status,
}

/// What running one lesson step did.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRun {
    /// 0-based step index.
    pub index: usize,
    pub outcomes: Vec<Outcome>,
    pub tui: Vec<TuiAction>,
    /// The step stopped at this question: the rest of it runs when the answer is revealed
    /// (`Runner::reveal`).
    pub question: Option<Question>,
    /// The model's answer to the step's question, once the rest of the step has run.
    pub answer: Option<ModelAnswer>,
}

impl StepRun {
    /// The first check that failed, or the action the session refused.
    pub fn failure(&self) -> Option<&Outcome> {
        self.outcomes.iter().find(|o| o.status == Status::Failed)
    }
}

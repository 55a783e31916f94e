//! A lesson open in the TUI, on the engine thread: which step is shown, and how to get to another one.
//!
//! Going to the next step runs just that step when the session is exactly as the lesson left it. After
//! free exploration (a step, a rewind, a setting changed by hand), or to go back, the lesson is replayed
//! from its start: lessons seed every draw, so a replay gives the same tokens, and the session ends up
//! where the lesson says it should be ("back to the lesson").

use super::run::Runner;
use crate::engine::session::Session;
use crate::protocol::lesson::format::{Action, Lesson};
use crate::protocol::lesson::report::{StepRun, TuiAction};
use crate::protocol::SamplerSettings;

/// What identifies the session's state after a lesson step: any change by hand changes one of these.
#[derive(Debug, Clone, PartialEq)]
struct Mark {
    tip: Option<usize>,
    forward_passes: u64,
    kv_cache_on: bool,
    settings: SamplerSettings,
}

impl Mark {
    fn of(session: &Session) -> Mark {
        Mark {
            tip: session.tip_id(),
            forward_passes: session.forward_passes(),
            kv_cache_on: session.kv_cache_on(),
            settings: session.settings().clone(),
        }
    }
}

/// A lesson being taught: the runner, and the mark of the state its last step left.
#[derive(Debug, Clone)]
pub struct Track {
    runner: Runner,
    mark: Option<Mark>,
    /// `written_for`'s answer for this session's model, found on the first step shown.
    written_for: Option<Option<String>>,
}

/// How a step was reached.
#[derive(Debug, Clone, PartialEq)]
pub struct Reached {
    /// What the step did.
    pub run: StepRun,
    /// Steps run again before it (0 when it followed on from the step before).
    pub replayed: usize,
    /// A step before it that did not go as the lesson says, if any (the lesson is then off its script).
    pub earlier_failure: Option<StepRun>,
    /// The models the lesson was written for, when the one loaded is none of them
    /// ([`super::written_for::written_for`]).
    pub written_for: Option<String>,
}

impl Track {
    /// Adds step `index`'s screen actions `tui` to those `carried` on the way to a step: a step that starts a new
    /// text (a prompt) first drops the speculative rounds of the text before it, so the round panel
    /// tallies the rounds of the text on screen.
    fn carry(&self, carried: &mut Vec<TuiAction>, (index, tui): (usize, &[TuiAction])) {
        let actions = &self.lesson().steps[index].actions;
        if actions
            .iter()
            .any(|a| matches!(a, Action::Prompt(_) | Action::Chat(_)))
        {
            carried.retain(|a| !matches!(a, TuiAction::Round(_)));
        }
        carried.extend(tui.iter().cloned());
    }

    pub fn new(lesson: Lesson) -> Track {
        Track {
            runner: Runner::new(lesson),
            mark: None,
            written_for: None,
        }
    }

    /// The models the lesson was written for, when the one loaded in `session` is none of them
    /// (found once: a track lives with one session).
    pub fn written_for(&mut self, session: &Session) -> Option<String> {
        let lesson = self.runner.lesson();
        self.written_for
            .get_or_insert_with(|| super::written_for::written_for(session, lesson))
            .clone()
    }

    pub fn lesson(&self) -> &Lesson {
        self.runner.lesson()
    }

    /// The rest of the step waiting at its question, then the model's answer: `None` when no step
    /// waits, or the session was changed by hand since (then `goto` the step again).
    pub fn reveal(&mut self, session: &mut Session) -> Option<StepRun> {
        if self.mark.as_ref() != Some(&Mark::of(session)) {
            return None;
        }
        let run = self.runner.reveal(session)?;
        self.mark = Some(Mark::of(session));
        Some(run)
    }

    /// Shows step `step` (0-based): runs it alone when the session is as the step before left it, else
    /// replays the lesson up to it and runs it. The run's screen actions start with those of the
    /// steps run on the way (the rest of a step skipped at its question, the steps replayed): the
    /// attention lesson's last step, reached past the question before it, had shown the head of two
    /// steps back under a narration about "the same head", and the speculative lesson's last step the
    /// rounds of the text before. A replay's rounds are the whole tally of the text on screen.
    pub fn goto(&mut self, session: &mut Session, step: usize) -> anyhow::Result<Reached> {
        let len = self.lesson().steps.len();
        if step >= len {
            anyhow::bail!("the lesson has {len} steps; there is no step {}", step + 1);
        }
        let untouched = self.mark.as_ref() == Some(&Mark::of(session));
        // What the steps run on the way left to the screen, for it to take before the step's own.
        let mut carried = Vec::new();
        // A step left waiting at its question finishes first, when the session is as it left it.
        if untouched && self.runner.is_paused() && self.runner.next_step() == step {
            if let Some(done) = self.runner.reveal(session) {
                self.carry(&mut carried, (done.index, &done.tui));
            }
            self.mark = Some(Mark::of(session));
        }
        let follows = self.runner.next_step() == step
            && step > 0
            && !self.runner.is_paused()
            && self.mark.as_ref() == Some(&Mark::of(session));
        let mut replayed = 0;
        let mut earlier_failure = None;
        if !follows {
            let runs = self.runner.replay_to(session, step)?;
            replayed = runs.len();
            runs.iter()
                .for_each(|r| self.carry(&mut carried, (r.index, &r.tui)));
            earlier_failure = runs.into_iter().find(|r| r.failure().is_some());
        }
        let mut run = self.runner.run_step(session);
        self.carry(&mut carried, (run.index, &run.tui));
        run.tui = carried;
        self.mark = Some(Mark::of(session));
        Ok(Reached {
            run,
            replayed,
            earlier_failure,
            written_for: self.written_for(session),
        })
    }
}

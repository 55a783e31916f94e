//! A lesson step's question in the TUI: the class's answer typed in a box (or a guess at a token
//! question), the reveal that runs the rest of the step, and the model's answer scored against the
//! class's.

use super::keymap::{hint_key, Action, Mode};
use super::App;
use crate::protocol::lesson::StepRun;
use crate::protocol::Command;

impl App {
    /// `→` while the step's question waits: its answer first, the rest of the step run (as `h` does),
    /// and a second `→` goes on. It had gone straight on, the rest of the step run but never shown,
    /// and the next step's narration spoke of what the class had not seen ("The same words came
    /// out").
    pub(super) fn reveal_before_moving_on(&mut self) -> Vec<Command> {
        self.predict.teacher_hidden = false;
        self.predict.revealed = self
            .lesson
            .as_ref()
            .and_then(|l| l.question.as_ref().map(|q| q.0));
        self.say(format!(
            "the answer first; {} again for the next step",
            hint_key(Mode::Normal, Action::NextLessonStep)
        ));
        self.continue_lesson()
    }

    /// The model's answer arrived with the rest of the step: score the class's answer, if it gave one
    /// (a guess at a token question is scored by its own reveal).
    pub(super) fn take_answer(&mut self, run: &StepRun) {
        let Some(a) = run.answer.clone() else {
            return;
        };
        let Some(state) = self.lesson.as_mut() else {
            return;
        };
        let asked_at = state.question.as_ref().map_or(0, |(p, _)| *p);
        let scored = state
            .given
            .take()
            .map(|g| a.question.score(asked_at, &g, &a));
        state.answer = Some((a.clone(), scored.clone()));
        match scored {
            Some(c) => {
                let mark = if c.correct {
                    "✓ right"
                } else {
                    "✗ not this time"
                };
                // The verdict first: a narrow status line cuts the end, never the score.
                self.say(format!(
                    "{mark}: the class said {} · the model's answer: {}",
                    c.class, c.model
                ));
                self.record_answer(c);
            }
            // A token question's guess said how the model rated it; the narration shows the rest.
            None if a.question.is_token() => {}
            None => self.say(format!("the model's answer: {}", a.shown)),
        }
    }

    /// After every update: a lesson question that has been revealed (a guess, an answer, or the
    /// teacher's key) runs the rest of its step, once.
    pub(super) fn continue_lesson(&mut self) -> Vec<Command> {
        let Some(state) = self.lesson.as_ref() else {
            return vec![];
        };
        let Some((pos, _)) = &state.question else {
            return vec![];
        };
        let revealed = self.predict.revealed == Some(*pos) && !self.predict.teacher_hidden;
        if !revealed || state.reveal_sent || self.is_busy() {
            return vec![];
        }
        if let Some(state) = self.lesson.as_mut() {
            state.reveal_sent = true;
        }
        self.request(Command::LessonReveal, "running the rest of the step")
    }

    /// Whether `/` guesses a token now: no lesson question waits, or the one waiting asks for a token
    /// (else `/` opens the answer box).
    pub fn question_is_token(&self) -> bool {
        self.lesson
            .as_ref()
            .and_then(|l| l.waiting())
            .is_none_or(|q| q.is_token())
    }

    /// `/` while a lesson question that is not a token question waits: a box for the class's answer.
    /// `false` when the question is a token question (a vocabulary search answers it).
    pub(super) fn open_answer(&mut self) -> bool {
        let waiting = self.lesson.as_ref().and_then(|l| l.waiting());
        if waiting.is_none_or(|q| q.is_token()) || !self.awaiting_guess() {
            return false;
        }
        self.open_text(Mode::Answer, String::new());
        true
    }

    /// Enter in the answer box: the class's answer, read for the question's kind; a reading that fails
    /// says what to type and keeps the box open.
    pub(super) fn submit_answer(&mut self, typed: String) -> Vec<Command> {
        let Some(q) = self.lesson.as_ref().and_then(|l| l.waiting()).cloned() else {
            return vec![];
        };
        match q.read_answer(&typed) {
            Ok(given) => {
                if let Some(state) = self.lesson.as_mut() {
                    state.given = Some(given);
                }
                self.predict.revealed = self.session.as_ref().map(|s| s.next.position);
                self.say("answer taken: running the rest of the step for the model's answer");
                vec![]
            }
            Err(why) => {
                self.open_text(Mode::Answer, typed);
                self.say(why);
                vec![]
            }
        }
    }
}

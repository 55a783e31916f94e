//! A lesson step's question in the TUI: the class's answer typed in a box (or a guess at a token
//! question), the reveal that runs the rest of the step, and the model's answer scored against the
//! class's.

use super::keymap::{hint_key, Action, Mode};
use super::lesson::Verdict;
use super::predict::Reveal;
use super::App;
use crate::fmt::pct;
use crate::protocol::lesson::{Given, StepRun};
use crate::protocol::ClassAnswer;
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

    /// The model's answer arrived with the rest of the step: score the class's answer, if it gave one,
    /// and say the verdict first. A guess at a token question was scored (and kept) by its own reveal:
    /// its verdict is whether it was the model's top choice.
    pub(super) fn take_answer(&mut self, run: &StepRun) {
        let Some(a) = run.answer.clone() else {
            return;
        };
        let Some(state) = self.lesson.as_mut() else {
            return;
        };
        let asked_at = state.question.as_ref().map_or(0, |(p, _)| *p);
        let scored = state.given.take().map(|g| {
            let c = a.question.score(asked_at, &g, &a);
            (Verdict::of_answer(&g, &c), c)
        });
        let guessed = self
            .predict
            .last
            .as_ref()
            .filter(|r| r.position == asked_at);
        let verdict = match &scored {
            Some((v, _)) => Some(v.clone()),
            None if a.question.is_token() => guessed.map(Verdict::of_guess),
            None => None,
        };
        state.answer = Some((a.clone(), verdict.clone()));
        if let Some(v) = verdict {
            let mark = if v.correct {
                "✓ right"
            } else {
                "✗ not this time"
            };
            // The verdict first: a narrow status line cuts the end, never the score.
            self.say(format!(
                "{mark}: the class said {} · the model's answer: {}",
                v.class, v.model
            ));
        }
        match scored {
            Some((_, c)) => self.record_answer(c),
            // A token question's guess said how the model rated it, and was kept when it was scored.
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
                self.say_error(why);
                vec![]
            }
        }
    }
}

impl Verdict {
    /// The class's answer scored: a choice by its number alone (the model's answer names it with its
    /// text), any other answer as the score wrote it ("yes", "6").
    fn of_answer(given: &Given, scored: &ClassAnswer) -> Verdict {
        let class = match given {
            Given::Choice(i) => format!("{}", i + 1),
            _ => scored.class.clone(),
        };
        Verdict {
            correct: scored.correct,
            class,
            model: scored.model.clone(),
        }
    }

    /// A guess at a token question: right when it was the model's top choice; shown with the model's
    /// rank of it (its first token's, for a guess of several) and its probability, "\" the\" (rank 2,
    /// 5.2%)", beside the model's top choice where the guess was scored (its greedy continuation, as
    /// long as the guess), so that both are about the same position even where the step writes on.
    fn of_guess(reveal: &Reveal) -> Verdict {
        let g = &reveal.score;
        let rank = match g.tokens.len() {
            1 => format!("rank {}", g.first_rank() + 1),
            n => format!("{n} tokens, first token rank {}", g.first_rank() + 1),
        };
        let own: String = g.greedy.iter().map(|t| t.text.as_str()).collect();
        Verdict {
            correct: g.is_greedy,
            class: format!("{:?} ({rank}, {})", g.text, pct(g.prob() as f32)),
            model: format!("{own:?} ({})", pct(g.greedy_logprob.exp() as f32)),
        }
    }
}

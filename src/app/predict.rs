//! Predict-then-reveal: the next-token distribution stays hidden until the class has guessed (a
//! vocabulary search hit), then the reveal says how the model rated the guess, and a running score
//! keeps hits@1, hits@5, the mean rank and the class's log-prob against the model's.
//!
//! "Pause when unsure": with predict on, autoplay runs through the steps where the model is confident
//! (entropy below `pause_above`) and stops, hidden, where it is not.

use super::keymap::{hint_key, Action, Mode};
use super::App;
use crate::protocol::{Candidate, ClassAnswer, Command};

/// Default entropy (nats) at or above which autoplay stops for a guess in predict mode.
pub const DEFAULT_PAUSE_ABOVE: f32 = 2.0;

/// The running score of a class's guesses.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Score {
    pub guesses: u32,
    /// Guesses that were the model's top-1, and in its top 5.
    pub hits1: u32,
    pub hits5: u32,
    /// Sum of the guesses' 1-based ranks in the whole vocabulary.
    pub rank_sum: u64,
    /// Sum of the model's log-prob (nats) of each guess, and of its own top-1 at the same steps: the
    /// most a guess could have scored.
    pub class_logprob: f64,
    pub model_logprob: f64,
}

impl Score {
    /// Adds one guess: its 0-based rank and log-prob, and the top-1's log-prob at that step.
    pub fn record(&mut self, rank: usize, logprob: f32, top1_logprob: f32) {
        self.guesses += 1;
        self.hits1 += u32::from(rank == 0);
        self.hits5 += u32::from(rank < 5);
        self.rank_sum += rank as u64 + 1;
        self.class_logprob += f64::from(logprob);
        self.model_logprob += f64::from(top1_logprob);
    }

    /// The mean 1-based rank, once there is a guess.
    pub fn mean_rank(&self) -> Option<f64> {
        (self.guesses > 0).then(|| self.rank_sum as f64 / f64::from(self.guesses))
    }

    /// For the status bar: "guesses 2/5 top-1 · 4/5 top-5 · rank 3.2", or "predict: no guesses yet".
    pub fn short(&self) -> String {
        match self.mean_rank() {
            None => "predict: no guesses yet".into(),
            Some(mean) => format!(
                "guesses {}/{n} top-1 · {}/{n} top-5 · rank {mean:.1}",
                self.hits1,
                self.hits5,
                n = self.guesses
            ),
        }
    }

    /// "2/5 top-1 · 4/5 top-5 · mean rank 3.2 · class −12.3 vs model −4.1 nats".
    pub fn summary(&self) -> String {
        match self.mean_rank() {
            None => "no guesses yet".into(),
            Some(mean) => format!(
                "{}/{n} top-1 · {}/{n} top-5 · mean rank {mean:.1} · class {:.1} vs model {:.1} nats",
                self.hits1,
                self.hits5,
                self.class_logprob,
                self.model_logprob,
                n = self.guesses
            ),
        }
    }
}

/// One revealed guess.
#[derive(Debug, Clone, PartialEq)]
pub struct Reveal {
    /// The position the guess was for.
    pub position: usize,
    pub guess: Candidate,
    /// The model's top candidate at that step.
    pub top1: Candidate,
}

impl Reveal {
    /// "the model gave ' Paris' 3.1%, rank 4 (5.0 bits of surprise); its own top pick: ' the' 45%".
    pub fn sentence(&self) -> String {
        let g = &self.guess;
        let bits = -(f64::from(g.prob)).log2();
        let mut s = format!(
            "the model gave {} {}, rank {} ({bits:.1} bits of surprise)",
            crate::ui::fmt::quoted_token(&g.token),
            crate::ui::fmt::pct(g.prob),
            g.rank + 1
        );
        if g.rank == 0 {
            s += ": the model's own top pick";
        } else {
            s += &format!(
                "; its top pick: {} {}",
                crate::ui::fmt::quoted_token(&self.top1.token),
                crate::ui::fmt::pct(self.top1.prob)
            );
        }
        s
    }
}

/// Predict-then-reveal, and the teacher's hide key.
#[derive(Debug, Clone, PartialEq)]
pub struct Predict {
    /// Every step is a question (`--predict`, `P`, or the lesson's setting).
    pub on: bool,
    /// Autoplay stops for a guess where the entropy (nats) is at least this.
    pub pause_above: f32,
    /// The position whose distribution has been revealed (or passed by autoplay as confident).
    pub revealed: Option<usize>,
    /// A lesson's question for one position: that distribution is hidden until a guess or a reveal.
    pub question: Option<(usize, String)>,
    /// The teacher hid the distribution (`h`), for a question asked aloud.
    pub teacher_hidden: bool,
    /// The last guess revealed.
    pub last: Option<Reveal>,
    pub score: Score,
    /// Every question the class answered, oldest first (guesses and lesson questions alike).
    pub answers: Vec<ClassAnswer>,
}

impl Default for Predict {
    fn default() -> Self {
        Predict {
            on: false,
            pause_above: DEFAULT_PAUSE_ABOVE,
            revealed: None,
            question: None,
            teacher_hidden: false,
            last: None,
            score: Score::default(),
            answers: Vec::new(),
        }
    }
}

impl App {
    /// Keeps one answered question: the one entry point for guesses and lesson questions alike.
    pub fn record_answer(&mut self, answer: ClassAnswer) {
        self.predict.answers.push(answer);
    }

    /// The position of the distribution on screen (the next token's), if any.
    fn next_position(&self) -> Option<usize> {
        self.session.as_ref().map(|s| s.next.position)
    }

    /// Whether the distribution waits for a guess: predict mode, or a lesson's question, at a position
    /// not yet revealed.
    pub fn awaiting_guess(&self) -> bool {
        let Some(pos) = self.next_position() else {
            return false;
        };
        let p = &self.predict;
        let asked = p.on || p.question.as_ref().is_some_and(|(q, _)| *q == pos);
        asked && p.revealed != Some(pos)
    }

    /// Whether the next-token distribution is hidden from the screen (a guess awaited, or the teacher's
    /// key).
    pub fn distribution_hidden(&self) -> bool {
        self.predict.teacher_hidden || self.awaiting_guess()
    }

    /// The question on screen while a guess is awaited.
    pub fn question(&self) -> Option<&str> {
        let pos = self.next_position()?;
        match &self.predict.question {
            Some((q, text)) if *q == pos => Some(text),
            _ => None,
        }
    }

    /// `h`: hides the distribution, or reveals it (without a guess: the score is unchanged).
    pub(super) fn toggle_hidden(&mut self) {
        if self.distribution_hidden() {
            self.predict.teacher_hidden = false;
            self.predict.revealed = self.next_position();
            self.say("revealed");
        } else {
            self.predict.teacher_hidden = true;
            self.say(format!(
                "distribution hidden; {} reveals it",
                hint_key(Mode::Normal, Action::ToggleHidden)
            ));
        }
    }

    /// `P`: predict-then-reveal on or off.
    pub(super) fn toggle_predict(&mut self) {
        self.predict.on = !self.predict.on;
        if self.predict.on {
            self.say(format!(
                "predict mode: guess each next token ({} searches); autoplay pauses where the model is unsure (entropy ≥ {:.1} nats)",
                hint_key(Mode::Normal, Action::OpenSearch),
                self.predict.pause_above
            ));
        } else {
            self.say("predict mode off");
        }
    }

    /// A search hit chosen while a guess is awaited: reveal and score it (nothing is sent to the
    /// engine; the hit carries the model's probability and rank).
    pub(super) fn guess(&mut self, hit: Candidate) -> Vec<Command> {
        let (Some(pos), Some(top1)) = (self.next_position(), self.candidates().first().cloned())
        else {
            return vec![];
        };
        self.predict
            .score
            .record(hit.rank, hit.logprob, top1.logprob);
        let reveal = Reveal {
            position: pos,
            guess: hit,
            top1,
        };
        self.say(reveal.sentence());
        self.predict.last = Some(reveal);
        self.predict.revealed = Some(pos);
        self.predict.teacher_hidden = false;
        vec![]
    }

    /// Whether the step on screen is one autoplay runs through in predict mode: no lesson question,
    /// and the model confident (entropy below `pause_above`).
    fn confident_here(&self) -> bool {
        let entropy = self.session.as_ref().map_or(f32::MAX, |s| s.next.entropy);
        self.question().is_none() && entropy < self.predict.pause_above
    }

    /// Whether `action` would show or use a distribution that waits for a guess: stepping, forcing a
    /// candidate, the logit lens (it shows the layers' guesses), and autoplay from a step where the
    /// model is unsure (from a confident one it starts, and that step goes by revealed).
    pub(super) fn hidden_refuses(&self, action: Action) -> bool {
        let uses_it = match action {
            Action::Step | Action::Accept | Action::Pick(_) | Action::OpenLens => true,
            Action::ToggleAutoplay => !self.autoplay.on && !self.confident_here(),
            _ => false,
        };
        self.mode == Mode::Normal && self.awaiting_guess() && uses_it
    }

    /// Autoplay starts on a hidden but confident step: it goes by revealed, as the steps autoplay runs
    /// through do.
    pub(super) fn autoplay_past_confident(&mut self) {
        if self.autoplay.on && self.awaiting_guess() && self.confident_here() {
            self.predict.revealed = self.next_position();
        }
    }

    /// What a key that would show or use the hidden distribution does instead: a word on how to guess.
    pub(super) fn hidden_hint(&mut self) {
        self.say(format!(
            "the distribution is hidden: guess first ({} searches the vocabulary), or {} reveals it",
            hint_key(Mode::Normal, Action::OpenSearch),
            hint_key(Mode::Normal, Action::ToggleHidden)
        ));
    }

    /// After a step with autoplay on in predict mode: a confident step goes by revealed, an unsure one
    /// stops autoplay for a guess.
    pub(super) fn pause_when_unsure(&mut self) {
        if !self.predict.on || !self.autoplay.on {
            return;
        }
        let Some(s) = self.session.as_ref() else {
            return;
        };
        let (pos, entropy) = (s.next.position, s.next.entropy);
        if entropy < self.predict.pause_above {
            self.predict.revealed = Some(pos);
        } else {
            self.autoplay.on = false;
            self.say(format!(
                "paused: the model is unsure here (entropy {entropy:.2} ≥ {:.1} nats). What comes next?",
                self.predict.pause_above
            ));
        }
    }
}

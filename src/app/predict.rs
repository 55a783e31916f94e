//! Predict-then-reveal: the next-token distribution stays hidden until the class has guessed (a
//! vocabulary search hit), then the reveal says how the model rated the guess, and a running score
//! keeps hits@1, hits@5, the mean rank and the class's log-prob against the model's.
//!
//! "Pause when unsure": with predict on, autoplay runs through the steps where the model is confident
//! (entropy below `pause_above`) and stops, hidden, where it is not.

use super::keymap::{hint_key, Action, Mode};
use super::App;
use crate::fmt::{pct, quoted, visible};
use crate::protocol::{as_continuation, ClassAnswer, Command, GuessScore, GuessToken};

/// Default entropy (nats) at or above which autoplay stops for a guess in predict mode.
pub const DEFAULT_PAUSE_ABOVE: f32 = 2.0;

mod score;
pub use score::Score;

/// One revealed guess.
#[derive(Debug, Clone, PartialEq)]
pub struct Reveal {
    /// The position the guess was for.
    pub position: usize,
    /// Its first token (the row the distribution stars).
    pub guess: GuessToken,
    /// The whole guess, scored.
    pub score: GuessScore,
}

impl Reveal {
    /// "⟨␣located⟩ 3.0%, rank 4 (5.1 bits); the model's top choice: ⟨␣Paris⟩ 78.0%", or "⟨␣Paris⟩ 76.8%,
    /// rank 1 (0.4 bits): the model's top choice". A guess of several tokens is rated as a sequence, and
    /// says how many tokens it is and that the rank is its first token's: "⟨␣Notre␣Dame⟩ (2 tokens)
    /// 12.3%, first token rank 3 (3.0 bits); …". A guess that is the model's top token but for its
    /// capitals ("paris") says "(capitals count)": that is why it was scored another token.
    pub fn sentence(&self) -> String {
        let g = &self.score;
        let n = g.tokens.len();
        let (count, first) = match n {
            1 => (String::new(), ""),
            n => (format!(" ({n} tokens)"), "first token "),
        };
        let mut s = format!(
            "{}{count} {}, {first}rank {} ({:.1} bits)",
            quoted(&g.text),
            pct(g.prob() as f32),
            g.first_rank() + 1,
            -g.logprob / std::f64::consts::LN_2
        );
        if g.is_greedy {
            s += ": the model's top choice";
        } else {
            let own: String = g.greedy.iter().map(|t| t.text.as_str()).collect();
            let lower = |t: &str| t.trim().to_lowercase();
            let case = g
                .greedy
                .first()
                .is_some_and(|t| lower(&t.text) == lower(&g.text));
            s += &format!(
                "; the model's top choice: {} {}{}",
                quoted(&own),
                pct(g.greedy_logprob.exp() as f32),
                if case { " (capitals count)" } else { "" }
            );
        }
        s
    }

    /// The answer as kept for the saved session and the handout.
    pub fn answer(&self, question: &str) -> ClassAnswer {
        let g = &self.score;
        let own: String = g.greedy.iter().map(|t| t.text.as_str()).collect();
        let tokens = match g.tokens.len() {
            1 => String::new(),
            n => format!("{n} tokens, "),
        };
        ClassAnswer {
            position: self.position,
            question: question.to_string(),
            kind: "token".into(),
            class: format!("'{}'", visible(&g.text)),
            model: format!("'{}'", visible(&own)),
            correct: g.is_greedy,
            detail: format!(
                "{tokens}rank {}, {}",
                g.first_rank() + 1,
                pct(g.prob() as f32)
            ),
        }
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
    /// The texts (a hash of every token before the position) whose next-token distribution predict
    /// mode has shown: coming back to one (a rewind) shows it again rather than asking again, where a
    /// guess would be scored on an answer the class has seen (`note_seen`).
    pub seen: std::collections::HashSet<u64>,
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
            seen: Default::default(),
        }
    }
}

impl App {
    /// Keeps one answered question: the one entry point for guesses and lesson questions alike.
    pub fn record_answer(&mut self, answer: ClassAnswer) {
        self.predict.answers.push(answer);
    }

    /// A loaded session's answers (`--load`) become the app's, unless the class has answered since.
    pub(super) fn take_saved_answers(&mut self, view: &crate::protocol::SessionView) {
        if self.predict.answers.is_empty() {
            self.predict.answers = view.answers.clone();
        }
    }

    /// The position of the distribution on screen (the next token's), if any.
    fn next_position(&self) -> Option<usize> {
        self.session.as_ref().map(|s| s.next.position)
    }

    /// After every update, in predict mode, where no lesson question is asked: a distribution shown
    /// is noted as seen, and one seen before is shown again. Rewinding to a position revealed before
    /// had hidden it again, and a guess there was scored a second time ("2/4 top-1" where the class
    /// had read the answer); a text changed before the position (a token forced) is asked anew.
    pub(super) fn note_seen(&mut self) {
        let Some(s) = self.session.as_ref().filter(|_| self.predict.on) else {
            return;
        };
        let pos = s.next.position;
        if self
            .predict
            .question
            .as_ref()
            .is_some_and(|(q, _)| *q == pos)
        {
            return;
        }
        let here = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            s.tokens.iter().for_each(|t| t.token.id.hash(&mut h));
            h.finish()
        };
        let p = &mut self.predict;
        if p.revealed == Some(pos) && !p.teacher_hidden {
            p.seen.insert(here);
        } else if p.seen.contains(&here) {
            p.revealed = Some(pos);
        }
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

    /// Whether the next-token distribution is hidden from the screen (a guess awaited, the next lesson
    /// step's question, or the teacher's key).
    pub fn distribution_hidden(&self) -> bool {
        self.predict.teacher_hidden || self.awaiting_guess() || self.held_for_next_step()
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

    /// The guess typed in the search box as the next text: a word after a word gets the space a
    /// space-prefixed BPE reads as the word boundary (`as_continuation`, decided by the text before
    /// the tip).
    pub fn guess_text(&self, typed: &str) -> String {
        let before = self
            .session
            .as_ref()
            .and_then(|s| s.tokens.last())
            .map_or("", |t| t.token.text.as_str());
        as_continuation(before, typed)
    }

    /// Enter in the search box while a guess is awaited: the hit the user moved onto, else the typed
    /// text as the next text, is sent to be scored (nothing is forced: the path stays).
    pub(super) fn guess(&mut self, typed: &str) -> Vec<Command> {
        let picked = match self.input.picked {
            true => self.selected_hit().map(|h| h.token.text.clone()),
            false => None,
        };
        self.input.hits.clear();
        if picked.is_none() && typed.trim().is_empty() {
            self.say(format!(
                "type a guess first: {} opens the box again",
                hint_key(Mode::Normal, Action::OpenSearch)
            ));
            return vec![];
        }
        let text = picked.unwrap_or_else(|| self.guess_text(typed));
        self.request(Command::ScoreGuess { text }, "scoring the guess")
    }

    /// The engine scored the guess: reveal it, score it, keep the answer.
    pub(super) fn on_guess_scored(&mut self, score: GuessScore) {
        let Some(first) = score.tokens.first().cloned() else {
            return;
        };
        if self.next_position() != Some(score.position) {
            return;
        }
        let question = self.question().unwrap_or("What comes next?").to_string();
        self.predict.score.record(
            score.first_rank(),
            score.logprob,
            score.greedy_logprob,
            score.is_greedy,
        );
        let reveal = Reveal {
            position: score.position,
            guess: first,
            score,
        };
        self.say(reveal.sentence());
        self.record_answer(reveal.answer(&question));
        self.predict.last = Some(reveal);
        self.predict.revealed = self.next_position();
        self.predict.teacher_hidden = false;
    }

    /// `tab` in the search box: hits by probability, or by match. Refused while a guess is awaited:
    /// the order would give the answer away.
    pub(super) fn toggle_hit_order(&mut self) {
        if self.awaiting_guess() {
            self.say(format!(
                "the hits stay in match order until the reveal: sorted by probability they would give the answer away ({} reveals)",
                hint_key(Mode::Normal, Action::ToggleHidden)
            ));
            return;
        }
        self.input.by_prob = !self.input.by_prob;
        self.input.selected = 0;
    }

    /// Whether the step on screen is one autoplay runs through in predict mode: no lesson question,
    /// and the model confident (entropy below `pause_above`).
    fn confident_here(&self) -> bool {
        let entropy = self.session.as_ref().map_or(f32::MAX, |s| s.next.entropy);
        self.question().is_none() && entropy < self.predict.pause_above
    }

    /// Whether `action` would show or use a distribution that waits for a guess, or that the next
    /// lesson step asks the class for (a step would write the answer: the chat-template lesson's
    /// space after step 2 had written "Hello", step 3's question): stepping, forcing a candidate, the
    /// logit lens (it shows the layers' guesses), and autoplay from a step where the model is unsure
    /// (from a confident one it starts, and that step goes by revealed; never from a held-back one).
    pub(super) fn hidden_refuses(&self, action: Action) -> bool {
        let held = self.held_for_next_step();
        let uses_it = match action {
            Action::Step | Action::Accept | Action::Pick(_) | Action::OpenLens => true,
            Action::ToggleAutoplay => !self.autoplay.on && (held || !self.confident_here()),
            _ => false,
        };
        self.mode == Mode::Normal && (self.awaiting_guess() || held) && uses_it
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
        let (answer, reveal) = (
            hint_key(Mode::Normal, Action::OpenSearch),
            hint_key(Mode::Normal, Action::ToggleHidden),
        );
        let next = hint_key(Mode::Normal, Action::NextLessonStep);
        self.say(if !self.awaiting_guess() {
            format!("held back: the next step asks the class for this token ({next} asks it, {reveal} reveals it now)")
        } else if self.question_is_token() {
            format!("the distribution is hidden: {answer} to guess first, or {reveal} reveals it")
        } else {
            format!("the question waits: {answer} to answer it, or {reveal} reveals the answer")
        });
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

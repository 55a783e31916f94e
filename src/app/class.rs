//! Class mode on the teacher's screen (`--class`, docs/CLASS.md): who has joined, how many have guessed
//! (never what, before the reveal), the class's guesses beside the model's distribution after it, the
//! leaderboard, and the class as the sampler (`C`).
//!
//! The room (the web server) closes the guessing when the app shows the reveal, and sends every
//! guess (`ClassMsg::Closed`); the app asks the engine to rank them (`Command::RankTokens`), scores
//! each student, and publishes the results in its [`Stage`], which the room serves.

use super::keymap::{hint_key, Action, Mode};
use super::App;
use crate::fmt::{pct, quoted};
use crate::protocol::class::{
    Ask, ClassMsg, ClassPoll, ClassResults, JoinCard, Stage, StudentId, StudentResult,
    StudentScore, TokenRanks,
};
use crate::protocol::{ClassAnswer, Command, TokenView};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One student as the teacher's screen knows them.
#[derive(Debug, Clone, PartialEq)]
pub struct Student {
    pub name: String,
    pub score: StudentScore,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Class {
    pub card: JoinCard,
    pub roster: BTreeMap<StudentId, Student>,
    /// How many have guessed the open question: (position, count).
    pub guessed: Option<(usize, usize)>,
    /// Guesses the room closed, waiting for the engine to rank them: (position, guesses).
    pub closed: Option<(usize, Vec<(StudentId, TokenView)>)>,
    /// The ranking was asked for.
    pub rank_sent: bool,
    /// The newest reveal, as the room serves it.
    pub results: Option<Arc<ClassResults>>,
    /// Every reveal, oldest first (each is also kept as one of the class's answers, which the session
    /// saves).
    pub polls: Vec<ClassPoll>,
    /// The join card is open (`J`).
    pub show_card: bool,
    /// The leaderboard is hidden (`W`).
    pub hide_board: bool,
}

impl App {
    /// Classroom modes from the command line: presenter mode, predict mode, and the entropy above
    /// which predict mode pauses for the class (`None`: the default).
    pub fn with_classroom(
        mut self,
        presenter: bool,
        predict: bool,
        pause_above: Option<f32>,
    ) -> App {
        self.presenter.on |= presenter;
        self.predict.on |= predict;
        if let Some(level) = pause_above {
            self.predict.pause_above = level;
        }
        self
    }

    /// Class mode (`--class`): predict mode on, and the card that lets the class in, open.
    pub fn with_class(mut self, card: JoinCard) -> App {
        self.predict.on = true;
        self.screen.side = super::SidePanel::Class;
        self.presenter.side = Some(super::SidePanel::Class);
        self.class = Some(Class {
            card,
            show_card: true,
            ..Class::default()
        });
        self
    }

    /// What the class may see now: published to the room after every message.
    pub fn class_stage(&self) -> Option<Stage> {
        let class = self.class.as_ref()?;
        let s = self.session.as_ref();
        let position = s.map_or(0, |s| s.next.position);
        let ask = match s {
            _ if self.reading_prompt() || s.is_none() => Ask::Waiting,
            _ if self.awaiting_guess() && !self.question_is_token() => Ask::Aloud,
            _ if self.awaiting_guess() => Ask::Open,
            _ if self.predict.revealed == Some(position) => Ask::Shown,
            _ => Ask::Waiting,
        };
        Some(Stage {
            step: s.map_or(0, |s| s.tokens.len().saturating_sub(s.prompt_len)),
            position,
            ask,
            question: self.question().unwrap_or("What comes next?").to_string(),
            text: s.map_or(String::new(), |s| {
                s.tokens.iter().map(|t| t.token.text.as_str()).collect()
            }),
            results: class
                .results
                .clone()
                .filter(|r| r.poll.position == position),
        })
    }

    /// A message from the room.
    pub(super) fn on_class(&mut self, msg: ClassMsg) -> Vec<Command> {
        let Some(class) = self.class.as_mut() else {
            return vec![];
        };
        match msg {
            ClassMsg::Joined { student, name } => {
                class.roster.insert(
                    student,
                    Student {
                        name,
                        score: StudentScore::default(),
                    },
                );
            }
            ClassMsg::Guessed { position, count } => class.guessed = Some((position, count)),
            ClassMsg::Closed { position, guesses } => {
                class.closed = Some((position, guesses));
                class.rank_sent = false;
            }
        }
        vec![]
    }

    /// Asks the engine to rank the closed guesses, once it is free.
    pub(super) fn rank_class(&mut self) -> Vec<Command> {
        let Some(class) = self.class.as_ref() else {
            return vec![];
        };
        let Some((position, guesses)) = class.closed.as_ref().filter(|_| !class.rank_sent) else {
            return vec![];
        };
        if self.is_busy() || self.model.is_none() {
            return vec![];
        }
        let mut tokens: Vec<u32> = guesses.iter().map(|(_, t)| t.id).collect();
        tokens.sort_unstable();
        tokens.dedup();
        let cmd = Command::RankTokens {
            position: *position,
            tokens,
        };
        if let Some(c) = self.class.as_mut() {
            c.rank_sent = true;
        }
        self.request(cmd, "ranking the class's guesses")
    }

    /// The ranking failed (the failure is on the status line): the guesses are dropped rather than
    /// shown as being scored for ever.
    pub(super) fn class_rank_failed(&mut self) {
        if let Some(c) = self.class.as_mut().filter(|c| c.rank_sent) {
            c.closed = None;
        }
    }

    /// The engine ranked the class's guesses: score each student, keep the poll, say what it shows.
    pub(super) fn on_ranked(&mut self, ranks: TokenRanks) {
        let question = self.question().unwrap_or("What comes next?").to_string();
        let step = self
            .session
            .as_ref()
            .map_or(0, |s| ranks.position.saturating_sub(s.prompt_len));
        let Some(class) = self.class.as_mut() else {
            return;
        };
        let Some((position, guesses)) = class.closed.take() else {
            return;
        };
        if position != ranks.position {
            return;
        }
        let tokens: Vec<TokenView> = guesses.iter().map(|(_, t)| t.clone()).collect();
        let poll = ClassPoll::new(&question, &tokens, ranks, class.roster.len());
        let mut scored = BTreeMap::new();
        for (id, token) in &guesses {
            let g = poll.rows.iter().find(|r| r.guess.token.id == token.id);
            if let (Some(s), Some(g)) = (class.roster.get_mut(id), g) {
                s.score.record(&g.guess);
                scored.insert(*id, g.guess.clone());
            }
        }
        place_students(&mut class.roster);
        let students = class
            .roster
            .iter()
            .map(|(id, s)| {
                let guess = scored.get(id).cloned();
                (
                    *id,
                    StudentResult {
                        guess,
                        score: s.score,
                    },
                )
            })
            .collect();
        let sentence = poll_sentence(&poll);
        let answer = poll_answer(&poll);
        class.results = Some(Arc::new(ClassResults {
            step,
            poll: poll.clone(),
            students,
        }));
        class.polls.retain(|p| p.position != poll.position);
        class.polls.push(poll);
        self.say(sentence);
        self.record_answer(answer);
    }

    /// The reveal on screen, if it is the class's at the position on screen.
    pub fn class_poll(&self) -> Option<&ClassPoll> {
        let r = self.class.as_ref()?.results.as_ref()?;
        let pos = self.session.as_ref()?.next.position;
        (r.poll.position == pos).then_some(&r.poll)
    }

    /// `C`: the class samples: its most popular guess is forced as the next token.
    pub(super) fn class_samples(&mut self) -> Vec<Command> {
        if self.class.is_none() {
            self.say("class mode is off: start with --class to let a class guess from its devices");
            return vec![];
        }
        if self.awaiting_guess() {
            let reveal = hint_key(Mode::Normal, Action::ToggleHidden);
            self.say(format!(
                "the class's choice is known at the reveal: {reveal} closes the guessing first"
            ));
            return vec![];
        }
        let Some(choice) = self.class_poll().and_then(|p| p.class_choice()).cloned() else {
            self.say("no guesses from the class at this step: nothing to force");
            return vec![];
        };
        self.say(format!(
            "the class samples: {} ({} under the model, rank {})",
            quoted(&choice.token.text),
            pct(choice.prob),
            choice.rank + 1
        ));
        self.request(
            Command::ClassChoice {
                token_id: choice.token.id,
            },
            "forcing the class's choice",
        )
    }

    /// `J`: the join card open or closed.
    pub(super) fn toggle_join_card(&mut self) {
        match self.class.as_mut() {
            Some(c) => c.show_card = !c.show_card,
            None => self.say("class mode is off: start with --class to let a class join"),
        }
    }

    /// The join card closes at the teacher's next key (but `J` itself, which toggles it): it is there
    /// for the class to join, not to hide the lesson.
    pub(super) fn close_join_card(&mut self, action: Action) {
        if let Some(c) = self
            .class
            .as_mut()
            .filter(|_| action != Action::ToggleJoinCard)
        {
            c.show_card = false;
        }
    }

    /// The status bar's word on the class: "class: 12 joined · 9 guessed".
    pub fn class_short(&self) -> Option<String> {
        let c = self.class.as_ref()?;
        let pos = self.session.as_ref().map(|s| s.next.position);
        let counted = c.guessed.filter(|g| Some(g.0) == pos).map_or(0, |g| g.1);
        let guessed = self.class_poll().map_or(counted, |p| p.guesses() as usize);
        Some(format!(
            "class: {} joined · {guessed} guessed · code {}",
            c.roster.len(),
            c.card.code
        ))
    }

    /// `W`: the leaderboard shown or hidden.
    pub(super) fn toggle_board(&mut self) {
        match self.class.as_mut() {
            Some(c) => c.hide_board = !c.hide_board,
            None => self.say("class mode is off: start with --class"),
        }
    }
}

/// Gives every student their place: most top-1 first, then most top-5, then the least surprise.
fn place_students(roster: &mut BTreeMap<StudentId, Student>) {
    let mut order: Vec<(StudentId, StudentScore)> =
        roster.iter().map(|(id, s)| (*id, s.score)).collect();
    order.sort_by(|a, b| a.1.ahead_of(&b.1));
    let of = order.len();
    for (place, (id, _)) in order.iter().enumerate() {
        if let Some(s) = roster.get_mut(id) {
            s.score.place = place + 1;
            s.score.of = of;
        }
    }
}

/// The status line at a reveal: "the class: 9 guesses; 4 of 9 guessed the model's top choice ⟨␣Paris⟩
/// (44%); the class's entropy 1.2 bits, the model's 2.3".
pub fn poll_sentence(poll: &ClassPoll) -> String {
    let n = poll.guesses();
    let Some(top) = poll.model_top1() else {
        return "the class: no ranking".into();
    };
    if n == 0 {
        return format!(
            "the class: nobody guessed; the model's top choice: {} {}",
            quoted(&top.token.text),
            pct(top.prob)
        );
    }
    let hits = (poll.share_top1() * f64::from(n)).round() as u32;
    let guesses = if n == 1 { "guess" } else { "guesses" };
    format!(
        "the class: {n} {guesses}; {hits} of {n} guessed the model's top choice {} ({}); the class's entropy {:.1} bits, the model's {:.1}",
        quoted(&top.token.text),
        pct(top.prob),
        poll.class_entropy_bits(),
        poll.model_entropy_bits()
    )
}

/// The poll as one of the class's answers (saved with the session, printed in the handout).
fn poll_answer(poll: &ClassPoll) -> ClassAnswer {
    let shown = |t: &TokenView| format!("'{}'", crate::fmt::visible(&t.text));
    let rows: Vec<String> = poll
        .rows
        .iter()
        .take(5)
        .map(|r| {
            format!(
                "{} ×{} ({})",
                shown(&r.guess.token),
                r.count,
                pct(r.guess.prob)
            )
        })
        .collect();
    let class = poll
        .class_choice()
        .map_or("nobody guessed".into(), |g| shown(&g.token));
    let model = poll.model_top1().map_or(String::new(), |g| shown(&g.token));
    ClassAnswer {
        position: poll.position,
        question: poll.question.clone(),
        kind: "class".into(),
        class,
        model,
        correct: poll.class_choice().is_some_and(|g| g.rank == 0),
        detail: format!(
            "{} of {} students guessed: {}; the class's entropy {:.1} bits, the model's {:.1}",
            poll.guesses(),
            poll.students,
            rows.join(", "),
            poll.class_entropy_bits(),
            poll.model_entropy_bits()
        ),
    }
}

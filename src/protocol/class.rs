//! Class mode: what passes between the app and the room (the students' web server, `src/class/`), and
//! the engine's ranking of the class's guesses. Plain data: the room never sees the model, the app
//! never sees a socket.
//!
//! The app publishes a [`Stage`] after every message (what the class may see); the room answers with
//! [`ClassMsg`]s (a join, a count of guesses, the guesses once it has closed the guessing).

use super::{GuessToken, TokenView};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A student's id: random, and their only credential (written as 16 hex digits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct StudentId(pub u64);

impl std::fmt::Display for StudentId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl std::str::FromStr for StudentId {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        if s.len() != 16 {
            return Err(());
        }
        u64::from_str_radix(s, 16).map(StudentId).map_err(|_| ())
    }
}

/// How the class gets in: shown by the terminal (`J`, and the class panel).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JoinCard {
    /// The page's address, e.g. `http://192.168.1.20:7878/`.
    pub url: String,
    /// The six-digit join code, new every run.
    pub code: String,
    /// A QR code of the address with the code filled in, as rows of text (`█▀▄` and spaces: dark
    /// modules drawn in the foreground).
    pub qr: Vec<String>,
    /// At most this many students.
    pub max: usize,
    /// Bound to loopback on this port: only this machine can join (`--class 0.0.0.0:PORT`, the same
    /// port, lets the room in). `None` when the room can join.
    pub local_only: Option<u16>,
}

/// Where the question on screen stands, as the app sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Ask {
    /// No question: the model is busy, or the step went by without one (a confident step autoplay ran
    /// through, predict mode off).
    Waiting,
    /// The distribution is hidden and a guess is awaited.
    Open,
    /// The distribution at this position is on screen (the teacher's reveal).
    Shown,
    /// A lesson's question the class answers in words (yes/no, a choice, a number): asked aloud, the
    /// teacher types the class's answer; the page shows the question and takes no guess.
    Aloud,
}

/// What the class may see of the app, published after every message.
#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    /// Tokens the model has written so far (the question is about the next one).
    pub step: usize,
    /// The 0-based position of the token asked about.
    pub position: usize,
    pub ask: Ask,
    pub question: String,
    /// The text so far, prompt included.
    pub text: String,
    /// The reveal's results, once the engine has ranked the class's guesses.
    pub results: Option<Arc<ClassResults>>,
}

/// From the room to the app.
#[derive(Debug, Clone, PartialEq)]
pub enum ClassMsg {
    /// A student joined (the room has checked the name: no control or direction characters).
    Joined { student: StudentId, name: String },
    /// How many students have guessed the open position: never what.
    Guessed { position: usize, count: usize },
    /// The room closed the guessing at `position` (the app published the reveal): every guess it
    /// took, one per student.
    Closed {
        position: usize,
        guesses: Vec<(StudentId, TokenView)>,
    },
}

/// The engine's answer to `Command::RankTokens`: each token's raw probability and rank at `position`,
/// beside the model's own likeliest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenRanks {
    pub position: usize,
    /// One per token asked about, in the order asked.
    pub tokens: Vec<GuessToken>,
    /// The model's likeliest tokens there, best first.
    pub top: Vec<GuessToken>,
    /// The raw distribution's entropy, in nats.
    pub entropy: f32,
}

/// One token the class guessed, how many guessed it, and the model's raw figures for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PollRow {
    pub guess: GuessToken,
    pub count: u32,
}

/// The class's guesses at one position beside the model's distribution: kept per step in the saved
/// session and printed in the handout ("what the class predicted").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassPoll {
    pub position: usize,
    pub question: String,
    /// Most popular first; ties by the model's probability.
    pub rows: Vec<PollRow>,
    /// The model's likeliest, best first.
    pub model_top: Vec<GuessToken>,
    /// The model's entropy there, in nats.
    pub model_entropy: f32,
    /// Students in the room when the guessing closed.
    pub students: usize,
}

impl ClassPoll {
    /// Builds the poll from the guesses' tokens (one per student) and the engine's ranks of them.
    pub fn new(question: &str, guessed: &[TokenView], ranks: TokenRanks, students: usize) -> Self {
        let mut rows: Vec<PollRow> = Vec::new();
        for t in guessed {
            if let Some(r) = rows.iter_mut().find(|r| r.guess.token.id == t.id) {
                r.count += 1;
            } else if let Some(g) = ranks.tokens.iter().find(|g| g.token.id == t.id) {
                rows.push(PollRow {
                    guess: g.clone(),
                    count: 1,
                });
            }
        }
        rows.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then(b.guess.prob.total_cmp(&a.guess.prob))
        });
        ClassPoll {
            position: ranks.position,
            question: question.to_string(),
            rows,
            model_top: ranks.top,
            model_entropy: ranks.entropy,
            students,
        }
    }

    /// How many guessed.
    pub fn guesses(&self) -> u32 {
        self.rows.iter().map(|r| r.count).sum()
    }

    /// The class's most popular guess, ties broken by the model's probability: what `C` forces.
    pub fn class_choice(&self) -> Option<&GuessToken> {
        self.rows.first().map(|r| &r.guess)
    }

    /// The class's share of a token (0 when nobody guessed it).
    pub fn share(&self, id: u32) -> f64 {
        let n = self.guesses();
        let count = self.rows.iter().find(|r| r.guess.token.id == id);
        match (n, count) {
            (0, _) | (_, None) => 0.0,
            (n, Some(r)) => f64::from(r.count) / f64::from(n),
        }
    }

    /// The entropy of the class's guesses, in bits (the class as a distribution over tokens).
    pub fn class_entropy_bits(&self) -> f64 {
        let n = f64::from(self.guesses());
        let h: f64 = self
            .rows
            .iter()
            .map(|r| f64::from(r.count) / n)
            .map(|p| -p * p.log2())
            .sum();
        // One token guessed by all is 0 bits, not −0.
        h.max(0.0)
    }

    /// The model's entropy, in bits.
    pub fn model_entropy_bits(&self) -> f64 {
        f64::from(self.model_entropy) / std::f64::consts::LN_2
    }

    /// The model's top-1 there.
    pub fn model_top1(&self) -> Option<&GuessToken> {
        self.model_top.first()
    }

    /// The share of the class that guessed the model's top-1.
    pub fn share_top1(&self) -> f64 {
        self.model_top1().map_or(0.0, |t| self.share(t.token.id))
    }

    /// The model's mean log-probability (nats) of the class's guesses: how well the model predicts
    /// the class. `None` before any guess.
    pub fn model_logprob_of_class(&self) -> Option<f64> {
        let n = self.guesses();
        (n > 0).then(|| {
            let sum: f64 = self
                .rows
                .iter()
                .map(|r| f64::from(r.count) * f64::from(r.guess.logprob))
                .sum();
            sum / f64::from(n)
        })
    }

    /// The class's log-probability (nats) of the model's top-1: ln of the share that guessed it;
    /// `None` when nobody did (the class gave it no probability at all).
    pub fn class_logprob_of_model(&self) -> Option<f64> {
        let share = self.share_top1();
        (share > 0.0).then(|| share.ln())
    }
}

/// One student's result at a reveal, and their running score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudentResult {
    /// Their guess, scored; `None` if they did not guess this position.
    pub guess: Option<GuessToken>,
    pub score: StudentScore,
}

/// A student's running score, and their place on the leaderboard.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct StudentScore {
    pub guesses: u32,
    /// Guesses that were the model's top-1, and that were in its top 5.
    pub top1: u32,
    pub top5: u32,
    /// Sum of the guesses' 1-based ranks.
    pub rank_sum: u64,
    /// Sum of the guesses' surprise, −log₂ p, in bits.
    pub surprise_bits: f64,
    /// 1-based place on the leaderboard, and how many are on it.
    pub place: usize,
    pub of: usize,
}

impl StudentScore {
    /// Adds one scored guess.
    pub fn record(&mut self, g: &GuessToken) {
        self.guesses += 1;
        self.top1 += u32::from(g.rank == 0);
        self.top5 += u32::from(g.rank < 5);
        self.rank_sum += g.rank as u64 + 1;
        self.surprise_bits += -f64::from(g.logprob) / std::f64::consts::LN_2;
    }

    pub fn mean_rank(&self) -> Option<f64> {
        (self.guesses > 0).then(|| self.rank_sum as f64 / f64::from(self.guesses))
    }

    /// The leaderboard's order: most top-1 first, then most top-5, then the least surprise.
    pub fn ahead_of(&self, other: &StudentScore) -> std::cmp::Ordering {
        other
            .top1
            .cmp(&self.top1)
            .then(other.top5.cmp(&self.top5))
            .then(self.surprise_bits.total_cmp(&other.surprise_bits))
    }
}

/// The reveal as the room serves it: the poll, and every student's result.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassResults {
    pub step: usize,
    pub poll: ClassPoll,
    pub students: BTreeMap<StudentId, StudentResult>,
}

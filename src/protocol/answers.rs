//! The class's answers: each question the class answered (a guess in predict mode, or a lesson's
//! question), scored against the model. Kept by the app, saved with the session and printed in the
//! handout.

use serde::{Deserialize, Serialize};

/// One question the class answered, scored against the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassAnswer {
    /// 0-based position of the token the question was about (the next token's position when asked).
    pub position: usize,
    /// The question as shown ("What comes next?" in predict mode).
    pub question: String,
    /// "token", "choice", "yes/no" or "number".
    pub kind: String,
    /// What the class answered, as shown ("' Paris'", "yes", "8").
    pub class: String,
    /// The model's answer, as shown.
    pub model: String,
    /// Whether the class's answer counts as right.
    pub correct: bool,
    /// One line of detail for a handout ("rank 1, 76.8%", "within 2 of 8.7").
    pub detail: String,
}

/// One token of a scored guess, under the model's raw distribution (softmax of the logits at
/// temperature 1) at its position, the guess's earlier tokens read before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuessToken {
    pub token: super::TokenView,
    pub prob: f32,
    pub logprob: f32,
    /// 0-based rank in the whole vocabulary: how many tokens the model finds likelier there.
    pub rank: usize,
}

/// A guess scored as the next tokens of the current path (`Command::ScoreGuess`). Computed aside:
/// the session is unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuessScore {
    /// The text scored: the guess as the next text, its word boundary included ([`as_continuation`]).
    pub text: String,
    /// The position of its first token (the next token's).
    pub position: usize,
    /// The tokens the text becomes, each with its probability and rank given the ones before it.
    pub tokens: Vec<GuessToken>,
    /// The log-probability (nats) of the whole sequence: the sum over its tokens.
    pub logprob: f64,
    /// The model's own greedy continuation of the same length (its top-1 at each step).
    pub greedy: Vec<super::TokenView>,
    /// The log-probability (nats) of that greedy continuation.
    pub greedy_logprob: f64,
    /// Whether the guess is exactly the greedy continuation (for one token: the model's top-1).
    pub is_greedy: bool,
    /// The model's top-1 at the first position, and its probability.
    pub top1: super::TokenView,
    pub top1_prob: f32,
}

impl GuessScore {
    /// The probability of the whole sequence.
    pub fn prob(&self) -> f64 {
        self.logprob.exp()
    }

    /// The 0-based rank of the guess's first token.
    pub fn first_rank(&self) -> usize {
        self.tokens.first().map_or(usize::MAX, |t| t.rank)
    }
}

/// A typed guess as the next piece of text: after text that ends in a word, a guess that starts with
/// a word gets the space a space-prefixed BPE reads as the word boundary ("Paris" after "The capital of
/// France is" means " Paris"). After whitespace or at the very start nothing is added, and a guess
/// typed with leading whitespace is kept as typed. So is one that starts with punctuation ("," or ".").
pub fn as_continuation(text_before: &str, typed: &str) -> String {
    let after_word = text_before
        .chars()
        .last()
        .is_some_and(|c| !c.is_whitespace());
    let starts_word = typed.chars().next().is_some_and(char::is_alphanumeric);
    if after_word && starts_word {
        format!(" {typed}")
    } else {
        typed.to_string()
    }
}

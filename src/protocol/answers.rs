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

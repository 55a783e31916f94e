//! What a user can get wrong in a session, each error saying what to do.

use crate::engine::gguf::LoadError;
use crate::engine::served::ServedError;

/// Errors a user can cause; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("the prompt is empty: type something for the model to continue")]
    EmptyPrompt,
    #[error(
        "the prompt is {tokens} tokens but the model's context holds {context}; shorten the prompt"
    )]
    PromptTooLong { tokens: usize, context: usize },
    #[error("the context is full ({0} tokens): rewind, or start a new prompt")]
    ContextFull(usize),
    #[error("{need} more tokens do not fit: the context holds {context} and {used} are used; rewind, or force less text")]
    NoRoom {
        need: usize,
        used: usize,
        context: usize,
    },
    #[error("nothing to force: the text is empty")]
    NothingToForce,
    #[error("nothing to guess: type a word or a few first")]
    NothingToGuess,
    #[error("no prompt yet: prefill one first")]
    NoPrompt,
    #[error("token id {0} is not in the model's vocabulary")]
    BadToken(u32),
    #[error("no branch with id {0}")]
    BadBranch(usize),
    #[error("this model has no chat template (no `tokenizer.chat_template` in its GGUF): it is a base model, which continues text rather than answering turns. Turn chat mode off (drop --chat), or load an instruct model")]
    NoChatTemplate,
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("model error: {0}")]
    Model(#[from] candle_core::Error),
    #[error("internal error: {0}")]
    Internal(String),
    #[error(transparent)]
    Served(#[from] ServedError),
    #[error("a served model cannot show {0}: its server gives only the top candidates' log-probabilities, not what happens inside the pass (run the model locally with --model to see it)")]
    NotServed(&'static str),
    #[error("cancelled: the prompt was not read, and the session is as it was")]
    Cancelled,
}

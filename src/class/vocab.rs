//! The room's own copy of the vocabulary: a guess's text looked up as one token, and suggestions for
//! a prefix, without asking the engine (the room never waits on the model).

use super::refusal::Refusal;
use crate::protocol::{as_continuation, TokenKind, TokenView};
use std::collections::HashMap;

/// Suggestions a student is offered at most.
pub const SUGGESTIONS: usize = 8;
/// Longest prefix searched, in bytes.
pub const MAX_QUERY: usize = 32;
/// Longest guess, in bytes.
pub const MAX_GUESS: usize = 64;

/// The vocabulary's text tokens (control tokens and partial UTF-8 bytes are not guesses).
#[derive(Debug, Default)]
pub struct VocabIndex {
    tokens: Vec<TokenView>,
    /// Each token's exact text, to its index in `tokens`.
    exact: HashMap<String, usize>,
    /// (lower-cased text without leading spaces, index in `tokens`), sorted: prefix ranges by binary
    /// search.
    sorted: Vec<(String, usize)>,
}

impl VocabIndex {
    pub fn new(table: Vec<TokenView>) -> Self {
        let tokens: Vec<TokenView> = table
            .into_iter()
            .filter(|t| t.kind == TokenKind::Text && !t.text.is_empty())
            .collect();
        let exact = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.text.clone(), i))
            .collect();
        let mut sorted: Vec<(String, usize)> = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.text.trim_start().to_lowercase(), i))
            .filter(|(k, _)| !k.is_empty())
            .collect();
        sorted.sort();
        VocabIndex {
            tokens,
            exact,
            sorted,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The token a guess names: exactly a token's text, else (after a word) the word with the space
    /// before it. Refused (400) when it is not one token, naming the tokens the text starts with.
    pub fn lookup(&self, text: &str, before: &str) -> Result<TokenView, Refusal> {
        if text.is_empty() || text.len() > MAX_GUESS {
            return Err(Refusal::bad(format!(
                "a guess is one token: 1 to {MAX_GUESS} bytes of text"
            )));
        }
        let spaced = as_continuation(before, text);
        if let Some(&i) = self.exact.get(&spaced).or_else(|| self.exact.get(text)) {
            return Ok(self.tokens[i].clone());
        }
        let starts: Vec<String> = (1..spaced.len())
            .rev()
            .filter(|&n| spaced.is_char_boundary(n))
            .filter_map(|n| self.exact.get(&spaced[..n]))
            .take(3)
            .map(|&i| format!("'{}'", self.tokens[i].text))
            .collect();
        let hint = match starts.is_empty() {
            true => String::new(),
            false => format!(" (it starts with {})", starts.join(", ")),
        };
        Err(Refusal::bad(format!(
            "'{text}' is not one token of this model's vocabulary{hint}: pick one of the suggestions"
        )))
    }

    /// Up to `SUGGESTIONS` tokens matching `query` (case-insensitive, leading spaces ignored): exact
    /// matches, then prefixes; within each, the exact case first, then the shorter, then those with a
    /// leading space (the next word), then the lower id. Never by probability.
    pub fn suggest(&self, query: &str) -> Vec<TokenView> {
        let q = query.trim_start().to_lowercase();
        if q.is_empty() {
            return vec![];
        }
        let start = self
            .sorted
            .partition_point(|(k, _)| k.as_str() < q.as_str());
        let mut hits: Vec<(bool, bool, usize, bool, u32, usize)> = self.sorted[start..]
            .iter()
            .take_while(|(k, _)| k.starts_with(&q))
            .map(|(k, i)| {
                let t = &self.tokens[*i];
                let case = !t.text.trim_start().starts_with(query.trim_start());
                let no_space = !t.text.starts_with(' ');
                (k != &q, case, k.len(), no_space, t.id, *i)
            })
            .collect();
        hits.sort_unstable();
        hits.iter()
            .take(SUGGESTIONS)
            .map(|h| self.tokens[h.5].clone())
            .collect()
    }
}

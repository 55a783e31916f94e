//! Model B with its own vocabulary (the A/B view aligned by text): B reads the text of A's path
//! through its own tokenizer, and the two next-token distributions, over different vocabularies, are
//! compared where they can be: as distributions over the next character. Each token counts for the
//! character its text starts with; special tokens and partial UTF-8 bytes share one "other" class.

use crate::analysis::LogProbs;
use crate::engine::session::Session;
use crate::engine::tokenizer::Vocab;
use crate::protocol::{TokenKind, TokenView};
use std::collections::HashMap;

/// The class of a token: 0 for "other", else one per first character, shared by both vocabularies.
pub(super) struct CharClasses {
    a: Vec<u32>,
    b: Vec<u32>,
    n: usize,
    /// A's ordinary tokens by their text, to find A's probability of B's candidates.
    a_by_text: HashMap<String, u32>,
}

fn first_char(v: &TokenView) -> Option<char> {
    (v.kind == TokenKind::Text)
        .then(|| v.text.chars().next())
        .flatten()
}

impl CharClasses {
    /// Classes for A's `a_len` tokens (read through `session`) and all of B's.
    pub(super) fn new(session: &Session, a_len: usize, b: &Vocab) -> CharClasses {
        let mut ids: HashMap<char, u32> = HashMap::new();
        let mut class = |v: &TokenView| match first_char(v) {
            None => 0,
            Some(c) => {
                let next = ids.len() as u32 + 1;
                *ids.entry(c).or_insert(next)
            }
        };
        let mut a_by_text = HashMap::new();
        let a = (0..a_len as u32)
            .map(|id| {
                let v = session.token_view(id);
                if v.kind == TokenKind::Text {
                    a_by_text.entry(v.text.clone()).or_insert(id);
                }
                class(&v)
            })
            .collect();
        let b = (0..b.vocab_size() as u32)
            .map(|id| class(&b.view(id)))
            .collect();
        CharClasses {
            a,
            b,
            n: ids.len() + 1,
            a_by_text,
        }
    }

    /// A's distribution over the next character.
    pub(super) fn a(&self, lp: &LogProbs) -> LogProbs {
        self.marginal(lp, &self.a)
    }

    /// B's distribution over the next character.
    pub(super) fn b(&self, lp: &LogProbs) -> LogProbs {
        self.marginal(lp, &self.b)
    }

    fn marginal(&self, lp: &LogProbs, classes: &[u32]) -> LogProbs {
        let mut p = vec![0f64; self.n];
        for (&l, &c) in lp.0.iter().zip(classes) {
            p[c as usize] += l.exp();
        }
        LogProbs(p.into_iter().map(f64::ln).collect())
    }

    /// A's token with exactly this text, if A has one.
    pub(super) fn a_token(&self, text: &str) -> Option<u32> {
        self.a_by_text.get(text).copied()
    }
}

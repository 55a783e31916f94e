//! A served model's vocabulary, asked of the server itself (`/tokenize`, `/detokenize`): nothing is
//! guessed. Token bytes are learnt as they arrive (llama.cpp sends them with every candidate and every
//! tokenised piece) and otherwise asked for once per id, then kept.

use super::bytes::make_view;
use super::Piece;
use crate::engine::gguf::LoadError;
use crate::engine::served::Client;
use crate::protocol::TokenView;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// Token bytes learnt from the server, shared by the vocabulary and the backend that reads the replies.
pub type LearntPieces = Arc<Mutex<HashMap<u32, Vec<u8>>>>;

pub(super) struct Remote {
    pub(super) client: Arc<Client>,
    pub(super) learnt: LearntPieces,
    pub(super) specials: HashSet<u32>,
    pub(super) size: usize,
}

impl Remote {
    pub(super) fn encode(&self, text: &str) -> Result<Vec<u32>, LoadError> {
        let tokens = self
            .client
            .tokenize(text, true)
            .map_err(|e| LoadError::Tokenizer(e.to_string()))?;
        let mut learnt = self.learnt.lock().unwrap_or_else(|p| p.into_inner());
        Ok(tokens
            .into_iter()
            .map(|(id, piece)| {
                if let Some(b) = piece.filter(|b| !b.is_empty()) {
                    learnt.entry(id).or_insert(b);
                }
                id
            })
            .collect())
    }

    /// The bytes of `id`: learnt, or asked of `/detokenize` (then kept). `None` when the server could
    /// not be asked: the caller shows the id as unknown rather than a guess.
    pub(super) fn bytes(&self, id: u32) -> Option<Vec<u8>> {
        if let Some(b) = self
            .learnt
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
        {
            return Some(b.clone());
        }
        if id as usize >= self.size {
            return None;
        }
        let text = self.client.detokenize(&[id]).ok()?;
        let b = text.into_bytes();
        self.learnt
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, b.clone());
        Some(b)
    }

    pub(super) fn view(&self, id: u32) -> Option<TokenView> {
        let bytes = self.bytes(id)?;
        let special = self.specials.contains(&id);
        Some(make_view(id, &Piece { bytes, special }))
    }
}

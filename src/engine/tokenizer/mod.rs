//! The tokenizer: `Vocab`, a `tokenizers` BPE with a display table for every id, and what callers ask
//! of it (encode, decode, the view of an id, BOS/EOS).
//!
//! Teaching note: a byte-level BPE token is a run of *bytes*, not characters. GPT-2 style vocabularies
//! store each byte as a printable stand-in character (space is `Ġ`, newline is `Ċ`), so a token can hold
//! half of a multi-byte character such as `日` (E6 97 A5). Such a token cannot be shown as text on its own;
//! the table shows it as `<E6 97>` with kind `Bytes`, and [`StreamDecoder`] waits for the rest.
//!
//! Where the rest lives: `build.rs` builds a `Vocab` from the GGUF's `tokenizer.ggml.*` metadata or a
//! tokenizer.json (and picks the pre-tokenizer), `spm.rs` the SentencePiece-style vocabularies (Gemma)
//! from their scores; `bytes.rs` turns token strings into the bytes they
//! stand for and the display table; `search.rs` is the vocabulary search; `stream.rs` the UTF-8-safe
//! stream decoder.

mod build;
mod bytes;
mod search;
mod spm;
mod stream;

pub use stream::StreamDecoder;

use super::gguf::LoadError;
use crate::protocol::{TokenKind, TokenView};
use std::path::Path;
use tokenizers::Tokenizer;

/// A model's vocabulary: the tokenizer plus a precomputed display table for every id.
pub struct Vocab {
    tokenizer: Tokenizer,
    views: Vec<TokenView>,
    bytes: Vec<Vec<u8>>,
    /// Lower-cased display text, for search.
    keys: Vec<String>,
    eos: Vec<u32>,
    bos: Option<u32>,
    add_bos: bool,
}

/// One vocabulary entry before the table is built: its raw bytes and whether it is a control token.
struct Piece {
    bytes: Vec<u8>,
    special: bool,
}

impl Vocab {
    /// Writes the tokenizer as a tokenizer.json (e.g. to inspect it, or to edit and pass back with
    /// `--tokenizer`).
    pub fn save_tokenizer_json(&self, path: &Path) -> Result<(), LoadError> {
        self.tokenizer
            .save(path, true)
            .map_err(|e| LoadError::Tokenizer(format!("cannot write {}: {e}", path.display())))
    }

    /// Token ids for `text`. Special tokens written in the text (`<|im_start|>`) become their ids; BOS is
    /// prepended only when the model's `add_bos_token` says so.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, LoadError> {
        let enc = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| LoadError::Tokenizer(format!("encoding failed: {e}")))?;
        let mut ids = Vec::with_capacity(enc.len() + 1);
        if let (true, Some(b)) = (self.add_bos, self.bos) {
            ids.push(b);
        }
        ids.extend_from_slice(enc.get_ids());
        Ok(ids)
    }

    /// How the screen shows `id`. An id outside the vocabulary shows as `<id?>`, never a panic.
    pub fn view(&self, id: u32) -> TokenView {
        self.views
            .get(id as usize)
            .cloned()
            .unwrap_or_else(|| TokenView {
                id,
                text: format!("<{id}?>"),
                kind: TokenKind::Special,
            })
    }

    /// The text of a run of ids, special tokens included. Invalid UTF-8 becomes U+FFFD.
    pub fn decode(&self, ids: &[u32]) -> String {
        let bytes: Vec<u8> = ids.iter().flat_map(|&id| self.token_bytes(id)).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The raw bytes a token stands for (a special token's bytes are its name).
    pub fn token_bytes(&self, id: u32) -> Vec<u8> {
        self.bytes.get(id as usize).cloned().unwrap_or_default()
    }

    /// Ids that end generation: `eos_token_id` plus end-of-turn tokens present in the vocabulary.
    pub fn eos_ids(&self) -> &[u32] {
        &self.eos
    }

    pub fn bos_id(&self) -> Option<u32> {
        self.bos
    }

    /// Whether [`Vocab::encode`] prepends BOS.
    pub fn adds_bos(&self) -> bool {
        self.add_bos
    }

    pub fn vocab_size(&self) -> usize {
        self.views.len()
    }

    pub fn is_special(&self, id: u32) -> bool {
        self.views
            .get(id as usize)
            .is_some_and(|v| v.kind == TokenKind::Special)
    }
}

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
mod remote;
mod search;
mod spm;
mod stream;

pub use build::EOT_NAMES;
pub use remote::LearntPieces;
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
    /// A served model's vocabulary, asked of the server (`remote.rs`); the local table is then empty.
    remote: Option<remote::Remote>,
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
        if self.remote.is_some() {
            return Err(LoadError::Tokenizer(
                "a served model's tokenizer lives on the server: there is no tokenizer.json to write".into(),
            ));
        }
        self.tokenizer
            .save(path, true)
            .map_err(|e| LoadError::Tokenizer(format!("cannot write {}: {e}", path.display())))
    }

    /// Token ids for `text`. Special tokens written in the text (`<|im_start|>`) become their ids; BOS is
    /// prepended only when the model's `add_bos_token` says so.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, LoadError> {
        if let Some(r) = &self.remote {
            return r.encode(text);
        }
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
        let remote = self.remote.as_ref().and_then(|r| r.view(id));
        remote
            .or_else(|| self.views.get(id as usize).cloned())
            .unwrap_or_else(|| TokenView {
                id,
                text: format!("<{id}?>"),
                kind: TokenKind::Special,
            })
    }

    /// Every id as the screen shows it, in id order (empty for a served model's vocabulary).
    pub fn table(&self) -> Vec<TokenView> {
        self.views.clone()
    }

    /// The text of a run of ids, special tokens included. Invalid UTF-8 becomes U+FFFD.
    pub fn decode(&self, ids: &[u32]) -> String {
        let mut bytes = Vec::new();
        for &id in ids {
            match (&self.remote, self.bytes.get(id as usize)) {
                (None, Some(b)) => bytes.extend_from_slice(b),
                (None, None) => {}
                (Some(_), _) => bytes.extend(self.token_bytes(id)),
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The raw bytes a token stands for (a special token's bytes are its name).
    pub fn token_bytes(&self, id: u32) -> Vec<u8> {
        if let Some(r) = &self.remote {
            return r.bytes(id).unwrap_or_default();
        }
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
        self.remote.as_ref().map_or(self.views.len(), |r| r.size)
    }

    pub fn is_special(&self, id: u32) -> bool {
        if let Some(r) = &self.remote {
            return r.specials.contains(&id);
        }
        self.views
            .get(id as usize)
            .is_some_and(|v| v.kind == TokenKind::Special)
    }

    /// Whether the vocabulary lives on a server (no whole table here: no search, no DRY breakers).
    pub fn is_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// A served model's vocabulary: ids become text through the server (`remote.rs`). `learnt` is
    /// shared with the backend, which adds the bytes each reply carries.
    pub fn served(
        client: std::sync::Arc<crate::engine::served::Client>,
        learnt: LearntPieces,
        bos: Option<u32>,
        eos: Vec<u32>,
        add_bos: bool,
    ) -> Vocab {
        let size = client.n_vocab;
        let specials = bos.iter().chain(&eos).copied().collect();
        Vocab {
            tokenizer: Tokenizer::new(tokenizers::models::bpe::BPE::default()),
            views: Vec::new(),
            bytes: Vec::new(),
            keys: Vec::new(),
            eos,
            bos,
            add_bos,
            remote: Some(remote::Remote {
                client,
                learnt,
                specials,
                size,
            }),
        }
    }
}

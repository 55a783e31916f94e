//! The tokenizer: a `tokenizers` BPE built from the GGUF's own `tokenizer.ggml.*` metadata (or a
//! tokenizer.json), with a display table for every id, vocabulary search, and a UTF-8-safe stream decoder.
//!
//! Teaching note: a byte-level BPE token is a run of *bytes*, not characters. GPT-2 style vocabularies
//! store each byte as a printable stand-in character (space is `Ġ`, newline is `Ċ`), so a token can hold
//! half of a multi-byte character such as `日` (E6 97 A5). Such a token cannot be shown as text on its own;
//! the table shows it as `<E6 97>` with kind `Bytes`, and [`StreamDecoder`] waits for the rest.

use super::gguf::{GgufFile, LoadError};
use crate::protocol::{TokenKind, TokenView};
use candle_core::quantized::gguf_file::Value;
use std::collections::HashMap;
use std::path::Path;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{
    AddedToken, DecoderWrapper, PreTokenizerWrapper, SplitDelimiterBehavior, Tokenizer,
};

/// The Llama 3 pre-tokenizer regex (llama.cpp's `LLAMA_VOCAB_PRE_TYPE_LLAMA3`, HF's `Split` pattern).
const LLAMA3_REGEX: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Names that end a turn in common chat formats; their ids join `eos_token_id` in [`Vocab::eos_ids`].
const EOT_NAMES: &[&str] = &[
    "<|im_end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<end_of_turn>",
    "</s>",
];

/// GGUF `token_type` values (llama.cpp's `llama_token_type`).
const TYPE_CONTROL: i32 = 3;
const TYPE_USER_DEFINED: i32 = 4;

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
    /// Builds the tokenizer from `tokenizer.ggml.*` (gpt2-style BPE), choosing the pre-tokenizer by
    /// `tokenizer.ggml.pre`.
    pub fn from_gguf(g: &GgufFile) -> Result<Vocab, LoadError> {
        let model = g.get_string("tokenizer.ggml.model").unwrap_or_default();
        if model != "gpt2" {
            return Err(LoadError::Tokenizer(format!(
                "tokenizer model `{model}` in tokenizer.ggml.model is not supported (nexttoken builds gpt2-style BPE).\n  Pass the model's tokenizer.json with --tokenizer PATH."
            )));
        }
        let pre = g
            .get_string("tokenizer.ggml.pre")
            .unwrap_or_else(|| "default".into());
        let pre_tokenizer = pre_tokenizer(&pre)?;
        let tokens = g.get_string_array("tokenizer.ggml.tokens")?;
        let merges = g.get_string_array("tokenizer.ggml.merges")?;
        let types = g
            .get_i32_array("tokenizer.ggml.token_type")
            .unwrap_or_default();
        let type_of = |id: usize| types.get(id).copied().unwrap_or(1);

        let mut vocab = tokenizers::models::bpe::Vocab::default();
        for (id, t) in tokens.iter().enumerate() {
            vocab.entry(t.clone()).or_insert(id as u32);
        }
        let merges: Vec<(String, String)> = merges
            .iter()
            .filter_map(|m| {
                m.split_once(' ')
                    .map(|(a, b)| (a.to_string(), b.to_string()))
            })
            .collect();
        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            // llama.cpp looks a whole pre-token up before merging for Llama 3 vocabularies.
            .ignore_merges(pre == "llama-bpe")
            .build()
            .map_err(|e| LoadError::Tokenizer(format!("building BPE: {e}")))?;
        let mut tokenizer = Tokenizer::new(bpe);
        tokenizer.with_pre_tokenizer(Some(pre_tokenizer));
        tokenizer.with_decoder(Some(ByteLevelDecoder::default()));

        // Control tokens are matched in the text before pre-tokenisation, so a chat-rendered
        // `<|im_start|>` becomes one id. User-defined tokens are matched too (as llama.cpp does).
        let added: Vec<AddedToken> = tokens
            .iter()
            .enumerate()
            .filter_map(|(id, t)| match type_of(id) {
                TYPE_CONTROL => Some(AddedToken::from(t.clone(), true)),
                TYPE_USER_DEFINED => Some(AddedToken::from(t.clone(), false).normalized(false)),
                _ => None,
            })
            .collect();
        tokenizer.add_special_tokens(&added);

        let pieces = tokens
            .iter()
            .enumerate()
            .map(|(id, t)| match type_of(id) {
                TYPE_CONTROL => Piece {
                    bytes: t.as_bytes().to_vec(),
                    special: true,
                },
                TYPE_USER_DEFINED => Piece {
                    bytes: t.as_bytes().to_vec(),
                    special: false,
                },
                _ => Piece {
                    bytes: byte_level_bytes(t),
                    special: false,
                },
            })
            .collect();
        Ok(Self::finish(tokenizer, pieces, g))
    }

    /// Uses a tokenizer.json instead of the GGUF's metadata. BOS, EOS and `add_bos_token` still come
    /// from the GGUF, so generation stops where the model expects.
    pub fn from_tokenizer_json(path: &Path, g: &GgufFile) -> Result<Vocab, LoadError> {
        if !path.exists() {
            return Err(LoadError::Tokenizer(format!(
                "tokenizer file not found: {}",
                path.display()
            )));
        }
        let tokenizer = Tokenizer::from_file(path).map_err(|e| {
            LoadError::Tokenizer(format!(
                "cannot read {} as tokenizer.json: {e}",
                path.display()
            ))
        })?;
        let byte_level = matches!(tokenizer.get_decoder(), Some(DecoderWrapper::ByteLevel(_)));
        let added = tokenizer.get_added_tokens_decoder();
        let pieces = (0..tokenizer.get_vocab_size(true) as u32)
            .map(|id| {
                let t = tokenizer.id_to_token(id).unwrap_or_default();
                match added.get(&id) {
                    Some(a) => Piece {
                        bytes: a.content.as_bytes().to_vec(),
                        special: a.special,
                    },
                    None if byte_level => Piece {
                        bytes: byte_level_bytes(&t),
                        special: false,
                    },
                    None => Piece {
                        bytes: sentencepiece_bytes(&t),
                        special: false,
                    },
                }
            })
            .collect();
        Ok(Self::finish(tokenizer, pieces, g))
    }

    /// Writes the tokenizer as a tokenizer.json (e.g. to inspect it, or to edit and pass back with
    /// `--tokenizer`).
    pub fn save_tokenizer_json(&self, path: &Path) -> Result<(), LoadError> {
        self.tokenizer
            .save(path, true)
            .map_err(|e| LoadError::Tokenizer(format!("cannot write {}: {e}", path.display())))
    }

    fn finish(tokenizer: Tokenizer, pieces: Vec<Piece>, g: &GgufFile) -> Vocab {
        let views: Vec<TokenView> = pieces
            .iter()
            .enumerate()
            .map(|(id, p)| make_view(id as u32, p))
            .collect();
        let keys = views.iter().map(|v| v.text.to_lowercase()).collect();
        let bytes: Vec<Vec<u8>> = pieces.into_iter().map(|p| p.bytes).collect();
        let n = views.len() as u32;
        let in_range = |id: u32| (id < n).then_some(id);
        let bos = g.get_u32("tokenizer.ggml.bos_token_id").and_then(in_range);
        let mut eos: Vec<u32> = ["eos", "eot", "eom"]
            .iter()
            .filter_map(|k| g.get_u32(&format!("tokenizer.ggml.{k}_token_id")))
            .filter_map(in_range)
            .collect();
        for name in EOT_NAMES {
            if let Some(id) = views
                .iter()
                .position(|v| v.kind == TokenKind::Special && v.text == *name)
            {
                eos.push(id as u32);
            }
        }
        let mut seen = std::collections::HashSet::new();
        eos.retain(|id| seen.insert(*id));
        let add_bos = matches!(
            g.metadata("tokenizer.ggml.add_bos_token"),
            Some(Value::Bool(true))
        );
        Vocab {
            tokenizer,
            views,
            bytes,
            keys,
            eos,
            bos,
            add_bos,
        }
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

    /// Vocabulary search for the `/` box, case-insensitive: exact matches first, then prefixes, then
    /// substrings. Leading spaces in a token are ignored when matching, so "paris" finds " Paris".
    /// Within a tier: exact case first, then fewer leading spaces, shorter, lower id.
    pub fn search(&self, query: &str, limit: usize) -> Vec<u32> {
        if query.is_empty() || limit == 0 {
            return Vec::new();
        }
        let q = query.to_lowercase();
        let mut hits: Vec<(u8, bool, usize, usize, u32)> = Vec::new();
        for (id, key) in self.keys.iter().enumerate() {
            let trimmed = key.trim_start();
            let tier = if key == &q || trimmed == q {
                0
            } else if key.starts_with(&q) || trimmed.starts_with(&q) {
                1
            } else if key.contains(&q) {
                2
            } else {
                continue;
            };
            let text = &self.views[id].text;
            let case_differs = !text.trim_start().starts_with(query) && !text.starts_with(query);
            let lead = key.len() - trimmed.len();
            hits.push((tier, case_differs, lead, key.len(), id as u32));
        }
        hits.sort_unstable();
        hits.into_iter().take(limit).map(|h| h.4).collect()
    }
}

/// Pushes token ids in, hands back only complete UTF-8 text: a character split across tokens comes out
/// whole once its last byte arrives.
#[derive(Debug, Default, Clone)]
pub struct StreamDecoder {
    pending: Vec<u8>,
}

impl StreamDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one token; returns the text that is now complete (possibly empty).
    pub fn push(&mut self, vocab: &Vocab, id: u32) -> String {
        self.push_bytes(&vocab.token_bytes(id))
    }

    /// Adds raw bytes; returns the text that is now complete. Bytes that can never become valid UTF-8
    /// come out as U+FFFD at once.
    pub fn push_bytes(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
                    match e.error_len() {
                        // An incomplete character at the end: wait for more bytes.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// Bytes held back, waiting for the rest of a character.
    pub fn pending(&self) -> &[u8] {
        &self.pending
    }

    /// Ends the stream: whatever is held back comes out (incomplete bytes as U+FFFD).
    pub fn flush(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}

/// The pre-tokenizer llama.cpp uses for this `tokenizer.ggml.pre` value.
fn pre_tokenizer(pre: &str) -> Result<PreTokenizerWrapper, LoadError> {
    // add_prefix_space=false, trim_offsets=true (offsets only), use_regex as given.
    let byte_level = |use_regex| ByteLevel::new(false, true, use_regex);
    Ok(match pre {
        "smollm" => Sequence::new(vec![Digits::new(true).into(), byte_level(true).into()]).into(),
        "gpt2" | "default" => byte_level(true).into(),
        "llama-bpe" => {
            let split = Split::new(
                SplitPattern::Regex(LLAMA3_REGEX.into()),
                SplitDelimiterBehavior::Isolated,
                false,
            )
            .map_err(|e| LoadError::Tokenizer(format!("Llama 3 regex: {e}")))?;
            Sequence::new(vec![split.into(), byte_level(false).into()]).into()
        }
        other => return Err(LoadError::UnknownPreTokenizer(other.into())),
    })
}

/// GPT-2's byte-to-character table: printable Latin-1 bytes stand for themselves, the other 68 bytes
/// are shifted to U+0100 and up (so space 0x20 is `Ġ` U+0120).
fn byte_level_char_to_byte() -> HashMap<char, u8> {
    let mut map = HashMap::with_capacity(256);
    let mut shifted = 0u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        let c = if printable {
            b as char
        } else {
            shifted += 1;
            char::from_u32(255 + shifted).unwrap_or(char::REPLACEMENT_CHARACTER)
        };
        map.insert(c, b);
    }
    map
}

/// The bytes a byte-level BPE token stands for.
fn byte_level_bytes(token: &str) -> Vec<u8> {
    thread_local!(static MAP: HashMap<char, u8> = byte_level_char_to_byte());
    MAP.with(|map| {
        let mut out = Vec::with_capacity(token.len());
        for c in token.chars() {
            match map.get(&c) {
                Some(b) => out.push(*b),
                None => out.extend_from_slice(c.to_string().as_bytes()),
            }
        }
        out
    })
}

/// The bytes of a SentencePiece-style token: `<0xE6>` is one byte, `▁` is a space.
fn sentencepiece_bytes(token: &str) -> Vec<u8> {
    if let Some(hex) = token.strip_prefix("<0x").and_then(|t| t.strip_suffix('>')) {
        if let Ok(b) = u8::from_str_radix(hex, 16) {
            return vec![b];
        }
    }
    token.replace('\u{2581}', " ").into_bytes()
}

/// A display entry: special tokens by name, text when the bytes are valid UTF-8, else the invalid
/// bytes in hex (`<E6 97>`) with any valid text around them kept.
fn make_view(id: u32, p: &Piece) -> TokenView {
    if p.special {
        let text = String::from_utf8_lossy(&p.bytes).into_owned();
        return TokenView {
            id,
            text,
            kind: TokenKind::Special,
        };
    }
    if let Ok(s) = std::str::from_utf8(&p.bytes) {
        return TokenView {
            id,
            text: s.to_string(),
            kind: TokenKind::Text,
        };
    }
    let mut text = String::new();
    for chunk in p.bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        if !chunk.invalid().is_empty() {
            let hex: Vec<String> = chunk.invalid().iter().map(|b| format!("{b:02X}")).collect();
            text.push_str(&format!("<{}>", hex.join(" ")));
        }
    }
    TokenView {
        id,
        text,
        kind: TokenKind::Bytes,
    }
}

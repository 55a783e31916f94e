//! Building a `Vocab`: from the GGUF's own `tokenizer.ggml.*` metadata (gpt2-style BPE, pre-tokenizer
//! chosen by `tokenizer.ggml.pre`) or from a tokenizer.json; then BOS, EOS and the display table.

use super::bytes::{byte_level_bytes, make_view, sentencepiece_bytes};
use super::{Piece, Vocab};
use crate::engine::gguf::{GgufFile, LoadError};
use crate::protocol::{TokenKind, TokenView};
use candle_core::quantized::gguf_file::Value;
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

/// The Qwen 2 pre-tokenizer regex (llama.cpp's `LLAMA_VOCAB_PRE_TYPE_QWEN2`): Llama 3's, but digits one
/// at a time and the contractions spelled case by case.
const QWEN2_REGEX: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Names that end a turn in common chat formats; their ids join `eos_token_id` in [`Vocab::eos_ids`],
/// and a served model's ends of text are found by the same names (`served::open`), so a local and a
/// served model agree on where text ends.
pub const EOT_NAMES: &[&str] = &[
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

impl Vocab {
    /// Builds the tokenizer from `tokenizer.ggml.*`: gpt2-style BPE, its pre-tokenizer chosen by
    /// `tokenizer.ggml.pre`, or a SentencePiece-style vocabulary (`spm.rs`).
    pub fn from_gguf(g: &GgufFile) -> Result<Vocab, LoadError> {
        let model = g.get_string("tokenizer.ggml.model").unwrap_or_default();
        match model.as_str() {
            "gpt2" => {}
            "llama" => return Self::from_gguf_spm(g),
            _ => return Err(LoadError::Tokenizer(format!(
                "tokenizer model `{model}` in tokenizer.ggml.model is not supported (nexttoken builds gpt2-style BPE and SentencePiece-style `llama` vocabularies).\n  Pass the model's tokenizer.json with --tokenizer PATH."
            ))),
        }
        let pre = g
            .get_string("tokenizer.ggml.pre")
            .unwrap_or_else(|| "default".into());
        let pre_tokenizer = pre_tokenizer(&pre)?;
        let tokens = g.get_string_array("tokenizer.ggml.tokens")?;
        let merges = g.get_string_array("tokenizer.ggml.merges")?;
        let types = token_types(g);
        let vocab = vocab_of(&tokens);
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

        add_marked_tokens(&mut tokenizer, &tokens, &types);
        let pieces = pieces(&tokens, &types, byte_level_bytes);
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

    /// What both builders share: the display table, BOS and EOS (from the GGUF, so generation stops
    /// where the model expects, whichever tokenizer is used).
    pub(super) fn finish(tokenizer: Tokenizer, pieces: Vec<Piece>, g: &GgufFile) -> Vocab {
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
            remote: None,
        }
    }
}

/// The pre-tokenizer llama.cpp uses for this `tokenizer.ggml.pre` value.
fn pre_tokenizer(pre: &str) -> Result<PreTokenizerWrapper, LoadError> {
    // add_prefix_space=false, trim_offsets=true (offsets only), use_regex as given.
    let byte_level = |use_regex| ByteLevel::new(false, true, use_regex);
    Ok(match pre {
        "smollm" => Sequence::new(vec![Digits::new(true).into(), byte_level(true).into()]).into(),
        "gpt2" | "default" => byte_level(true).into(),
        "llama-bpe" | "qwen2" => {
            let regex = if pre == "qwen2" {
                QWEN2_REGEX
            } else {
                LLAMA3_REGEX
            };
            let split = Split::new(
                SplitPattern::Regex(regex.into()),
                SplitDelimiterBehavior::Isolated,
                false,
            )
            .map_err(|e| LoadError::Tokenizer(format!("the `{pre}` regex: {e}")))?;
            Sequence::new(vec![split.into(), byte_level(false).into()]).into()
        }
        other => return Err(LoadError::UnknownPreTokenizer(other.into())),
    })
}

/// Each token's type (`tokenizer.ggml.token_type`; empty when the file says nothing).
pub(super) fn token_types(g: &GgufFile) -> Vec<i32> {
    g.get_i32_array("tokenizer.ggml.token_type")
        .unwrap_or_default()
}

/// Token text to id; a text listed twice belongs to its first id.
pub(super) fn vocab_of(tokens: &[String]) -> tokenizers::models::bpe::Vocab {
    let mut vocab = tokenizers::models::bpe::Vocab::default();
    for (id, t) in tokens.iter().enumerate() {
        vocab.entry(t.clone()).or_insert(id as u32);
    }
    vocab
}

/// The type of token `id` (`tokenizer.ggml.token_type`; normal when the file says nothing).
fn type_of(types: &[i32], id: usize) -> i32 {
    types.get(id).copied().unwrap_or(1)
}

/// Control tokens are matched in the text before anything else, so a chat-rendered `<|im_start|>`
/// becomes one id; user-defined tokens (Gemma's runs of spaces) are matched too, on the raw text, as
/// llama.cpp does.
pub(super) fn add_marked_tokens(tokenizer: &mut Tokenizer, tokens: &[String], types: &[i32]) {
    let added: Vec<AddedToken> = tokens
        .iter()
        .enumerate()
        .filter_map(|(id, t)| match type_of(types, id) {
            TYPE_CONTROL => Some(AddedToken::from(t.clone(), true)),
            TYPE_USER_DEFINED => Some(AddedToken::from(t.clone(), false).normalized(false)),
            _ => None,
        })
        .collect();
    tokenizer.add_special_tokens(&added);
}

/// The bytes each token stands for: a control or user-defined token's own text (a control token is
/// special), any other's through `text_bytes` (byte-level or SentencePiece spelling).
pub(super) fn pieces(
    tokens: &[String],
    types: &[i32],
    text_bytes: impl Fn(&str) -> Vec<u8>,
) -> Vec<Piece> {
    tokens
        .iter()
        .enumerate()
        .map(|(id, t)| match type_of(types, id) {
            TYPE_CONTROL => Piece {
                bytes: t.as_bytes().to_vec(),
                special: true,
            },
            TYPE_USER_DEFINED => Piece {
                bytes: t.as_bytes().to_vec(),
                special: false,
            },
            _ => Piece {
                bytes: text_bytes(t),
                special: false,
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::pre_tokenizer;
    use tokenizers::{OffsetReferential, OffsetType, PreTokenizedString, PreTokenizer};

    /// The pieces `pre` cuts `text` into, in GPT-2's byte-level spelling.
    fn split(pre: &str, text: &str) -> Vec<String> {
        let mut s = PreTokenizedString::from(text);
        pre_tokenizer(pre).unwrap().pre_tokenize(&mut s).unwrap();
        s.get_splits(OffsetReferential::Original, OffsetType::Byte)
            .into_iter()
            .map(|(piece, _, _)| piece.to_string())
            .collect()
    }

    #[test]
    fn qwen2_splits_digits_one_by_one_and_contractions_in_any_case() {
        assert_eq!(
            split("qwen2", "I'M 2025 ok!!\n\n  x"),
            ["I", "'M", "Ġ", "2", "0", "2", "5", "Ġok", "!!ĊĊ", "Ġ", "Ġx"]
        );
        // Llama 3 keeps up to three digits together: the two regexes differ where they should.
        assert_eq!(split("llama-bpe", "I'M 2025"), ["I", "'M", "Ġ", "202", "5"]);
    }
}

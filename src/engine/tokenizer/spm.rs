//! SentencePiece-style vocabularies (`tokenizer.ggml.model` = "llama": Gemma, Llama 2, TinyLlama) built
//! from the GGUF's tokens and scores, with llama.cpp's semantics:
//! - spaces become `▁` (and one is prepended when `tokenizer.ggml.add_space_prefix` says so);
//! - control tokens and user-defined tokens (Gemma's runs of spaces and line breaks) are cut out of the
//!   raw text first, as llama.cpp partitions them, the longest match winning;
//! - the rest merges pairs of adjacent pieces, always the pair whose merged piece scores highest (the
//!   leftmost on a tie), until no merged piece is in the vocabulary;
//! - a character with no piece falls back to its UTF-8 bytes (`<0xE6>` tokens).
//!
//! The merging is expressed as a BPE whose merge list is every (left, right) split of every piece,
//! ranked by the merged piece's score: BPE then applies the best-scoring available merge first, which is
//! SentencePiece's rule. That is how Hugging Face converts these vocabularies too.

use super::build::{add_marked_tokens, pieces, token_types, vocab_of};
use super::bytes::sentencepiece_bytes;
use super::Vocab;
use crate::engine::gguf::{GgufFile, LoadError};
use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence as DecoderSequence;
use tokenizers::models::bpe::BPE;
use tokenizers::normalizers::{Prepend, Replace, Sequence as NormalizerSequence};
use tokenizers::{DecoderWrapper, NormalizerWrapper, Tokenizer};

/// The piece SentencePiece writes for a space.
const SPACE: &str = "\u{2581}";

impl Vocab {
    /// Builds a SentencePiece-style tokenizer from `tokenizer.ggml.tokens`, `.scores` and `.token_type`.
    pub(super) fn from_gguf_spm(g: &GgufFile) -> Result<Vocab, LoadError> {
        let tokens = g.get_string_array("tokenizer.ggml.tokens")?;
        let scores = g
            .get_f32_array("tokenizer.ggml.scores")
            .ok_or_else(|| LoadError::MissingKey("tokenizer.ggml.scores".into()))?;
        if scores.len() != tokens.len() {
            return Err(LoadError::Tokenizer(format!(
                "tokenizer.ggml.scores has {} entries for {} tokens",
                scores.len(),
                tokens.len()
            )));
        }
        let types = token_types(g);
        let vocab = vocab_of(&tokens);
        let merges = merges(&tokens, &scores, &vocab);
        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            .byte_fallback(true)
            .unk_token(unk_token(g, &tokens))
            .build()
            .map_err(|e| LoadError::Tokenizer(format!("building the SentencePiece merges: {e}")))?;
        let mut tokenizer = Tokenizer::new(bpe);
        let mut normalizers = vec![];
        if g.metadata("tokenizer.ggml.add_space_prefix")
            .is_some_and(|v| matches!(v, candle_core::quantized::gguf_file::Value::Bool(true)))
        {
            normalizers.push(NormalizerWrapper::Prepend(Prepend::new(SPACE.into())));
        }
        let replace = Replace::new(" ", SPACE)
            .map_err(|e| LoadError::Tokenizer(format!("building the normalizer: {e}")))?;
        normalizers.push(NormalizerWrapper::Replace(replace));
        tokenizer.with_normalizer(Some(NormalizerSequence::new(normalizers)));
        let to_space = Replace::new(SPACE, " ")
            .map_err(|e| LoadError::Tokenizer(format!("building the decoder: {e}")))?;
        tokenizer.with_decoder(Some(DecoderSequence::new(vec![
            DecoderWrapper::Replace(to_space),
            DecoderWrapper::ByteFallback(ByteFallback::new()),
            DecoderWrapper::Fuse(Fuse::new()),
        ])));

        add_marked_tokens(&mut tokenizer, &tokens, &types);
        let pieces = pieces(&tokens, &types, sentencepiece_bytes);
        Ok(Self::finish(tokenizer, pieces, g))
    }
}

/// Every split of every piece into two pieces of the vocabulary, best-scoring merged piece first (ties:
/// the lower id first); the splits of one piece in order of their left part's length.
fn merges(
    tokens: &[String],
    scores: &[f32],
    vocab: &tokenizers::models::bpe::Vocab,
) -> Vec<(String, String)> {
    let mut order: Vec<usize> = (0..tokens.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let mut out = Vec::new();
    for id in order {
        let t = &tokens[id];
        if vocab.get(t.as_str()) != Some(&(id as u32)) {
            continue; // a duplicate string: the first id owns it
        }
        for (i, _) in t.char_indices().skip(1) {
            let (l, r) = t.split_at(i);
            if vocab.contains_key(l) && vocab.contains_key(r) {
                out.push((l.to_string(), r.to_string()));
            }
        }
    }
    out
}

/// The unknown token's text: `tokenizer.ggml.unknown_token_id`, else `<unk>`.
fn unk_token(g: &GgufFile, tokens: &[String]) -> String {
    g.get_u32("tokenizer.ggml.unknown_token_id")
        .and_then(|id| tokens.get(id as usize).cloned())
        .unwrap_or_else(|| "<unk>".into())
}

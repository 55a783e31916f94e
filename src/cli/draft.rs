//! `--draft` and `--draft-k`: speculative decoding, for the TUI, `trace` and `bench`.

use crate::engine::draft::{DraftSpec, DEFAULT_DRAFT_K, MAX_DRAFT_K};
use clap::Args;

#[derive(Debug, Args, Clone, Default)]
pub struct DraftArgs {
    /// Speculative decoding: a cheap draft proposes tokens and the model checks them all in one pass.
    /// q2_k, q4_0 or q8_0 (the model re-quantised at load), layers:N (its first N layers and its
    /// output head: early exit), or another GGUF with the same vocabulary (a path, or a name `fetch`
    /// knows).
    #[arg(long, value_name = "q2_k|q4_0|q8_0|layers:N|PATH", value_parser = draft_spec)]
    pub draft: Option<String>,
    /// Tokens the draft proposes per round, 1 to 16 [default: 4].
    #[arg(long, value_name = "K", value_parser = draft_k)]
    pub draft_k: Option<usize>,
}

impl DraftArgs {
    /// The draft asked for, if any.
    pub fn spec(&self) -> Option<DraftSpec> {
        self.draft.as_deref().and_then(|d| DraftSpec::parse(d).ok())
    }

    /// Tokens per round.
    pub fn k(&self) -> usize {
        self.draft_k.unwrap_or(DEFAULT_DRAFT_K)
    }
}

fn draft_spec(text: &str) -> Result<String, String> {
    DraftSpec::parse(text).map(|_| text.trim().to_string())
}

fn draft_k(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(k) if (1..=MAX_DRAFT_K).contains(&k) => Ok(k),
        _ => Err(format!("a round drafts 1 to {MAX_DRAFT_K} tokens")),
    }
}

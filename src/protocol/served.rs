//! What the screens and the trace learn about a served model (`--server`): which server, and each
//! request's times. Plain data; the client itself lives in `engine/served/`.

use serde::{Deserialize, Serialize};

/// The server a session steps, found out when it connected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServedInfo {
    /// `llama.cpp` or `vllm`.
    pub kind: String,
    /// The address given with `--server` (never the API key).
    pub url: String,
    /// The model the server runs (its name in `/v1/models`).
    pub model: String,
    /// Candidates asked for per step: the tail beyond them is unknown.
    pub top_k: usize,
    /// Where the tokenizer comes from: `server` (its `/tokenize` and `/detokenize`) or a tokenizer.json path.
    pub tokenizer: String,
}

/// One request's times: the whole round trip as the client saw it (network included), and the
/// server's own prompt and generation times where it reports them (llama.cpp's `timings`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServedTiming {
    pub request_ms: f64,
    pub prompt_ms: Option<f64>,
    pub predicted_ms: Option<f64>,
    /// Prompt tokens the server computed (the rest came from its own prompt cache).
    pub prompt_n: Option<usize>,
    /// Prompt tokens the server reused from its cache.
    pub cache_n: Option<usize>,
}

//! A model served by llama.cpp's server or vLLM (`--server URL`): which server it is (found out when
//! connecting), one step as one request with the path sent as token ids, and the server's own
//! tokenizer. The `Backend` (`engine/backend.rs`) puts this behind the same seam as the local model.
//!
//! - llama.cpp: `GET /props` answers; a step is `POST /completion` with `n_probs` (ids, bytes and
//!   log-probabilities over the whole vocabulary, before sampling) and reports `timings`.
//! - vLLM: `GET /version` answers and `/v1/models` lists models `owned_by: vllm`; a step is the
//!   OpenAI-style `POST /v1/completions` with `logprobs: K` (at most 20) and
//!   `return_tokens_as_token_ids`.
//!
//! Both are asked at temperature 0 for one token; the sampling itself runs here, on the top K.

pub mod http;
mod open;
pub mod reply;

pub use open::open_served_session;

pub use http::ServedError;
pub use reply::{Scored, TopK};

use http::Http;
use serde_json::{json, Value};
use std::time::Duration;

/// Candidates asked for per step (vLLM's default cap on `logprobs`).
pub const SERVED_TOP_K: usize = 20;

/// How to reach the server.
#[derive(Clone)]
pub struct ServedOptions {
    pub url: String,
    /// Sent as `Authorization: Bearer ...`; never printed.
    pub api_key: Option<String>,
    /// `--server-model`: needed when the server holds several models.
    pub model: Option<String>,
    pub timeout: Duration,
}

impl std::fmt::Debug for ServedOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedOptions")
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .finish()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    LlamaCpp,
    Vllm,
}

impl ServerKind {
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::LlamaCpp => "llama.cpp",
            ServerKind::Vllm => "vllm",
        }
    }
}

/// A connected server: its kind, the model it runs and what it told about it.
#[derive(Debug)]
pub struct Client {
    http: Http,
    pub kind: ServerKind,
    pub model: String,
    /// Vocabulary size (llama.cpp's `/v1/models` meta; for vLLM, probed through `/detokenize`).
    pub n_vocab: usize,
    /// The context the server gives one request.
    pub n_ctx: usize,
    /// The chat template the server reports (llama.cpp's `/props`), if any.
    pub chat_template: Option<String>,
}

impl Client {
    /// Connects and finds out which server this is. One `GET /props` (llama.cpp), else `GET /version`
    /// with `/v1/models` (vLLM); anything else is a clear error.
    pub fn connect(opts: &ServedOptions) -> Result<Client, ServedError> {
        let http = Http::new(&opts.url, opts.api_key.clone(), opts.timeout)?;
        match http.get("/props") {
            Ok((props, _)) if props.get("default_generation_settings").is_some() => {
                return Self::llama_cpp(http, &props, opts)
            }
            Err(e @ (ServedError::Unreachable { .. } | ServedError::Timeout { .. })) => {
                return Err(e)
            }
            Err(ServedError::Status { status: 401, .. }) => return Err(unauthorised(&http)),
            Err(ServedError::Status {
                status: 503, body, ..
            }) => {
                return Err(ServedError::Refused(format!(
                    "the server at {} is not ready yet ({body}): it may still be loading its model; try again in a moment",
                    http.base()
                )))
            }
            _ => {}
        }
        match http.get("/version") {
            Ok(_) => Self::vllm(http, opts),
            Err(ServedError::Status { status: 401, .. }) => Err(unauthorised(&http)),
            Err(e @ (ServedError::Unreachable { .. } | ServedError::Timeout { .. })) => Err(e),
            Err(_) => Err(ServedError::Refused(format!(
                "the server at {} is neither llama.cpp's server (no /props) nor vLLM (no /version): nexttoken steps those two",
                http.base()
            ))),
        }
    }

    fn llama_cpp(http: Http, props: &Value, opts: &ServedOptions) -> Result<Client, ServedError> {
        let (models, _) = http.get("/v1/models")?;
        let (model, entry) = pick_model(&models, opts.model.as_deref(), http.base())?;
        let n_vocab = entry
            .pointer("/meta/n_vocab")
            .and_then(Value::as_u64)
            .ok_or_else(|| malformed("/v1/models", "no meta.n_vocab"))?;
        let n_ctx = props
            .pointer("/default_generation_settings/n_ctx")
            .and_then(Value::as_u64)
            .ok_or_else(|| malformed("/props", "no default_generation_settings.n_ctx"))?;
        let chat_template = props
            .get("chat_template")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        Ok(Client {
            http,
            kind: ServerKind::LlamaCpp,
            model,
            n_vocab: n_vocab as usize,
            n_ctx: n_ctx as usize,
            chat_template,
        })
    }

    fn vllm(http: Http, opts: &ServedOptions) -> Result<Client, ServedError> {
        let (models, _) = http.get("/v1/models")?;
        let (model, entry) = pick_model(&models, opts.model.as_deref(), http.base())?;
        if entry.get("owned_by").and_then(Value::as_str) != Some("vllm") {
            return Err(ServedError::Refused(format!(
                "the server at {} answers /version but its models are not owned_by vllm: nexttoken steps llama.cpp's server and vLLM",
                http.base()
            )));
        }
        let n_ctx = entry
            .get("max_model_len")
            .and_then(Value::as_u64)
            .ok_or_else(|| malformed("/v1/models", "no max_model_len"))?;
        let mut client = Client {
            http,
            kind: ServerKind::Vllm,
            model,
            n_vocab: 0,
            n_ctx: n_ctx as usize,
            chat_template: None,
        };
        client.n_vocab = client.probe_vocab()?;
        Ok(client)
    }

    /// vLLM does not report its vocabulary size: the first id `/detokenize` refuses, found by bisection
    /// (about 20 requests, once).
    fn probe_vocab(&self) -> Result<usize, ServedError> {
        let known = |id: u32| match self.detokenize(&[id]) {
            Ok(_) => Ok(true),
            Err(ServedError::Status { .. }) => Ok(false),
            Err(e) => Err(e),
        };
        if !known(0)? {
            return Err(malformed("/detokenize", "token 0 is refused"));
        }
        let (mut lo, mut hi) = (0u32, 1u32 << 22);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if known(mid)? {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(hi as usize)
    }

    pub fn base(&self) -> &str {
        self.http.base()
    }

    /// One step: the top `k` next tokens after `ids` with their log-probabilities over the whole
    /// vocabulary, asked for greedily (temperature 0, one token) and the prompt sent as ids.
    pub fn top_k(&self, ids: &[u32], k: usize) -> Result<TopK, ServedError> {
        match self.kind {
            ServerKind::LlamaCpp => {
                let body = json!({
                    "prompt": ids, "n_predict": 1, "n_probs": k, "temperature": 0,
                    "cache_prompt": true, "post_sampling_probs": false,
                });
                let (v, ms) = self.http.post("/completion", &body)?;
                reply::llama_cpp_top_k(&v, ms)
            }
            ServerKind::Vllm => {
                let body = json!({
                    "model": self.model, "prompt": ids, "max_tokens": 1, "temperature": 0,
                    "logprobs": k.min(20), "return_tokens_as_token_ids": true,
                });
                let (v, ms) = self.http.post("/v1/completions", &body)?;
                reply::openai_top_k(&v, ms)
            }
        }
    }

    /// The server's own tokenisation of `text` (special tokens written in it read as such; BOS added
    /// when the model's tokenizer adds it), with each token's bytes when the server sends them.
    pub fn tokenize(
        &self,
        text: &str,
        add_special: bool,
    ) -> Result<Vec<reply::Piece>, ServedError> {
        match self.kind {
            ServerKind::LlamaCpp => {
                let body = json!({
                    "content": text, "add_special": add_special, "parse_special": true,
                    "with_pieces": true,
                });
                let (v, _) = self.http.post("/tokenize", &body)?;
                reply::llama_cpp_tokens(&v)
            }
            ServerKind::Vllm => {
                let body = json!({
                    "model": self.model, "prompt": text, "add_special_tokens": add_special,
                });
                let (v, _) = self.http.post("/tokenize", &body)?;
                Ok(reply::plain_tokens(&v, "/tokenize")?
                    .into_iter()
                    .map(|id| (id, None))
                    .collect())
            }
        }
    }

    /// The server's text for `ids`.
    pub fn detokenize(&self, ids: &[u32]) -> Result<String, ServedError> {
        let (body, field) = match self.kind {
            ServerKind::LlamaCpp => (json!({ "tokens": ids }), "content"),
            ServerKind::Vllm => (json!({ "model": self.model, "tokens": ids }), "prompt"),
        };
        let (v, _) = self.http.post("/detokenize", &body)?;
        v.get(field)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| malformed("/detokenize", format!("no `{field}` text")))
    }
}

fn malformed(path: &str, why: impl Into<String>) -> ServedError {
    ServedError::Malformed {
        path: path.into(),
        why: why.into(),
    }
}

fn unauthorised(http: &Http) -> ServedError {
    ServedError::Refused(format!(
        "the server at {} refused the API key (HTTP 401): set NEXTTOKEN_API_KEY (or --api-key) to the key it was started with",
        http.base()
    ))
}

/// The model to step: the one named by `--server-model`, or the only one the server holds.
fn pick_model<'a>(
    models: &'a Value,
    wanted: Option<&str>,
    base: &str,
) -> Result<(String, &'a Value), ServedError> {
    let data = models
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("/v1/models", "no data list"))?;
    let named: Vec<(&str, &Value)> = data
        .iter()
        .filter_map(|m| Some((m.get("id")?.as_str()?, m)))
        .collect();
    let names = || {
        named
            .iter()
            .map(|(n, _)| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (wanted, named.as_slice()) {
        (_, []) => Err(ServedError::Refused(format!(
            "the server at {base} lists no model in /v1/models: start it with a model loaded"
        ))),
        (None, [(name, entry)]) => Ok((name.to_string(), entry)),
        (None, _) => Err(ServedError::Refused(format!(
            "the server at {base} holds several models ({}): pick one with --server-model NAME",
            names()
        ))),
        (Some(w), _) => match named.iter().find(|(n, _)| *n == w) {
            Some((n, entry)) => Ok((n.to_string(), entry)),
            None => Err(ServedError::Refused(format!(
                "the server at {base} has no model `{w}` (--server-model); it holds {}",
                names()
            ))),
        },
    }
}

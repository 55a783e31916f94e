//! Reading the servers' answers: a step's top-K log-probabilities (llama.cpp's `/completion` or the
//! OpenAI-style `/v1/completions` of vLLM) and the token lists of `/tokenize`. Anything not shaped as
//! expected is a `Malformed` error naming the field, never a guess.

use super::http::ServedError;
use crate::protocol::ServedTiming;
use serde_json::Value;

/// One candidate the server reported: its id, its log-probability over the whole vocabulary, and its
/// bytes when the server sent them (llama.cpp does; vLLM's ids-only answer does not).
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub id: u32,
    pub logprob: f32,
    pub bytes: Option<Vec<u8>>,
}

/// A token the server's tokenizer produced, with its bytes when the server sent them.
pub type Piece = (u32, Option<Vec<u8>>);

/// What one step's request returned: the top candidates, best first, and the server's own timings.
#[derive(Debug, Clone, PartialEq)]
pub struct TopK {
    pub candidates: Vec<Scored>,
    pub timing: ServedTiming,
}

fn malformed(path: &str, why: impl Into<String>) -> ServedError {
    ServedError::Malformed {
        path: path.into(),
        why: why.into(),
    }
}

fn as_id(v: &Value) -> Option<u32> {
    v.as_u64().and_then(|n| u32::try_from(n).ok())
}

/// A log-probability: a number, or -inf written as null (llama.cpp writes log(0) so), never above 0.
fn as_logprob(v: &Value) -> Option<f32> {
    match v {
        Value::Null => Some(f32::NEG_INFINITY),
        v => v.as_f64().map(|x| (x as f32).min(0.0)),
    }
}

fn sort_best_first(c: &mut [Scored]) {
    c.sort_by(|a, b| b.logprob.total_cmp(&a.logprob).then(a.id.cmp(&b.id)));
}

/// llama.cpp's `/completion` answer with `n_probs`: `completion_probabilities[0].top_logprobs` holds
/// `{id, token, bytes, logprob}`; `timings` its prompt and generation times.
pub fn llama_cpp_top_k(v: &Value, request_ms: f64) -> Result<TopK, ServedError> {
    const P: &str = "/completion";
    let first = v
        .get("completion_probabilities")
        .and_then(|c| c.get(0))
        .ok_or_else(|| malformed(P, "no completion_probabilities[0]"))?;
    let top = first
        .get("top_logprobs")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(P, "no top_logprobs list"))?;
    let mut candidates = top
        .iter()
        .map(|c| {
            let id = c.get("id").and_then(as_id);
            let logprob = c.get("logprob").and_then(as_logprob);
            let bytes = c.get("bytes").and_then(Value::as_array).map(|b| {
                b.iter()
                    .filter_map(|x| x.as_u64().and_then(|x| u8::try_from(x).ok()))
                    .collect()
            });
            match (id, logprob) {
                (Some(id), Some(logprob)) => Ok(Scored { id, logprob, bytes }),
                _ => Err(malformed(P, "a top_logprobs entry lacks its id or logprob")),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    if candidates.is_empty() {
        return Err(malformed(P, "top_logprobs is empty"));
    }
    sort_best_first(&mut candidates);
    let t = v.get("timings");
    let num = |k: &str| t.and_then(|t| t.get(k)).and_then(Value::as_f64);
    Ok(TopK {
        candidates,
        timing: ServedTiming {
            request_ms,
            prompt_ms: num("prompt_ms"),
            predicted_ms: num("predicted_ms"),
            prompt_n: num("prompt_n").map(|n| n as usize),
            cache_n: num("cache_n").map(|n| n as usize),
        },
    })
}

/// vLLM's `/v1/completions` answer with `logprobs: K` and `return_tokens_as_token_ids`:
/// `choices[0].logprobs.top_logprobs[0]` maps `"token_id:ID"` to a log-probability.
pub fn openai_top_k(v: &Value, request_ms: f64) -> Result<TopK, ServedError> {
    const P: &str = "/v1/completions";
    let top = v
        .pointer("/choices/0/logprobs/top_logprobs/0")
        .and_then(Value::as_object)
        .ok_or_else(|| malformed(P, "no choices[0].logprobs.top_logprobs[0]"))?;
    let mut candidates = top
        .iter()
        .map(|(k, lp)| {
            let id = k
                .strip_prefix("token_id:")
                .and_then(|n| n.parse::<u32>().ok())
                .ok_or_else(|| {
                    malformed(P, format!("candidate `{k}` is not `token_id:N` (the server ignored return_tokens_as_token_ids)"))
                })?;
            let logprob =
                as_logprob(lp).ok_or_else(|| malformed(P, format!("candidate `{k}` has no number")))?;
            Ok(Scored {
                id,
                logprob,
                bytes: None,
            })
        })
        .collect::<Result<Vec<_>, ServedError>>()?;
    if candidates.is_empty() {
        return Err(malformed(P, "top_logprobs[0] is empty"));
    }
    sort_best_first(&mut candidates);
    Ok(TopK {
        candidates,
        timing: ServedTiming {
            request_ms,
            ..ServedTiming::default()
        },
    })
}

/// llama.cpp's `/tokenize` with `with_pieces`: `tokens` is `[{id, piece}]`, a piece a string or, when
/// it is not valid UTF-8, a list of bytes. Plain ids are accepted too.
pub fn llama_cpp_tokens(v: &Value) -> Result<Vec<Piece>, ServedError> {
    const P: &str = "/tokenize";
    let list = v
        .get("tokens")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(P, "no tokens list"))?;
    list.iter()
        .map(|t| {
            if let Some(id) = as_id(t) {
                return Ok((id, None));
            }
            let id = t
                .get("id")
                .and_then(as_id)
                .ok_or_else(|| malformed(P, "a token has no id"))?;
            let piece = match t.get("piece") {
                Some(Value::String(s)) => Some(s.as_bytes().to_vec()),
                Some(Value::Array(b)) => Some(
                    b.iter()
                        .filter_map(|x| x.as_u64().and_then(|x| u8::try_from(x).ok()))
                        .collect(),
                ),
                _ => None,
            };
            Ok((id, piece))
        })
        .collect()
}

/// vLLM's `/tokenize`: `tokens` is a list of ids.
pub fn plain_tokens(v: &Value, path: &str) -> Result<Vec<u32>, ServedError> {
    v.get("tokens")
        .and_then(Value::as_array)
        .and_then(|l| l.iter().map(as_id).collect::<Option<Vec<_>>>())
        .ok_or_else(|| malformed(path, "no list of token ids in `tokens`"))
}

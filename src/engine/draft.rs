//! The draft of speculative decoding: a cheaper model that guesses the next few tokens one by one, so
//! that the real model can check them all in one pass (`session/speculate.rs`).
//!
//! Three kinds, each with the target's vocabulary:
//! - the target's own file re-quantised at load (`q2_k`, `q4_0`, `q8_0`, …), as `--requant-b` does;
//! - `layers:N`: the target's first N layers, then its final norm and output head (early exit: the
//!   logit lens after layer N made into a draft), read from the target's own weights in memory;
//! - another GGUF file (a path, or a name `fetch` knows), refused unless its vocabulary is the target's.

use super::forward::linear::MatmulPath;
use super::forward::model::{ForwardOptions, Model};
use super::forward::quant::decode_plan::with_small_rows_threads;
use super::gguf::{GgufFile, LoadError};
use super::requant::Requant;
use super::sampler::{self, DryBreakers};
use crate::protocol::SamplerSettings;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Drafted tokens per round, at most.
pub const MAX_DRAFT_K: usize = 16;
/// Drafted tokens per round unless asked otherwise.
pub const DEFAULT_DRAFT_K: usize = 4;

/// Which draft: parsed from `--draft` or a lesson's `draft =`.
#[derive(Debug, Clone, PartialEq)]
pub enum DraftSpec {
    Requant(Requant),
    Layers(usize),
    File(PathBuf),
}

impl DraftSpec {
    /// `q2_k`, `q4_0`, `q8_0` (any re-quantisation `--requant-b` knows), `layers:N`, or a GGUF path or
    /// name. A name that is none of these is taken as a file and checked when it loads.
    pub fn parse(text: &str) -> Result<DraftSpec, String> {
        let text = text.trim();
        if let Some(n) = text.strip_prefix("layers:") {
            return match n.trim().parse::<usize>() {
                Ok(n) if n >= 1 => Ok(DraftSpec::Layers(n)),
                _ => Err(format!(
                    "`{text}`: layers:N takes a number of layers of at least 1 (for example layers:20)"
                )),
            };
        }
        if let Some(r) = Requant::from_name(text) {
            return Ok(DraftSpec::Requant(r));
        }
        if text.is_empty() {
            return Err(format!(
                "an empty draft: use one of {}, layers:N, or a GGUF file",
                Requant::NAMES.join(", ")
            ));
        }
        Ok(DraftSpec::File(PathBuf::from(text)))
    }

    /// What the screen and the JSON call it: `q2_k`, `layers:20`, or the file's name.
    pub fn label(&self) -> String {
        match self {
            DraftSpec::Requant(r) => r.name().to_string(),
            DraftSpec::Layers(n) => format!("layers:{n}"),
            DraftSpec::File(p) => p
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
        }
    }
}

/// One drafted token: the token and the draft's whole final distribution it was drawn from.
#[derive(Debug, Clone)]
pub struct Proposal {
    pub token: u32,
    /// The draft's final probability of `token` (1 under greedy).
    pub q: f32,
    /// The draft's final distribution, best first (`ChainOutput::kept`).
    pub dist: Vec<(u32, f32)>,
}

/// The draft's proposals for one round, and what they cost.
#[derive(Debug, Clone)]
pub struct Proposals {
    pub tokens: Vec<Proposal>,
    /// Forward passes of the draft this round (one per drafted token).
    pub passes: usize,
    /// Tokens the first of them read: 1, or more when the draft catches up on text it has not seen
    /// (the prompt, or the last round's final token too).
    pub read: usize,
    pub ms: f64,
}

pub struct Draft {
    model: Model,
    pub label: String,
    /// For a re-quantised draft: the types its matrices got (`RequantReport::summary`).
    pub detail: Option<String>,
    /// Tokens it proposes per round, unless a round asks for another number.
    pub k: usize,
    /// Tokens in the draft's KV cache.
    fed: Vec<u32>,
}

/// Salt for the draft's own draws, so that they are independent of the target's at the same position.
const DRAFT_SALT: u64 = 0xD7AF_7000_0000_0001;

impl Draft {
    /// The draft `spec` for `model`, the target loaded from the file `target`: `layers:N` runs the
    /// model's own first N layers and head, from the same memory (`Model::early_exit`); a
    /// re-quantisation or another GGUF is loaded.
    pub fn load(
        model: &Model,
        target: &Path,
        spec: &DraftSpec,
        matmul: MatmulPath,
    ) -> Result<Draft, LoadError> {
        let (model, detail) = match spec {
            DraftSpec::Requant(to) => {
                let (mut draft, report) =
                    Model::load_requantized(&mut GgufFile::open(target)?, matmul, *to)?;
                draft.start_from_plan_of(model);
                (draft, Some(report.summary(*to)))
            }
            DraftSpec::Layers(n) => {
                let all = model.config.n_layer;
                if *n >= all {
                    return Err(LoadError::Other(format!(
                        "a draft of {n} layers is the whole model ({all} layers): use layers:1 to layers:{}",
                        all - 1
                    )));
                }
                (model.early_exit(*n), None)
            }
            DraftSpec::File(path) => {
                let path = super::fetch::resolve_model(Some(path))
                    .map_err(|e| LoadError::Other(format!("the draft: {e:#}")))?;
                let (a, mut b) = (GgufFile::open(target)?, GgufFile::open(&path)?);
                let tokens = |g: &GgufFile| g.get_string_array("tokenizer.ggml.tokens");
                if tokens(&a)? != tokens(&b)? {
                    return Err(LoadError::Other(format!(
                        "the draft {} has another vocabulary than the model: a draft must propose the model's own token ids.\n  Use a re-quantisation (q2_k, q4_0, q8_0), layers:N, or a GGUF of the same family",
                        path.display()
                    )));
                }
                (Model::load(&mut b, matmul)?, None)
            }
        };
        Ok(Draft {
            model,
            label: spec.label(),
            detail,
            k: DEFAULT_DRAFT_K,
            fed: Vec::new(),
        })
    }

    /// The same draft proposing `k` tokens per round (1 to 16).
    pub fn with_k(mut self, k: usize) -> Self {
        self.k = k.clamp(1, MAX_DRAFT_K);
        self
    }

    /// Whether the draft runs `model`'s own weights from the same memory (`layers:N`).
    pub fn shares_weights_with(&self, model: &Model) -> bool {
        self.model.shares_weights(model)
    }

    /// Whether the draft's one-token passes are in a trial of their decode plans now (a draft made
    /// after the model's trial starts from its choice: `DecodePlan::for_same_shapes`).
    pub fn decode_trial_running(&self) -> bool {
        self.model.decode_trial_running()
    }

    /// The draft's layers (for a screen to say what it runs).
    pub fn n_layer(&self) -> usize {
        self.model.config.n_layer
    }

    /// Bytes of weights one draft pass reads (its speed of light).
    pub fn weight_bytes_per_token(&self) -> usize {
        self.model.weight_bytes_per_token()
    }

    /// Drafts `k` tokens after `history`, one pass each, each drawn from the draft's distribution after
    /// the sampler chain under `settings` (greedy: its argmax). The draws are seeded by `settings.seed`
    /// and the position, apart from the target's own draws. The draft re-reads only what its cache
    /// lacks.
    pub fn propose(
        &mut self,
        history: &[u32],
        k: usize,
        settings: &SamplerSettings,
        breakers: &DryBreakers,
    ) -> candle_core::Result<Proposals> {
        let start = Instant::now();
        if history.is_empty() || k == 0 {
            candle_core::bail!("a draft needs a prompt and at least one token to propose");
        }
        let common = self
            .fed
            .iter()
            .zip(history)
            .take_while(|(a, b)| a == b)
            .count()
            .min(history.len() - 1);
        self.fed.clear();
        let mut ids = history.to_vec();
        let opts = ForwardOptions::default();
        let mut logits = self.model.forward(&ids[common..], common, opts)?.logits;
        let mut tokens = Vec::with_capacity(k);
        for i in 0..k {
            let pos = ids.len();
            let u = sampler::uniform(settings.seed ^ DRAFT_SALT, pos);
            let out = with_small_rows_threads(self.model.decode_threads(), || {
                sampler::run_chain_with(&logits, &ids, settings, breakers, 1, u)
            });
            let token = out.planned;
            let q = out
                .kept
                .iter()
                .find(|(t, _)| *t == token)
                .map_or(0.0, |&(_, p)| p);
            ids.push(token);
            tokens.push(Proposal {
                token,
                q,
                dist: out.kept,
            });
            if i + 1 < k {
                logits = self.model.forward(&[token], pos, opts)?.logits;
            }
        }
        ids.pop();
        self.fed = ids;
        Ok(Proposals {
            tokens,
            passes: k,
            read: history.len() - common,
            ms: start.elapsed().as_secs_f64() * 1e3,
        })
    }
}

//! Our own llama-family forward pass (llama, Qwen 2.5, Qwen 3) on candle's quantised ops. Each call returns the logits *and* the attention
//! probabilities of the new query rows for every layer and head, which candle-transformers' model keeps to
//! itself.
//!
//! Per layer (pre-norm transformer, Touvron et al. 2023):
//!   h = x + W_o · attn(rope(W_q · rms(x)), rope(W_k · rms(x)), W_v · rms(x))
//!   y = h + W_down · (silu(W_gate · rms(h)) * W_up · rms(h))
//! with grouped-query attention (several query heads share one key/value head) and interleaved RoPE, the
//! pairing that llama.cpp-converted llama GGUF files need. Qwen 2.5 adds biases to `W_q`, `W_k`, `W_v`;
//! Qwen 3 an RMS norm on each head of q and k before RoPE (and its head size need not be
//! `n_embd / n_head`); both rotate halves (NeoX RoPE), their q/k rows not being permuted by llama.cpp.

use super::attention::{self, Heads, Rope};
use super::gguf::{Arch, GgufFile, LlamaConfig, LoadError};
use super::kv_cache::KvCache;
use super::linear::{Linear, MatmulPath};
use candle_core::{DType, Device, IndexOp, Tensor};
use std::time::Instant;

struct Layer {
    attn_norm: Tensor,
    wq: Linear,
    wk: Linear,
    wv: Linear,
    /// Qwen 2.5's q, k, v biases.
    bias: Option<[Tensor; 3]>,
    /// Qwen 3's per-head q and k norms (`[head_dim]` each).
    qk_norm: Option<[Tensor; 2]>,
    wo: Linear,
    ffn_norm: Tensor,
    w_gate: Linear,
    w_up: Linear,
    w_down: Linear,
}

/// What one forward call should return besides the last position's logits.
#[derive(Debug, Clone, Copy, Default)]
pub struct ForwardOptions {
    /// Attention rows to capture, counted from the last fed position backwards (0 = none).
    pub capture_rows: usize,
    /// Return logits for every fed position, not just the last (teacher forcing, golden tests).
    pub all_logits: bool,
    /// The logit lens: also return, for the last position, the final norm and the output head applied
    /// to every layer's residual stream (30 extra output-head products: on demand only).
    pub lens: bool,
}

/// Attention probabilities of some query rows: `data[((layer * n_head + head) * rows + r) * kv_len + col]`.
/// Row `r` is absolute query position `first_row + r`; columns are key positions `0..kv_len`.
#[derive(Debug, Clone, Default)]
pub struct AttentionRows {
    pub first_row: usize,
    pub rows: usize,
    pub kv_len: usize,
    pub data: Vec<f32>,
}

pub struct ForwardOutput {
    /// `[positions, vocab]` row-major: one row (the last position) unless `all_logits`.
    pub logits: Vec<f32>,
    pub attention: AttentionRows,
    /// With `lens`: `lens[layer]` is the logits row the last position would give if the model stopped
    /// after that layer. The last layer's row is the model's own logits.
    pub lens: Vec<Vec<f32>>,
    pub ms: f64,
}

pub struct Model {
    pub config: LlamaConfig,
    pub vocab_size: usize,
    tok_embeddings: Tensor,
    layers: Vec<Layer>,
    norm: Tensor,
    output: Linear,
    rope: Rope,
    pub cache: KvCache,
    forward_passes: u64,
}

impl Model {
    /// Loads a llama, qwen2 or qwen3 GGUF; every matrix keeps its stored quantisation.
    pub fn load(g: &mut GgufFile, path: MatmulPath) -> Result<Self, LoadError> {
        let config = LlamaConfig::from_gguf(g)?;
        let err = |e: candle_core::Error| LoadError::Other(format!("building the model: {e}"));
        let dense = |g: &mut GgufFile, name: &str| -> Result<Tensor, LoadError> {
            g.tensor(name)?.dequantize(&Device::Cpu).map_err(err)
        };
        let linear = |g: &mut GgufFile, name: &str| -> Result<Linear, LoadError> {
            Linear::new(g.tensor(name)?, path).map_err(err)
        };
        let emb_q = g.tensor("token_embd.weight")?;
        let tok_embeddings = emb_q.dequantize(&Device::Cpu).map_err(err)?;
        let vocab_size = tok_embeddings.dim(0).map_err(err)?;
        // Tied output embedding (SmolLM2) unless the file has its own output matrix.
        let output = if g.has_tensor("output.weight") {
            linear(g, "output.weight")?
        } else {
            Linear::new(emb_q, path).map_err(err)?
        };
        let mut layers = Vec::with_capacity(config.n_layer);
        for i in 0..config.n_layer {
            let p = |s: &str| format!("blk.{i}.{s}.weight");
            let b = |s: &str| format!("blk.{i}.{s}.bias");
            let bias = match config.arch {
                Arch::Qwen2 => Some([
                    dense(g, &b("attn_q"))?,
                    dense(g, &b("attn_k"))?,
                    dense(g, &b("attn_v"))?,
                ]),
                _ => None,
            };
            let qk_norm = match config.arch {
                Arch::Qwen3 => Some([dense(g, &p("attn_q_norm"))?, dense(g, &p("attn_k_norm"))?]),
                _ => None,
            };
            layers.push(Layer {
                bias,
                qk_norm,
                attn_norm: dense(g, &p("attn_norm"))?,
                wq: linear(g, &p("attn_q"))?,
                wk: linear(g, &p("attn_k"))?,
                wv: linear(g, &p("attn_v"))?,
                wo: linear(g, &p("attn_output"))?,
                ffn_norm: dense(g, &p("ffn_norm"))?,
                w_gate: linear(g, &p("ffn_gate"))?,
                w_up: linear(g, &p("ffn_up"))?,
                w_down: linear(g, &p("ffn_down"))?,
            });
        }
        let norm = dense(g, "output_norm.weight")?;
        let rope = rope_tables(&config).map_err(err)?;
        let cache = KvCache::new(
            config.n_layer,
            config.n_kv_head,
            config.head_dim,
            config.context_length,
        );
        Ok(Self {
            config,
            vocab_size,
            tok_embeddings,
            layers,
            norm,
            output,
            rope,
            cache,
            forward_passes: 0,
        })
    }

    pub fn forward_passes(&self) -> u64 {
        self.forward_passes
    }

    /// Feeds `tokens` at positions `index_pos..`, appending their keys and values to the cache (which must
    /// hold exactly `index_pos` positions).
    pub fn forward(
        &mut self,
        tokens: &[u32],
        index_pos: usize,
        opts: ForwardOptions,
    ) -> candle_core::Result<ForwardOutput> {
        let start = Instant::now();
        let seq = tokens.len();
        if seq == 0 {
            candle_core::bail!("forward needs at least one token");
        }
        if index_pos + seq > self.config.context_length {
            candle_core::bail!(
                "{} positions exceed the model's context length {}",
                index_pos + seq,
                self.config.context_length
            );
        }
        self.cache.truncate(index_pos);
        if self.cache.len() != index_pos {
            candle_core::bail!(
                "KV cache holds {} positions, expected {index_pos}",
                self.cache.len()
            );
        }
        let capture = opts.capture_rows.min(seq);
        let kv_len = index_pos + seq;
        let mut attention = AttentionRows {
            first_row: kv_len - capture,
            rows: capture,
            kv_len,
            data: Vec::new(),
        };
        if capture > 0 {
            attention
                .data
                .reserve(self.layers.len() * self.config.n_head * capture * kv_len);
        }
        let mut lens = Vec::new();
        let ids = Tensor::new(tokens, &Device::Cpu)?;
        let mut xs = self.tok_embeddings.index_select(&ids, 0)?; // [seq, n_embd]
        for li in 0..self.layers.len() {
            let h = self.attention(li, &xs, index_pos, capture, &mut attention.data)?;
            let xs_mid = (h + &xs)?;
            let layer = &self.layers[li];
            let x = candle_nn::ops::rms_norm(&xs_mid, &layer.ffn_norm, self.config.rms_eps)?;
            let gate = candle_nn::ops::silu(&layer.w_gate.forward(&x)?)?;
            let up = layer.w_up.forward(&x)?;
            let y = layer.w_down.forward(&(gate * up)?)?;
            xs = (y + xs_mid)?;
            if opts.lens {
                lens.push(self.head(&xs.i(seq - 1..seq)?)?);
            }
        }
        self.cache.set_len(kv_len);
        let xs = candle_nn::ops::rms_norm(&xs, &self.norm, self.config.rms_eps)?;
        let xs = if opts.all_logits {
            xs
        } else {
            xs.i(seq - 1..seq)?
        };
        let logits = self.output.forward(&xs)?.flatten_all()?.to_vec1::<f32>()?;
        self.forward_passes += 1;
        Ok(ForwardOutput {
            logits,
            attention,
            lens,
            ms: start.elapsed().as_secs_f64() * 1e3,
        })
    }

    /// The final norm and the output head on residual rows: the logits they would give.
    fn head(&self, xs: &Tensor) -> candle_core::Result<Vec<f32>> {
        let x = candle_nn::ops::rms_norm(xs, &self.norm, self.config.rms_eps)?;
        self.output.forward(&x)?.flatten_all()?.to_vec1::<f32>()
    }

    /// One layer's attention block on `xs` (`[seq, n_embd]`), returning `W_o · attn` (`[seq, n_embd]`).
    /// The attention itself is `attention::attend`: per query row, in a fixed order (see there).
    fn attention(
        &mut self,
        li: usize,
        xs: &Tensor,
        index_pos: usize,
        capture: usize,
        captured: &mut Vec<f32>,
    ) -> candle_core::Result<Tensor> {
        let c = &self.config;
        let heads = Heads {
            n_head: c.n_head,
            n_kv_head: c.n_kv_head,
            head_dim: c.head_dim,
        };
        let hd = c.head_dim;
        let seq = xs.dim(0)?;
        let layer = &self.layers[li];
        let x = candle_nn::ops::rms_norm(xs, &layer.attn_norm, c.rms_eps)?;
        let rows = |t: Tensor| t.flatten_all()?.to_vec1::<f32>();
        // `[seq][heads * head_dim]`: each row is one position, heads side by side, as the cache stores them.
        let (mut q, mut k, mut v) = (
            layer.wq.forward(&x)?,
            layer.wk.forward(&x)?,
            layer.wv.forward(&x)?,
        );
        if let Some([bq, bk, bv]) = &layer.bias {
            q = q.broadcast_add(bq)?;
            k = k.broadcast_add(bk)?;
            v = v.broadcast_add(bv)?;
        }
        if let Some([nq, nk]) = &layer.qk_norm {
            // One row per (position, head): the norm sees each head's `head_dim` values alone.
            let per_head = |t: Tensor, n: &Tensor, heads: usize| {
                candle_nn::ops::rms_norm(&t.reshape((seq * heads, hd))?, n, c.rms_eps)?
                    .reshape((seq, heads * hd))
            };
            q = per_head(q, nq, c.n_head)?;
            k = per_head(k, nk, c.n_kv_head)?;
        }
        let (mut q, mut k, v) = (rows(q)?, rows(k)?, rows(v)?);
        self.rope.apply(&mut q, hd, c.n_head * hd, index_pos);
        self.rope.apply(&mut k, hd, c.n_kv_head * hd, index_pos);
        let kv = self.cache.append(li, index_pos, &k, &v)?;
        let y = attention::attend(&q, &kv, heads, index_pos, capture, captured);
        layer
            .wo
            .forward(&Tensor::from_vec(y, (seq, c.n_head * hd), &Device::Cpu)?)
    }
}

/// RoPE angle tables for every position the model's context allows: theta_i = base^(-2i/d).
/// Kept as candle computes them (`powf`, then `pos * theta` and `cos`/`sin` in f32), as
/// candle-transformers' `quantized_llama` and `quantized_qwen2` do (`powf` in f32) and its
/// `quantized_qwen3` (`powf` in f64, rounded to f32).
fn rope_tables(c: &LlamaConfig) -> candle_core::Result<Rope> {
    let d = c.rope_dim;
    let theta: Vec<f32> = (0..d)
        .step_by(2)
        .map(|i| match c.arch {
            Arch::Qwen3 => 1f32 / (c.rope_base as f64).powf(i as f64 / d as f64) as f32,
            _ => 1f32 / c.rope_base.powf(i as f32 / d as f32),
        })
        .collect();
    let theta = Tensor::new(theta.as_slice(), &Device::Cpu)?;
    let pos = Tensor::arange(0, c.context_length as u32, &Device::Cpu)?.to_dtype(DType::F32)?;
    let angles = pos
        .reshape((c.context_length, 1))?
        .matmul(&theta.reshape((1, d / 2))?)?;
    let table = |t: Tensor| t.flatten_all()?.to_vec1::<f32>();
    Ok(Rope::new(
        table(angles.cos()?)?,
        table(angles.sin()?)?,
        d,
        c.arch.neox_rope(),
    ))
}

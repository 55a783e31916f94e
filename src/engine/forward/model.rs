//! Our own forward pass for the llama family (llama, Qwen 2.5, Qwen 3, Gemma 3) on candle's quantised
//! ops. Each call returns the logits *and* the attention probabilities of the new query rows for every
//! layer and head, which candle-transformers' models keep to themselves.
//!
//! Per layer (pre-norm transformer, Touvron et al. 2023):
//!   h = x + W_o · attn(rope(W_q · rms(x)), rope(W_k · rms(x)), W_v · rms(x))
//!   y = h + W_down · (silu(W_gate · rms(h)) * W_up · rms(h))
//! with grouped-query attention (several query heads share one key/value head) and interleaved RoPE, the
//! pairing that llama.cpp-converted llama GGUF files need. Qwen 2.5 adds biases to `W_q`, `W_k`, `W_v`;
//! Qwen 3 an RMS norm on each head of q and k before RoPE (and its head size need not be
//! `n_embd / n_head`); both rotate halves (NeoX RoPE), their q/k rows not being permuted by llama.cpp.
//! Gemma 3 scales the embeddings by √dim, norms q and k per head as Qwen 3 does, norms each branch's
//! output too (`block.rs`), gates with GELU, and alternates five sliding-window layers (a window of 512
//! keys, RoPE base 10⁴) with one global layer (RoPE base 10⁶).

use super::attention::{self, Heads, Rope};
use super::block::{Block, WeightMap};
use super::kv_cache::{KvCache, KvPrecision, Stored};
use super::linear::MatmulPath;
use super::quant::RunThen;
use super::rows;
use super::spare_rows::SpareRows;
use super::weights::{self, Weights};
use crate::engine::forward::prefetch::with_weights_ahead;
use crate::engine::forward::quant::decode_plan::{with_small_rows_threads, DecodePlan};
use crate::engine::gguf::{Arch, GgufFile, LlamaConfig, LoadError};
use crate::engine::requant::{requantize, Requant, RequantReport};
use crate::engine::sampler::{block_maxima, MAXIMA_BLOCK};
use candle_core::Device;
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub use super::pass::{AttentionRows, ForwardOptions, ForwardOutput};

mod variants;

pub struct Model {
    pub config: LlamaConfig,
    pub vocab_size: usize,
    /// Shared with an early-exit draft, which runs the first `config.n_layer` of its layers.
    weights: Arc<Weights>,
    /// The global layers' RoPE, and the sliding-window layers' (their own base) when there are any.
    rope: Rope,
    rope_local: Option<Rope>,
    pub cache: KvCache,
    pub(crate) forward_passes: u64,
    /// How many threads a one-token pass's matmuls use, from timing those passes.
    decode: DecodePlan,
    /// Logits rows written before, for the output head to write into (`spare_rows.rs`).
    spare: SpareRows,
}

impl Model {
    /// Bytes of weights a one-token pass reads: every block's matrices and the output head (the
    /// embedding lookup reads one row, and the norms are a few KB: neither is counted).
    pub fn weight_bytes_per_token(&self) -> usize {
        self.layers().iter().map(Block::weight_bytes).sum::<usize>()
            + self.weights.output.weight_bytes()
    }

    /// The blocks this model runs: all of the file's, or an early exit's first `config.n_layer`.
    fn layers(&self) -> &[Block] {
        &self.weights.layers[..self.config.n_layer]
    }

    /// Bytes of KV cache a one-token pass at position `pos` reads: every earlier key and value.
    pub fn kv_bytes_at(&self, pos: usize) -> usize {
        self.cache.bytes_at(pos)
    }

    /// Stores keys and values as `precision`'s elements (`F16`: half the bytes, one more rounding),
    /// the cache emptied: for a model before its first pass (a session sets it as it opens).
    pub fn set_kv_precision(&mut self, precision: KvPrecision) {
        self.cache.set_precision(precision);
    }

    /// Loads a llama, qwen2, qwen3 or gemma3 GGUF; every matrix keeps its stored quantisation.
    pub fn load(g: &mut GgufFile, path: MatmulPath) -> Result<Self, LoadError> {
        Self::load_with(g, path, None)
    }

    /// Loads the file with every weight matrix re-quantised to `to` (the embedding lookup excepted: it
    /// is a table read, not a matmul). The report says which types the matrices got.
    pub fn load_requantized(
        g: &mut GgufFile,
        path: MatmulPath,
        to: Requant,
    ) -> Result<(Self, RequantReport), LoadError> {
        let mut report = RequantReport::default();
        let mut map = |w: &_| requantize(w, to, &mut report).map(Some);
        let model = Self::load_with(g, path, Some(&mut map))?;
        Ok((model, report))
    }

    /// Loads the file, each weight matrix through `map` when one is given, else as stored.
    fn load_with(
        g: &mut GgufFile,
        path: MatmulPath,
        mut map: Option<&mut WeightMap>,
    ) -> Result<Self, LoadError> {
        let config = LlamaConfig::from_gguf(g)?;
        let err = |e: candle_core::Error| LoadError::Other(format!("building the model: {e}"));
        let (output, embeddings) =
            weights::head_and_embeddings(g, &config, path, map.as_deref_mut())?;
        let vocab_size = embeddings.vocab_size();
        let layers = (0..config.n_layer)
            .map(|i| Block::load(g, i, &config, path, map.as_deref_mut()))
            .collect::<Result<Vec<_>, _>>()?;
        let norm = g
            .tensor("output_norm.weight")?
            .dequantize(&Device::Cpu)
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(err)?;
        let rope = rope_tables(&config, config.rope_base);
        let rope_local = config
            .sliding_window
            .map(|_| rope_tables(&config, config.rope_base_local));
        let cache = KvCache::new(
            config.n_layer,
            config.n_kv_head,
            config.head_dim,
            config.context_length,
        );
        Ok(Self {
            config,
            vocab_size,
            weights: Arc::new(Weights {
                embeddings,
                layers,
                norm,
                output,
            }),
            rope,
            rope_local,
            cache,
            forward_passes: 0,
            decode: DecodePlan::new(crate::engine::forward::quant::threads()),
            spare: SpareRows::new(vocab_size),
        })
    }

    /// Forward passes run for text since the model was loaded: what the status bar counts. Passes that
    /// only time the machine ([`Model::uncounted`]) are left out, so a class that has seen one prompt
    /// read and eight tokens written sees 9, not the 45 the load's own measurement had added.
    pub fn forward_passes(&self) -> u64 {
        self.forward_passes
    }

    /// Runs `f`, whose passes only time the machine (the speed of light at load, the decode plan's
    /// trial, a bare pass beside a step), without counting them in [`Model::forward_passes`].
    pub fn uncounted<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let before = self.forward_passes;
        let out = f(self);
        self.forward_passes = before;
        out
    }

    /// Has `n` logits rows written and ready, and keeps up to `n` given back from now on: the next
    /// passes' output heads write into memory already faulted in (`spare_rows.rs`).
    pub fn ready_rows(&mut self, n: usize) {
        self.spare.fill(n);
    }

    /// Keeps `row`, a logits row its holder is done with, for a later pass to write into.
    pub fn recycle_row(&mut self, row: Vec<f32>) {
        self.spare.give(row);
    }

    /// Threads the one-token passes' matmuls now use (1, or all: `quant/decode_plan.rs`).
    pub fn decode_threads(&self) -> usize {
        self.decode.chosen().threads
    }

    /// Whether the one-token passes' kernels now ask for their weights ahead (`quant/decode_plan.rs`).
    pub fn decode_prefetch(&self) -> bool {
        self.decode.chosen().prefetch
    }

    /// Whether the one-token passes are in a trial of their plans now (`decode_plan.rs`).
    pub fn decode_trial_running(&self) -> bool {
        self.decode.in_trial()
    }

    /// Feeds `tokens` at positions `index_pos..`, appending their keys and values to the cache (which must
    /// hold exactly `index_pos` positions).
    pub fn forward(
        &mut self,
        tokens: &[u32],
        index_pos: usize,
        opts: ForwardOptions,
    ) -> candle_core::Result<ForwardOutput> {
        if tokens.len() != 1 {
            return self.forward_rows(tokens, index_pos, opts);
        }
        // A decode step: its matmuls run on the plan the earlier steps' timings chose (threads, prefetch).
        let plan = self.decode.next();
        let out = with_weights_ahead(plan.prefetch, || {
            with_small_rows_threads(plan.threads, || self.forward_rows(tokens, index_pos, opts))
        })?;
        self.decode.record(plan, out.ms);
        Ok(out)
    }

    fn forward_rows(
        &mut self,
        tokens: &[u32],
        index_pos: usize,
        opts: ForwardOptions,
    ) -> candle_core::Result<ForwardOutput> {
        let seq = tokens.len();
        self.begin_pass(seq, index_pos)?;
        let start = Instant::now();
        let capture = opts.capture_rows.min(seq);
        let kv_len = index_pos + seq;
        self.rope.cover(kv_len);
        if let Some(r) = &mut self.rope_local {
            r.cover(kv_len);
        }
        let mut attention = AttentionRows {
            first_row: kv_len - capture,
            rows: capture,
            kv_len,
            data: Vec::new(),
        };
        if capture > 0 {
            // Rounded up to 64 KB: one size for dozens of steps, so the heap hands a step the buffer
            // freed two steps before, already written (fresh, it cost ~11 page faults a step).
            let floats = self.layers().len() * self.config.n_head * capture * kv_len;
            attention.data.reserve(floats.next_multiple_of(16 << 10));
        }
        let mut lens = Vec::new();
        // The residual stream, `[seq][n_embd]`, and its normed copy for the next branch to read.
        let mut xs = self.weights.embeddings.rows(tokens)?;
        let mut normed = vec![0f32; xs.len()];
        let eps = self.config.rms_eps;
        rows::rms_norm(&xs, &self.layers()[0].attn_norm, eps, &mut normed);
        for li in 0..self.layers().len() {
            let mut a =
                self.attention(li, &normed, seq, index_pos, capture, &mut attention.data)?;
            let layer = &self.weights.layers[li];
            let post = layer.post_attn_norm.as_deref();
            rows::join_and_norm(&mut xs, &mut a, post, eps, &layer.ffn_norm, &mut normed);
            let mut y = layer.mlp(&normed, seq)?;
            // The next layer's attention norm, or the output norm after the last layer.
            let next = (self.layers().get(li + 1)).map_or(&self.weights.norm, |l| &l.attn_norm);
            let post = layer.post_ffn_norm.as_deref();
            rows::join_and_norm(&mut xs, &mut y, post, eps, next, &mut normed);
            if opts.lens {
                lens.push(self.head(&xs[(seq - 1) * self.config.n_embd..])?);
            }
        }
        self.cache.set_len(kv_len);
        let n_embd = self.config.n_embd;
        let (last, m) = match opts.all_logits {
            true => (&normed[..], seq),
            false => (&normed[(seq - 1) * n_embd..], 1),
        };
        let (logits, block_maxima) = self.logits_and_maxima(last, m)?;
        self.forward_passes += 1;
        Ok(ForwardOutput {
            logits,
            attention,
            lens,
            block_maxima,
            ms: start.elapsed().as_secs_f64() * 1e3,
        })
    }

    /// The output head on `m` normed rows, written into a spare row, and each block's maximum taken
    /// as each work item's run of logits is still in its core's cache (for the sampler).
    fn logits_and_maxima(
        &mut self,
        last: &[f32],
        m: usize,
    ) -> candle_core::Result<(Vec<f32>, Vec<f32>)> {
        let dst = self.spare.take(m * self.vocab_size);
        let runs = Mutex::new(Vec::new());
        let maxima = |at: usize, run: &[f32]| {
            let found = block_maxima(run);
            runs.lock()
                .expect("no item panics")
                .push((at / MAXIMA_BLOCK, found));
        };
        let then = RunThen {
            align: MAXIMA_BLOCK,
            each: &maxima,
        };
        let logits = (self.weights.output).forward_rows_then(last, m, dst, Some(&then))?;
        let mut runs = runs.into_inner().expect("no item panics");
        runs.sort_unstable_by_key(|r| r.0);
        Ok((logits, runs.into_iter().flat_map(|r| r.1).collect()))
    }

    /// Checks a pass of `seq` tokens at `index_pos` and cuts the cache back to `index_pos`; the cache's
    /// memory for the new positions is provided here, before the pass's clock starts.
    fn begin_pass(&mut self, seq: usize, index_pos: usize) -> candle_core::Result<()> {
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
        self.cache.prepare(index_pos + seq)
    }

    /// The final norm and the output head on one residual row: the logits it would give.
    fn head(&self, x: &[f32]) -> candle_core::Result<Vec<f32>> {
        let mut normed = vec![0f32; x.len()];
        rows::rms_norm(x, &self.weights.norm, self.config.rms_eps, &mut normed);
        self.weights.output.forward_rows(&normed, 1)
    }

    /// One layer's attention block on normed rows `x` (`[seq][n_embd]`), returning `W_o · attn`
    /// (`[seq][n_embd]`). The attention itself is `attention::attend`: per query row, in a fixed order
    /// (see there).
    fn attention(
        &mut self,
        li: usize,
        x: &[f32],
        seq: usize,
        index_pos: usize,
        capture: usize,
        captured: &mut Vec<f32>,
    ) -> candle_core::Result<Vec<f32>> {
        let c = &self.config;
        let heads = Heads {
            n_head: c.n_head,
            n_kv_head: c.n_kv_head,
            head_dim: c.head_dim,
            window: c.window(li),
        };
        let hd = c.head_dim;
        let layer = &self.weights.layers[li];
        // `[seq][heads * head_dim]`: each row is one position, heads side by side, as the cache stores them.
        let [mut q, mut k, v]: [Vec<f32>; 3] = layer
            .qkv
            .forward_rows(x, seq)?
            .try_into()
            .expect("q, k and v projections");
        let mut v = v;
        if let Some([bq, bk, bv]) = &layer.bias {
            for (t, b) in [(&mut q, bq), (&mut k, bk), (&mut v, bv)] {
                t.chunks_exact_mut(b.len())
                    .for_each(|row| row.iter_mut().zip(b).for_each(|(x, b)| *x += *b));
            }
        }
        if let Some([nq, nk]) = &layer.qk_norm {
            // Rows of one head: the norm sees each head's `head_dim` values alone.
            rows::rms_norm_in_place(&mut q, nq, c.rms_eps);
            rows::rms_norm_in_place(&mut k, nk, c.rms_eps);
        }
        let rope = match (heads.window, &self.rope_local) {
            (Some(_), Some(local)) => local,
            _ => &self.rope,
        };
        rope.apply(&mut q, hd, c.n_head * hd, index_pos);
        rope.apply(&mut k, hd, c.n_kv_head * hd, index_pos);
        let y = match self.cache.append(li, index_pos, &k, &v)? {
            Stored::F32(kv) => attention::attend(&q, &kv, heads, index_pos, capture, captured),
            Stored::F16(kv) => attention::attend(&q, &kv, heads, index_pos, capture, captured),
        };
        layer.wo.forward_rows(&y, seq)
    }
}

/// RoPE angle tables of base `base` for every position the model's context allows:
/// theta_i = base^(-2i/d). Kept as candle computes them (`powf`, then `pos * theta` and `cos`/`sin` in
/// f32), as candle-transformers' `quantized_llama`, `quantized_qwen2` and `quantized_gemma3` do (`powf`
/// in f32) and its `quantized_qwen3` (`powf` in f64, rounded to f32).
fn rope_tables(c: &LlamaConfig, base: f32) -> Rope {
    let d = c.rope_dim;
    let theta: Vec<f32> = (0..d)
        .step_by(2)
        .map(|i| match c.arch {
            Arch::Qwen3 => 1f32 / (base as f64).powf(i as f64 / d as f64) as f32,
            _ => 1f32 / base.powf(i as f32 / d as f32),
        })
        .collect();
    Rope::new(theta, c.arch.neox_rope())
}

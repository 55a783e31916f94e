//! One transformer block's weights, loaded by architecture, and the parts of its arithmetic that are not
//! attention: the norms and the gated MLP.
//!
//! Pre-norm (llama, Qwen):  `h = x + attn(rms(x))`, `y = h + mlp(rms(h))`.
//! Gemma 3 adds a norm on each branch's output before it joins the residual stream ("sandwich" norms):
//! `h = x + rms_post(attn(rms(x)))`, `y = h + rms_post(mlp(rms(h)))`; its MLP gates with GELU (tanh
//! approximation) where llama's uses SiLU.

use super::gguf::{Arch, GgufFile, LlamaConfig, LoadError};
use super::linear::{Linear, MatmulPath};
use candle_core::quantized::QTensor;
use candle_core::{Device, Result, Tensor};

/// What happens to each weight matrix as it is loaded: `Some` replaces it, `None` keeps it as stored.
pub type WeightMap<'a> = dyn FnMut(&QTensor) -> Result<Option<QTensor>> + 'a;

/// The MLP's gate activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `x · sigmoid(x)`: llama, Qwen.
    Silu,
    /// `0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))`: Gemma (`gelu_pytorch_tanh`).
    GeluTanh,
}

pub struct Block {
    pub attn_norm: Tensor,
    pub wq: Linear,
    pub wk: Linear,
    pub wv: Linear,
    /// Qwen 2.5's q, k, v biases.
    pub bias: Option<[Tensor; 3]>,
    /// Qwen 3's and Gemma 3's per-head q and k norms (`[head_dim]` each).
    pub qk_norm: Option<[Tensor; 2]>,
    pub wo: Linear,
    /// Gemma 3's norm on the attention output, before the residual add.
    pub post_attn_norm: Option<Tensor>,
    pub ffn_norm: Tensor,
    pub w_gate: Linear,
    pub w_up: Linear,
    pub w_down: Linear,
    /// Gemma 3's norm on the MLP output, before the residual add.
    pub post_ffn_norm: Option<Tensor>,
    pub activation: Activation,
}

impl Block {
    /// Block `i` of a file of architecture `c.arch`; every matrix goes through `map` (the identity
    /// keeps its stored quantisation; `requant` re-quantises it).
    pub fn load(
        g: &mut GgufFile,
        i: usize,
        c: &LlamaConfig,
        path: MatmulPath,
        map: &mut WeightMap,
    ) -> std::result::Result<Self, LoadError> {
        let err = |e: candle_core::Error| LoadError::Other(format!("building the model: {e}"));
        let p = |s: &str| format!("blk.{i}.{s}.weight");
        let b = |s: &str| format!("blk.{i}.{s}.bias");
        let mut dense = |name: &str| g.tensor(name)?.dequantize(&Device::Cpu).map_err(err);
        let bias = match c.arch {
            Arch::Qwen2 => Some([
                dense(&b("attn_q"))?,
                dense(&b("attn_k"))?,
                dense(&b("attn_v"))?,
            ]),
            _ => None,
        };
        let qk_norm = match c.arch {
            Arch::Qwen3 | Arch::Gemma3 => {
                Some([dense(&p("attn_q_norm"))?, dense(&p("attn_k_norm"))?])
            }
            _ => None,
        };
        let (post_attn_norm, post_ffn_norm) = match c.arch {
            Arch::Gemma3 => (
                Some(dense(&p("post_attention_norm"))?),
                Some(dense(&p("post_ffw_norm"))?),
            ),
            _ => (None, None),
        };
        let attn_norm = dense(&p("attn_norm"))?;
        let ffn_norm = dense(&p("ffn_norm"))?;
        let mut linear = |name: &str| -> std::result::Result<Linear, LoadError> {
            let w = g.tensor(name)?;
            let w = map(&w).map_err(err)?.unwrap_or(w);
            Linear::new(w, path).map_err(err)
        };
        Ok(Self {
            attn_norm,
            wq: linear(&p("attn_q"))?,
            wk: linear(&p("attn_k"))?,
            wv: linear(&p("attn_v"))?,
            bias,
            qk_norm,
            wo: linear(&p("attn_output"))?,
            post_attn_norm,
            ffn_norm,
            w_gate: linear(&p("ffn_gate"))?,
            w_up: linear(&p("ffn_up"))?,
            w_down: linear(&p("ffn_down"))?,
            post_ffn_norm,
            activation: match c.arch {
                Arch::Gemma3 => Activation::GeluTanh,
                _ => Activation::Silu,
            },
        })
    }

    /// The attention branch's output `a` joins the residual stream `x`: `x + a`, or `x + rms(a)` with
    /// a post-norm.
    pub fn join_attention(&self, x: &Tensor, a: Tensor, eps: f32) -> Result<Tensor> {
        join(x, a, self.post_attn_norm.as_ref(), eps)
    }

    /// The MLP branch on the residual stream `h`, joined to it: `h + mlp(rms(h))` (post-normed for Gemma).
    pub fn mlp(&self, h: &Tensor, eps: f32) -> Result<Tensor> {
        let x = candle_nn::ops::rms_norm(h, &self.ffn_norm, eps)?;
        let (gate, up) = (self.w_gate.forward(&x)?, self.w_up.forward(&x)?);
        let y = self
            .w_down
            .forward(&super::gate::gated(&gate, &up, self.activation)?)?;
        join(h, y, self.post_ffn_norm.as_ref(), eps)
    }
}

fn join(x: &Tensor, branch: Tensor, post_norm: Option<&Tensor>, eps: f32) -> Result<Tensor> {
    match post_norm {
        Some(w) => candle_nn::ops::rms_norm(&branch, w, eps)? + x,
        None => branch + x,
    }
}

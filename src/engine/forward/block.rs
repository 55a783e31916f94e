//! One transformer block's weights, loaded by architecture, and the parts of its arithmetic that are not
//! attention: the norms and the gated MLP.
//!
//! Pre-norm (llama, Qwen):  `h = x + attn(rms(x))`, `y = h + mlp(rms(h))`.
//! Gemma 3 adds a norm on each branch's output before it joins the residual stream ("sandwich" norms):
//! `h = x + rms_post(attn(rms(x)))`, `y = h + rms_post(mlp(rms(h)))`; its MLP gates with GELU (tanh
//! approximation) where llama's uses SiLU.

use super::linear::{Linear, MatmulPath, Stack};
use super::weights;
use crate::engine::gguf::{Arch, GgufFile, LlamaConfig, LoadError};
use candle_core::quantized::QTensor;
use candle_core::{Device, Result};

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
    pub attn_norm: Vec<f32>,
    /// `W_q`, `W_k`, `W_v`: one matmul on the fast path.
    pub qkv: Stack,
    /// Qwen 2.5's q, k, v biases.
    pub bias: Option<[Vec<f32>; 3]>,
    /// Qwen 3's and Gemma 3's per-head q and k norms (`[head_dim]` each).
    pub qk_norm: Option<[Vec<f32>; 2]>,
    pub wo: Linear,
    /// Gemma 3's norm on the attention output, before the residual add.
    pub post_attn_norm: Option<Vec<f32>>,
    pub ffn_norm: Vec<f32>,
    /// `W_gate`, `W_up`: one matmul on the fast path.
    pub gate_up: Stack,
    pub w_down: Linear,
    /// Gemma 3's norm on the MLP output, before the residual add.
    pub post_ffn_norm: Option<Vec<f32>>,
    pub activation: Activation,
}

impl Block {
    /// Block `i` of a file of architecture `c.arch`; every matrix goes through `map` when one is given
    /// (`requant` re-quantises), else keeps its stored quantisation.
    pub fn load(
        g: &mut GgufFile,
        i: usize,
        c: &LlamaConfig,
        path: MatmulPath,
        mut map: Option<&mut WeightMap>,
    ) -> std::result::Result<Self, LoadError> {
        let err = |e: candle_core::Error| LoadError::Other(format!("building the model: {e}"));
        let p = |s: &str| format!("blk.{i}.{s}.weight");
        let b = |s: &str| format!("blk.{i}.{s}.bias");
        let mut dense = |name: &str| {
            let t = g.tensor(name)?.dequantize(&Device::Cpu).map_err(err)?;
            t.flatten_all()
                .and_then(|t| t.to_vec1::<f32>())
                .map_err(err)
        };
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
        let mut linear = |name: &str| weights::linear(g, name, path, map.as_deref_mut());
        Ok(Self {
            attn_norm,
            qkv: Stack::new(vec![
                linear(&p("attn_q"))?,
                linear(&p("attn_k"))?,
                linear(&p("attn_v"))?,
            ]),
            bias,
            qk_norm,
            wo: linear(&p("attn_output"))?,
            post_attn_norm,
            ffn_norm,
            gate_up: Stack::new(vec![linear(&p("ffn_gate"))?, linear(&p("ffn_up"))?]),
            w_down: linear(&p("ffn_down"))?,
            post_ffn_norm,
            activation: match c.arch {
                Arch::Gemma3 => Activation::GeluTanh,
                _ => Activation::Silu,
            },
        })
    }

    /// The MLP branch on normed rows `x` (`[m][n_embd]`): `W_down · (act(W_gate · x) * W_up · x)`,
    /// before it joins the residual stream.
    pub fn mlp(&self, x: &[f32], m: usize) -> Result<Vec<f32>> {
        let w = self.gate_up.widths()[0];
        let mut gated = vec![0f32; m * w];
        if let Some(joined) = self.gate_up.forward_rows_joined(x, m)? {
            super::gate::gate_joined_into(&joined, w, self.activation, &mut gated);
        } else {
            let [gate, up]: [Vec<f32>; 2] = self
                .gate_up
                .forward_rows(x, m)?
                .try_into()
                .expect("a gate and an up projection");
            super::gate::gate_into(&gate, &up, self.activation, &mut gated);
        }
        self.w_down.forward_rows(&gated, m)
    }

    /// Bytes of weight data this block's matrices hold, as one pass reads them.
    pub fn weight_bytes(&self) -> usize {
        self.qkv.weight_bytes()
            + self.wo.weight_bytes()
            + self.gate_up.weight_bytes()
            + self.w_down.weight_bytes()
    }
}

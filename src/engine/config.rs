//! The model's hyper-parameters and architecture (llama, qwen2, qwen3), all read from GGUF metadata.

use super::gguf::{GgufFile, LoadError};

/// The architectures our forward runs: llama plus the two Qwen variations on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// Llama, SmolLM, TinyLlama, Mistral-style: interleaved RoPE (llama.cpp permutes q/k for it).
    Llama,
    /// Qwen 2.5: llama plus biases on q, k and v; NeoX RoPE (rotate halves).
    Qwen2,
    /// Qwen 3: llama plus a per-head RMS norm on q and k before RoPE; NeoX RoPE; head_dim from
    /// `qwen3.attention.key_length`.
    Qwen3,
}

impl Arch {
    /// The architecture `general.architecture` names, or the clear error naming the supported ones.
    pub fn from_name(name: &str) -> Result<Self, LoadError> {
        match name {
            "llama" => Ok(Self::Llama),
            "qwen2" => Ok(Self::Qwen2),
            "qwen3" => Ok(Self::Qwen3),
            other => Err(LoadError::UnsupportedArchitecture(other.into())),
        }
    }

    /// The prefix of its metadata keys (`qwen2.block_count`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::Qwen2 => "qwen2",
            Self::Qwen3 => "qwen3",
        }
    }

    /// RoPE on halves (`i, i + d/2`, NeoX style) rather than on adjacent pairs (`2i, 2i+1`).
    pub fn neox_rope(self) -> bool {
        !matches!(self, Self::Llama)
    }
}

/// Hyper-parameters of a llama-family model, all from metadata (no hidden caps).
#[derive(Debug, Clone, PartialEq)]
pub struct LlamaConfig {
    pub arch: Arch,
    pub n_layer: usize,
    pub n_head: usize,
    pub n_kv_head: usize,
    /// Per head; `n_embd / n_head` unless `{arch}.attention.key_length` says otherwise (Qwen 3).
    pub head_dim: usize,
    pub n_embd: usize,
    pub n_ff: usize,
    pub rope_dim: usize,
    pub rope_base: f32,
    pub rms_eps: f32,
    pub context_length: usize,
}

impl LlamaConfig {
    pub fn from_gguf(g: &GgufFile) -> Result<Self, LoadError> {
        let arch = Arch::from_name(&g.architecture())?;
        let key = |k: &str| format!("{}.{k}", arch.name());
        let opt = |k: &str| g.get_u32(&key(k)).map(|v| v as usize);
        let need = |k: &str| opt(k).ok_or_else(|| LoadError::MissingKey(key(k)));
        let n_embd = need("embedding_length")?;
        let n_head = need("attention.head_count")?;
        let n_kv_head = opt("attention.head_count_kv").unwrap_or(n_head);
        let shape_error = || {
            LoadError::Other(format!(
                "inconsistent attention shape: {n_embd} dims, {n_head} heads, {n_kv_head} kv heads"
            ))
        };
        if n_head == 0 || n_kv_head == 0 || n_head % n_kv_head != 0 {
            return Err(shape_error());
        }
        let head_dim = match opt("attention.key_length") {
            Some(d) => d,
            None if n_embd % n_head == 0 => n_embd / n_head,
            None => return Err(shape_error()),
        };
        if head_dim == 0 || head_dim % 2 != 0 {
            return Err(LoadError::Other(format!(
                "head size {head_dim} must be even and positive for RoPE"
            )));
        }
        if let Some(v) = opt("attention.value_length").filter(|&v| v != head_dim) {
            return Err(LoadError::Other(format!(
                "value heads of {v} dims differ from key heads of {head_dim}: not supported"
            )));
        }
        let rope_dim = opt("rope.dimension_count").unwrap_or(head_dim);
        if rope_dim != head_dim {
            return Err(LoadError::Other(format!(
                "partial RoPE ({rope_dim} of {head_dim} dims per head) is not supported"
            )));
        }
        Ok(Self {
            arch,
            n_layer: need("block_count")?,
            n_head,
            n_kv_head,
            head_dim,
            n_embd,
            n_ff: need("feed_forward_length")?,
            rope_dim,
            rope_base: g.get_f32(&key("rope.freq_base")).unwrap_or(10_000.0),
            rms_eps: g
                .get_f32(&key("attention.layer_norm_rms_epsilon"))
                .unwrap_or(1e-5),
            context_length: need("context_length")?,
        })
    }
}

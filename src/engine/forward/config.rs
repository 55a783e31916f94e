//! The model's hyper-parameters and architecture (llama, qwen2, qwen3, gemma3), all read from GGUF
//! metadata.

use crate::engine::gguf::{GgufFile, LoadError};

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
    /// Gemma 3: embeddings scaled by √dim, sandwich norms (pre and post, around attention and the MLP),
    /// q/k norms, a GELU (tanh) gate, NeoX RoPE, and local sliding-window layers (their own RoPE base)
    /// between global ones. The GGUF's norm weights already hold Gemma's `1 + w`.
    Gemma3,
}

impl Arch {
    /// The architecture `general.architecture` names, or the clear error naming the supported ones.
    pub fn from_name(name: &str) -> Result<Self, LoadError> {
        match name {
            "llama" => Ok(Self::Llama),
            "qwen2" => Ok(Self::Qwen2),
            "qwen3" => Ok(Self::Qwen3),
            "gemma3" => Ok(Self::Gemma3),
            other => Err(LoadError::UnsupportedArchitecture(other.into())),
        }
    }

    /// The prefix of its metadata keys (`qwen2.block_count`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::Qwen2 => "qwen2",
            Self::Qwen3 => "qwen3",
            Self::Gemma3 => "gemma3",
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
    /// Gemma 3's local layers: each query sees only the newest `window` keys (itself included), and
    /// every `swa_pattern`-th layer (counting from 1) is global. `None`: every layer is global.
    pub sliding_window: Option<usize>,
    pub swa_pattern: usize,
    /// The RoPE base of the sliding-window layers (`rope_base` is the global layers').
    pub rope_base_local: f32,
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
            sliding_window: match arch {
                Arch::Gemma3 => opt("attention.sliding_window").filter(|&w| w > 0),
                _ => None,
            },
            // llama.cpp and candle fix Gemma 3's pattern at 6 (five local layers, then a global one);
            // a file may say otherwise.
            swa_pattern: opt("attention.sliding_window_type")
                .filter(|&p| p > 0)
                .unwrap_or(GEMMA3_SWA_PATTERN),
            rope_base_local: g
                .get_f32(&key("rope.local_freq_base"))
                .unwrap_or(GEMMA3_LOCAL_ROPE_BASE),
        })
    }

    /// The keys layer `layer`'s queries may see, counted back from (and including) their own position:
    /// `None` for a global layer.
    pub fn window(&self, layer: usize) -> Option<usize> {
        self.sliding_window
            .filter(|_| !(layer + 1).is_multiple_of(self.swa_pattern))
    }

    /// The RoPE base of layer `layer`.
    pub fn rope_base_of(&self, layer: usize) -> f32 {
        match self.window(layer) {
            Some(_) => self.rope_base_local,
            None => self.rope_base,
        }
    }

    /// Gemma scales the token embeddings by √dim before the first layer.
    pub fn embedding_scale(&self) -> Option<f32> {
        (self.arch == Arch::Gemma3).then(|| (self.n_embd as f64).sqrt() as f32)
    }
}

/// Gemma 3's layer pattern when the file does not give one: five sliding-window layers, then a global.
const GEMMA3_SWA_PATTERN: usize = 6;
/// Gemma 3's RoPE base for the sliding-window layers when the file does not give one.
const GEMMA3_LOCAL_ROPE_BASE: f32 = 10_000.0;

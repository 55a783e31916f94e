//! Weight matrices and the matmul paths that multiply by them (exact quantised, or fast).

use candle_core::quantized::{QMatMul, QTensor};
use candle_core::{Module, Result, Tensor};

/// Which arithmetic a matmul uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MatmulPath {
    /// candle's quantised matmul: activations rounded to 8 bits, as llama.cpp does. The reference path.
    #[default]
    Exact,
    /// The fastest path available (see docs/PERFORMANCE.md); agrees with `Exact` to within rounding.
    Fast,
}

/// A weight matrix `W` of shape `[out, in]`; `forward(xs)` computes `xs @ W^T`.
pub struct Linear {
    inner: QMatMul,
    out_dim: usize,
    in_dim: usize,
}

impl Linear {
    pub fn new(w: QTensor, _path: MatmulPath) -> Result<Self> {
        let (out_dim, in_dim) = w.shape().dims2()?;
        Ok(Self {
            inner: QMatMul::from_qtensor(w)?,
            out_dim,
            in_dim,
        })
    }

    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.inner.forward(xs)
    }

    pub fn out_dim(&self) -> usize {
        self.out_dim
    }

    pub fn in_dim(&self) -> usize {
        self.in_dim
    }
}

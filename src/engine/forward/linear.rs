//! Weight matrices and the matmul paths that multiply by them (exact quantised, or fast).

use super::quant::{Isa, QMatrix, RunThen};
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{CpuStorage, CustomOp1, DType, Layout, Module, Result, Shape, Tensor};
use std::sync::Arc;

/// Which arithmetic a matmul uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MatmulPath {
    /// candle's quantised matmul: activations rounded to 8 bits, as llama.cpp does. The reference path.
    #[default]
    Exact,
    /// The fastest path: Q4_1 / Q8_0 / Q5_0 / Q4_K / Q6_K weights regrouped in tiles, SIMD kernels, all
    /// cores for prefill (`quant`). Same arithmetic in the same order as `Exact`, so the same bits (Q8_0
    /// and the K-quants need candle's AVX2 kernels to be the reference, i.e. x86 with AVX2+FMA; elsewhere
    /// they agree to rounding). Other dtypes (F32/F16, Q5_K, ...) fall back to candle's `QMatMul`.
    Fast,
}

/// A weight matrix `W` of shape `[out, in]`; `forward(xs)` computes `xs @ W^T`.
pub struct Linear {
    inner: Inner,
    out_dim: usize,
    in_dim: usize,
    /// Hand candle a lone input row twice (see `forward`).
    pad_lone_row: bool,
}

enum Inner {
    /// candle's `QMatMul`: the `Exact` path, and `Fast` for dtypes without a fast kernel
    /// (F32/F16 weights go through candle's dense matmul there).
    Candle(QMatMul),
    /// Q4_1 / Q8_0 / Q5_0 weights in tiles, with SIMD kernels (`quant`).
    Tiled(TiledOp),
}

impl Linear {
    pub fn new(w: QTensor, path: MatmulPath) -> Result<Self> {
        Self::shared(Arc::new(w), path)
    }

    /// A matrix whose weights something else holds too (a tied output head shares the embedding
    /// table); the fast path copies them into tiles, candle's path shares them.
    pub fn shared(w: Arc<QTensor>, path: MatmulPath) -> Result<Self> {
        let (out_dim, in_dim) = w.shape().dims2()?;
        let pad_lone_row = w.dtype() == GgmlDType::Q6K;
        let tiled = match path {
            MatmulPath::Fast => QMatrix::from_qtensor(&w)?,
            MatmulPath::Exact => None,
        };
        let inner = match tiled {
            Some(m) => Inner::Tiled(TiledOp {
                w: Arc::new(m),
                isa: Isa::best(),
            }),
            None => Inner::Candle(QMatMul::from_arc(w)?),
        };
        Ok(Self {
            inner,
            out_dim,
            in_dim,
            pad_lone_row,
        })
    }

    /// A matrix already in tiles (read from the file a band at a time: `weights.rs`).
    pub fn tiled(w: QMatrix) -> Self {
        Self {
            out_dim: w.out_dim(),
            in_dim: w.in_dim(),
            inner: Inner::Tiled(TiledOp {
                w: Arc::new(w),
                isa: Isa::best(),
            }),
            pad_lone_row: false,
        }
    }

    /// Forces the fast path's kernels (tests compare the SIMD kernels with the scalar ones).
    pub fn with_isa(mut self, isa: Isa) -> Self {
        if let Inner::Tiled(op) = &mut self.inner {
            op.isa = isa;
        }
        self
    }

    /// `xs @ W^T`; each output row depends on its input row alone (the KV cache relies on it).
    ///
    /// candle 0.11's `QMatMul` runs Q6_K through its tile kernels for several rows but through a per-row
    /// dot with another float order for a single one (`repack_x86::select` on x86), which would make a
    /// one-token decode differ from the same position in a prefill. So a lone row is handed to it twice
    /// and the first copy's output kept: the tile kernels' bits for every row count, which are also the
    /// fast path's.
    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        match &self.inner {
            Inner::Candle(m) if self.pad_lone_row && xs.elem_count() == self.in_dim => {
                let row = xs.reshape((1, self.in_dim))?;
                let ys = m.forward(&Tensor::cat(&[&row, &row], 0)?)?;
                let mut dims = xs.dims().to_vec();
                *dims.last_mut().expect("checked: one row of in_dim") = self.out_dim;
                ys.narrow(0, 0, 1)?.reshape(dims)
            }
            Inner::Candle(m) => m.forward(xs),
            Inner::Tiled(op) => {
                let dtype = xs.dtype();
                let ys = xs
                    .to_dtype(DType::F32)?
                    .contiguous()?
                    .apply_op1_no_bwd(op)?;
                ys.to_dtype(dtype)
            }
        }
    }

    /// `xs @ W^T` on plain rows: `xs` is `[m][in_dim]`, the result `[m][out_dim]`. The fast path
    /// builds no tensor; candle's path wraps the rows in one, with `forward`'s bits either way.
    pub fn forward_rows(&self, xs: &[f32], m: usize) -> Result<Vec<f32>> {
        self.forward_rows_into(xs, m, Vec::new())
    }

    /// `forward_rows`, written into `dst`'s buffer (its contents replaced): the output head writes a
    /// logits row a session keeps into a buffer it kept before (`forward/spare_rows.rs`).
    pub fn forward_rows_into(&self, xs: &[f32], m: usize, dst: Vec<f32>) -> Result<Vec<f32>> {
        self.forward_rows_then(xs, m, dst, None)
    }

    /// `forward_rows_into`; for one row, `then` sees each run of the output as it is written (on the
    /// fast path, by the item that wrote it; on candle's, the whole row at the end).
    pub fn forward_rows_then(
        &self,
        xs: &[f32],
        m: usize,
        mut dst: Vec<f32>,
        then: Option<&RunThen>,
    ) -> Result<Vec<f32>> {
        match &self.inner {
            Inner::Tiled(op) if xs.len() == m * self.in_dim => {
                Ok(op.w.matmul_into_then(xs, m, op.isa, dst, then))
            }
            _ => {
                let xs = Tensor::from_slice(xs, (m, self.in_dim), &candle_core::Device::Cpu)?;
                let ys = self.forward(&xs)?.flatten_all()?.to_vec1::<f32>()?;
                dst.clear();
                dst.extend_from_slice(&ys);
                if let Some(t) = then.filter(|_| m == 1) {
                    (t.each)(0, &dst);
                }
                Ok(dst)
            }
        }
    }

    pub fn out_dim(&self) -> usize {
        self.out_dim
    }

    pub fn in_dim(&self) -> usize {
        self.in_dim
    }

    /// The fast path's tiles, when it holds them: a tied output head lends them to the embedding
    /// lookup, so the token table is held once.
    pub fn tiles(&self) -> Option<Arc<QMatrix>> {
        match &self.inner {
            Inner::Tiled(op) => Some(op.w.clone()),
            Inner::Candle(_) => None,
        }
    }

    /// Bytes of weight data this layer holds on the fast path (0 when candle holds it).
    pub fn fast_bytes(&self) -> usize {
        match &self.inner {
            Inner::Tiled(op) => op.w.size_in_bytes(),
            Inner::Candle(_) => 0,
        }
    }

    /// Bytes of weight data this layer holds, as one pass reads them (tiles, or candle's storage).
    pub fn weight_bytes(&self) -> usize {
        match &self.inner {
            Inner::Tiled(op) => op.w.size_in_bytes(),
            Inner::Candle(QMatMul::QTensor(t)) => t.storage_size_in_bytes(),
            Inner::Candle(QMatMul::Tensor(t) | QMatMul::TensorF16(t)) => {
                t.elem_count() * t.dtype().size_in_bytes()
            }
        }
    }
}

/// Matrices that multiply the same input (q, k and v; gate and up), as one matmul when the fast path
/// holds them all in tiles of one kind (`QMatrix::stack`): the input is quantised once and the pool
/// woken once. Each output keeps its bits: a tile's outputs depend on its own weights alone.
pub struct Stack {
    fused: Option<Linear>,
    parts: Vec<Linear>,
    widths: Vec<usize>,
}

impl Stack {
    pub fn new(parts: Vec<Linear>) -> Self {
        let widths: Vec<usize> = parts.iter().map(|l| l.out_dim).collect();
        let tiles: Option<Vec<&TiledOp>> = parts
            .iter()
            .map(|l| match &l.inner {
                Inner::Tiled(op) => Some(op),
                Inner::Candle(_) => None,
            })
            .collect();
        let fused = tiles.and_then(|ops| {
            let w = QMatrix::stack(&ops.iter().map(|op| op.w.as_ref()).collect::<Vec<_>>())?;
            Some(Linear {
                out_dim: w.out_dim(),
                in_dim: w.in_dim(),
                inner: Inner::Tiled(TiledOp {
                    w: Arc::new(w),
                    isa: ops[0].isa,
                }),
                pad_lone_row: false,
            })
        });
        // A fused stack keeps no separate parts: their tiles live in `fused` alone.
        let parts = if fused.is_some() { Vec::new() } else { parts };
        Self {
            fused,
            parts,
            widths,
        }
    }

    /// Whether the parts run as one matmul.
    pub fn is_fused(&self) -> bool {
        self.fused.is_some()
    }

    /// The parts' outputs side by side (`[m][sum of widths]`) when they run as one matmul, as it
    /// writes them: no copy into parts. `None` when the parts run one by one.
    pub fn forward_rows_joined(&self, xs: &[f32], m: usize) -> Result<Option<Vec<f32>>> {
        self.fused
            .as_ref()
            .map(|fused| fused.forward_rows(xs, m))
            .transpose()
    }

    /// Each part's output width, in order.
    pub fn widths(&self) -> &[usize] {
        &self.widths
    }

    /// The parts' outputs for rows `xs` (`[m][in_dim]`): one `[m][width]` vector each, in order.
    pub fn forward_rows(&self, xs: &[f32], m: usize) -> Result<Vec<Vec<f32>>> {
        let Some(fused) = &self.fused else {
            return self.parts.iter().map(|l| l.forward_rows(xs, m)).collect();
        };
        let ys = fused.forward_rows(xs, m)?;
        let total = fused.out_dim;
        let mut outs: Vec<Vec<f32>> = self
            .widths
            .iter()
            .map(|w| Vec::with_capacity(m * w))
            .collect();
        for row in ys.chunks_exact(total) {
            let mut at = 0;
            for (out, &w) in outs.iter_mut().zip(&self.widths) {
                out.extend_from_slice(&row[at..at + w]);
                at += w;
            }
        }
        Ok(outs)
    }

    /// Bytes of weight data these matrices hold, as one pass reads them.
    pub fn weight_bytes(&self) -> usize {
        self.fused
            .iter()
            .chain(&self.parts)
            .map(Linear::weight_bytes)
            .sum()
    }
}

struct TiledOp {
    /// Shared with the embedding lookup when the head is the tied token table (`Linear::tiles`).
    w: Arc<QMatrix>,
    isa: Isa,
}

impl CustomOp1 for TiledOp {
    fn name(&self) -> &'static str {
        "tiled-qmatmul"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let Some((start, end)) = layout.contiguous_offsets() else {
            candle_core::bail!("tiled-qmatmul: input is not contiguous")
        };
        let xs = &storage.as_slice::<f32>()?[start..end];
        let mut dims = layout.dims().to_vec();
        match dims.last_mut() {
            Some(k) if *k == self.w.in_dim() => *k = self.w.out_dim(),
            _ => candle_core::bail!(
                "tiled-qmatmul: input {dims:?}, weight in_dim {}",
                self.w.in_dim()
            ),
        }
        let m = xs.len() / self.w.in_dim();
        let ys = self.w.matmul(xs, m, self.isa);
        Ok((CpuStorage::F32(ys), Shape::from(dims)))
    }
}

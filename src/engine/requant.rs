//! Re-quantising a model at load, so a class sees what quantisation costs with one download: every
//! weight matrix is dequantised and quantised again to the chosen type, or kept in f32 (`Exact`: the
//! same weights, computed without 8-bit activations).
//!
//! The K-quants work on rows of 256 values. A matrix whose rows are not a multiple of 256 (SmolLM2's
//! width is 576, Gemma 3's 640) falls back to Q4_0, as llama.cpp's `quantize` falls back to another
//! 4-bit type for such rows; the report counts both.

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Result};
use std::collections::BTreeMap;

/// What model B's weights become.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requant {
    Q8_0,
    Q4_0,
    Q3K,
    Q2K,
    /// The weights dequantised to f32: candle's dense matmul, no 8-bit activations.
    Exact,
}

impl Requant {
    /// The names the command line takes.
    pub const NAMES: [&'static str; 5] = ["q8_0", "q4_0", "q3_k", "q2_k", "exact"];

    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "q8_0" => Self::Q8_0,
            "q4_0" => Self::Q4_0,
            "q3_k" => Self::Q3K,
            "q2_k" => Self::Q2K,
            "exact" => Self::Exact,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Q8_0 => "q8_0",
            Self::Q4_0 => "q4_0",
            Self::Q3K => "q3_k",
            Self::Q2K => "q2_k",
            Self::Exact => "exact",
        }
    }

    fn dtype(self) -> GgmlDType {
        match self {
            Self::Q8_0 => GgmlDType::Q8_0,
            Self::Q4_0 => GgmlDType::Q4_0,
            Self::Q3K => GgmlDType::Q3K,
            Self::Q2K => GgmlDType::Q2K,
            Self::Exact => GgmlDType::F32,
        }
    }
}

/// How many matrices ended up in each type (`"q2_k" → 30`, `"q4_0" → 181`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequantReport {
    pub counts: BTreeMap<String, usize>,
}

impl RequantReport {
    /// Each storage type and how many matrices got it, most first (ties by name).
    pub fn matrix_types(&self) -> Vec<(String, usize)> {
        let mut types: Vec<(String, usize)> =
            self.counts.iter().map(|(t, n)| (t.clone(), *n)).collect();
        types.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        types
    }

    /// "q2_k on 30 matrices, q4_0 on 181 (rows not a multiple of 256)".
    pub fn summary(&self, to: Requant) -> String {
        let wanted = dtype_name(to.dtype());
        let mut parts: Vec<String> = vec![];
        for (dtype, n) in &self.counts {
            let note = if *dtype == wanted {
                ""
            } else {
                " (rows not a multiple of 256)"
            };
            parts.push(format!("{dtype} on {n} matrices{note}"));
        }
        parts.join(", ")
    }
}

/// `w` (`[out, in]`) re-quantised to `to`, or to Q4_0 when its rows do not fit `to`'s blocks; the
/// report counts the type used.
pub fn requantize(w: &QTensor, to: Requant, report: &mut RequantReport) -> Result<QTensor> {
    let dense = w.dequantize(&Device::Cpu)?;
    let cols = dense.dims().last().copied().unwrap_or(0);
    let dtype = if cols.is_multiple_of(to.dtype().block_size()) {
        to.dtype()
    } else {
        GgmlDType::Q4_0
    };
    *report.counts.entry(dtype_name(dtype)).or_default() += 1;
    QTensor::quantize(&dense, dtype)
}

/// A type as the command line writes it: `q2_k`, `q4_0`, `f32`.
fn dtype_name(d: GgmlDType) -> String {
    match d {
        GgmlDType::Q2K => "q2_k".into(),
        GgmlDType::Q3K => "q3_k".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

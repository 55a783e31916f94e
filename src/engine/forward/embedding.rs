//! The token embedding table, kept quantised: a forward pass dequantises only the rows of the tokens it
//! feeds (candle's quantised `embedding`, the same per-block arithmetic as dequantising the whole table,
//! so the same bits). Gemma 3's table is 262,144 × 640: 671 MB as f32, 178 MB as the file's Q8_0.

use candle_core::quantized::QTensor;
use candle_core::{Device, Result, Tensor};
use std::sync::Arc;

pub struct Embeddings {
    table: Arc<QTensor>,
    /// Multiplies every row (Gemma's √dim), as candle's `affine` does: in f32.
    scale: Option<f32>,
}

impl Embeddings {
    /// `table` is `[vocab, dim]`. A table whose rows are not whole blocks (or an F16/F32 one) is
    /// dequantised up front instead, as candle's `embedding` wants whole blocks.
    pub fn new(table: Arc<QTensor>, scale: Option<f32>) -> Result<Self> {
        let (_, dim) = table.shape().dims2()?;
        let table = if dim.is_multiple_of(table.dtype().block_size()) {
            table
        } else {
            let dense = table.dequantize(&Device::Cpu)?;
            Arc::new(QTensor::quantize(
                &dense,
                candle_core::quantized::GgmlDType::F32,
            )?)
        };
        Ok(Self { table, scale })
    }

    /// Rows in the table: the vocabulary size.
    pub fn vocab_size(&self) -> usize {
        self.table.shape().dims()[0]
    }

    /// The rows of `ids`, `[ids.len(), dim]`, scaled.
    pub fn rows(&self, ids: &[u32]) -> Result<Tensor> {
        let ids = Tensor::new(ids, &Device::Cpu)?;
        let xs = self.table.embedding(&ids)?;
        match self.scale {
            Some(s) => xs.affine(s as f64, 0.0),
            None => Ok(xs),
        }
    }
}

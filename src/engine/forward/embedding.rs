//! The token embedding table, kept quantised: a forward pass dequantises only the rows of the tokens it
//! feeds, with the arithmetic of candle's quantised `embedding` (the same per-block arithmetic as
//! dequantising the whole table, so the same bits). Gemma 3's table is 262,144 × 640: 671 MB as f32,
//! 178 MB as the file's Q8_0. When the output head is the same table (tied, as in SmolLM2 and Gemma)
//! and the fast path holds it in tiles, the rows are read from those tiles: the table is held once.

use super::quant::QMatrix;
use candle_core::quantized::QTensor;
use candle_core::{Device, Result, Tensor};
use std::sync::Arc;

pub struct Embeddings {
    table: Table,
    /// Multiplies every row (Gemma's √dim), as candle's `affine` does: in f32.
    scale: Option<f32>,
}

enum Table {
    /// The file's tensor, read by candle.
    File(Arc<QTensor>),
    /// The tied output head's tiles (`QMatrix::row`).
    Head(Arc<QMatrix>),
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
        Ok(Self {
            table: Table::File(table),
            scale,
        })
    }

    /// The rows of a tied output head's tiles, when they can be read as rows (`QMatrix::has_rows`).
    pub fn from_head(head: Arc<QMatrix>, scale: Option<f32>) -> Option<Self> {
        head.has_rows().then_some(Self {
            table: Table::Head(head),
            scale,
        })
    }

    /// Whether the rows come from the output head's tiles (the table held once).
    pub fn shares_head(&self) -> bool {
        matches!(self.table, Table::Head(_))
    }

    /// Rows in the table: the vocabulary size.
    pub fn vocab_size(&self) -> usize {
        match &self.table {
            Table::File(t) => t.shape().dims()[0],
            Table::Head(m) => m.out_dim(),
        }
    }

    /// The rows of `ids`, `[ids.len()][dim]` flat, scaled.
    pub fn rows(&self, ids: &[u32]) -> Result<Vec<f32>> {
        let mut xs = match &self.table {
            Table::File(t) => t
                .embedding(&Tensor::new(ids, &Device::Cpu)?)?
                .flatten_all()?
                .to_vec1::<f32>()?,
            Table::Head(m) => {
                let mut xs = Vec::with_capacity(ids.len() * m.in_dim());
                for &id in ids {
                    match m.row(id as usize) {
                        Some(row) => xs.extend_from_slice(&row),
                        None => candle_core::bail!(
                            "embedding id {id} is out of range for {} rows",
                            m.out_dim()
                        ),
                    }
                }
                xs
            }
        };
        if let Some(s) = self.scale {
            // candle's affine on f32: `x * mul + add`, mul and add cast from f64.
            let mul = s as f64 as f32;
            xs.iter_mut().for_each(|x| *x = *x * mul + 0.0);
        }
        Ok(xs)
    }
}

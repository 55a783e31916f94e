//! Reading the weight matrices from the file. On the fast path with the stored types, a matrix goes
//! from the file straight into tiles a band of rows at a time (`QMatrix::from_rows`): it is never held
//! twice, and a tied output head lends its tiles to the embedding lookup, so Gemma's 178 MB token table
//! is held once and read once. Otherwise (the exact path, a re-quantised load, types without tiles)
//! candle reads the tensor whole and `Linear` takes it.

use super::block::{Block, WeightMap};
use super::embedding::Embeddings;
use super::linear::{Linear, MatmulPath};
use super::quant::QMatrix;
use crate::engine::gguf::{GgufFile, LlamaConfig, LoadError};
use std::sync::Arc;

/// What a forward pass reads and never writes: the token table, the blocks, the final norm and the
/// output head. A model holds it behind an `Arc`, so an early-exit draft (`Model::early_exit`) runs
/// the model's own first layers and head from the same memory: no second copy to load, to keep, or to
/// fight the model for the CPU's caches (a copy of SmolLM2's 26 layers had made each draft pass
/// slower than a whole pass of the model).
pub struct Weights {
    pub embeddings: Embeddings,
    pub layers: Vec<Block>,
    pub norm: Vec<f32>,
    pub output: Linear,
}

fn building(e: candle_core::Error) -> LoadError {
    LoadError::Other(format!("building the model: {e}"))
}

/// The matrix `name`, through `map` when one is given (re-quantising), else as stored.
pub fn linear(
    g: &mut GgufFile,
    name: &str,
    path: MatmulPath,
    map: Option<&mut WeightMap>,
) -> Result<Linear, LoadError> {
    if let (None, MatmulPath::Fast) = (&map, path) {
        if let Some(tiles) = read_tiles(g, name)? {
            return Ok(Linear::tiled(tiles));
        }
    }
    let w = g.tensor(name)?;
    let w = match map {
        Some(map) => map(&w).map_err(building)?.unwrap_or(w),
        None => w,
    };
    Linear::new(w, path).map_err(building)
}

/// The matrix `name` in tiles, read a band of rows at a time; `None` for types without tiles.
fn read_tiles(g: &mut GgufFile, name: &str) -> Result<Option<QMatrix>, LoadError> {
    let Some((dtype, n, k)) = g.matrix(name) else {
        return Ok(None);
    };
    QMatrix::from_rows(dtype, n, k, &mut |rows, buf| g.read_rows(name, rows, buf))
}

/// The output head and the embedding lookup. A tied head (no `output.weight`: SmolLM2, Gemma) held in
/// tiles with the file's bits serves the lookup too; otherwise the lookup keeps the file's table.
pub fn head_and_embeddings(
    g: &mut GgufFile,
    config: &LlamaConfig,
    path: MatmulPath,
    map: Option<&mut WeightMap>,
) -> Result<(Linear, Embeddings), LoadError> {
    const TABLE: &str = "token_embd.weight";
    let scale = config.embedding_scale();
    let file_table = |g: &mut GgufFile| -> Result<Embeddings, LoadError> {
        Embeddings::new(Arc::new(g.tensor(TABLE)?), scale).map_err(building)
    };
    if g.has_tensor("output.weight") {
        let output = linear(g, "output.weight", path, map)?;
        return Ok((output, file_table(g)?));
    }
    let Some(map) = map else {
        let output = linear(g, TABLE, path, None)?;
        let embeddings = match output.tiles().and_then(|t| Embeddings::from_head(t, scale)) {
            Some(e) => e,
            None => file_table(g)?,
        };
        return Ok((output, embeddings));
    };
    // Re-quantising: the head takes the new bits, the lookup keeps the file's (a table read, not a
    // matmul); when `map` keeps the stored type, candle's path shares one tensor between the two.
    let table = Arc::new(g.tensor(TABLE)?);
    let output = match map(&table).map_err(building)? {
        Some(w) => Linear::new(w, path),
        None => Linear::shared(table.clone(), path),
    }
    .map_err(building)?;
    Ok((output, Embeddings::new(table, scale).map_err(building)?))
}

//! The forward pass: one call reads tokens and gives the next-token logits and every layer's attention.
//! The llama-family layer loop on plain f32 rows (`model.rs`; what a pass takes and gives, `pass.rs`;
//! its hyper-parameters, `config.rs`), a block's weights and gated MLP (`block.rs`, `gate.rs`,
//! `tanhf.rs`), the residual stream's norms (`rows.rs`), the quantised embeddings (`embedding.rs`),
//! reading the matrices from the file (`weights.rs`), the KV cache (`kv_cache.rs`), attention in one
//! fixed order (`attention/`), the matrix multiplications (`linear.rs`, the kernels in `quant/`) and
//! the logits rows kept for the output head to write into (`spare_rows.rs`); `prefetch.rs` asks for
//! memory ahead of both.

pub mod attention;
pub mod block;
pub mod config;
pub mod embedding;
pub mod gate;
pub mod kv_cache;
pub mod linear;
pub mod model;
mod pass;
pub(crate) mod prefetch;
pub mod quant;
mod rows;
mod spare_rows;
mod tanhf;
pub mod weights;

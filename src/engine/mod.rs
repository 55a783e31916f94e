//! The engine: everything that touches candle or tokenizers. Never imports the terminal layer.

pub mod chat;
pub mod fetch;
pub mod gguf;
pub mod kv_cache;
pub mod linear;
pub mod load;
pub mod model;
pub mod quant;
pub mod sampler;
pub mod session;
pub mod tokenizer;
pub mod worker;

/// Sets the worker threads for the model's matrix work (default: all cores). Call before loading.
pub fn set_threads(n: usize) {
    quant::pool::set_threads(n);
}

/// Threads the model's matrix work uses.
pub fn threads() -> usize {
    quant::pool::threads()
}

//! The engine: everything that touches candle or tokenizers. Never imports the terminal layer.

pub mod chat;
pub mod fetch;
pub mod gguf;
pub mod kv_cache;
pub mod linear;
pub mod model;
pub mod quant;
pub mod sampler;
pub mod session;
pub mod tokenizer;
pub mod worker;

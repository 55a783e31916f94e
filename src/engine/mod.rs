//! The engine: everything that touches candle or tokenizers. Never imports the terminal layer.

pub mod chat;
pub mod fetch;
pub mod gguf;
pub mod kv_cache;
pub mod linear;
pub mod load;
pub mod model;
pub mod sampler;
pub mod session;
pub mod tokenizer;
pub mod worker;

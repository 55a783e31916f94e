//! The engine: everything that touches candle or tokenizers. Never imports the terminal layer.

pub mod backend;
pub mod catalog;
pub mod chat;
pub mod draft;
pub mod fetch;
pub mod forward;
pub mod gguf;
pub mod heap;
pub mod load;
pub mod machine;
pub mod requant;
pub mod sampler;
pub mod served;
pub mod session;
pub mod session_file;
pub mod tokenizer;
pub mod twin;

/// Sets the worker threads for the model's matrix work (default: all cores). Call before loading.
pub fn set_threads(n: usize) {
    forward::quant::pool::set_threads(n);
}

/// Threads the model's matrix work uses.
pub fn threads() -> usize {
    forward::quant::pool::threads()
}

/// The message of a caught panic, for an error event.
pub(crate) fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

//! Shared by the benches: the real model, found the way the app finds it (`NEXTTOKEN_MODEL`, else the
//! default path, fetched when missing).

use candle_core::quantized::{gguf_file, QTensor};
use candle_core::Device;

pub fn model_path() -> std::path::PathBuf {
    let explicit = std::env::var_os("NEXTTOKEN_MODEL").map(std::path::PathBuf::from);
    nexttoken::engine::fetch::resolve_model(explicit.as_deref()).expect("the real model")
}

/// One tensor of the real model, as stored.
pub fn load(name: &str) -> QTensor {
    let mut file = std::fs::File::open(model_path()).unwrap();
    let content = gguf_file::Content::read(&mut file).unwrap();
    content.tensor(&mut file, name, &Device::Cpu).unwrap()
}

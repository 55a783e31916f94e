//! Shared test helpers: where the real model is, and the llama.cpp reference outputs.
#![allow(dead_code)]

pub mod tiny;

use std::path::PathBuf;

/// The real default model. Tests that need it fail loudly (never skip) when it is missing.
pub fn real_model() -> PathBuf {
    let p = std::env::var_os("NEXTTOKEN_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/SmolLM2-135M-Instruct.Q4_1.gguf")
        });
    assert!(
        p.exists(),
        "the real model is missing at {}: run `cargo run --release -- fetch` first",
        p.display()
    );
    p
}

/// One llama.cpp reference file from ../shared/reference.
pub fn reference(name: &str) -> serde_json::Value {
    let dir = std::env::var_os("NEXTTOKEN_REFERENCE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/reference"));
    let p = dir.join(format!("{name}.json"));
    let text =
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
    serde_json::from_str(&text).unwrap()
}

pub fn ids(v: &serde_json::Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

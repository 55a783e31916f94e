//! Fast quantised matmul kernels (Q4_1, Q8_0 and Q5_0 weights, 8-bit activations) and their threads.
//!
//! - `layout`: GGUF blocks regrouped into 16-row tiles (one SIMD lane per output row).
//! - `act` (+ `act_x86`): activations quantised to Q8_1 / Q8_0 exactly as candle does.
//! - `scalar`, `avx2`, `avx512`: tile kernels, bit-identical to each other.
//! - `matmul`: `QMatrix`, the threaded `xs @ W^T` over tiles; `pool`: thread count.

pub mod act;
#[cfg(target_arch = "x86_64")]
mod act_x86;
#[cfg(target_arch = "x86_64")]
pub mod avx2;
#[cfg(target_arch = "x86_64")]
pub mod avx512;
pub mod layout;
pub mod matmul;
pub mod pool;
pub mod scalar;

pub use matmul::{Isa, QMatrix};
pub use pool::{set_threads, threads};

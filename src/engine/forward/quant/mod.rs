//! Fast quantised matmul kernels (Q4_1, Q8_0, Q5_0, Q4_K and Q6_K weights, 8-bit activations) and their
//! threads.
//!
//! - `layout` (+ `layout_k` for the K-quants, `layout_q5` for Q5_0's forms): GGUF blocks regrouped into 16-row tiles (one SIMD lane per
//!   output row).
//! - `act` (+ `act_x86`, `act_k`): activations quantised to Q8_1 / Q8_0 / Q8_K exactly as candle does;
//!   `act_spare`: a dropped one's buffers kept for the next on its thread.
//! - `scalar`, `avx2` (+ `avx2_k`, `avx2_q5`, `avx2_q8`), `avx512` (+ `avx512_k`): tile kernels, bit-identical to each other.
//! - `matmul`: `QMatrix`, the threaded `xs @ W^T` over tiles (`out`: the output its items write, and
//!   the runs a one-row matmul hands on); `kernels`: one runner per tile format
//!   (Q5_0 is kept at 5 bits on AVX2 and unpacked per prefill chunk); `pool`: thread count; `decode_plan`:
//!   how many threads a decode step's matmuls use, decided by timing the steps.

pub mod act;
mod act_k;
mod act_spare;
#[cfg(target_arch = "x86_64")]
mod act_x86;
#[cfg(target_arch = "x86_64")]
pub mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx2_k;
#[cfg(target_arch = "x86_64")]
mod avx2_q5;
#[cfg(target_arch = "x86_64")]
mod avx2_q8;
#[cfg(target_arch = "x86_64")]
pub mod avx512;
#[cfg(target_arch = "x86_64")]
mod avx512_k;
pub mod decode_plan;
mod kernels;
pub mod layout;
pub mod layout_k;
mod layout_q5;
pub mod matmul;
mod out;
pub mod pool;
#[cfg(test)]
mod q5_0_forms;
pub mod scalar;

pub use matmul::{Isa, QMatrix};
pub use out::RunThen;
pub use pool::{set_threads, threads};

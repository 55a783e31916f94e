//! Software prefetch, the one place the forward pass asks the CPU for memory before a loop reads it:
//! the quantised kernels' weights a fixed distance ahead of their block (`quant::avx2::prefetch_ahead`),
//! and a decode step's keys and values a block ahead (`attention`). A prefetch reads nothing
//! architecturally and never faults, so an address past an allocation's end costs nothing.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Asks for every 64-byte line holding bytes `from..from + bytes` to be brought into L1 (nothing on
/// CPUs other than x86). `from` may point anywhere.
#[inline(always)]
pub(crate) fn lines(from: *const u8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let skew = from as usize & 63;
        let first = from.wrapping_sub(skew);
        for line in (0..skew + bytes).step_by(64) {
            // SAFETY: a prefetch reads nothing architecturally and never faults, whatever the address;
            // `wrapping_add` keeps the pointer arithmetic defined. SSE, which every x86_64 CPU has.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>(first.wrapping_add(line) as *const i8)
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (from, bytes);
}

/// `lines` for elements `at..at + len` of `x` (floats of any width).
#[inline(always)]
pub(crate) fn floats<T>(x: &[T], at: usize, len: usize) {
    lines(
        x.as_ptr().wrapping_add(at) as *const u8,
        size_of::<T>() * len,
    );
}

/// Whether the quantised kernels ask for their weights ahead of the block they read
/// (`quant::avx2::prefetch_ahead`): on unless a decode step's plan turned it off for that step
/// (`quant/decode_plan.rs`). One switch for the process, as every kernel thread must see it; it
/// changes only how fast a matmul reads, never a bit it computes.
static WEIGHTS_AHEAD: AtomicBool = AtomicBool::new(true);

/// Whether the kernels ask for their weights ahead now.
#[inline(always)]
pub(crate) fn weights_ahead() -> bool {
    WEIGHTS_AHEAD.load(Relaxed)
}

/// Runs `f` with the kernels' weight prefetch `on`, then restores it.
pub fn with_weights_ahead<T>(on: bool, f: impl FnOnce() -> T) -> T {
    let before = WEIGHTS_AHEAD.swap(on, Relaxed);
    let out = f();
    WEIGHTS_AHEAD.store(before, Relaxed);
    out
}

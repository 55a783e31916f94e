//! How the process's heap treats the forward pass's buffers.
//!
//! A forward pass allocates its activations afresh for every matmul and layer: at 512 prompt rows
//! SmolLM2's gate and up outputs are 3 MB each, Gemma 3's 4 MB, and a decode step's logits 0.2-1 MB.
//! glibc serves a block over its mmap threshold (128 KiB at start, raised as such blocks are freed,
//! and trimmed back past twice that) from a fresh mapping, and returns it on free: every layer then
//! paid its buffers again in page faults, zeroing by the kernel and unmapping. `perf` put 18% of a
//! one-thread AVX2 prefill of SmolLM2 there (`docs/PERFORMANCE.md`, round nine). Kept in the heap,
//! a freed buffer serves the next layer's, already mapped.

/// Blocks up to this size come from the heap, whose freed memory the next allocation reuses. Larger
/// ones (the bandwidth probe's buffer, read once) still get their own mapping, returned on free.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: usize = 32 << 20;
/// Free memory at the top of the heap kept for reuse before it is returned to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: usize = 256 << 20;

/// Keeps the forward pass's freed buffers mapped for the next ones (glibc; elsewhere a no-op). Call
/// first thing in `main`, before other threads exist. Returns whether the settings took.
pub fn keep_freed_buffers() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` only sets allocator parameters; called before any other thread exists.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    /// Whether glibc gave `p`'s block a mapping of its own: the `IS_MMAPPED` bit (2) of the chunk's
    /// size word, just before the block.
    fn own_mapping(p: *const u8) -> bool {
        // SAFETY: `p` is a live block from glibc's malloc, which puts the size word before it.
        unsafe { (p as *const usize).sub(1).read() & 2 != 0 }
    }

    #[test]
    fn a_layers_buffer_comes_from_the_heap_and_a_huge_one_is_still_mapped() {
        assert!(super::keep_freed_buffers(), "glibc accepted both settings");
        // Gemma 3's gate+up output at 512 rows is 8 MiB; the bandwidth probe's buffer 64-512 MiB.
        // (`black_box`: an allocation the optimiser can see through may never be made.)
        let layer = std::hint::black_box(vec![1u8; 8 << 20]);
        let probe = std::hint::black_box(vec![1u8; 64 << 20]);
        assert!(
            !own_mapping(layer.as_ptr()),
            "8 MiB should come from the heap"
        );
        assert!(
            own_mapping(probe.as_ptr()),
            "64 MiB should get its own mapping"
        );
    }
}

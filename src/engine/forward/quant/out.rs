//! A matmul's output as its work items see it: the matrix they write concurrently, each its own
//! (row, column-tile) cells, and what a one-row matmul's items do with their runs of it.

use super::layout::TILE;

/// What a one-row matmul's items do with their runs of the output ([`QMatrix::matmul_into_then`]).
pub struct RunThen<'a> {
    /// Each run starts at a multiple of this many columns (a multiple of `TILE`).
    pub align: usize,
    pub each: &'a (dyn Fn(usize, &[f32]) + Sync),
}

/// The output matrix, written concurrently by work items that own disjoint (row, column-tile) cells.
#[derive(Clone, Copy)]
pub(super) struct OutPtr(pub(super) *mut f32);
// SAFETY: see `write`: no two threads ever write the same element, and `matmul` joins them all
// before it reads or returns the buffer.
unsafe impl Send for OutPtr {}
// SAFETY: as for `Send`: shared use only ever writes disjoint elements.
unsafe impl Sync for OutPtr {}

impl OutPtr {
    /// Elements `cols` of the buffer, to read.
    ///
    /// # Safety
    /// They are in the buffer, written, and no thread writes them while the slice lives.
    pub(super) unsafe fn written(&self, cols: &std::ops::Range<usize>) -> &[f32] {
        // SAFETY: as the caller promises.
        unsafe { std::slice::from_raw_parts(self.0.add(cols.start), cols.len()) }
    }

    /// Writes `v[..cols.len()]` to `dst[row_start + cols]`.
    #[inline(always)]
    pub(super) fn write(&self, row_start: usize, cols: &std::ops::Range<usize>, v: &[f32; TILE]) {
        // SAFETY: `matmul` allocates `m * n` elements and only passes rows `< m`, columns `< n`;
        // each (row, tile) pair belongs to exactly one work item, hence one thread.
        let dst = unsafe { self.0.add(row_start + cols.start) };
        if cols.len() == TILE {
            // A fixed-size copy: a few vector stores. (Beside the partial copy below in one function
            // the two became one `memcpy` call of either size, 2% of a SmolLM2 prefill.)
            // SAFETY: as above.
            unsafe { (dst as *mut [f32; TILE]).write_unaligned(*v) };
        } else {
            Self::write_part(dst, &v[..cols.len()]);
        }
    }

    /// The last, partial tile of a row.
    #[cold]
    #[inline(never)]
    fn write_part(dst: *mut f32, v: &[f32]) {
        // SAFETY: as in `write`: `v.len()` columns from `dst` are this item's.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), dst, v.len()) };
    }
}

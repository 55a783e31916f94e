//! Reused activation buffers: an `Act` dropped on a thread leaves its main buffers for the next one
//! quantised there (`Act::quantize_with` takes them).

use super::act::Act;
use std::cell::Cell;

thread_local! {
    /// The buffers of the last `Act` dropped on this thread, for its next one: a decode step quantises
    /// an activation row for each of its ~120 matmuls, and allocating, zeroing and freeing four
    /// buffers each time was about 2% of a SmolLM2 step's samples (`calloc` and `free`, AVX2).
    static SPARE: Cell<Option<Spare>> = const { Cell::new(None) };
}

/// An `Act`'s main buffers, kept for reuse (`SPARE`).
#[derive(Default)]
pub(super) struct Spare {
    pub qs: Vec<i8>,
    pub d: Vec<f32>,
    pub s: Vec<f32>,
    pub sum: Vec<i32>,
}

impl Spare {
    /// The thread's spare, or empty buffers.
    pub fn take() -> Spare {
        SPARE.with(Cell::take).unwrap_or_default()
    }
}

impl Drop for Act {
    fn drop(&mut self) {
        let spare = Spare {
            qs: std::mem::take(&mut self.qs),
            d: std::mem::take(&mut self.d),
            s: std::mem::take(&mut self.s),
            sum: std::mem::take(&mut self.sum),
        };
        // `try_with`: a thread being torn down has no spare to keep.
        let _ = SPARE.try_with(|c| c.set(Some(spare)));
    }
}

/// `v` holding `len` zeros, in its own allocation where that is large enough.
pub(super) fn zeroed<T: Copy + Default>(mut v: Vec<T>, len: usize) -> Vec<T> {
    v.clear();
    v.resize(len, T::default());
    v
}

//! Logits rows written before, kept for the output head's next result.
//!
//! A session keeps the logits row of each recent step (to show a rewound step's distribution at once).
//! Each kept row is memory the process never had: the output head, writing its fresh row, took a page
//! fault for every 4 KB of it, zeroed by the kernel, on the pass's own clock. On a 2-core VM that was
//! 3-8% of a SmolLM2 step (49,152 logits, 192 KB) and 60-75% of a Gemma 3 step (262,144 logits, 1 MB:
//! 6-7 ms became 11; `docs/PERFORMANCE.md`, round thirteen), and the step's time on screen said so.
//! Here the session hands its dropped rows back and fills the store once, before its first step, so
//! the head writes into pages already written and a pass costs the same at the first step and the
//! hundredth.

/// Rows of one length, each already written once, so writing it again costs no page fault.
#[derive(Debug, Default)]
pub struct SpareRows {
    rows: Vec<Vec<f32>>,
    /// Floats a row holds (the vocabulary).
    len: usize,
    /// Rows held at most: the session's kept rows and the one in flight.
    cap: usize,
}

impl SpareRows {
    pub fn new(len: usize) -> Self {
        Self {
            rows: Vec::new(),
            len,
            cap: 0,
        }
    }

    /// A buffer for `floats` floats: a spare one when `floats` is one row and one is held, else a new
    /// one (its memory not yet written).
    pub fn take(&mut self, floats: usize) -> Vec<f32> {
        match floats == self.len {
            true => self.rows.pop().unwrap_or_default(),
            false => Vec::new(),
        }
    }

    /// Keeps `row` for a later pass if it is one row's buffer and fewer than the cap are held.
    pub fn give(&mut self, row: Vec<f32>) {
        if row.capacity() >= self.len && self.len > 0 && self.rows.len() < self.cap {
            self.rows.push(row);
        }
    }

    /// Holds `n` rows, writing new ones as needed, and keeps up to `n` from now on.
    pub fn fill(&mut self, n: usize) {
        self.cap = self.cap.max(n);
        while self.rows.len() < n {
            // `vec![0.0; len]` would be `calloc`: fresh pages it need not write, still unfaulted.
            let mut row = Vec::with_capacity(self.len);
            row.resize(self.len, f32::NAN);
            self.rows.push(row);
        }
    }

    /// Rows held now.
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.rows.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_row_is_the_next_taken_and_other_sizes_pass_by() {
        let mut s = SpareRows::new(4);
        assert!(s.take(4).capacity() == 0, "nothing held yet: a new buffer");
        s.fill(2);
        assert_eq!(s.held(), 2);
        let row = s.take(4);
        assert!(row.capacity() >= 4);
        let at = row.as_ptr();
        s.give(row);
        let again = s.take(4);
        assert_eq!(again.as_ptr(), at, "the row given back is the next one out");
        assert_eq!(s.take(8).capacity(), 0, "two rows' worth is never a spare");
        s.give(vec![0.0; 2]);
        assert_eq!(s.held(), 1, "a buffer too small for a row is not kept");
        s.give(vec![0.0; 4]);
        s.give(vec![0.0; 4]);
        assert_eq!(s.held(), 2, "no more than the fill's count are kept");
    }
}

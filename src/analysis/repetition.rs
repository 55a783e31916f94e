//! The repetition trap, measured: a cycle at the tip of a sequence, and n-grams repeated earlier.

use serde::{Deserialize, Serialize};

/// A loop at the tip: the sequence ends with `repeats` copies of one `period`-token unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cycle {
    /// Tokens in the repeating unit.
    pub period: usize,
    /// How many copies of the unit the repeat spans, a fraction when it began part-way through one
    /// (`2.4` = two whole copies and 40% of another). Always at least 2.
    pub repeats: f64,
    /// The absolute position where the repeating span begins.
    pub since_position: usize,
}

impl Cycle {
    /// Tokens the repeat spans, from `since_position` to the tip.
    pub fn span(&self) -> usize {
        (self.repeats * self.period as f64).round() as usize
    }
}

/// The loop at the tip of `tokens`, if any: the last `k·p` tokens are `k ≥ 2` copies of one `p`-token
/// unit. The span is then extended back over any partial copy (`tokens[i] == tokens[i + p]`).
///
/// Among the periods that qualify, the one whose repeat spans the most tokens wins, and among those
/// the smallest: a ten-token loop whose unit happens to end in "the the" is reported as period 10,
/// not period 1, and `ABABAB` is period 2, not 4. A period-`p` repeat is found in O(span) steps, and
/// only periods up to half the sequence are tried.
pub fn tip_cycle(tokens: &[u32]) -> Option<Cycle> {
    let n = tokens.len();
    let mut best: Option<(usize, usize)> = None; // (span, period)
    for p in 1..=n / 2 {
        // The last p tokens must equal the p before them.
        if tokens[n - p..] != tokens[n - 2 * p..n - p] {
            continue;
        }
        // Extend back while the sequence keeps its period.
        let mut start = n - 2 * p;
        while start > 0 && tokens[start - 1] == tokens[start - 1 + p] {
            start -= 1;
        }
        let span = n - start;
        if best.is_none_or(|(s, _)| span > s) {
            best = Some((span, p));
        }
    }
    best.map(|(span, period)| Cycle {
        period,
        repeats: span as f64 / period as f64,
        since_position: n - span,
    })
}

/// Positions at or after `from` that belong to an `n`-gram already seen earlier in `tokens` (the
/// earlier copy may lie anywhere, the prompt included): the repeated spans a transcript highlights.
/// Returns a mask as long as `tokens`. `n` below 1 marks nothing.
pub fn repeated_ngrams(tokens: &[u32], n: usize, from: usize) -> Vec<bool> {
    let mut mask = vec![false; tokens.len()];
    if n == 0 || tokens.len() < n {
        return mask;
    }
    let mut seen: std::collections::HashSet<&[u32]> = std::collections::HashSet::new();
    for start in 0..=tokens.len() - n {
        let gram = &tokens[start..start + n];
        if !seen.insert(gram) && start + n > from {
            for m in &mut mask[start.max(from)..start + n] {
                *m = true;
            }
        }
    }
    mask
}

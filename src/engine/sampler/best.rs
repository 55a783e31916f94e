//! The largest values of a logits row, without sorting the vocabulary: its max, each block's max, the
//! ranks of a few ids, and the `n` best ids.

use super::row::LANES;

/// Largest value, NaNs passed over (negative infinity when there is none). Four vectors of independent
/// lanes: with one, each chunk waited on the last chunk's `max` (a 49k row took ~10 µs; now ~2). The
/// largest of a set is the same however it is grouped; of two zeros either may come back, which no sum
/// shifted by it can tell apart.
pub(super) fn max_of(xs: &[f32]) -> f32 {
    let chunks = xs.chunks_exact(WIDE);
    let tail = chunks.remainder();
    #[cfg(target_arch = "x86_64")]
    let acc = if is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        unsafe { x86::max_lanes_avx2(chunks) }
    } else {
        max_lanes(chunks)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let acc = max_lanes(chunks);
    tail.iter()
        .chain(&acc)
        .fold(f32::NEG_INFINITY, |a, &x| larger(a, x))
}

/// `max_of`'s lanes: four vectors' worth.
const WIDE: usize = 4 * LANES;

/// `x` where it is larger than `a`, else `a`: passes over a NaN `x`, as `maxps(x, a)` does.
#[inline(always)]
fn larger(a: f32, x: f32) -> f32 {
    if x > a {
        x
    } else {
        a
    }
}

/// The `WIDE` lanes' largest values over whole chunks.
fn max_lanes(chunks: std::slice::ChunksExact<'_, f32>) -> [f32; WIDE] {
    let mut acc = [f32::NEG_INFINITY; WIDE];
    for c in chunks {
        for j in 0..WIDE {
            acc[j] = larger(acc[j], c[j]);
        }
    }
    acc
}

/// 0-based rank of `id`: how many tokens have a strictly larger value.
pub fn rank_of(values: &[f32], id: u32) -> usize {
    let v = values[id as usize];
    values.iter().filter(|&&x| x > v).count()
}

/// `rank_of` for each of `ids`, in one pass over `values` (a report ranks its ten shown candidates:
/// ten passes over a 49k or 262k vocabulary cost a tenth of a step's own forward pass).
pub fn ranks_of(values: &[f32], ids: &[u32]) -> Vec<usize> {
    // The candidates' values, ascending (a NaN has rank 0: nothing is larger). A value `x` is larger
    // than the first `j` of them; the binary search for `j` runs only for the few `x` above the lowest.
    let mut sorted: Vec<f32> = ids
        .iter()
        .map(|&i| values[i as usize])
        .filter(|v| !v.is_nan())
        .collect();
    sorted.sort_by(f32::total_cmp);
    let Some(&lowest) = sorted.first() else {
        return vec![0; ids.len()];
    };
    // `ends[j - 1]`: how many values are larger than exactly the first `j` candidates.
    let mut ends = vec![0usize; sorted.len()];
    for chunk in values.chunks(LANES) {
        if !any_lane(chunk, |x| x > lowest) {
            continue;
        }
        for &x in chunk {
            if x > lowest {
                ends[sorted.partition_point(|&t| t < x) - 1] += 1;
            }
        }
    }
    // Larger than candidate `k`: every value that ends at `k` or later.
    let mut larger = ends;
    for k in (0..larger.len().saturating_sub(1)).rev() {
        larger[k] += larger[k + 1];
    }
    ids.iter()
        .map(|&i| {
            let v = values[i as usize];
            if v.is_nan() {
                0
            } else {
                larger[sorted.partition_point(|&t| t < v)]
            }
        })
        .collect()
}

/// Whether `pred` holds for any of `xs` (at most `LANES`): for a whole chunk the fold has no early
/// exit, so it compiles to one vector compare.
#[inline(always)]
fn any_lane(xs: &[f32], pred: impl Fn(f32) -> bool) -> bool {
    match <&[f32; LANES]>::try_from(xs) {
        Ok(c) => c.iter().fold(false, |a, &x| a | pred(x)),
        Err(_) => xs.iter().any(|&x| pred(x)),
    }
}

/// The `n` largest indices by value, sorted descending (ties by lower id first). One pass with a
/// rising threshold: candidates collect in a buffer, which is cut back to the best `n` whenever it holds
/// `2n`, so most of the vocabulary costs a single comparison.
pub fn top_n(values: &[f32], n: usize) -> Vec<u32> {
    let n = n.min(values.len());
    if n == 0 {
        return vec![];
    }
    let mut buf: Vec<(f32, u32)> = Vec::with_capacity(2 * n + 1);
    let mut thr = f32::NEG_INFINITY;
    for (c, chunk) in values.chunks(LANES).enumerate() {
        // Most chunks hold nothing at or above the threshold: one vector compare skips them.
        if !any_lane(chunk, |x| x >= thr) {
            continue;
        }
        for (i, &v) in (c * LANES..).zip(chunk) {
            if v >= thr {
                buf.push((v, i as u32));
                if buf.len() == 2 * n {
                    buf.select_nth_unstable_by(n - 1, better);
                    buf.truncate(n);
                    thr = buf.iter().fold(f32::INFINITY, |a, x| a.min(x.0));
                }
            }
        }
    }
    best_of(buf, n)
}

/// `top_n`'s order: the larger value first (`total_cmp`), then the lower id.
fn better(a: &(f32, u32), b: &(f32, u32)) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

/// The ids of the best `n` of `buf`, best first.
fn best_of(mut buf: Vec<(f32, u32)>, n: usize) -> Vec<u32> {
    if buf.len() > n {
        buf.select_nth_unstable_by(n - 1, better);
        buf.truncate(n);
    }
    buf.sort_unstable_by(better);
    buf.into_iter().map(|(_, i)| i).collect()
}

/// The largest value of each block of `BLOCK` (the last block may be shorter), NaNs passed over: one
/// pass that also gives the row's max (`max_of` of the maxima) and lets `top_n_in_blocks` skip the
/// row's bulk.
pub fn block_maxima(xs: &[f32]) -> Vec<f32> {
    let chunks = xs.chunks_exact(BLOCK);
    let tail = chunks.remainder();
    let mut maxima = Vec::with_capacity(xs.len().div_ceil(BLOCK));
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        unsafe { x86::block_maxima_avx2(chunks, &mut maxima) };
    } else {
        maxima.extend(chunks.map(largest));
    }
    #[cfg(not(target_arch = "x86_64"))]
    maxima.extend(chunks.map(largest));
    if !tail.is_empty() {
        maxima.push(largest(tail));
    }
    maxima
}

/// The largest of `xs`, NaNs passed over, one value after another (a block, a short tail).
fn largest(xs: &[f32]) -> f32 {
    xs.iter().fold(f32::NEG_INFINITY, |a, &x| larger(a, x))
}

/// Values a block of `block_maxima` spans.
pub const BLOCK: usize = WIDE;

/// `top_n` of `values`, given their `block_maxima`: the same ids in the same order. The `n`-th largest
/// block maximum is a floor: `n` blocks each hold a value at least that large, so none of the best `n`
/// is below it, and only the blocks that reach it are read (with the default top-k of 40, ~50 of
/// SmolLM2's 1,536). `top_n` alone read every value against a threshold that rose as it went: 12-19 µs
/// for half of SmolLM2's row in a step, 4-5 µs when one row is read again and again (its branches
/// learn that row; and the first chain after a pass is slower throughout, `docs/PERFORMANCE.md`).
pub(super) fn top_n_in_blocks(values: &[f32], maxima: &[f32], n: usize) -> Vec<u32> {
    let n = n.min(values.len());
    if n == 0 {
        return vec![];
    }
    let floor = if maxima.len() >= n {
        maxima[top_n(maxima, n)[n - 1] as usize]
    } else {
        f32::NEG_INFINITY
    };
    let mut buf = Vec::with_capacity(2 * n);
    for (b, _) in maxima.iter().enumerate().filter(|(_, &m)| m >= floor) {
        let start = b * BLOCK;
        let block = &values[start..(start + BLOCK).min(values.len())];
        for (i, &v) in (start..).zip(block) {
            if v >= floor {
                buf.push((v, i as u32));
            }
        }
    }
    best_of(buf, n)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{LANES, WIDE};
    use std::arch::x86_64::*;

    /// `max_lanes` in four AVX registers: `maxps(x, a)` is `larger(a, x)`, lane by lane.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn max_lanes_avx2(chunks: std::slice::ChunksExact<'_, f32>) -> [f32; WIDE] {
        let mut acc = [_mm256_set1_ps(f32::NEG_INFINITY); WIDE / LANES];
        for c in chunks {
            for (k, a) in acc.iter_mut().enumerate() {
                // SAFETY: each chunk holds `WIDE` floats.
                let x = unsafe { _mm256_loadu_ps(c.as_ptr().add(k * LANES)) };
                *a = _mm256_max_ps(x, *a);
            }
        }
        let mut out = [0f32; WIDE];
        for (k, a) in acc.iter().enumerate() {
            // SAFETY: 8-float stores inside a `WIDE`-float array.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(k * LANES), *a) };
        }
        out
    }

    /// Each whole block's largest value, pushed onto `out`: `max_lanes_avx2` over one block, then
    /// across its lanes (NaN-free by then, so in any order).
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn block_maxima_avx2(
        chunks: std::slice::ChunksExact<'_, f32>,
        out: &mut Vec<f32>,
    ) {
        for c in chunks {
            let mut acc = [_mm256_set1_ps(f32::NEG_INFINITY); WIDE / LANES];
            for (k, a) in acc.iter_mut().enumerate() {
                // SAFETY: each chunk holds `WIDE` floats.
                let x = unsafe { _mm256_loadu_ps(c.as_ptr().add(k * LANES)) };
                *a = _mm256_max_ps(x, *a);
            }
            let m = _mm256_max_ps(_mm256_max_ps(acc[0], acc[1]), _mm256_max_ps(acc[2], acc[3]));
            let m = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps::<1>(m));
            let m = _mm_max_ps(m, _mm_movehl_ps(m, m));
            let m = _mm_max_ss(m, _mm_shuffle_ps::<1>(m, m));
            out.push(_mm_cvtss_f32(m));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows with what breaks a careless order: NaNs, both zeros, both infinities, runs of ties, a block
    /// of NaNs only, and lengths that leave a short last block.
    fn rows() -> Vec<Vec<f32>> {
        let mut z = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            z ^= z << 13;
            z ^= z >> 7;
            z ^= z << 17;
            z
        };
        let mut rows = Vec::new();
        for len in [0, 1, 7, 31, 32, 33, 100, 1000, 4099] {
            let row: Vec<f32> = (0..len)
                .map(|_| match next() % 23 {
                    0 => f32::NAN,
                    1 => 0.0,
                    2 => -0.0,
                    3 => f32::INFINITY,
                    4 => f32::NEG_INFINITY,
                    5..=9 => 1.5,
                    _ => ((next() >> 40) % 512) as f32 / 16.0 - 16.0,
                })
                .collect();
            rows.push(row.clone());
            // Far above a flat bulk, as real logits are; and a row whose second block is all NaN.
            rows.push(
                (0..len)
                    .map(|i| if i % 97 == 3 { 20.0 } else { -1.0 })
                    .collect(),
            );
            let mut holed = row;
            holed
                .iter_mut()
                .skip(BLOCK)
                .take(BLOCK)
                .for_each(|x| *x = f32::NAN);
            rows.push(holed);
        }
        rows
    }

    /// Each block's maximum is the block's own fold, NaNs passed over, and their max is `max_of`'s
    /// (compared as values: of two zeros either may come back).
    #[test]
    fn block_maxima_are_each_blocks_largest() {
        for row in rows() {
            let maxima = block_maxima(&row);
            assert_eq!(maxima.len(), row.len().div_ceil(BLOCK));
            for (b, m) in maxima.iter().enumerate() {
                let block = &row[b * BLOCK..((b + 1) * BLOCK).min(row.len())];
                let want = block
                    .iter()
                    .filter(|x| !x.is_nan())
                    .fold(f32::NEG_INFINITY, |a, &x| a.max(x));
                assert!(*m == want, "block {b}: {m} against {want}");
            }
            let naive = row
                .iter()
                .filter(|x| !x.is_nan())
                .fold(f32::NEG_INFINITY, |a, &x| a.max(x));
            assert!(max_of(&maxima) == naive && max_of(&row) == naive);
        }
    }

    /// Reading only the blocks that reach the floor gives `top_n`'s ids in `top_n`'s order, for every
    /// `n` up to past the row's length.
    #[test]
    fn best_in_blocks_are_top_n() {
        for row in rows() {
            let maxima = block_maxima(&row);
            for n in [0, 1, 2, 5, 40, 64, row.len() / 2, row.len(), row.len() + 3] {
                assert_eq!(
                    top_n_in_blocks(&row, &maxima, n),
                    top_n(&row, n),
                    "len {}, n {n}",
                    row.len()
                );
            }
        }
    }
}

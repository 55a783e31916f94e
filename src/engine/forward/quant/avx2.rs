//! AVX2 (+FMA, F16C) tile kernels: a 16-row tile as two 8-lane halves, `maddubs`+`madd` for the dots.
//! The Q8_0 kernels are in `avx2_q8.rs`, the K-quants' in `avx2_k.rs`, Q5_0's in `avx2_q5.rs`.
//!
//! Same arithmetic and order as `scalar.rs` (see there), so results are bit-identical to it.
//!
//! A lone activation row (a decode step) has kernels of its own (`q4_1_one_row`, `q8_0_one_row`, and
//! the same for Q5_0, Q4_K and Q6_K beside theirs): the kernels for several rows take each tile twice,
//! 8 of its 16 rows a time, broadcasting each 4 activation bytes twice; a decode kernel takes both
//! halves of a block in one pass, each broadcast once (a sixth fewer instructions a block; figures in
//! docs/PERFORMANCE.md, round nineteen). Each row's sums still run over its blocks in order.

use super::act::Act;
use super::layout::{TileQ4_1, QK, TILE};
use std::arch::x86_64::*;

pub use super::avx2_k::{q4k, q6k};
pub use super::avx2_q5::{q5_0, q5_0p, q5_0u, unpack_q5_0, Q5Groups};
pub use super::avx2_q8::q8_0;

pub fn available() -> bool {
    is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
}

/// Broadcasts the 4 activation bytes at `a` to every 32-bit lane.
///
/// # Safety
/// `a..a + 4` must be readable (any alignment), and the CPU must support AVX (`available()`).
#[inline(always)]
pub(super) unsafe fn bcast4(a: *const i8) -> __m256i {
    // SAFETY: the caller guarantees 4 readable bytes at `a` and AVX; `read_unaligned` needs no alignment.
    unsafe { _mm256_set1_epi32((a as *const i32).read_unaligned()) }
}

/// How far ahead of the block being read a kernel asks for the weights (bytes). A one-row (decode)
/// matmul streams every weight once and does little with each byte, so the hardware prefetcher alone
/// left the core waiting: the AVX2 Q8_0 kernel read Gemma 3's 178 MB head in 5.9 ms on one Zen 5 thread,
/// 4.7 ms asking 6 KB ahead; on two, 2.7-2.8 ms against 2.1-2.3 at 6-8 KB ahead (`quick -- 2 kernel
/// token_embd.weight 1`, `ISA=avx2`). 6-12 KB read alike there; 3 KB and less gained little.
pub(super) const PREFETCH_AHEAD: usize = 8 << 10;

/// Asks for the bytes `PREFETCH_AHEAD` past `block` (as many as it holds) to be brought into L1: the
/// same tile `PREFETCH_AHEAD` bytes on, or the next tiles of the matrix (`forward::prefetch`); nothing
/// while a decode step's plan has the prefetch off (`decode_plan.rs`: it costs Zen 4 a tenth of a step).
#[inline(always)]
pub(super) fn prefetch_ahead<T>(block: &T) {
    if !crate::engine::forward::prefetch::weights_ahead() {
        return;
    }
    let at = (block as *const T as *const u8).wrapping_add(PREFETCH_AHEAD);
    crate::engine::forward::prefetch::lines(at, std::mem::size_of::<T>());
}

/// 8 f16 values from `h[8 * half..][..8]` as f32.
#[inline]
#[target_feature(enable = "avx2,f16c")]
pub(super) fn f16x8(h: &[u16; TILE], half: usize) -> __m256 {
    let h = &h[8 * half..][..8];
    // SAFETY: `h` is 8 u16 = 16 readable bytes (the slice above is bounds-checked); `loadu` is unaligned.
    _mm256_cvtph_ps(unsafe { _mm_loadu_si128(h.as_ptr() as *const __m128i) })
}

/// Pointers to row `c0`, block 0 of `act`'s quants, `d` and `s`; row `c0 + c`, block `b` is at
/// offset `c * nb + b` blocks from them. Checks that rows `c0..c0+C` exist.
#[inline(always)]
pub(super) fn rows<const C: usize>(act: &Act, c0: usize) -> (*const i8, *const f32, *const f32) {
    assert!(c0 + C <= act.m);
    let i = c0 * act.nb;
    (
        act.qs[i * QK..].as_ptr(),
        act.d[i..].as_ptr(),
        act.s[i..].as_ptr(),
    )
}

/// How a kernel sweeps a row of tiles. One activation row (a decode step) goes to `$one_row`, which
/// takes both halves of each block in one pass (see the module's note). Several rows (a prefill, a
/// speculative check) take the row twice: `$span` (a call of the kernel's span function for rows
/// `8 $half..8 $half + 8`, adding into `$acc`) over every tile for rows 0-7, then again, from cache,
/// for rows 8-15, each followed by `$store($out, half, &acc)`: each tile serves every activation row
/// while it is cached. Returns from the kernel it is written in.
macro_rules! by_halves {
    ($tiles:expr, $act:expr, $zero:expr, $out:expr, $store:expr, $one_row:expr,
     |$half:ident, $acc:ident| $span:expr) => {{
        let one = <&mut [[f32; super::layout::TILE]; 1]>::try_from(&mut $out[..]);
        if let (1, Ok(row)) = ($act.m, one) {
            // SAFETY: the kernel's contract (AVX2, FMA and F16C) is the one-row kernel's; `$act`
            // has the one row.
            return unsafe { $one_row($tiles, $act, row) };
        }
        for $half in 0..2 {
            let mut acc = $zero;
            let $acc = &mut acc;
            $span;
            $store($out, $half, &acc);
        }
    }};
}
pub(super) use by_halves;

/// A one-row kernel's step over 4-bit weights (Q4_1, Q4_K): the 32 bytes at `at` in `qs` (rows 0-7;
/// rows 8-15 at `at + 32`) hold two nibbles a value pair; their low nibbles are dotted with `x` and
/// their high ones with `y` (the broadcast activations), and each half's i16 sums gain both.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn nibble_dots(
    qs: &[u8],
    at: usize,
    (x, y): (__m256i, __m256i),
    sum16: &mut [__m256i; 2],
) {
    let low = _mm256_set1_epi8(0x0F);
    for (half, sum16) in sum16.iter_mut().enumerate() {
        let v = &qs[at + 32 * half..][..32];
        // SAFETY: `v` is 32 readable bytes (bounds-checked slice); `loadu` is unaligned.
        let v = unsafe { _mm256_loadu_si256(v.as_ptr() as *const __m256i) };
        let lo = _mm256_maddubs_epi16(_mm256_and_si256(v, low), x);
        let hi = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), low), y);
        *sum16 = _mm256_add_epi16(*sum16, _mm256_add_epi16(lo, hi));
    }
}

/// Stores rows `8 half..8 half + 8` of each output row of a tile from `acc`.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn store_half<const C: usize>(
    out: &mut [[f32; TILE]; C],
    half: usize,
    acc: &[__m256; C],
) {
    for (o, a) in out.iter_mut().zip(acc) {
        let o = &mut o[8 * half..][..8];
        // SAFETY: `o` is 8 writable floats (bounds-checked slice); `storeu` is unaligned.
        unsafe { _mm256_storeu_ps(o.as_mut_ptr(), *a) };
    }
}

/// Q4_1 x Q8_1 for activation rows `c0..c0+C`; see `scalar::q4_1`.
/// Each `maddubs` pair sum is at most 2*15*127 = 3810, so the 8 of a block add up in i16 (30480).
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C (`available()`).
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q4_1<const C: usize>(
    tiles: &[TileQ4_1],
    act: &Act,
    c0: usize,
    out: &mut [[f32; TILE]; C],
) {
    assert_eq!(tiles.len(), act.nb);
    // SAFETY (each span): AVX2, FMA and F16C per this fn's contract; `tiles` is the whole row.
    by_halves!(
        tiles,
        act,
        [_mm256_setzero_ps(); C],
        out,
        store_half,
        q4_1_one_row,
        |half, acc| unsafe { q4_1_span(tiles, half, act, c0, acc) }
    );
}

/// `q4_1` for a lone activation row (a decode step): both halves of each block in one pass, so each
/// 4 activation bytes are broadcast once for the tile's 16 rows, not once for each 8 (a sixth fewer
/// instructions a block; a decode step's AVX2 matmuls are as much arithmetic as memory). Each row's
/// sum runs over its blocks in the same order, each block's as `q4_1_span` adds it: the same bits.
///
/// # Safety
/// As for `q4_1`; `act.m == 1`.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn q4_1_one_row(tiles: &[TileQ4_1], act: &Act, out: &mut [[f32; TILE]; 1]) {
    let (qs, d, s) = rows::<1>(act, 0);
    assert_eq!(tiles.len(), act.nb);
    let ones = _mm256_set1_epi16(1);
    let mut acc = [_mm256_setzero_ps(); 2];
    for (b, tile) in tiles.iter().enumerate() {
        prefetch_ahead(tile);
        let mut sum16 = [_mm256_setzero_si256(); 2];
        // SAFETY: `rows` checked that row 0 exists, so block `b < nb` of it is inside `act.qs`.
        let a = unsafe { qs.add(b * QK) };
        for p in 0..4 {
            // SAFETY: `16 + 4p + 4 <= QK` bytes of the block; AVX2 per this fn's contract.
            let (x, y) = unsafe { (bcast4(a.add(4 * p)), bcast4(a.add(16 + 4 * p))) };
            nibble_dots(&tile.qs, p * TILE * 4, (x, y), &mut sum16);
        }
        // SAFETY: `rows` checked row 0 exists: index `b` is inside `act.d` and `act.s`.
        let (da, sa) = unsafe { (_mm256_set1_ps(*d.add(b)), _mm256_set1_ps(*s.add(b))) };
        for (half, acc) in acc.iter_mut().enumerate() {
            let (dw, mw) = (f16x8(&tile.d, half), f16x8(&tile.m, half));
            let isum = _mm256_cvtepi32_ps(_mm256_madd_epi16(sum16[half], ones));
            // candle's unfused `acc += (isum*dw)*da + mw*sa`
            let t = _mm256_mul_ps(_mm256_mul_ps(isum, dw), da);
            *acc = _mm256_add_ps(*acc, _mm256_add_ps(t, _mm256_mul_ps(mw, sa)));
        }
    }
    for (half, acc) in acc.iter().enumerate() {
        store_half(out, half, &[*acc]);
    }
}

/// `q4_1`'s sums for rows `8 half..8 half + 8` over the row's `tiles`.
///
/// # Safety
/// As for `q4_1`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn q4_1_span<const C: usize>(
    tiles: &[TileQ4_1],
    half: usize,
    act: &Act,
    c0: usize,
    acc: &mut [__m256; C],
) {
    let (qs, d, s) = rows::<C>(act, c0);
    let nb = act.nb;
    assert_eq!(tiles.len(), nb);
    let low = _mm256_set1_epi8(0x0F);
    let ones = _mm256_set1_epi16(1);
    for (b, tile) in tiles.iter().enumerate() {
        if half == 0 {
            prefetch_ahead(tile);
        }
        let (dw, mw) = (f16x8(&tile.d, half), f16x8(&tile.m, half));
        let mut sum16 = [_mm256_setzero_si256(); C];
        for p in 0..4 {
            let at = (p * TILE + 8 * half) * 4;
            let v = &tile.qs[at..at + 32];
            // SAFETY: `v` is 32 readable bytes (bounds-checked slice); `loadu` is unaligned.
            let v = unsafe { _mm256_loadu_si256(v.as_ptr() as *const __m256i) };
            let lo = _mm256_and_si256(v, low);
            let hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
            for (c, sum16) in sum16.iter_mut().enumerate() {
                // SAFETY: `rows` checked that rows c0..c0+C exist, so block `c * nb + b` (b < nb)
                // of them is inside `act.qs`, and `16 + 4p + 4 <= QK`; AVX2 per this fn's contract.
                let (x, y) = unsafe {
                    let a = qs.add((c * nb + b) * QK);
                    (bcast4(a.add(4 * p)), bcast4(a.add(16 + 4 * p)))
                };
                let x = _mm256_maddubs_epi16(lo, x);
                let y = _mm256_maddubs_epi16(hi, y);
                *sum16 = _mm256_add_epi16(*sum16, _mm256_add_epi16(x, y));
            }
        }
        for (c, acc) in acc.iter_mut().enumerate() {
            let i = c * nb + b;
            let isum = _mm256_madd_epi16(sum16[c], ones);
            // SAFETY: `rows` checked rows c0..c0+C exist: index `c * nb + b` of them is inside
            // `act.d` and `act.s` (both one value per block).
            let (da, sa) = unsafe { (*d.add(i), *s.add(i)) };
            // candle's unfused `acc += (isum*dw)*da + mw*sa`
            let t = _mm256_mul_ps(
                _mm256_mul_ps(_mm256_cvtepi32_ps(isum), dw),
                _mm256_set1_ps(da),
            );
            let u = _mm256_mul_ps(mw, _mm256_set1_ps(sa));
            *acc = _mm256_add_ps(*acc, _mm256_add_ps(t, u));
        }
    }
}

//! The AVX2 Q5_0 kernel, on any of Q5_0's tile forms (`layout_q5`), and the unpacking a prefill does once
//! a chunk. Same arithmetic and order as `scalar.rs`: bit-identical to it.

use super::act::Act;
use super::avx2::{bcast4, by_halves, f16x8, prefetch_ahead, rows, store_half};
use super::layout::{SignedQ5, TileQ5_0, TileQ5_0U, TileQ8_0, QK, TILE};
use std::arch::x86_64::*;

/// A Q5_0 tile in any of its forms (`layout_q5`), as the AVX2 kernel reads it: group `g` of rows `8 half..8 half + 8`
/// as 32 unsigned bytes, the file's 5-bit quants `u` in 0..=31 (the unpacked form's signed `u - 16`
/// plus 16; the unsigned unpacking as it is; at 5 bits the nibbles with the fifth bits or-ed in).
pub trait Q5Groups: SignedQ5 {
    /// # Safety
    /// The CPU must support AVX2.
    unsafe fn group(&self, half: usize, g: usize) -> __m256i;
}

impl Q5Groups for TileQ8_0 {
    #[inline(always)]
    unsafe fn group(&self, half: usize, g: usize) -> __m256i {
        let v = &self.qs[(g * TILE + 8 * half) * 4..][..32];
        // SAFETY: `v` is 32 readable bytes (bounds-checked slice); AVX2 per this fn's contract.
        unsafe {
            let v = _mm256_loadu_si256(v.as_ptr() as *const __m256i);
            _mm256_add_epi8(v, _mm256_set1_epi8(16))
        }
    }
}

impl Q5Groups for TileQ5_0U {
    #[inline(always)]
    unsafe fn group(&self, half: usize, g: usize) -> __m256i {
        let v = &self.qs[(g * TILE + 8 * half) * 4..][..32];
        // SAFETY: `v` is 32 readable bytes (bounds-checked slice); AVX2 per this fn's contract.
        unsafe { _mm256_loadu_si256(v.as_ptr() as *const __m256i) }
    }
}

impl Q5Groups for TileQ5_0 {
    #[inline(always)]
    unsafe fn group(&self, half: usize, g: usize) -> __m256i {
        // SAFETY: AVX2 per this fn's contract.
        unsafe { q5_0_group(self, half, g) }
    }
}

/// Q5_0 (any form: `Q5Groups`) x Q8_0 for activation rows `c0..c0+C`; see `scalar::q5_0`.
/// The weights enter `maddubs` as their unsigned 5-bit quants `u = q + 16` (at most 31), so no sign
/// steps; each row's two i16 lanes start from the block's `Act::lane_bias` (`16 a` summed over the
/// values each lane takes), the `u a` pairs come off them, and they end at `-sum(q a)` over their 16
/// values, in -32768..=32512: one `madd` by -1 gives the block's dot, the same exact integer. The
/// subtractions on the way wrap harmlessly; `maddubs` saturates, but its pair sums are at most
/// 2 * 31 * 128. The float part is one unfused `acc += (isum*dw)*da` a block. At 5 bits it reads 35%
/// fewer weight bytes for the same bits.
///
/// # Safety
/// As for `q4_1`.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q5_0<const C: usize>(
    tiles: &[impl Q5Groups],
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
        q5_0_one_row,
        |half, acc| unsafe { q5_0_span(tiles, half, act, c0, acc) }
    );
}

/// `q5_0` for a lone activation row (a decode step): both halves of each block in one pass, so the
/// block's lane bias and each activation group are broadcast once for the tile's 16 rows (as
/// `avx2::q4_1` does). Each row's sum runs over its blocks in the same order: the same bits.
///
/// # Safety
/// As for `q5_0`; `act.m == 1`.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn q5_0_one_row(tiles: &[impl Q5Groups], act: &Act, out: &mut [[f32; TILE]; 1]) {
    let (qs, d, _) = rows::<1>(act, 0);
    assert_eq!(tiles.len(), act.nb);
    let bias = act.lane_bias[..act.nb].as_ptr() as *const i8;
    let minus_ones = _mm256_set1_epi16(-1);
    let mut acc = [_mm256_setzero_ps(); 2];
    for (b, tile) in tiles.iter().enumerate() {
        prefetch_ahead(tile);
        // SAFETY: `bias` holds `nb` 4-byte entries (the slice above is bounds-checked), `b < nb`.
        let mut sum16 = [unsafe { bcast4(bias.add(4 * b)) }; 2];
        for g in 0..8 {
            // SAFETY: `rows` checked that row 0 exists, so block `b < nb` of it is inside `act.qs`
            // with `4g + 4 <= QK` bytes of it read; AVX2 per this fn's contract.
            let a = unsafe { bcast4(qs.add(b * QK + 4 * g)) };
            for (half, sum16) in sum16.iter_mut().enumerate() {
                // SAFETY: AVX2 per this fn's contract.
                let u = unsafe { tile.group(half, g) };
                *sum16 = _mm256_sub_epi16(*sum16, _mm256_maddubs_epi16(u, a));
            }
        }
        // SAFETY: `rows` checked row 0 exists: index `b` is inside `act.d`.
        let da = _mm256_set1_ps(unsafe { *d.add(b) });
        for (half, acc) in acc.iter_mut().enumerate() {
            let isum = _mm256_cvtepi32_ps(_mm256_madd_epi16(sum16[half], minus_ones));
            // candle's unfused `acc += (isum*dw)*da`
            let t = _mm256_mul_ps(_mm256_mul_ps(isum, f16x8(tile.scales(), half)), da);
            *acc = _mm256_add_ps(*acc, t);
        }
    }
    for (half, acc) in acc.iter().enumerate() {
        store_half(out, half, &[*acc]);
    }
}

/// `q5_0`'s sums for rows `8 half..8 half + 8` over the row's `tiles`.
///
/// # Safety
/// As for `q5_0`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn q5_0_span<const C: usize>(
    tiles: &[impl Q5Groups],
    half: usize,
    act: &Act,
    c0: usize,
    acc: &mut [__m256; C],
) {
    let (qs, d, _) = rows::<C>(act, c0);
    let nb = act.nb;
    assert_eq!(tiles.len(), nb);
    let bias = act.lane_bias[c0 * nb..(c0 + C) * nb].as_ptr() as *const i8;
    let minus_ones = _mm256_set1_epi16(-1);
    for (b, tile) in tiles.iter().enumerate() {
        if half == 0 {
            prefetch_ahead(tile);
        }
        let dw = f16x8(tile.scales(), half);
        // SAFETY: `bias` holds `C * nb` 4-byte entries (the slice above is bounds-checked), and
        // `c * nb + b` is one of them; AVX2 per this fn's contract.
        let mut sum16: [__m256i; C] =
            std::array::from_fn(|c| unsafe { bcast4(bias.add(4 * (c * nb + b))) });
        for g in 0..8 {
            // SAFETY: AVX2 per this fn's contract.
            let u = unsafe { tile.group(half, g) };
            for (c, sum16) in sum16.iter_mut().enumerate() {
                // SAFETY: `rows` checked rows c0..c0+C exist, so block `c * nb + b` (b < nb) is
                // inside `act.qs` with `4g + 4 <= QK` bytes of it read; AVX2 per this fn's contract.
                let a = unsafe { bcast4(qs.add((c * nb + b) * QK + 4 * g)) };
                *sum16 = _mm256_sub_epi16(*sum16, _mm256_maddubs_epi16(u, a));
            }
        }
        for (c, acc) in acc.iter_mut().enumerate() {
            let isum = _mm256_madd_epi16(sum16[c], minus_ones);
            // SAFETY: `rows` checked rows c0..c0+C exist: index `c * nb + b` is inside `act.d`.
            let da = unsafe { *d.add(c * nb + b) };
            // candle's unfused `acc += (isum*dw)*da`
            let t = _mm256_mul_ps(
                _mm256_mul_ps(_mm256_cvtepi32_ps(isum), dw),
                _mm256_set1_ps(da),
            );
            *acc = _mm256_add_ps(*acc, t);
        }
    }
}

/// Q5_0 kept at 5 bits, and unpacked unsigned: `q5_0` on the other forms.
pub use self::{q5_0 as q5_0p, q5_0 as q5_0u};

/// 32 bytes from 32 bits: byte `i` is 0xFF where bit `i` of `bits` is set, else 0.
#[inline]
#[target_feature(enable = "avx2")]
fn spread_bits(bits: u32) -> __m256i {
    // Byte i takes byte i / 8 of the word (a shuffle works within each 128-bit half, where the
    // broadcast word is whole), then every bit but i % 8 is set: all ones exactly when that bit is.
    let pick = _mm256_set_epi64x(
        0x0303_0303_0303_0303,
        0x0202_0202_0202_0202,
        0x0101_0101_0101_0101,
        0,
    );
    let bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(bits as i32), pick);
    let others = _mm256_set1_epi64x(0x7FBF_DFEF_F7FB_FDFE_u64 as i64);
    _mm256_cmpeq_epi8(_mm256_or_si256(bytes, others), _mm256_set1_epi8(-1))
}

/// Group `g` of rows `8 half..8 half + 8` of a 5-bit tile as its unsigned quants `u`: the nibbles,
/// with 16 or-ed in where the fifth bit is set.
#[inline]
#[target_feature(enable = "avx2")]
fn q5_0_group(tile: &TileQ5_0, half: usize, g: usize) -> __m256i {
    let at = ((g % 4) * TILE + 8 * half) * 4;
    let v = &tile.qs[at..at + 32];
    // SAFETY: `v` is 32 readable bytes (bounds-checked slice); `loadu` is unaligned.
    let v = unsafe { _mm256_loadu_si256(v.as_ptr() as *const __m256i) };
    let low = _mm256_set1_epi8(0x0F);
    let nibbles = match g {
        0..4 => _mm256_and_si256(v, low),
        _ => _mm256_and_si256(_mm256_srli_epi16(v, 4), low),
    };
    let high = spread_bits(tile.qh[half * 8 + g]);
    _mm256_or_si256(nibbles, _mm256_and_si256(high, _mm256_set1_epi8(16)))
}

/// `TileQ5_0::unpack` in 16 vector steps, into `out`: a prefill unpacks each tile once for a chunk of
/// rows.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn unpack_q5_0(tile: &TileQ5_0, out: &mut TileQ5_0U) {
    out.d = tile.d;
    for half in 0..2 {
        for g in 0..8 {
            let u = q5_0_group(tile, half, g);
            let dst = &mut out.qs[(g * TILE + 8 * half) * 4..][..32];
            // SAFETY: `dst` is 32 writable bytes (bounds-checked slice); `storeu` is unaligned.
            unsafe { _mm256_storeu_si256(dst.as_mut_ptr() as *mut __m256i, u) };
        }
    }
}

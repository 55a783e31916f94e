//! Weight tiles: GGUF Q4_1 / Q8_0 / Q5_0 rows regrouped 16 output rows at a time, so one SIMD lane is one
//! output row.
//!
//! GGUF stores a matrix `W[n][k]` row by row, in blocks of 32 values:
//! - Q4_1 block (20 bytes): f16 `d`, f16 `m`, 16 bytes of nibbles; value `x = d*q + m`, `q` in 0..16.
//!   Byte `j` holds `q[j]` in its low nibble and `q[j+16]` in its high nibble.
//! - Q8_0 block (34 bytes): f16 `d`, 32 signed bytes; value `x = d*q`.
//! - Q5_0 block (22 bytes): f16 `d`, 4 bytes `qh` of high bits, 16 bytes of nibbles; value
//!   `x = d*(q - 16)`, `q` in 0..32: byte `j`'s low nibble and bit `j` of `qh` make `q[j]`, its high
//!   nibble and bit `j+16` make `q[j+16]`. Kept at 5 bits in `TileQ5_0` where the kernels are AVX2's
//!   or scalar (decode reads its 22 bytes a block; a prefill chunk unpacks each tile once, `layout_q5`);
//!   unpacked at load into a Q8_0 tile of the signed values `q - 16` (34 bytes a block) for AVX-512's
//!   kernels. All take exact 8-bit dots as for Q8_0.
//!
//! A tile holds one 32-value block column of 16 consecutive rows. Its quants are laid out in 4-value
//! groups, row-minor: `[group][row 0..16][4 bytes]`, so a 64-byte load is "4 k-values of 16 rows" and
//! one `vpdpbusd` (or `maddubs`+`madd`) against 4 broadcast activation bytes yields 16 row sums.
//! For Q4_1 the regrouping is a pure 4-byte shuffle: nibble byte group `p` (bytes 4p..4p+4) holds
//! k-values 4p..4p+4 in its low nibbles and 16+4p..16+4p+4 in its high nibbles.

use super::layout_k::{TileQ4K, TileQ6K};
pub use super::layout_q5::{SignedQ5, TileQ5_0U};
use half::f16;
use rayon::prelude::*;

/// Output rows per tile: the f32 lanes of one 512-bit register, or two 256-bit registers.
pub const TILE: usize = 16;
/// Values per quantisation block (Q4_1, Q8_0, Q8_1 all use 32).
pub const QK: usize = 32;

const Q4_1_BYTES: usize = 20;
const Q8_0_BYTES: usize = 34;
const Q5_0_BYTES: usize = 22;

/// One block column of 16 Q4_1 rows (320 bytes, the same size as the 16 GGUF blocks).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub struct TileQ4_1 {
    /// f16 bits of each row's scale `d`.
    pub d: [u16; TILE],
    /// f16 bits of each row's minimum `m`.
    pub m: [u16; TILE],
    /// `[p in 0..4][row][4 bytes]`, each byte `q[4p+j] | q[16+4p+j] << 4`.
    pub qs: [u8; TILE * QK / 2],
}

/// One block column of 16 Q8_0 rows (544 bytes).
#[derive(Clone, Copy)]
#[repr(C, align(32))]
pub struct TileQ8_0 {
    /// f16 bits of each row's scale `d`.
    pub d: [u16; TILE],
    /// `[g in 0..8][row][4 bytes]`: k-values 4g..4g+4 of each row, signed bytes stored as `u8`.
    pub qs: [u8; TILE * QK],
}

/// One block column of 16 Q5_0 rows kept at 5 bits (352 bytes, the size of the 16 GGUF blocks): the
/// form decode reads, 35% fewer bytes than Q5_0 unpacked to signed bytes.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
pub struct TileQ5_0 {
    /// f16 bits of each row's scale `d`.
    pub d: [u16; TILE],
    /// `[half][g in 0..8]`: bit `i` is the fifth bit of byte `i` of group `g`'s 32 bytes for rows
    /// `8 half..8 half + 8` (row `8 half + i / 4`, value `4g + i % 4`), so a kernel spreads one word.
    pub qh: [u32; TILE],
    /// `[p in 0..4][row][4 bytes]`, each byte the low 4 bits of `q[4p+j]` and, above, of `q[16+4p+j]`.
    pub qs: [u8; TILE * QK / 2],
}

/// Weights of one matrix, regrouped into tiles: `tiles[t * nb + b]` is row tile `t`, block column `b`.
/// Rows past `n` in the last tile are zero (scale 0), so they compute to 0 and are never written out.
pub enum Tiles {
    Q4_1(Vec<TileQ4_1>),
    Q8_0(Vec<TileQ8_0>),
    /// Q5_0 weights unpacked to signed bytes in Q8_0 tiles (their own kernels: one float sum a block),
    /// for the AVX-512 kernels' `vpdpbusd`.
    Q5_0(Vec<TileQ8_0>),
    /// Q5_0 weights kept at 5 bits (`TileQ5_0`), for the AVX2 and scalar kernels.
    Q5_0P(Vec<TileQ5_0>),
    /// K-quants (`layout_k.rs`): one 256-value super-block column per tile.
    Q4K(Vec<TileQ4K>),
    Q6K(Vec<TileQ6K>),
}

pub fn f16_to_f32(bits: u16) -> f32 {
    f16::from_bits(bits).to_f32()
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Bytes of a Q4_0 block: `d` (f16), then 16 bytes of four-bit quants.
const Q4_0_BYTES: usize = 18;

/// Q4_0 blocks (`d`, then 32 four-bit quants q, each worth d·(q − 8)) as Q4_1 blocks (`d`, `m`, the
/// same quants, each worth d·q + m) with m = −8d, for the Q4_1 kernels: a re-quantised draft or model
/// B is Q4_0, which had no kernel of its own and ran 3-4x slower a byte. Every value is the same:
/// d·q, 8d and their difference are exact in f32 (an f16 times a 4-bit integer), and so is −8d in f16;
/// only a zero's sign can differ (d·8 − 8d is +0 where candle's 0·d is −0 for a negative d).
pub fn q4_0_as_q4_1(raw: &[u8]) -> Vec<u8> {
    assert!(raw.len().is_multiple_of(Q4_0_BYTES), "whole Q4_0 blocks");
    let mut out = Vec::with_capacity(raw.len() / Q4_0_BYTES * Q4_1_BYTES);
    for block in raw.chunks_exact(Q4_0_BYTES) {
        let d = f16::from_bits(u16_at(block, 0));
        let m = f16::from_f32(-8.0 * d.to_f32());
        out.extend_from_slice(&block[..2]);
        out.extend_from_slice(&m.to_bits().to_le_bytes());
        out.extend_from_slice(&block[2..]);
    }
    out
}

/// Regroups the raw GGUF bytes of an `[n, k]` Q4_1 matrix (`k % 32 == 0`).
pub fn pack_q4_1(raw: &[u8], n: usize, k: usize) -> Vec<TileQ4_1> {
    let zero = TileQ4_1 {
        d: [0; TILE],
        m: [0; TILE],
        qs: [0; TILE * QK / 2],
    };
    pack(
        raw,
        (n, k, QK),
        (Q4_1_BYTES, "Q4_1"),
        zero,
        |tile, r, block| {
            tile.d[r] = u16_at(block, 0);
            tile.m[r] = u16_at(block, 2);
            for p in 0..4 {
                let dst = (p * TILE + r) * 4;
                tile.qs[dst..dst + 4].copy_from_slice(&block[4 + 4 * p..][..4]);
            }
        },
    )
}

const ZERO_Q8_0: TileQ8_0 = TileQ8_0 {
    d: [0; TILE],
    qs: [0; TILE * QK],
};

/// Regroups the raw GGUF bytes of an `[n, k]` Q8_0 matrix (`k % 32 == 0`).
pub fn pack_q8_0(raw: &[u8], n: usize, k: usize) -> Vec<TileQ8_0> {
    pack(
        raw,
        (n, k, QK),
        (Q8_0_BYTES, "Q8_0"),
        ZERO_Q8_0,
        |tile, r, block| {
            tile.d[r] = u16_at(block, 0);
            for g in 0..8 {
                let dst = (g * TILE + r) * 4;
                tile.qs[dst..dst + 4].copy_from_slice(&block[2 + 4 * g..][..4]);
            }
        },
    )
}

/// Unpacks the raw GGUF bytes of an `[n, k]` Q5_0 matrix (`k % 32 == 0`) into Q8_0 tiles of `q - 16`.
pub fn pack_q5_0(raw: &[u8], n: usize, k: usize) -> Vec<TileQ8_0> {
    pack(
        raw,
        (n, k, QK),
        (Q5_0_BYTES, "Q5_0"),
        ZERO_Q8_0,
        |tile, r, block| {
            tile.d[r] = u16_at(block, 0);
            let qh = u32_at(block, 2);
            let nibbles = &block[6..22];
            for j in 0..QK {
                let nib = if j < 16 {
                    nibbles[j] & 0x0F
                } else {
                    nibbles[j - 16] >> 4
                };
                let q = nib | (((qh >> j) & 1) as u8) << 4;
                tile.qs[((j / 4) * TILE + r) * 4 + j % 4] = (q as i8 - 16) as u8;
            }
        },
    )
}

/// Regroups the raw GGUF bytes of an `[n, k]` Q5_0 matrix (`k % 32 == 0`) into 5-bit tiles.
pub fn pack_q5_0_packed(raw: &[u8], n: usize, k: usize) -> Vec<TileQ5_0> {
    let zero = TileQ5_0 {
        d: [0; TILE],
        qh: [0; TILE],
        qs: [0; TILE * QK / 2],
    };
    pack(
        raw,
        (n, k, QK),
        (Q5_0_BYTES, "Q5_0"),
        zero,
        |tile, r, block| {
            tile.d[r] = u16_at(block, 0);
            let qh = u32_at(block, 2);
            let (half, row) = (r / 8, r % 8);
            for g in 0..8 {
                for j in 0..4 {
                    let bit = (qh >> (4 * g + j)) & 1;
                    tile.qh[half * 8 + g] |= bit << (row * 4 + j);
                }
            }
            for p in 0..4 {
                let dst = (p * TILE + r) * 4;
                tile.qs[dst..dst + 4].copy_from_slice(&block[6 + 4 * p..][..4]);
            }
        },
    )
}

/// The tiles of an `[n, k]` matrix of `bytes`-byte blocks of `qk` values: `fill(tile, r, block)` puts
/// one GGUF block into row `r` of its tile. One row tile per task: load time matters (the app starts
/// with it), and this is ~1 ms/MB.
pub(super) fn pack<T: Copy + Send>(
    raw: &[u8],
    (n, k, qk): (usize, usize, usize),
    (bytes, name): (usize, &str),
    zero: T,
    fill: impl Fn(&mut T, usize, &[u8]) + Sync,
) -> Vec<T> {
    let nb = k / qk;
    assert_eq!(
        raw.len(),
        n * nb * bytes,
        "{name} byte count for [{n}, {k}]"
    );
    let mut tiles = vec![zero; n.div_ceil(TILE) * nb];
    tiles
        .par_chunks_mut(nb)
        .enumerate()
        .for_each(|(t, tile_row)| {
            for (r, row) in (t * TILE..n.min((t + 1) * TILE)).enumerate() {
                let blocks = raw[row * nb * bytes..][..nb * bytes].chunks_exact(bytes);
                for (tile, block) in tile_row.iter_mut().zip(blocks) {
                    fill(tile, r, block);
                }
            }
        });
    tiles
}

impl Tiles {
    /// Row `r` of a `k`-wide matrix as f32, with the arithmetic of candle's `to_float` for the file's
    /// blocks (Q4_1: `q*d + m`; Q8_0 and Q5_0's unpacked `q - 16`: `q*d`), so the same bits as
    /// dequantising the GGUF row; `None` for the K-quants (their rows are not read this way).
    pub fn row(&self, r: usize, k: usize) -> Option<Vec<f32>> {
        let (nb, t, lane) = (k / QK, r / TILE, r % TILE);
        let mut out = vec![0f32; k];
        match self {
            Tiles::Q4_1(w) => {
                for (b, tile) in w[t * nb..][..nb].iter().enumerate() {
                    let (d, m) = (f16_to_f32(tile.d[lane]), f16_to_f32(tile.m[lane]));
                    let vals = &mut out[b * QK..][..QK];
                    for p in 0..4 {
                        for (j, &byte) in tile.qs[(p * TILE + lane) * 4..][..4].iter().enumerate() {
                            vals[4 * p + j] = (byte & 0x0F) as f32 * d + m;
                            vals[16 + 4 * p + j] = (byte >> 4) as f32 * d + m;
                        }
                    }
                }
            }
            Tiles::Q8_0(w) | Tiles::Q5_0(w) => {
                for (b, tile) in w[t * nb..][..nb].iter().enumerate() {
                    let d = f16_to_f32(tile.d[lane]);
                    let vals = &mut out[b * QK..][..QK];
                    for g in 0..8 {
                        for (j, &byte) in tile.qs[(g * TILE + lane) * 4..][..4].iter().enumerate() {
                            vals[4 * g + j] = byte as i8 as f32 * d;
                        }
                    }
                }
            }
            Tiles::Q5_0P(w) => {
                for (b, tile) in w[t * nb..][..nb].iter().enumerate() {
                    let d = f16_to_f32(tile.d[lane]);
                    for (v, x) in out[b * QK..][..QK].iter_mut().enumerate() {
                        *x = tile.value(lane, v) as f32 * d;
                    }
                }
            }
            Tiles::Q4K(_) | Tiles::Q6K(_) => return None,
        }
        Some(out)
    }

    /// The tiles of matrices of one kind and width, one after another: the matrix of their rows
    /// stacked (`None` for mixed kinds). Each part must be whole tiles.
    pub fn stack(parts: &[&Tiles]) -> Option<Tiles> {
        fn cat<T: Clone>(
            parts: &[&Tiles],
            get: impl Fn(&Tiles) -> Option<&Vec<T>>,
        ) -> Option<Vec<T>> {
            let mut all = Vec::new();
            for p in parts {
                all.extend_from_slice(get(p)?);
            }
            Some(all)
        }
        macro_rules! stack {
            ($($kind:ident),*) => {
                match parts.first()? {
                    $(Tiles::$kind(_) => Tiles::$kind(cat(parts, |t| match t {
                        Tiles::$kind(v) => Some(v),
                        _ => None,
                    })?),)*
                }
            };
        }
        Some(stack!(Q4_1, Q8_0, Q5_0, Q5_0P, Q4K, Q6K))
    }

    /// These tiles in a vector with room for `total` in all (a matrix read a band at a time).
    pub fn with_capacity_for(self, total: usize) -> Tiles {
        fn grow<T>(mut v: Vec<T>, total: usize) -> Vec<T> {
            v.reserve_exact(total.saturating_sub(v.len()));
            v
        }
        match self {
            Tiles::Q4_1(v) => Tiles::Q4_1(grow(v, total)),
            Tiles::Q8_0(v) => Tiles::Q8_0(grow(v, total)),
            Tiles::Q5_0(v) => Tiles::Q5_0(grow(v, total)),
            Tiles::Q5_0P(v) => Tiles::Q5_0P(grow(v, total)),
            Tiles::Q4K(v) => Tiles::Q4K(grow(v, total)),
            Tiles::Q6K(v) => Tiles::Q6K(grow(v, total)),
        }
    }

    /// Appends the next band of rows of the same matrix (so of the same kind).
    pub fn append(&mut self, more: Tiles) {
        match (self, more) {
            (Tiles::Q4_1(a), Tiles::Q4_1(b)) => a.extend(b),
            (Tiles::Q8_0(a), Tiles::Q8_0(b)) | (Tiles::Q5_0(a), Tiles::Q5_0(b)) => a.extend(b),
            (Tiles::Q5_0P(a), Tiles::Q5_0P(b)) => a.extend(b),
            (Tiles::Q4K(a), Tiles::Q4K(b)) => a.extend(b),
            (Tiles::Q6K(a), Tiles::Q6K(b)) => a.extend(b),
            _ => unreachable!("one matrix's bands are of one kind"),
        }
    }

    pub fn size_in_bytes(&self) -> usize {
        match self {
            Tiles::Q4_1(t) => std::mem::size_of_val(t.as_slice()),
            Tiles::Q8_0(t) | Tiles::Q5_0(t) => std::mem::size_of_val(t.as_slice()),
            Tiles::Q5_0P(t) => std::mem::size_of_val(t.as_slice()),
            Tiles::Q4K(t) => std::mem::size_of_val(t.as_slice()),
            Tiles::Q6K(t) => std::mem::size_of_val(t.as_slice()),
        }
    }
}

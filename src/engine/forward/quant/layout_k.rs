//! Weight tiles for the K-quants: GGUF Q4_K / Q6_K rows regrouped 16 output rows at a time (one SIMD
//! lane per output row), one 256-value super-block column per tile.
//!
//! GGUF blocks (256 values each):
//! - Q4_K (144 bytes): f16 `d`, f16 `dmin`, 12 bytes of 6-bit scales and mins for 8 sub-blocks of 32,
//!   128 bytes of nibbles; value `x = d*sc[s]*q - dmin*mn[s]`, `q` in 0..16. Byte `32c + j` holds value
//!   `64c + j` in its low nibble and `64c + 32 + j` in its high nibble.
//! - Q6_K (210 bytes): 128 bytes `ql` (low 4 bits), 64 bytes `qh` (high 2 bits), 16 signed scales for
//!   16 sub-blocks of 16, f16 `d`; value `x = d*sc[s]*(q - 32)`, `q` in 0..64.
//!
//! In a tile the scales are unpacked to one byte per (sub-block, row), `d` stays f16, and the quants
//! are laid out as in `layout.rs`: 4-value groups, row-minor (`[group][row 0..16][4 bytes]`), so a
//! 32-byte load is "4 k-values of 8 rows".
//! - Q4_K: group `p` of sub-block `s` (`g = 4s + p`) holds byte `j` = `q[32s+4p+j] | q[32s+16+4p+j] << 4`
//!   (Q4_1's pairing within a sub-block).
//! - Q6_K: group `g` holds `q[4g..4g+4]` unsigned (0..64), one byte each; sub-block `s` is groups
//!   `4s..4s+4`. The `- 32` is taken off through the activation's `bsums`.

use super::layout::{pack, TILE};

/// Values per K-quant super-block (and per Q8_K activation block).
pub const QK_K: usize = 256;

const Q4K_BYTES: usize = 144;
const Q6K_BYTES: usize = 210;

/// One super-block column of 16 Q4_K rows (2368 bytes; the 16 GGUF blocks are 2304).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub struct TileQ4K {
    /// f16 bits of each row's `d`.
    pub d: [u16; TILE],
    /// f16 bits of each row's `dmin`.
    pub dmin: [u16; TILE],
    /// `[sub-block][row]`: the 6-bit scale.
    pub sc: [u8; 8 * TILE],
    /// `[sub-block][row]`: the 6-bit minimum.
    pub mn: [u8; 8 * TILE],
    /// `[sub-block s][p in 0..4][row][4 bytes]`, see the module note.
    pub qs: [u8; TILE * QK_K / 2],
}

/// One super-block column of 16 Q6_K rows (4384 bytes; the 16 GGUF blocks are 3360).
#[derive(Clone, Copy)]
#[repr(C, align(32))]
pub struct TileQ6K {
    /// f16 bits of each row's `d`.
    pub d: [u16; TILE],
    /// `[sub-block][row]`: the signed scale.
    pub sc: [i8; 16 * TILE],
    /// `[group g in 0..64][row][4 bytes]`: `q[4g..4g+4]`, unsigned.
    pub qs: [u8; TILE * QK_K],
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

/// The 6-bit scale and minimum of sub-block `j` (ggml's `get_scale_min_k4`).
fn scale_min(j: usize, s: &[u8]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        (
            (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4),
            (s[j + 4] >> 4) | ((s[j] >> 6) << 4),
        )
    }
}

/// Regroups the raw GGUF bytes of an `[n, k]` Q4_K matrix (`k % 256 == 0`).
pub fn pack_q4k(raw: &[u8], n: usize, k: usize) -> Vec<TileQ4K> {
    let zero = TileQ4K {
        d: [0; TILE],
        dmin: [0; TILE],
        sc: [0; 8 * TILE],
        mn: [0; 8 * TILE],
        qs: [0; TILE * QK_K / 2],
    };
    pack(
        raw,
        (n, k, QK_K),
        (Q4K_BYTES, "Q4_K"),
        zero,
        |tile, r, block| {
            tile.d[r] = u16_at(block, 0);
            tile.dmin[r] = u16_at(block, 2);
            let (scales, nibbles) = (&block[4..16], &block[16..144]);
            let mut q = [0u8; QK_K];
            for (i, &byte) in nibbles.iter().enumerate() {
                let (c, j) = (i / 32, i % 32);
                q[64 * c + j] = byte & 0x0F;
                q[64 * c + 32 + j] = byte >> 4;
            }
            for s in 0..8 {
                (tile.sc[s * TILE + r], tile.mn[s * TILE + r]) = scale_min(s, scales);
                for p in 0..4 {
                    for j in 0..4 {
                        let v = &q[32 * s..];
                        tile.qs[((4 * s + p) * TILE + r) * 4 + j] =
                            v[4 * p + j] | v[16 + 4 * p + j] << 4;
                    }
                }
            }
        },
    )
}

/// Regroups the raw GGUF bytes of an `[n, k]` Q6_K matrix (`k % 256 == 0`).
pub fn pack_q6k(raw: &[u8], n: usize, k: usize) -> Vec<TileQ6K> {
    let zero = TileQ6K {
        d: [0; TILE],
        sc: [0; 16 * TILE],
        qs: [0; TILE * QK_K],
    };
    pack(
        raw,
        (n, k, QK_K),
        (Q6K_BYTES, "Q6_K"),
        zero,
        |tile, r, block| {
            let (ql, qh, scales) = (&block[..128], &block[128..192], &block[192..208]);
            tile.d[r] = u16_at(block, 208);
            let mut q = [0u8; QK_K];
            for h in 0..2 {
                let (ql, qh, q) = (&ql[64 * h..], &qh[32 * h..], &mut q[128 * h..]);
                for j in 0..32 {
                    q[j] = (ql[j] & 0x0F) | (qh[j] & 3) << 4;
                    q[j + 32] = (ql[j + 32] & 0x0F) | ((qh[j] >> 2) & 3) << 4;
                    q[j + 64] = (ql[j] >> 4) | ((qh[j] >> 4) & 3) << 4;
                    q[j + 96] = (ql[j + 32] >> 4) | ((qh[j] >> 6) & 3) << 4;
                }
            }
            for (s, &sc) in scales.iter().enumerate() {
                tile.sc[s * TILE + r] = sc as i8;
            }
            for (g, four) in q.chunks_exact(4).enumerate() {
                tile.qs[(g * TILE + r) * 4..][..4].copy_from_slice(four);
            }
        },
    )
}

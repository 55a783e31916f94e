//! Q5_0's tile forms as the kernels read them: the unsigned unpacking a prefill's chunk reads
//! (`TileQ5_0U`), and `SignedQ5`, the one view of a tile's values that the 5-bit (`TileQ5_0`), signed
//! (`TileQ8_0`) and unsigned forms share.

use super::layout::{TileQ5_0, TileQ8_0, QK, TILE};

/// A 5-bit Q5_0 tile unpacked for a prefill's chunk of rows: `TileQ8_0`'s layout, but each byte the
/// file's unsigned 5-bit quant `u` (0..=31; the value is `u - 16`), which AVX2's `maddubs` takes as it is.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
pub struct TileQ5_0U {
    /// f16 bits of each row's scale `d`.
    pub d: [u16; TILE],
    /// `[g in 0..8][row][4 bytes]`: the unsigned quants `u` of k-values 4g..4g+4 of each row.
    pub qs: [u8; TILE * QK],
}

/// A Q5_0 tile in any of its forms: its scales, and row `r`'s signed value `q - 16` at position `v` of
/// the block. The kernels take every form through it (`scalar::q5_0`, `avx2::q5_0`).
pub trait SignedQ5 {
    fn scales(&self) -> &[u16; TILE];
    fn signed(&self, r: usize, v: usize) -> i8;
}

impl SignedQ5 for TileQ8_0 {
    fn scales(&self) -> &[u16; TILE] {
        &self.d
    }

    fn signed(&self, r: usize, v: usize) -> i8 {
        self.qs[((v / 4) * TILE + r) * 4 + v % 4] as i8
    }
}

impl SignedQ5 for TileQ5_0U {
    fn scales(&self) -> &[u16; TILE] {
        &self.d
    }

    fn signed(&self, r: usize, v: usize) -> i8 {
        self.qs[((v / 4) * TILE + r) * 4 + v % 4] as i8 - 16
    }
}

impl SignedQ5 for TileQ5_0 {
    fn scales(&self) -> &[u16; TILE] {
        &self.d
    }

    fn signed(&self, r: usize, v: usize) -> i8 {
        self.value(r, v)
    }
}

impl TileQ5_0 {
    /// The tile unpacked to a byte a quant (`TileQ5_0U`), for many rows to read.
    pub fn unpack(&self) -> TileQ5_0U {
        let mut out = TileQ5_0U {
            d: self.d,
            qs: [0; TILE * QK],
        };
        for r in 0..TILE {
            for v in 0..QK {
                out.qs[((v / 4) * TILE + r) * 4 + v % 4] = (self.value(r, v) + 16) as u8;
            }
        }
        out
    }

    /// Row `r`'s signed value `q - 16` at position `v` of the block.
    pub fn value(&self, r: usize, v: usize) -> i8 {
        let (g, j) = (v % 16 / 4, v % 4);
        let byte = self.qs[(g * TILE + r) * 4 + j];
        let nibble = if v < 16 { byte & 0x0F } else { byte >> 4 };
        let high = (self.qh[(r / 8) * 8 + v / 4] >> ((r % 8) * 4 + j)) & 1;
        (nibble | (high as u8) << 4) as i8 - 16
    }
}

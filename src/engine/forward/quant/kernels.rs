//! One function per weight format that runs its kernel on 1, 2, 4 or 8 activation rows at once for
//! the chosen instruction set (`Isa`), the unpacking of 5-bit Q5_0 tiles for a prefill's chunk, and
//! one tile against a chunk's rows through them (`tile_rows`).

use super::act::{Act, Extras};
use super::layout::{TileQ5_0, TileQ5_0U, Tiles, QK, TILE};
use super::matmul::{rows_per_call, Isa};
use super::out::OutPtr;
use super::scalar;

/// `w`'s tiles unpacked to a byte a quant into `into` (`TileQ5_0::unpack`, in vector steps where the
/// kernels are SIMD), in place: `into` keeps its length from tile to tile.
pub(super) fn unpack_q5_0(isa: Isa, w: &[TileQ5_0], into: &mut Vec<TileQ5_0U>) {
    let blank = TileQ5_0U {
        d: [0; TILE],
        qs: [0; TILE * QK],
    };
    into.resize(w.len(), blank);
    #[cfg(target_arch = "x86_64")]
    if isa != Isa::Scalar {
        for (t, out) in w.iter().zip(into.iter_mut()) {
            // SAFETY: `Isa::all()` lists AVX2 or AVX-512 only if the CPU supports it, and every
            // AVX-512 CPU has AVX2.
            unsafe { super::avx2::unpack_q5_0(t, out) };
        }
        return;
    }
    let _ = isa;
    for (t, out) in w.iter().zip(into.iter_mut()) {
        *out = t.unpack();
    }
}

/// What the kernel for `tiles` on `isa` reads beside the quants (`Act::add`): AVX-512's Q8_0 the group
/// sums; AVX2's Q5_0 (which AVX-512 runs on the 5-bit form too) and Q6_K the lane biases; AVX2's Q8_0
/// the sizes, on a matrix without a weight of -128 (`abs_acts`, only ever true of Q8_0); exact block
/// sums for Q4_0 weights held as Q4_1 (`exact_sums`).
pub(super) fn extras(isa: Isa, tiles: &Tiles, abs_acts: bool, exact_sums: bool) -> Extras {
    Extras {
        exact_sums,
        gsum: matches!((isa, tiles), (Isa::Avx512Vnni, Tiles::Q8_0(_))),
        lane_bias: matches!(
            (isa, tiles),
            (Isa::Avx2, Tiles::Q5_0(_) | Tiles::Q6K(_))
                | (Isa::Avx2 | Isa::Avx512Vnni, Tiles::Q5_0P(_))
        ),
        abs: isa == Isa::Avx2 && abs_acts,
    }
}

/// Expands to one kernel call per (ISA, rows-at-once) pair; `C` must be a constant. The SIMD kernels
/// store into `out` (the caller's, kept across calls: a kernel that returned its 512 bytes was copied
/// twice on the way, 2% of a SmolLM2 prefill).
macro_rules! dispatch {
    ($isa:expr, $step:expr, $kernel:ident, $w:expr, $act:expr, $c0:expr, $out:expr, $emit:expr) => {{
        macro_rules! call {
            ($c:literal) => {{
                let out: &mut [[f32; TILE]; $c] = (&mut $out[..$c]).try_into().unwrap();
                match $isa {
                    Isa::Scalar => *out = scalar::$kernel::<$c>($w, $act, $c0),
                    // SAFETY: `Isa::all()` lists an ISA only if the CPU supports it (`avx2::available`),
                    // and callers only pass an ISA from it.
                    #[cfg(target_arch = "x86_64")]
                    Isa::Avx2 => unsafe { super::avx2::$kernel::<$c>($w, $act, $c0, out) },
                    // SAFETY: as above (`avx512::available`).
                    #[cfg(target_arch = "x86_64")]
                    Isa::Avx512Vnni => unsafe { super::avx512::$kernel::<$c>($w, $act, $c0, out) },
                    #[cfg(not(target_arch = "x86_64"))]
                    _ => *out = scalar::$kernel::<$c>($w, $act, $c0),
                };
                for (i, row) in out.iter().enumerate() {
                    $emit($c0 + i, row);
                }
            }};
        }
        match $step {
            8 => call!(8),
            4 => call!(4),
            2 => call!(2),
            _ => call!(1),
        }
    }};
}

/// Up to 8 activation rows' outputs of one tile, as the kernels leave them.
pub(super) type TileOut = [[f32; TILE]; 8];

/// One function per weight format, each running its kernels through `dispatch!`.
macro_rules! runner {
    ($name:ident, $kernel:ident, $tile:ty) => {
        pub(super) fn $name(
            isa: Isa,
            step: usize,
            w: &[$tile],
            act: &Act,
            (c0, out): (usize, &mut TileOut),
            emit: impl Fn(usize, &[f32; TILE]),
        ) {
            dispatch!(isa, step, $kernel, w, act, c0, out, emit)
        }
    };
}

runner!(run_q4_1, q4_1, super::layout::TileQ4_1);
runner!(run_q5_0, q5_0, super::layout::TileQ8_0);
runner!(run_q5_0p, q5_0p, super::layout::TileQ5_0);
runner!(run_q5_0u, q5_0u, super::layout::TileQ5_0U);
runner!(run_q8_0, q8_0, super::layout::TileQ8_0);
runner!(run_q4k, q4k, super::layout_k::TileQ4K);
runner!(run_q6k, q6k, super::layout_k::TileQ6K);

/// Tile `t` (of `nb` blocks) of a matrix of `n` columns against a chunk's rows `rows` (activations `act`), written to
/// `out`: the kernels take 8, 4, 2 or 1 rows a call. `unpacked`: the tile's 5-bit Q5_0 unpacked,
/// when it was (many rows).
pub(super) fn tile_rows(
    isa: Isa,
    (tiles, n): (&Tiles, usize),
    (t, nb): (usize, usize),
    (rows, act): (std::ops::Range<usize>, &Act),
    unpacked: &[TileQ5_0U],
    tile_out: &mut TileOut,
    out: OutPtr,
) {
    let cols = t * TILE..n.min((t + 1) * TILE);
    let mut c0 = 0; // row within the chunk
    while c0 < act.m {
        // 8, 4, 2 or 1 rows: the largest that fits.
        let step = 1 << (rows_per_call(isa, tiles).min(act.m - c0)).ilog2();
        let emit = |c: usize, v: &[f32; TILE]| out.write((rows.start + c) * n, &cols, v);
        let at = (c0, &mut *tile_out);
        match tiles {
            Tiles::Q4_1(w) => run_q4_1(isa, step, &w[t * nb..][..nb], act, at, emit),
            Tiles::Q8_0(w) => run_q8_0(isa, step, &w[t * nb..][..nb], act, at, emit),
            Tiles::Q5_0(w) => run_q5_0(isa, step, &w[t * nb..][..nb], act, at, emit),
            Tiles::Q5_0P(_) if !unpacked.is_empty() => {
                run_q5_0u(isa, step, unpacked, act, at, emit)
            }
            Tiles::Q5_0P(w) => run_q5_0p(isa, step, &w[t * nb..][..nb], act, at, emit),
            Tiles::Q4K(w) => run_q4k(isa, step, &w[t * nb..][..nb], act, at, emit),
            Tiles::Q6K(w) => run_q6k(isa, step, &w[t * nb..][..nb], act, at, emit),
        }
        c0 += step;
    }
}

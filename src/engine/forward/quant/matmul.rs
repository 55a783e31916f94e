//! `QMatrix`: a Q4_1, Q8_0, Q5_0, Q4_K or Q6_K weight matrix in tiles, and `xs @ W^T` over them on all
//! threads.
//!
//! One kernel family serves decode and prefill: rows are taken 1, 2, 4 or 8 at a time, so a weight
//! tile is unpacked once per group of rows. There is no switch to a dense f32 gemm for prefill:
//! measured against weights dequantised once and candle's gemm (`benches/matmul.rs`, `dense-f32`),
//! the 8-bit tiles were faster at every row count tried (1 to 512: 2.5x to 7x on this model's
//! shapes), need no second copy of the weights, and give `Exact`'s bits, which the f32 gemm would not.

use super::act::{Act, ActKind};
use super::kernels::{extras, tile_rows, unpack_q5_0, TileOut};
use super::layout::{
    pack_q4_1, pack_q5_0, pack_q5_0_packed, pack_q8_0, q4_0_as_q4_1, Tiles, QK, TILE,
};
use super::layout_k::{pack_q4k, pack_q6k};
use super::out::{OutPtr, RunThen};
use super::pool;
use candle_core::quantized::{GgmlDType, QTensor};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Which kernels run, slowest first (the declaration order is the order `Isa::cap` compares by).
/// `best()` is read when a matrix is loaded; tests force the others to compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    Scalar,
    Avx2,
    Avx512Vnni,
}

/// The fastest kernel set `best()` may pick, as `Isa as usize`; set by `Isa::cap`.
static CAP: AtomicUsize = AtomicUsize::new(usize::MAX);

impl Isa {
    /// The fastest kernel set this CPU runs, at most the one `cap` allows. Read when a matrix is
    /// loaded: a cap set later applies to models loaded after it.
    pub fn best() -> Isa {
        Isa::all()
            .into_iter()
            .rev()
            .find(|isa| isa.allowed())
            .unwrap_or(Isa::Scalar)
    }

    /// Caps `best()` (and the attention's arithmetic, through `allowed`) at `isa`, so that an AVX-512
    /// machine runs, and measures, the kernels of a CPU that has only AVX2; `nexttoken bench --isa`.
    /// Errors, naming what this CPU runs, when it cannot run `isa`.
    pub fn cap(isa: Isa) -> Result<(), String> {
        if !Isa::all().contains(&isa) {
            let names: Vec<&str> = Isa::all().iter().map(|i| i.name()).collect();
            return Err(format!(
                "this CPU cannot run the {} kernels; it runs: {}",
                isa.name(),
                names.join(", ")
            ));
        }
        CAP.store(isa as usize, Ordering::Relaxed);
        Ok(())
    }

    /// Whether the cap (`Isa::cap`) lets kernels of `self`'s generation run: the attention asks it of
    /// its AVX-512 arithmetic, so that `--isa avx2` runs what an AVX2-only CPU runs there too.
    pub fn allowed(self) -> bool {
        self as usize <= CAP.load(Ordering::Relaxed)
    }

    /// The name `--isa` takes and `bench` prints.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512Vnni => "avx512",
        }
    }

    /// Every kernel set this CPU can run, slowest first.
    pub fn all() -> Vec<Isa> {
        let mut isas = vec![Isa::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            if super::avx2::available() {
                isas.push(Isa::Avx2);
            }
            if super::avx512::available() {
                isas.push(Isa::Avx512Vnni);
            }
        }
        isas
    }
}

/// Activation rows per kernel call: each weight tile is unpacked once per this many rows. AVX-512
/// has 32 registers for the accumulators, AVX2 16; Q8_0 keeps 8 partial sums per output. Measured,
/// not derived: on AVX2 only Q4_1 has been timed at 8.
pub(super) fn rows_per_call(isa: Isa, tiles: &Tiles) -> usize {
    match (isa, tiles) {
        (Isa::Avx512Vnni, Tiles::Q8_0(_)) => 2,
        (Isa::Avx512Vnni, _) => 8,
        (Isa::Avx2, Tiles::Q8_0(_)) => 1,
        // Its 8 rows' f32 sums spill, but they change once a block, while the i16 sums that change
        // every 4 values stay in registers: 68-71 against 50-55 GMAC/s a core on 512 rows of
        // SmolLM2's q, up and down (`quick 1 kernel NAME 512`, Zen 3; PERFORMANCE round five).
        (Isa::Avx2, Tiles::Q4_1(_)) => 8,
        // Likewise one i16 sum a row per sub-block: Gemma's Q4_K 111-114 -> 120-122 GMAC/s on one Zen
        // 5 thread (`ISA=avx2`); Q5_0 and Q6_K ran 4-8% slower at 8 (PERFORMANCE round eleven).
        (Isa::Avx2, Tiles::Q4K(_)) => 8,
        _ => 4,
    }
}

/// When a second thread pays (measured on the 2-core test machine, see `benches/quick.rs`):
/// - Decode (1 row, or a few) reads each weight once: it is bound by memory bandwidth, which one
///   core already saturates there (19 GB/s from one thread, no more from two; the whole decode
///   sweep of 211 matmuls ran 3.9 ms on one thread, 4.0-4.2 ms on two). And a helper that the OS
///   preempts mid-item stalls the caller for a time slice: on a busy machine two threads doubled
///   the median decode time. But on another machine of the same kind a second thread lifted
///   llama.cpp's decode 1.3x. So fewer than `PARALLEL_MIN_ROWS` rows run on the threads the model's
///   own decode timings chose (`decode_plan.rs`: one, unless all threads measurably win), and on
///   all threads when the matrix has at least `PARALLEL_MIN_WEIGHTS` weights: Gemma 3's output head (262,144 x
///   640, Q8_0) took 14-16 ms a token on one thread of an AVX2-only CPU (12 GB/s: compute-bound there,
///   the AVX2 Q8_0 kernel keeps candle's 8 partial sums), which a preempted helper cannot cost.
/// - Prefill is compute-bound and scales (1.95x on two threads at 512 rows); below
///   `PARALLEL_MIN_MACS` (~40 us of work) the hand-off costs more than it saves.
const PARALLEL_MIN_ROWS: usize = 4;
const PARALLEL_MIN_WEIGHTS: usize = 32 << 20;
const PARALLEL_MIN_MACS: usize = 4 << 20;

/// Runs of tiles per thread in a decode's matmul. Each thread streams its runs' weights from memory,
/// and a stream pays to start: the prefetchers ramp up, and a thread's software prefetch (8 KB
/// ahead) then lands in the other thread's run. On two Zen 5 threads (`bench -p 8 -n 128`, four
/// alternating tries each), SmolLM2's tg128 under `--isa avx2` ran 381-385 tok/s at 8 runs a thread,
/// 452 at 4, 476-483 at 3, 488-519 at 2 and 476-490 at 1; AVX-512 427 at 8, 519 at 2. Gemma 3 (whose
/// time is its one 178 MB head, already long runs) within noise.
const DECODE_RUNS: usize = 2;

/// From this many rows in a chunk, a 5-bit Q5_0 tile is unpacked to a byte a quant once for all of them
/// (one per 4 rows in its own kernel cost pp512 15-25% on Gemma 3; decode reads it packed).
const UNPACK_MIN_ROWS: usize = 8;

/// Activation rows per work item: its quants (at most 64*1536 bytes) stay in L2 while the
/// threads sweep the weight tiles.
const ROW_CHUNK: usize = 64;

/// Puts a matrix's rows `rows`, as the file stores them, in the buffer (`QMatrix::from_rows`).
pub type ReadRows<'a, E> = dyn FnMut(std::ops::Range<usize>, &mut Vec<u8>) -> Result<(), E> + 'a;

/// An `[n, k]` weight matrix in 16-row tiles (see `layout.rs`).
pub struct QMatrix {
    n: usize,
    k: usize,
    tiles: Tiles,
    /// Q8_0 without a weight of -128, so the AVX2 kernel may take `|a|` as its unsigned operand
    /// against `w` with `a`'s sign (`Act::abs`), which one more weight of -128 would overflow.
    abs_acts: bool,
    /// Q4_0 held as Q4_1 (m = −8d): the activations' block sums are taken exact (`Extras::exact_sums`),
    /// so the product is Q4_0's up to the order of the float sums.
    exact_sums: bool,
}

impl QMatrix {
    /// Regroups a CPU `QTensor` of shape `[n, k]`; `None` for dtypes without a fast kernel.
    ///
    /// Q4_K and Q6_K need `n % 16 == 0` too (every matrix of the models we load has it): that is when
    /// candle's `QMatMul` runs its tile kernels, whose float order ours reproduce; for other `n` it runs
    /// a per-row dot with another order, and the matrix stays with candle so the bits stay its own.
    pub fn from_qtensor(w: &QTensor) -> candle_core::Result<Option<QMatrix>> {
        let (n, k) = w.shape().dims2()?;
        if !w.device().is_cpu() {
            return Ok(None);
        }
        let data = w.data()?;
        let row_bytes = data.len() / n.max(1);
        Self::from_rows(w.dtype(), n, k, &mut |rows, buf| {
            buf.clear();
            buf.extend_from_slice(&data[rows.start * row_bytes..rows.end * row_bytes]);
            Ok::<(), candle_core::Error>(())
        })
    }

    /// Regroups an `[n, k]` matrix of `dtype` blocks whose rows `read(rows, buf)` puts in `buf` as the
    /// file stores them; `None` for dtypes without a fast kernel (as `from_qtensor`). Read a band of
    /// rows at a time (about 4 MB), so a large matrix (Gemma's 178 MB token table) is never held twice.
    pub fn from_rows<E>(
        dtype: GgmlDType,
        n: usize,
        k: usize,
        read: &mut ReadRows<'_, E>,
    ) -> Result<Option<QMatrix>, E> {
        let whole_tiles = n.is_multiple_of(TILE);
        let tiled = match dtype {
            GgmlDType::Q4_0 | GgmlDType::Q4_1 | GgmlDType::Q8_0 | GgmlDType::Q5_0 => true,
            GgmlDType::Q4K | GgmlDType::Q6K => whole_tiles,
            _ => false,
        };
        if !tiled || !k.is_multiple_of(QK) {
            return Ok(None);
        }
        let row_bytes = k / dtype.block_size() * dtype.type_size();
        let band = ((4 << 20) / row_bytes.max(1) / TILE).max(1) * TILE;
        let mut buf = Vec::new();
        let mut tiles: Option<Tiles> = None;
        for start in (0..n).step_by(band) {
            let rows = start..n.min(start + band);
            read(rows.clone(), &mut buf)?;
            let part = match dtype {
                GgmlDType::Q4_1 => Tiles::Q4_1(pack_q4_1(&buf, rows.len(), k)),
                GgmlDType::Q4_0 => Tiles::Q4_1(pack_q4_1(&q4_0_as_q4_1(&buf), rows.len(), k)),
                GgmlDType::Q8_0 => Tiles::Q8_0(pack_q8_0(&buf, rows.len(), k)),
                // 5 bits where the kernels are AVX2's (decode reads 35% fewer bytes); unpacked to
                // signed bytes for AVX-512's `vpdpbusd` kernels.
                GgmlDType::Q5_0 if Isa::best() == Isa::Avx512Vnni => {
                    Tiles::Q5_0(pack_q5_0(&buf, rows.len(), k))
                }
                GgmlDType::Q5_0 => Tiles::Q5_0P(pack_q5_0_packed(&buf, rows.len(), k)),
                GgmlDType::Q4K => Tiles::Q4K(pack_q4k(&buf, rows.len(), k)),
                GgmlDType::Q6K => Tiles::Q6K(pack_q6k(&buf, rows.len(), k)),
                _ => unreachable!("checked above: {dtype:?} has tiles"),
            };
            match &mut tiles {
                None => {
                    tiles = Some(part.with_capacity_for(n.div_ceil(TILE) * k / dtype.block_size()))
                }
                Some(all) => all.append(part),
            }
        }
        Ok(tiles.map(|tiles| QMatrix {
            exact_sums: dtype == GgmlDType::Q4_0,
            ..QMatrix::new(n, k, tiles)
        }))
    }

    /// A matrix of the given tiles (tests build both forms of one Q5_0 matrix).
    #[cfg(test)]
    pub(super) fn from_tiles(n: usize, k: usize, tiles: Tiles) -> QMatrix {
        QMatrix::new(n, k, tiles)
    }

    fn new(n: usize, k: usize, tiles: Tiles) -> QMatrix {
        let abs_acts = match &tiles {
            Tiles::Q8_0(t) => !t.iter().any(|t| t.qs.contains(&0x80)),
            _ => false,
        };
        QMatrix {
            n,
            k,
            tiles,
            abs_acts,
            exact_sums: false,
        }
    }

    /// The matrix of `parts`' rows one after another (q, k and v; gate and up), when they are of one
    /// kind and width and each is whole tiles; `None` otherwise.
    pub fn stack(parts: &[&QMatrix]) -> Option<QMatrix> {
        let (k, exact_sums) = (parts.first()?.k, parts.first()?.exact_sums);
        if (parts.iter())
            .any(|p| p.k != k || !p.n.is_multiple_of(TILE) || p.exact_sums != exact_sums)
        {
            return None;
        }
        let tiles = Tiles::stack(&parts.iter().map(|p| &p.tiles).collect::<Vec<_>>())?;
        Some(QMatrix {
            exact_sums,
            ..QMatrix::new(parts.iter().map(|p| p.n).sum(), k, tiles)
        })
    }

    /// Row `r` of the matrix as f32, the same bits as dequantising the file's row; `None` when the
    /// tiles' kind has no row reader (`Tiles::row`). A tied output head serves the embedding lookup so.
    pub fn row(&self, r: usize) -> Option<Vec<f32>> {
        (r < self.n).then(|| self.tiles.row(r, self.k))?
    }

    /// Whether `row` reads this matrix's rows.
    pub fn has_rows(&self) -> bool {
        !matches!(self.tiles, Tiles::Q4K(_) | Tiles::Q6K(_))
    }

    pub fn out_dim(&self) -> usize {
        self.n
    }

    pub fn in_dim(&self) -> usize {
        self.k
    }

    pub fn size_in_bytes(&self) -> usize {
        self.tiles.size_in_bytes()
    }

    /// `xs [m, k] @ W^T -> [m, n]`, row-major.
    pub fn matmul(&self, xs: &[f32], m: usize, isa: Isa) -> Vec<f32> {
        self.matmul_into(xs, m, isa, Vec::new())
    }

    /// `matmul`, written into `dst`'s buffer (its contents are replaced; it grows if it must): a
    /// buffer already written once costs no page faults, where fresh memory does.
    pub fn matmul_into(&self, xs: &[f32], m: usize, isa: Isa, dst: Vec<f32>) -> Vec<f32> {
        self.matmul_into_then(xs, m, isa, dst, None)
    }

    /// How the activations are quantised against these tiles.
    fn act_kind(&self) -> ActKind {
        match self.tiles {
            Tiles::Q4_1(_) => ActKind::Q8_1,
            Tiles::Q8_0(_) | Tiles::Q5_0(_) | Tiles::Q5_0P(_) => ActKind::Q8_0,
            Tiles::Q4K(_) | Tiles::Q6K(_) => ActKind::Q8K,
        }
    }

    /// Threads for a product with `m` rows (see `PARALLEL_MIN_ROWS`): a decode's few rows on the
    /// decode plan's count unless the matrix is large, a small product on one, the rest on all.
    fn threads_for(&self, m: usize) -> usize {
        match m * self.n * self.k {
            _ if m < PARALLEL_MIN_ROWS && self.n * self.k < PARALLEL_MIN_WEIGHTS => {
                super::decode_plan::small_rows_threads().min(pool::threads())
            }
            macs if macs < PARALLEL_MIN_MACS => 1,
            _ => pool::threads(),
        }
    }

    /// `matmul_into`; for one row, each work item then hands `then` its run of the output while that
    /// run is still in its core's cache: `(first column, the run)`, each run starting at a multiple
    /// of `then`'s alignment (the output head's logits, read at once for the sampler's block maxima).
    pub fn matmul_into_then(
        &self,
        xs: &[f32],
        m: usize,
        isa: Isa,
        mut dst: Vec<f32>,
        then: Option<&RunThen>,
    ) -> Vec<f32> {
        let kind = self.act_kind();
        let (nb, n_tiles) = (self.k / kind.block_len(), self.n.div_ceil(TILE));
        let chunks = m.div_ceil(ROW_CHUNK);
        let rows_of = |chunk: usize| chunk * ROW_CHUNK..m.min((chunk + 1) * ROW_CHUNK);
        let threads = self.threads_for(m);
        let extras = extras(isa, &self.tiles, self.abs_acts, self.exact_sums);
        let acts = Act::quantize_chunks(xs, (self.k, kind, extras), (chunks, threads), rows_of);
        // Not zeroed first: the items write every element (a freed buffer reused from the heap would
        // be cleared for nothing, 1.5% of a prefill).
        dst.clear();
        dst.reserve(m * self.n);
        let out = OutPtr(dst.as_mut_ptr());
        // Each item takes a run of neighbouring tiles, so a thread streams contiguous weights (the
        // hardware prefetcher follows), with about 8 items per thread left to balance the load; a
        // decode's few rows, bound by memory, `DECODE_RUNS` (longer streams).
        let runs = match m < PARALLEL_MIN_ROWS {
            true => DECODE_RUNS * threads,
            false => 8 * threads,
        };
        let mut per_item = (chunks * n_tiles).div_ceil(runs).clamp(1, n_tiles);
        let then = then.filter(|_| m == 1);
        if let Some(t) = then {
            // Each run starts at a multiple of the alignment.
            assert!(t.align.is_multiple_of(TILE), "runs are whole tiles");
            per_item = per_item.next_multiple_of(t.align / TILE);
        }
        let groups = n_tiles.div_ceil(per_item);
        // Items run chunk-major: neighbouring items share one chunk of activations.
        pool::parallel_for(chunks * groups, threads, |item| {
            let (chunk, group) = (item / groups, item % groups);
            let (rows, act) = (rows_of(chunk), &acts[chunk]);
            let mut unpacked = Vec::new();
            let mut tile_out: TileOut = [[0.0; TILE]; 8];
            for t in group * per_item..n_tiles.min((group + 1) * per_item) {
                // 5-bit Q5_0 for many rows: unpacked once here, then `q5_0u` for every row.
                if let (Tiles::Q5_0P(w), UNPACK_MIN_ROWS..) = (&self.tiles, act.m) {
                    unpack_q5_0(isa, &w[t * nb..][..nb], &mut unpacked);
                }
                let (tiles, at) = ((&self.tiles, self.n), (t, nb));
                tile_rows(
                    isa,
                    tiles,
                    at,
                    (rows.clone(), act),
                    &unpacked,
                    &mut tile_out,
                    out,
                );
            }
            if let Some(t) = then {
                let cols = group * per_item * TILE..self.n.min((group + 1) * per_item * TILE);
                // SAFETY: one row (`m == 1`): this item alone wrote these columns, just now, and no
                // other item touches them; the buffer holds at least `n` elements.
                (t.each)(cols.start, unsafe { out.written(&cols) });
            }
        });
        // SAFETY: the capacity is at least `m * n`, and the items have written all of it: every chunk of rows
        // `< m` with every tile of columns `< n` was one item, whose kernel calls emit each of its
        // rows and whose `write` covers the tile's columns.
        unsafe { dst.set_len(m * self.n) };
        dst
    }
}

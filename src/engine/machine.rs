//! The speed of light of this machine for this model: how fast memory streams (a decode step must
//! read every weight and the KV cache at its depth, so no step beats those bytes over the bandwidth)
//! and how fast the model's own kernels multiply when there is enough arithmetic per byte (a prefill).
//! `bench` measures both in its own run; the TUI once at load, for the timing panel (and there it
//! settles the decode steps' plan, threads and prefetch, before the first step). The bandwidth is
//! measured before the model loads (`bandwidth_gb_s` remembers it), so its buffer never adds to the
//! peak, on a buffer the size of the model, so that it streams from where the model's weights will.

use super::forward::model::Model;
use crate::protocol::MachineSpeed;
use std::sync::Mutex;
use std::time::Instant;

/// Tokens of the pass that measures the kernels' peak: enough rows that the weights are reused.
const PEAK_TOKENS: usize = 64;

/// Bytes of the buffer the bandwidth probe reads for a model whose file holds `model_bytes`: about
/// what a decode step reads (every weight), so the probe streams it from wherever a buffer that size
/// lives on this machine. Where the last-level cache is smaller than the model (a classroom laptop's
/// 8 to 32 MiB against SmolLM2's 98 MB), that is memory; where the model fits in it, the cache, as
/// the model's own weights then are: on a server whose L3 held 480 MiB, a probe of 512 MiB from
/// memory had read 19.5 GB/s while SmolLM2's steps streamed 27, "142% of the speed of light". Whole
/// MiB, 32 MiB to 1 GiB.
pub fn probe_bytes(model_bytes: u64) -> usize {
    (model_bytes.div_ceil(1 << 20).clamp(32, 1024) as usize) << 20
}

/// The last-level cache's size in bytes (from sysfs), if it can be read.
pub fn last_level_cache_bytes() -> Option<usize> {
    (0..8)
        .filter_map(|i| {
            let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
            let level = std::fs::read_to_string(format!("{dir}/level")).ok()?;
            let size = std::fs::read_to_string(format!("{dir}/size")).ok()?;
            let kib: usize = size.trim().strip_suffix('K')?.parse().ok()?;
            (level.trim() == "3").then_some(kib << 10)
        })
        .max()
}

/// The bytes a file at `path` holds (0 when it cannot be read): what [`probe_bytes`] sizes for.
pub fn file_bytes(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Streaming read bandwidth in GB/s on `threads` threads for a model of `model_bytes`: the best of
/// several reads of a buffer that size ([`probe_bytes`], `stream`), each thread summing its own
/// slice. Measured once per thread count and buffer size in a process, and remembered: call it before
/// the model loads, and the buffer is gone before the model's memory exists, so it never adds to the
/// process's peak resident memory.
pub fn bandwidth_gb_s(threads: usize, model_bytes: u64) -> f64 {
    let key = (threads.max(1), probe_bytes(model_bytes));
    let mut measured = MEASURED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, gb_s)) = measured.iter().find(|(k, _)| *k == key) {
        return gb_s;
    }
    let gb_s = stream(key.0, key.1);
    measured.push((key, gb_s));
    gb_s
}

/// Each thread count's and buffer's bandwidth, as measured in this process (the best so far).
static MEASURED: Mutex<Vec<((usize, usize), f64)>> = Mutex::new(Vec::new());

/// `bandwidth_gb_s` measured once more, now, and remembered if it beats what was: for when a step ran
/// faster than the remembered figure allows, which means that measure fell in a busy spell.
pub fn bandwidth_gb_s_again(threads: usize, model_bytes: u64) -> f64 {
    let key = (threads.max(1), probe_bytes(model_bytes));
    let fresh = stream(key.0, key.1);
    let mut measured = MEASURED.lock().unwrap_or_else(|e| e.into_inner());
    match measured.iter_mut().find(|(k, _)| *k == key) {
        Some((_, gb_s)) => *gb_s = gb_s.max(fresh),
        None => measured.push((key, fresh)),
    }
    fresh
}

/// The best of several reads of a `bytes` buffer: at least 4, then more until 300 ms have passed. A
/// shared machine's bandwidth swings from moment to moment (13 to 24 GB/s between back-to-back reads of
/// 128 MiB on the Zen 3 VM) and from spell to spell (35 to 49 GB/s over seconds on the Zen 5 VM), and
/// the ceiling is its quiet best. Twelve reads of 3 ms there fell in one spell and read as low as 37
/// GB/s while decode steps then ran at 42: "faster than light". The reads span the whole 300 ms now.
/// Every other read asks for its lines ahead, as the kernels may (`forward::prefetch`): on the Intel
/// VM the kernels streamed a model held in its L3 faster with it than a plain read could.
fn stream(threads: usize, bytes: usize) -> f64 {
    let words = vec![1u64; bytes / 8];
    let chunk = words.len().div_ceil(threads);
    let mut best = f64::INFINITY;
    let start = Instant::now();
    for read in 0.. {
        if read >= 4 && start.elapsed().as_secs_f64() > 0.3 {
            break;
        }
        let ahead = read % 2 == 1;
        let t = Instant::now();
        let total: u64 = std::thread::scope(|s| {
            let handles: Vec<_> = words
                .chunks(chunk)
                .map(|part| s.spawn(move || sum(part, ahead)))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or(0)).sum()
        });
        std::hint::black_box(total);
        best = best.min(t.elapsed().as_secs_f64());
    }
    (words.len() * 8) as f64 / best / 1e9
}

/// Bytes ahead of the read that a prefetching read asks for: the kernels' distance.
const AHEAD: usize = 8 << 10;

/// The words of `part` summed, in runs of 4 KB, each run asking for the one `AHEAD` bytes on first
/// when `ahead`.
fn sum(part: &[u64], ahead: bool) -> u64 {
    part.chunks(512).enumerate().fold(0u64, |a, (i, run)| {
        if ahead {
            // Past the slice's end a prefetch asks for nothing that faults (`forward::prefetch`).
            crate::engine::forward::prefetch::floats(part, i * 512 + AHEAD / 8, 512);
        }
        run.iter().fold(a, |a, &w| a.wrapping_add(w))
    })
}

impl Model {
    /// Multiply-adds of the matrices one token goes through, counted as 2 FLOP each: every block's
    /// projections and MLP, and the output head.
    pub fn matmul_flop_per_token(&self) -> f64 {
        let c = &self.config;
        let attn =
            c.n_embd * (c.n_head + 2 * c.n_kv_head) * c.head_dim + c.n_head * c.head_dim * c.n_embd;
        let mlp = 3 * c.n_embd * c.n_ff;
        2.0 * (c.n_layer * (attn + mlp) + c.n_embd * self.vocab_size) as f64
    }

    /// FLOP of attention for one query at `keys` keys: q·k and the weighted sum of v, every head.
    pub fn attention_flop(&self, keys: usize) -> f64 {
        let c = &self.config;
        4.0 * (c.n_layer * c.n_head * c.head_dim * keys) as f64
    }
}

/// The model's kernels at their fastest: GFLOP/s of the best of three passes over `PEAK_TOKENS`
/// tokens (after one warm-up), `flop` each. The cache is empty afterwards.
fn peak_gflops(model: &mut Model, flop: f64) -> candle_core::Result<f64> {
    let vocab = model.vocab_size as u64;
    let tokens: Vec<u32> = (0..PEAK_TOKENS as u64)
        .map(|i| ((i * 2_654_435_761 + 12_345) % vocab) as u32)
        .collect();
    let mut best = f64::INFINITY;
    for i in 0..4 {
        model.cache.clear();
        let ms = model.forward(&tokens, 0, Default::default())?.ms;
        if i > 0 {
            best = best.min(ms);
        }
    }
    model.cache.clear();
    Ok(flop / (best / 1e3) / 1e9)
}

/// Both figures for `model` (loaded from a file of `model_bytes`) on this machine, with what a step
/// reads.
pub fn measure(
    model: &mut Model,
    threads: usize,
    model_bytes: u64,
) -> candle_core::Result<MachineSpeed> {
    let cached = last_level_cache_bytes().is_some_and(|llc| probe_bytes(model_bytes) <= llc);
    let mut speed = MachineSpeed {
        bandwidth_gb_s: bandwidth_gb_s(threads, model_bytes),
        from_cache: cached,
        weight_bytes: model.weight_bytes_per_token(),
        kv_bytes_per_position: model.kv_bytes_at(1),
        matmul_flop_per_token: model.matmul_flop_per_token(),
        attention_flop_per_key: model.attention_flop(1),
        peak_gflops: 0.0,
    };
    // Passes that time the machine, not passes of the text: the status bar does not count them.
    model.uncounted(|model| {
        speed.peak_gflops = peak_gflops(model, speed.pass_flop(PEAK_TOKENS, 0))?;
        settle_decode_threads(model)
    })?;
    Ok(speed)
}

/// Runs the decode steps' trial of their plans (threads, prefetch: `quant/decode_plan.rs`) now, on
/// one-token passes of their own (about 48): otherwise the first steps a class watches take each plan
/// in turn, and the timing panel's step time jumps between them for no reason on screen. The cache is
/// empty afterwards.
fn settle_decode_threads(model: &mut Model) -> candle_core::Result<()> {
    model.cache.clear();
    let mut pos = 0;
    while model.decode_trial_running() && pos < 64 {
        let token = (pos as u64 * 2_654_435_761 % model.vocab_size as u64) as u32;
        model.forward(&[token], pos, Default::default())?;
        pos += 1;
    }
    model.cache.clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The probe reads for its whole window, however quick each read: a 1 MiB buffer reads in well
    /// under a millisecond, so twelve reads would end at once, inside one spell of a shared machine.
    #[test]
    fn the_probe_reads_for_its_whole_window() {
        let start = std::time::Instant::now();
        let gb_s = super::stream(1, 1 << 20);
        assert!(gb_s > 0.0 && gb_s.is_finite());
        assert!(start.elapsed().as_secs_f64() >= 0.3);
    }

    /// The bandwidth is measured once per thread count and remembered: the second call returns the
    /// first figure (a second measurement would differ in its last bits), so a measure taken before
    /// the model loads is the one every later caller reads, and no later caller allocates the buffer.
    #[test]
    fn the_bandwidth_is_measured_once_and_remembered() {
        let first = super::bandwidth_gb_s(1, 98 << 20);
        assert!(first > 0.0 && first.is_finite());
        assert_eq!(
            super::bandwidth_gb_s(1, 98 << 20).to_bits(),
            first.to_bits()
        );
    }

    /// The probe reads what a step of the model reads, in whole MiB, within its bounds.
    #[test]
    fn the_probe_is_the_size_of_the_model() {
        use super::probe_bytes;
        assert_eq!(probe_bytes(98_362_432), 94 << 20);
        assert_eq!(probe_bytes(253_113_024), 242 << 20);
        assert_eq!(probe_bytes(0), 32 << 20);
        assert_eq!(probe_bytes(20 << 30), 1 << 30);
    }
}

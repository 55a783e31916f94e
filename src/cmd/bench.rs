//! `nexttoken bench`: prefill (pp) and decode (tg, also at a KV depth) speed in the spirit of llama-bench, decode cost without
//! the KV cache, a session step's overhead over a bare forward, load time, peak RSS, and how far the fast
//! matmul path's probabilities are from the exact quantised path.

use crate::cli::{BenchArgs, KernelCap, DEFAULT_PROMPT};
use crate::engine::forward::kv_cache::KvPrecision;
use crate::engine::forward::linear::MatmulPath;
use crate::engine::forward::model::{ForwardOptions, Model};
use crate::engine::forward::quant::Isa;
use crate::engine::gguf::GgufFile;
use anyhow::Result;
use serde::Serialize;
use std::path::Path;
use std::time::Instant;

/// One measured test: rates over `reps` runs after a warm-up.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub test: String,
    pub tokens: usize,
    pub median_tok_s: f64,
    pub stddev_tok_s: f64,
    pub median_ms: f64,
    /// Decode rows: the bytes a step reads and the ceiling the memory bandwidth puts on the rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed_of_light: Option<super::speed_of_light::SpeedOfLight>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub model: String,
    pub threads: usize,
    pub load_ms: f64,
    pub rows: Vec<Row>,
    /// Full session step (sampler chain, attention window, report) over a bare forward pass, as a ratio
    /// of their medians.
    pub step_overhead: f64,
    /// Those medians (ms): a session step, and a bare forward pass of one token beside it.
    pub step_ms: f64,
    pub bare_forward_ms: f64,
    /// Largest |p_fast - p_exact| over the vocabulary on a fixed prompt and 8 greedy steps.
    pub max_prob_diff_fast_vs_exact: f32,
    /// Peak resident memory (MiB) through the prefill and decode tests: the model, its KV cache at the
    /// deepest test, the buffers. The bandwidth's buffer is freed before the model loads, and what the
    /// checks after the tests load (a session, the exact path, a draft) is not counted.
    pub peak_rss_mib: f64,
    /// Threads the decode matmuls ended up on: what the model's own timings chose (1 or all).
    pub decode_threads: usize,
    /// Whether the decode kernels ended up asking for their weights ahead (the timings chose).
    pub decode_prefetch: bool,
    /// The SIMD kernels that ran (`avx512`, `avx2`, `scalar`): the CPU's best, or `--isa`'s cap.
    pub isa: String,
    /// What the KV cache stored in the prefill and decode tests (`f32`, or `f16` with `--kv f16`).
    pub kv_cache: String,
    /// GFLOP/s of the model's own kernels on a 64-token pass (compute-bound), the best of three.
    pub peak_gflops: f64,
    /// With `--draft`: plain against speculative decoding, measured in this run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative: Option<super::bench_draft::SpecBench>,
}

pub(super) fn median_std(xs: &[f64]) -> (f64, f64) {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let med = if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let var =
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len().max(2).saturating_sub(1) as f64;
    (med, var.sqrt())
}

/// Times `f` (which processes `tokens` tokens) once to warm up, then `reps` times.
fn measure(
    test: &str,
    tokens: usize,
    reps: usize,
    mut f: impl FnMut() -> Result<()>,
) -> Result<Row> {
    measure_after(test, tokens, reps, &mut (), |_| Ok(()), |_| f())
}

/// As [`measure`], with an untimed `setup` of `state` before each run (the warm-up included).
fn measure_after<S>(
    test: &str,
    tokens: usize,
    reps: usize,
    state: &mut S,
    mut setup: impl FnMut(&mut S) -> Result<()>,
    mut f: impl FnMut(&mut S) -> Result<()>,
) -> Result<Row> {
    let mut times = Vec::new();
    for i in 0..=reps.max(1) {
        setup(state)?;
        let t = Instant::now();
        f(state)?;
        // The first run is the warm-up.
        if i > 0 {
            times.push(t.elapsed().as_secs_f64());
        }
    }
    let rates: Vec<f64> = times.iter().map(|s| tokens as f64 / s).collect();
    let ms: Vec<f64> = times.iter().map(|s| s * 1e3).collect();
    let (median_tok_s, stddev_tok_s) = median_std(&rates);
    Ok(Row {
        test: test.into(),
        tokens,
        median_tok_s,
        stddev_tok_s,
        median_ms: median_std(&ms).0,
        speed_of_light: None,
    })
}

/// Deterministic token ids spread over the vocabulary (as llama-bench uses random tokens).
fn tokens(n: usize, vocab: usize) -> Vec<u32> {
    (0..n)
        .map(|i| ((i as u64 * 2654435761 + 12345) % vocab as u64) as u32)
        .collect()
}

pub(super) fn load_model(path: &Path, matmul: MatmulPath) -> Result<Model> {
    let mut g = GgufFile::open(path)?;
    Ok(Model::load(&mut g, matmul)?)
}

/// Peak resident set size of this process, from /proc (Linux); 0 elsewhere.
pub fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l.to_string())
        })
        .and_then(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

pub fn measure_all(path: &Path, args: &BenchArgs, precision: KvPrecision) -> Result<Report> {
    // Before the model: the measuring buffer is freed before the model's memory exists.
    let model_bytes = crate::engine::machine::file_bytes(path);
    let bandwidth = crate::engine::machine::bandwidth_gb_s(crate::engine::threads(), model_bytes);
    let t = Instant::now();
    let mut model = load_model(path, MatmulPath::Fast)?;
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    model.set_kv_precision(precision);
    let kv_cache = model.cache.precision().name().to_string();
    let context = model.config.context_length;
    let (n, deepest) = (args.gen_len, args.depths.iter().max().copied().unwrap_or(0));
    if deepest + n > context {
        anyhow::bail!(
            "--depth {deepest} with -n {n} needs {} positions, but the model's context holds {context}: \
             lower the depth or the decode length",
            deepest + n
        );
    }
    let mut rows = prefill_rows(&mut model, args)?;
    // This machine's limits, measured in the same run: the bandwidth and the kernels' peak.
    let machine =
        crate::engine::machine::measure(&mut model, crate::engine::threads(), model_bytes)?;
    rows.extend(decode_rows(&mut model, args, bandwidth)?);
    rows.extend(no_cache_rows(&mut model, args)?);
    // The engine's own peak: what the checks below load (a session, the exact path) is not counted.
    let peak_rss_mib = peak_rss_mib();
    let (decode_threads, decode_prefetch) = (model.decode_threads(), model.decode_prefetch());
    drop(model);

    let speculative = super::bench_draft::from_args(path, args)?;
    let (step_ms, bare_forward_ms) =
        super::bench_checks::step_overhead(path, args.reps, precision)?;
    let max_prob_diff_fast_vs_exact = super::bench_checks::fast_vs_exact(path)?;
    Ok(Report {
        model: path.display().to_string(),
        threads: crate::engine::threads(),
        load_ms,
        rows,
        step_overhead: step_ms / bare_forward_ms,
        step_ms,
        bare_forward_ms,
        max_prob_diff_fast_vs_exact,
        peak_rss_mib,
        decode_threads,
        decode_prefetch,
        isa: Isa::best().name().to_string(),
        kv_cache,
        peak_gflops: machine.peak_gflops,
        speculative,
    })
}

/// The prefill rows: each prompt length read from an empty cache in one pass.
fn prefill_rows(model: &mut Model, args: &BenchArgs) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for &n in &args.prompt_lens {
        let toks = tokens(n, model.vocab_size);
        rows.push(measure(&format!("pp{n}"), n, args.reps, || {
            model.cache.clear();
            model.forward(&toks, 0, ForwardOptions::default())?;
            Ok(())
        })?);
    }
    Ok(rows)
}

/// The decode rows: `-n` steps from each depth, each against the speed of light `bandwidth` (GB/s)
/// puts on it.
fn decode_rows(model: &mut Model, args: &BenchArgs, bandwidth: f64) -> Result<Vec<Row>> {
    let (n, vocab, none) = (args.gen_len, model.vocab_size, ForwardOptions::default());
    let toks = tokens(n, vocab);
    let mut rows = Vec::new();
    for &depth in &args.depths {
        // The prompt already in the cache is read untimed; then `n` decodes from its end.
        let prompt = tokens(depth, vocab);
        let test = match depth {
            0 => format!("tg{n}"),
            d => format!("tg{n} @ d{d}"),
        };
        let setup = |m: &mut Model| {
            m.cache.clear();
            // In chunks of 512, as llama-bench's batches read it (and as the app reads a prompt in
            // chunks): one pass over 2048 tokens would hold activations no step needs.
            for start in (0..depth).step_by(512) {
                let end = (start + 512).min(depth);
                m.forward(&prompt[start..end], start, none)?;
            }
            Ok(())
        };
        let decode = |m: &mut Model| {
            for (i, &t) in toks.iter().enumerate() {
                m.forward(&[t], depth + i, none)?;
            }
            Ok(())
        };
        let mut row = measure_after(&test, n, args.reps, model, setup, decode)?;
        let light = super::speed_of_light::of_decode(model, depth, n, row.median_tok_s, bandwidth);
        row.speed_of_light = Some(light);
        rows.push(row);
    }
    Ok(rows)
}

/// Without the cache a step re-reads the whole sequence: its cost grows with length.
fn no_cache_rows(model: &mut Model, args: &BenchArgs) -> Result<Vec<Row>> {
    let vocab = model.vocab_size;
    let mut rows = Vec::new();
    for &len in &args.no_cache_lens {
        let toks = tokens(len, vocab);
        rows.push(measure(&format!("tg@{len} no-kv"), 1, args.reps, || {
            model.cache.clear();
            model.forward(&toks, 0, ForwardOptions::default())?;
            Ok(())
        })?);
    }
    Ok(rows)
}

pub fn run(path: &Path, args: &BenchArgs, precision: KvPrecision) -> Result<()> {
    let cap = match args.isa {
        KernelCap::Best => None,
        KernelCap::Avx512 => Some(Isa::Avx512Vnni),
        KernelCap::Avx2 => Some(Isa::Avx2),
        KernelCap::Scalar => Some(Isa::Scalar),
    };
    if let Some(isa) = cap {
        Isa::cap(isa).map_err(|e| anyhow::anyhow!("--isa {}: {e}", isa.name()))?;
    }
    let r = measure_all(path, args, precision)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    println!(
        "model: {} · threads: {} · kernels: {} · KV cache {} · load {:.0} ms · peak RSS {:.0} MiB\n",
        r.model, r.threads, r.isa, r.kv_cache, r.load_ms, r.peak_rss_mib
    );
    println!("| test | tokens | tok/s (median) | ± tok/s (stddev) | ms per run (median) |");
    println!("|---|---:|---:|---:|---:|");
    for row in &r.rows {
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.2} |",
            row.test, row.tokens, row.median_tok_s, row.stddev_tok_s, row.median_ms
        );
    }
    println!(
        "\npp N: reading an N-token prompt in one pass (prefill); tg N: writing N tokens one step at a \
         time with the KV cache (decode); tg@D no-kv: one step at depth D without the cache, which \
         re-reads all D tokens"
    );
    for (row, l) in r
        .rows
        .iter()
        .filter_map(|row| Some((row, row.speed_of_light.as_ref()?)))
    {
        println!(
            "\n{}: a step reads {:.1} MB (weights {:.1}, KV {:.1}); at the {:.1} GB/s measured here the \
             ceiling is {:.0} tok/s; {:.0} tok/s is {:.0}% of it",
            row.test,
            l.bytes_per_token as f64 / 1e6,
            l.weight_bytes as f64 / 1e6,
            l.kv_bytes as f64 / 1e6,
            l.bandwidth_gb_s,
            l.ceiling_tok_s,
            row.median_tok_s,
            l.efficiency * 100.0
        );
    }
    println!(
        "\nthe model's kernels peak at {:.1} GFLOP/s here (a 64-token pass, the best of three): a prefill's ceiling",
        r.peak_gflops
    );
    if let Some(b) = &r.speculative {
        println!("\n{}", super::bench_draft::describe(b));
    }
    println!(
        "\nsession step / bare forward: {:.3}x ({:.3} ms against {:.3} ms, medians)",
        r.step_overhead, r.step_ms, r.bare_forward_ms
    );
    println!(
        "decode matmuls on {} thread(s), weights prefetched ahead: {}; chosen by timing the decode steps",
        r.decode_threads,
        if r.decode_prefetch { "yes" } else { "no" }
    );
    println!(
        "the fast kernels against the exact reference path, largest difference in any probability over 8 greedy steps on {DEFAULT_PROMPT:?}: {:.2e}",
        r.max_prob_diff_fast_vs_exact
    );
    Ok(())
}

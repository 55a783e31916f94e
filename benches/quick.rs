//! Quick A/B timing for kernel work on a busy machine: paths run interleaved, min and median of N.
//!
//! `cargo bench --bench quick -- [threads] [sweep | attention | attention-cold | chain | decode | light
//! | kernel NAME ROWS]`; `NAMES=a,b` times
//! those tensors at 1, 64 and 512 rows instead of the default list. Not criterion: on shared cores the minimum of many
//! interleaved runs is a steadier ratio than criterion's mean.

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use nexttoken::engine::forward::linear::{Linear, MatmulPath};
use nexttoken::engine::forward::quant::decode_plan::with_small_rows_threads;
use std::time::Instant;

#[path = "common.rs"]
mod common;
use common::load;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if let Some(t) = args.first().and_then(|a| a.parse().ok()) {
        nexttoken::engine::forward::quant::set_threads(t);
    }
    // `ISA=avx2`: every kernel (the attention's too) as on a CPU without AVX-512.
    if std::env::var("ISA").as_deref() == Ok("avx2") {
        nexttoken::engine::forward::quant::Isa::cap(nexttoken::engine::forward::quant::Isa::Avx2)
            .unwrap();
    }
    let only = std::env::var("ONLY").unwrap_or_default();
    let cases: &[(&str, &[usize])] = &[
        ("blk.0.attn_q.weight", &[1, 4, 16, 64, 512]),
        ("blk.0.ffn_up.weight", &[1, 4, 16, 64, 512]),
        ("blk.0.ffn_down.weight", &[1, 64, 512]),
        ("token_embd.weight", &[1, 8]),
    ];
    println!("threads={}", nexttoken::engine::forward::quant::threads());
    if args.iter().any(|a| a == "sweep") {
        return sweep();
    }
    if args.iter().any(|a| a == "attention") {
        return attention();
    }
    if args.iter().any(|a| a == "decode") {
        return decode();
    }
    if args.iter().any(|a| a == "light") {
        return light();
    }
    if args.iter().any(|a| a == "chain") {
        return chain();
    }
    if args.iter().any(|a| a == "attention-cold") {
        return attention_cold();
    }
    if let Some(i) = args.iter().position(|a| a == "kernel") {
        return kernel(&args[i + 1], args[i + 2].parse().unwrap());
    }
    table(cases, &only);
}

/// `kernel NAME ROWS`: just the fast matmul, repeated ~3 s, for a profiler.
fn kernel(name: &str, m: usize) {
    let w = nexttoken::engine::forward::quant::QMatrix::from_qtensor(&load(name))
        .unwrap()
        .unwrap();
    let xs: Vec<f32> = (0..m * w.in_dim())
        .map(|i| ((i * 7919 % 1000) as f32 - 500.0) * 1e-3)
        .collect();
    use nexttoken::engine::forward::quant::Isa;
    let isa = match std::env::var("ISA").as_deref() {
        Ok("avx2") => Isa::Avx2,
        Ok("scalar") => Isa::Scalar,
        _ => Isa::best(),
    };
    let (start, mut best, mut runs) = (Instant::now(), f64::MAX, 0);
    while start.elapsed().as_secs_f64() < 3.0 {
        let s = Instant::now();
        std::hint::black_box(w.matmul(&xs, m, isa));
        best = best.min(s.elapsed().as_secs_f64() * 1e6);
        runs += 1;
    }
    let gmac = (m * w.in_dim() * w.out_dim()) as f64 / best / 1e3;
    println!("{name} m={m}: best {best:.1} us over {runs} runs, {gmac:.1} GMAC/s");
}

/// The default table: each case's exact, fast and dense-f32 matmuls interleaved, min and median.
/// `NAMES=a,b` times these tensors instead (another model's, with `NEXTTOKEN_MODEL`).
fn table(cases: &[(&str, &[usize])], only: &str) {
    let names = std::env::var("NAMES").unwrap_or_default();
    let named: Vec<(&str, &[usize])> = names
        .split(',')
        .filter(|n| !n.is_empty())
        .map(|n| (n, &[1usize, 64, 512][..]))
        .collect();
    let cases = if named.is_empty() { cases } else { &named[..] };
    for &(name, rows) in cases {
        if !name.contains(only) {
            continue;
        }
        let w = load(name);
        let (_, k) = w.shape().dims2().unwrap();
        let exact = Linear::new(load(name), MatmulPath::Exact).unwrap();
        let fast = Linear::new(load(name), MatmulPath::Fast).unwrap();
        let dense = w.dequantize(&Device::Cpu).unwrap().t().unwrap();
        for &m in rows {
            let xs = Tensor::randn(0f32, 1.0, (m, k), &Device::Cpu).unwrap();
            let reps = (2000 / m).clamp(5, 200);
            let mut t = [vec![], vec![], vec![]];
            for r in 0..reps {
                let time = |f: &dyn Fn()| {
                    let s = Instant::now();
                    f();
                    s.elapsed().as_secs_f64() * 1e6
                };
                if std::env::var("SKIP_EXACT").is_err() && (m <= 64 || r < 3) {
                    t[0].push(time(&|| drop(exact.forward(&xs).unwrap())));
                }
                t[1].push(time(&|| drop(fast.forward(&xs).unwrap())));
                if std::env::var("SKIP_EXACT").is_err() {
                    t[2].push(time(&|| drop(xs.matmul(&dense).unwrap())));
                }
            }
            let stat = |v: &mut Vec<f64>| {
                if v.is_empty() {
                    return (f64::NAN, f64::NAN);
                }
                v.sort_by(|a, b| a.partial_cmp(b).unwrap());
                (v[0], v[v.len() / 2])
            };
            let [e, f, d] = t.map(|mut v| stat(&mut v));
            println!(
                "{name:24} m={m:4}  exact {:9.1} / {:9.1} us   fast {:8.1} / {:8.1} us   dense-f32 {:8.1} / {:8.1} us   exact/fast {:5.1}x  dense/fast {:4.2}x",
                e.0, e.1, f.0, f.1, d.0, d.1, e.0 / f.0, d.0 / f.0
            );
        }
    }
}

/// Every matmul of one forward pass, in model order, with real weights: what decode (1 row) and
/// prefill (512 rows) cost in matmuls alone, weights streaming from memory as they would.
fn sweep() {
    let mut file = std::fs::File::open(common::model_path()).unwrap();
    let content = gguf_file::Content::read(&mut file).unwrap();
    let mut names = vec![];
    for l in 0..30 {
        for t in [
            "attn_q",
            "attn_k",
            "attn_v",
            "attn_output",
            "ffn_gate",
            "ffn_up",
            "ffn_down",
        ] {
            names.push(format!("blk.{l}.{t}.weight"));
        }
    }
    names.push("token_embd.weight".into());
    let paths = if std::env::var("SKIP_EXACT").is_ok() {
        vec![MatmulPath::Fast]
    } else {
        vec![MatmulPath::Fast, MatmulPath::Exact]
    };
    for path in paths {
        let start = Instant::now();
        let layers: Vec<Linear> = names
            .iter()
            .map(|n| {
                Linear::new(content.tensor(&mut file, n, &Device::Cpu).unwrap(), path).unwrap()
            })
            .collect();
        let ms = start.elapsed().as_secs_f64() * 1e3;
        println!("{path:?}: loaded {} matrices in {ms:.0} ms", layers.len());
        let bytes: usize = layers.iter().map(|l| l.fast_bytes()).sum();
        let only_m: Option<usize> = std::env::var("ROWS").ok().and_then(|r| r.parse().ok());
        for m in [1usize, 64, 512] {
            if only_m.is_some_and(|o| o != m) {
                continue;
            }
            if path == MatmulPath::Exact && m > 1 {
                continue;
            }
            let xs: Vec<Tensor> = [576usize, 1536]
                .iter()
                .map(|&k| Tensor::randn(0f32, 1.0, (m, k), &Device::Cpu).unwrap())
                .collect();
            let last = Tensor::randn(0f32, 1.0, (1, 576), &Device::Cpu).unwrap();
            let mut times = vec![];
            let reps: usize = std::env::var("REPS")
                .ok()
                .and_then(|r| r.parse().ok())
                .unwrap_or(if m == 1 { 30 } else { 4 });
            let threads = nexttoken::engine::forward::quant::threads();
            for _ in 0..reps {
                let s = Instant::now();
                with_small_rows_threads(threads, || {
                    for (i, l) in layers.iter().enumerate() {
                        // prefill computes logits for the last position only
                        let x = if i == layers.len() - 1 {
                            &last
                        } else {
                            &xs[(l.in_dim() == 1536) as usize]
                        };
                        drop(l.forward(x).unwrap());
                    }
                });
                times.push(s.elapsed().as_secs_f64() * 1e3);
            }
            times.sort_by(|a, b| a.partial_cmp(b).unwrap());
            println!(
                "{path:?} m={m:3}: min {:.2} ms, median {:.2} ms per pass -> {:.0} tok/s (matmuls only); fast weights {:.1} MB",
                times[0], times[times.len() / 2], m as f64 * 1e3 / times[0], bytes as f64 / 1e6
            );
        }
    }
}

/// One layer of SmolLM2's attention (9 heads, 3 kv heads, 64 wide), decode and prefill: the per-row kernel
/// (`engine::forward::attention`) against the candle ops it replaced (batched q·kᵀ and p·v matmuls, the causal
/// mask by `where_cond`, candle's softmax), interleaved, min and median of N.
fn attention() {
    use nexttoken::engine::forward::attention::{attend, Heads};
    use nexttoken::engine::forward::kv_cache::KvView;
    let heads = Heads {
        n_head: 9,
        n_kv_head: 3,
        head_dim: 64,
        window: None,
    };
    let randn = |n: usize| -> Vec<f32> {
        let t = Tensor::randn(0f32, 1.0, n, &Device::Cpu).unwrap();
        t.to_vec1().unwrap()
    };
    let only = std::env::var("ONLY").unwrap_or_default();
    for (seq, kv_len) in [(1, 64), (1, 512), (1, 2048), (64, 64), (512, 512)] {
        if !format!("seq={seq} kv={kv_len}").contains(&only) {
            continue;
        }
        let index_pos = kv_len - seq;
        let (q, k, v) = (randn(seq * 576), randn(kv_len * 192), randn(kv_len * 192));
        let reps = if seq == 1 { 400 } else { 12 };
        let reps = std::env::var("REPS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(reps);
        // `CANDLE=0`: the kernel alone (for a profiler).
        let candle = std::env::var("CANDLE").as_deref() != Ok("0");
        let (mut new, mut old) = (vec![], vec![]);
        for _ in 0..reps {
            let s = Instant::now();
            let kv = KvView::position_major(&k, &v, 3, 64);
            drop(attend(&q, &kv, heads, index_pos, 0, &mut Vec::new()));
            new.push(s.elapsed().as_secs_f64() * 1e6);
            if candle {
                let s = Instant::now();
                drop(candle_attention(&q, &k, &v, seq, kv_len).unwrap());
                old.push(s.elapsed().as_secs_f64() * 1e6);
            }
        }
        if old.is_empty() {
            old.push(f64::NAN);
        }
        let stat = |v: &mut Vec<f64>| {
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            (v[0], v[v.len() / 2])
        };
        let ((n0, n1), (o0, o1)) = (stat(&mut new), stat(&mut old));
        println!(
            "attention seq={seq:3} kv={kv_len:3}: kernel {n0:9.1} / {n1:9.1} us   candle ops {o0:9.1} / {o1:9.1} us   candle/kernel {:4.2}x",
            o0 / n0
        );
    }
}

/// A decode step's attention at depth as the model meets it: 30 layers' caches (SmolLM2's layout,
/// 2048 keys: 94 MB, more than the last-level cache), one layer after another, so each layer's keys and
/// values come from memory. Prints µs per layer and the bandwidth that implies. `LAYERS=1` keeps one
/// layer's cache warm instead (the kernel's compute alone); `REPS` sets the repetitions (40); `KV=f16`
/// an `f16` cache (47 MB).
fn attention_cold() {
    use nexttoken::engine::forward::attention::{attend, Heads};
    use nexttoken::engine::forward::kv_cache::{KvPrecision, Stored};
    let precision = match std::env::var("KV").as_deref() {
        Ok("f16") => KvPrecision::F16,
        _ => KvPrecision::F32,
    };
    let heads = Heads {
        n_head: 9,
        n_kv_head: 3,
        head_dim: 64,
        window: None,
    };
    let layers = std::env::var("LAYERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let kv_len = 2048;
    let fill = |n: usize, seed: usize| -> Vec<f32> {
        (0..n)
            .map(|i| (((i + seed) * 7919 % 2003) as f32 - 1001.0) * 1e-3)
            .collect()
    };
    // The model's own cache: its layout is what the kernel streams.
    let mut cache = nexttoken::engine::forward::kv_cache::KvCache::new(layers, 3, 64, kv_len)
        .with_precision(precision);
    for l in 0..layers {
        let (k, v) = (fill(kv_len * 192, l), fill(kv_len * 192, l + 99));
        cache.append(l, 0, &k, &v).unwrap();
    }
    cache.set_len(kv_len);
    let q = fill(576, 7);
    let mut per_layer = Vec::new();
    let reps = std::env::var("REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    for _ in 0..reps {
        let s = Instant::now();
        for l in 0..layers {
            let at = kv_len - 1;
            drop(match cache.view(l) {
                Stored::F32(kv) => attend(&q, &kv, heads, at, 0, &mut Vec::new()),
                Stored::F16(kv) => attend(&q, &kv, heads, at, 0, &mut Vec::new()),
            });
        }
        per_layer.push(s.elapsed().as_secs_f64() * 1e6 / layers as f64);
    }
    per_layer.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let med = per_layer[per_layer.len() / 2];
    let bytes = (2 * kv_len * 192 * precision.bytes()) as f64;
    println!(
        "cold decode attention, {kv_len} keys: {:.1} / {med:.1} us a layer (min / median), {:.1} GB/s at the median",
        per_layer[0],
        bytes / med / 1e3
    );
}

/// The attention as `model.rs` computed it before the kernel (after RoPE, from the cache's K and V).
fn candle_attention(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    seq: usize,
    kv_len: usize,
) -> candle_core::Result<Tensor> {
    let (n_head, n_kv, hd) = (9, 3, 64);
    let rows = |x: &[f32], n: usize, len: usize| {
        Tensor::from_slice(x, (len, n, hd), &Device::Cpu)?
            .transpose(0, 1)?
            .contiguous()
    };
    let q = rows(q, n_head, seq)?.reshape((n_kv, 3 * seq, hd))?;
    let (k, v) = (rows(k, n_kv, kv_len)?, rows(v, n_kv, kv_len)?);
    let att = (q.matmul(&k.t()?)? / (hd as f64).sqrt())?;
    let att = if seq > 1 {
        let index_pos = kv_len - seq;
        let mask: Vec<u8> = (0..seq)
            .flat_map(|i| (0..kv_len).map(move |j| u8::from(j > index_pos + i)))
            .collect();
        let mask = Tensor::from_slice(&mask, (seq, kv_len), &Device::Cpu)?;
        let att = att.reshape((n_kv, 3, seq, kv_len))?;
        let neg = Tensor::new(f32::NEG_INFINITY, &Device::Cpu)?.broadcast_as(att.shape())?;
        mask.broadcast_as(att.shape())?
            .where_cond(&neg, &att)?
            .reshape((n_kv, 3 * seq, kv_len))?
    } else {
        att
    };
    let att = candle_nn::ops::softmax_last_dim(&att)?;
    att.matmul(&v)?
        .reshape((n_head, seq, hd))?
        .transpose(0, 1)?
        .reshape((seq, n_head * hd))
}

/// `chain`: the default sampler chain over a 49,152-token row (SmolLM2's vocabulary) shaped like real
/// logits (a few tokens far above a broad bulk) on one thread and on all, interleaved for ~6 s: best
/// and median in microseconds.
fn chain() {
    use nexttoken::engine::sampler::run_chain;
    use nexttoken::protocol::SamplerSettings;
    // `LOGITS=file`: a real row instead (little-endian f32s).
    let logits: Vec<f32> = match std::env::var("LOGITS") {
        Ok(f) => std::fs::read(f)
            .unwrap()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect(),
        Err(_) => {
            let mut z = 0x2545_f491_4f6c_dd1du64;
            (0..49_152)
                .map(|i| {
                    z ^= z << 13;
                    z ^= z >> 7;
                    z ^= z << 17;
                    let u = (z >> 40) as f32 / (1u64 << 24) as f32;
                    if i % 4099 == 7 {
                        14.0 + u * 4.0
                    } else {
                        (u - 0.5) * 8.0
                    }
                })
                .collect()
        }
    };
    let history: Vec<u32> = (0..64).map(|i| (i * 37) % logits.len() as u32).collect();
    let s = SamplerSettings::default();
    use nexttoken::engine::forward::quant::decode_plan::with_small_rows_threads;
    // One thread and the pool's threads, interleaved.
    let counts = [1, nexttoken::engine::forward::quant::threads()];
    let (start, mut times) = (Instant::now(), [Vec::new(), Vec::new()]);
    while start.elapsed().as_secs_f64() < 6.0 {
        for (c, times) in counts.iter().zip(&mut times) {
            let t = Instant::now();
            with_small_rows_threads(*c, || {
                std::hint::black_box(run_chain(&logits, &history, &s, 10, 0.3))
            });
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    for (c, times) in counts.iter().zip(&mut times) {
        times.sort_by(f64::total_cmp);
        println!(
            "chain on {c} thread(s): best {:.1} us, median {:.1} us over {} runs",
            times[0],
            times[times.len() / 2],
            times.len()
        );
    }
}

/// `light`: the bandwidth probe of `bench` and 16 decode steps, in turn, 40 times: each run's best step
/// against the bandwidth of the moment next to it (the VM's bandwidth moves between spells).
fn light() {
    use nexttoken::engine::forward::model::Model;
    use nexttoken::engine::gguf::GgufFile;
    let mut g = GgufFile::open(&common::model_path()).unwrap();
    let file_bytes = g.file_bytes;
    let mut model = Model::load(&mut g, MatmulPath::Fast).unwrap();
    let threads = nexttoken::engine::forward::quant::threads();
    let bytes = model.weight_bytes_per_token() + model.kv_bytes_at(8);
    let vocab = model.vocab_size as u32;
    let (mut bws, mut steps, mut effs) = (vec![], vec![], vec![]);
    for round in 0..40 {
        // The best of its reads over 300 ms (`machine.rs`), just before the steps.
        let bw = nexttoken::engine::machine::bandwidth_gb_s_again(threads, file_bytes);
        model.cache.clear();
        let mut best = f64::MAX;
        for i in 0..16 {
            let t = Instant::now();
            model
                .forward(
                    &[(round * 31 + i as u32 * 7) % vocab],
                    i,
                    Default::default(),
                )
                .unwrap();
            best = best.min(t.elapsed().as_secs_f64());
        }
        let eff = bytes as f64 / best / 1e9 / bw;
        bws.push(bw);
        steps.push(best * 1e3);
        effs.push(eff);
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    println!(
        "bandwidth median {:.1} GB/s, best step median {:.3} ms, efficiency per pair: median {:.2}, range {:.2}-{:.2}",
        med(&mut bws),
        med(&mut steps),
        med(&mut effs.clone()),
        effs.iter().cloned().fold(f64::MAX, f64::min),
        effs.iter().cloned().fold(0.0, f64::max)
    );
}

/// `decode`: runs of 64 decode steps from an empty cache for ~10 s, for a profiler; prints the mean,
/// median and best step. `PAUSE_MS=N` sleeps N ms before every `EVERY`-th step (default every one), as
/// a step pressed by hand follows a pause, and prints each run's steps in order (the recovery after a
/// pause: docs/PERFORMANCE.md, round twenty-four).
fn decode() {
    use nexttoken::engine::forward::model::Model;
    use nexttoken::engine::gguf::GgufFile;
    let mut g = GgufFile::open(&common::model_path()).unwrap();
    let mut model = Model::load(&mut g, MatmulPath::Fast).unwrap();
    let vocab = model.vocab_size as u32;
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let pause = var("PAUSE_MS");
    let every = var("EVERY").unwrap_or(1).max(1) as u32;
    let (start, mut steps) = (Instant::now(), vec![]);
    while start.elapsed().as_secs_f64() < 10.0 {
        model.cache.clear();
        let mut run = String::new();
        for i in 0..64u32 {
            if let Some(ms) = pause.filter(|_| i % every == 0) {
                std::thread::sleep(std::time::Duration::from_millis(ms));
            }
            let t = Instant::now();
            let tok = (i * 7919 + 11) % vocab;
            model
                .forward(&[tok], i as usize, Default::default())
                .unwrap();
            steps.push(t.elapsed().as_secs_f64() * 1e3);
            run += &format!("{:.1} ", t.elapsed().as_secs_f64() * 1e3);
        }
        if pause.is_some() {
            println!("{run}");
        }
    }
    steps.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mean = steps.iter().sum::<f64>() / steps.len() as f64;
    println!(
        "{} steps: mean {mean:.3} ms, median {:.3} ms, best {:.3} ms",
        steps.len(),
        steps[steps.len() / 2],
        steps[0]
    );
}

//! Quick A/B timing for kernel work on a busy machine: paths run interleaved, min and median of N.
//!
//! `cargo bench --bench quick -- [threads]`. Not criterion: on shared cores the minimum of many
//! interleaved runs is a steadier ratio than criterion's mean.

use candle_core::quantized::{gguf_file, QTensor};
use candle_core::{Device, Tensor};
use nexttoken::engine::linear::{Linear, MatmulPath};
use std::time::Instant;

const MODEL: &str = "/work/main/models/SmolLM2-135M-Instruct.Q4_1.gguf";

fn load(name: &str) -> QTensor {
    let path = std::env::var("NEXTTOKEN_MODEL").unwrap_or_else(|_| MODEL.to_string());
    let mut file = std::fs::File::open(&path).expect("model file (set NEXTTOKEN_MODEL)");
    let content = gguf_file::Content::read(&mut file).unwrap();
    content.tensor(&mut file, name, &Device::Cpu).unwrap()
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if let Some(t) = args.first().and_then(|a| a.parse().ok()) {
        nexttoken::engine::quant::set_threads(t);
    }
    let only = std::env::var("ONLY").unwrap_or_default();
    let cases: &[(&str, &[usize])] = &[
        ("blk.0.attn_q.weight", &[1, 4, 16, 64, 512]),
        ("blk.0.ffn_up.weight", &[1, 4, 16, 64, 512]),
        ("blk.0.ffn_down.weight", &[1, 64, 512]),
        ("token_embd.weight", &[1, 8]),
    ];
    println!("threads={}", nexttoken::engine::quant::threads());
    for &(name, rows) in cases {
        if !name.contains(&only) {
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
                if m <= 64 || r < 3 {
                    t[0].push(time(&|| drop(exact.forward(&xs).unwrap())));
                }
                t[1].push(time(&|| drop(fast.forward(&xs).unwrap())));
                t[2].push(time(&|| drop(xs.matmul(&dense).unwrap())));
            }
            let stat = |v: &mut Vec<f64>| {
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

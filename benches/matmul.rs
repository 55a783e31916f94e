//! Criterion: `Linear` Exact vs Fast (and dense f32 gemm, the alternative prefill route) on the real
//! model's shapes: decode (1 row) and prefill (64 / 512 rows). Needs the default model file.
//!
//! `cargo bench --bench matmul`; `NEXTTOKEN_MODEL` overrides the model path.

use candle_core::{Device, Tensor};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use nexttoken::engine::forward::linear::{Linear, MatmulPath};
use std::time::Duration;

#[path = "common.rs"]
mod common;
use common::load;

fn bench(c: &mut Criterion) {
    let shapes = [
        ("attn_q", "blk.0.attn_q.weight", &[1usize, 64, 512][..]),
        ("ffn_up", "blk.0.ffn_up.weight", &[1, 64, 512][..]),
        ("ffn_down", "blk.0.ffn_down.weight", &[1, 64, 512][..]),
        // Prefill only needs logits for the last position, so the output matrix sees few rows.
        ("output", "token_embd.weight", &[1, 8][..]),
    ];
    for (label, name, rows) in shapes {
        let w = load(name);
        let (n, k) = w.shape().dims2().unwrap();
        let exact = Linear::new(load(name), MatmulPath::Exact).unwrap();
        let fast = Linear::new(load(name), MatmulPath::Fast).unwrap();
        let dense = w.dequantize(&Device::Cpu).unwrap().t().unwrap();
        let mut group = c.benchmark_group(format!("{label} {n}x{k} {:?}", w.dtype()));
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300));
        group.measurement_time(Duration::from_secs(2));
        for &m in rows {
            let xs = Tensor::randn(0f32, 1.0, (m, k), &Device::Cpu).unwrap();
            group.throughput(Throughput::Elements(m as u64));
            group.bench_with_input(BenchmarkId::new("exact", m), &xs, |b, xs| {
                b.iter(|| exact.forward(xs).unwrap())
            });
            group.bench_with_input(BenchmarkId::new("fast", m), &xs, |b, xs| {
                b.iter(|| fast.forward(xs).unwrap())
            });
            group.bench_with_input(BenchmarkId::new("dense-f32", m), &xs, |b, xs| {
                b.iter(|| xs.matmul(&dense).unwrap())
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);

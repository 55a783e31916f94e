//! The speed of light of a decode step, for `bench`: a one-token pass must stream every weight (and the
//! KV cache at its depth) from memory, so no step can be faster than those bytes over this machine's
//! memory bandwidth. `bench` measures the bandwidth (a streaming read of a buffer far larger than the
//! last-level cache, on the threads decode uses) and sets each decode rate against that ceiling.

use crate::engine::forward::model::Model;
use serde::Serialize;

/// A decode row's bytes and ceiling.
#[derive(Debug, Clone, Serialize)]
pub struct SpeedOfLight {
    /// This machine's streaming read bandwidth, measured in the same run.
    pub bandwidth_gb_s: f64,
    /// What one decode step reads: the weights and the KV cache at the run's mean depth.
    pub bytes_per_token: usize,
    pub weight_bytes: usize,
    pub kv_bytes: usize,
    /// The fastest decode the bandwidth allows: bandwidth over bytes per token.
    pub ceiling_tok_s: f64,
    /// The measured rate over the ceiling (1 would be the speed of light).
    pub efficiency: f64,
}

/// The ceiling of a decode run of `n` tokens from KV depth `depth`, and how near `tok_s` came to it.
pub fn of_decode(
    model: &Model,
    depth: usize,
    n: usize,
    tok_s: f64,
    bandwidth: f64,
) -> SpeedOfLight {
    let weight_bytes = model.weight_bytes_per_token();
    let kv_bytes = model.kv_bytes_at(depth + n.saturating_sub(1) / 2);
    let bytes_per_token = weight_bytes + kv_bytes;
    let ceiling_tok_s = bandwidth * 1e9 / bytes_per_token.max(1) as f64;
    SpeedOfLight {
        bandwidth_gb_s: bandwidth,
        bytes_per_token,
        weight_bytes,
        kv_bytes,
        ceiling_tok_s,
        efficiency: tok_s / ceiling_tok_s,
    }
}

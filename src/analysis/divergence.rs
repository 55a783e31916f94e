//! How far apart two next-token distributions are, over the whole vocabulary.
//!
//! Inputs are raw logits rows (the model's own distribution at temperature 1, before any sampler
//! stage). Everything is computed in f64 from log-softmax values, so `KL(p‖p)` is exactly 0 and a
//! token with a tiny probability cannot turn into `0 · ln 0` trouble.

use serde::{Deserialize, Serialize};

/// A distribution as log-probabilities (natural log), normalised.
#[derive(Debug, Clone, PartialEq)]
pub struct LogProbs(pub Vec<f64>);

impl LogProbs {
    /// Log-softmax of a logits row.
    pub fn from_logits(logits: &[f32]) -> LogProbs {
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
        let sum: f64 = logits.iter().map(|&l| (l as f64 - max).exp()).sum();
        let lse = max + sum.ln();
        LogProbs(logits.iter().map(|&l| l as f64 - lse).collect())
    }

    /// Shannon entropy in nats.
    pub fn entropy(&self) -> f64 {
        -self.0.iter().map(|&l| l.exp() * l).sum::<f64>()
    }

    /// The most likely token (the lowest id on a tie).
    pub fn argmax(&self) -> u32 {
        let mut best = 0;
        for (i, &l) in self.0.iter().enumerate() {
            if l > self.0[best] {
                best = i;
            }
        }
        best as u32
    }

    /// 0-based rank of `id`: how many tokens are strictly more likely.
    pub fn rank(&self, id: u32) -> usize {
        let v = self.0[id as usize];
        self.0.iter().filter(|&&x| x > v).count()
    }

    pub fn logprob(&self, id: u32) -> f64 {
        self.0[id as usize]
    }
}

/// `KL(p‖q) = Σ p ln(p/q)` in nats.
pub fn kl(p: &LogProbs, q: &LogProbs) -> f64 {
    assert_eq!(
        p.0.len(),
        q.0.len(),
        "distributions over different vocabularies"
    );
    p.0.iter()
        .zip(&q.0)
        .filter(|(&lp, _)| lp > f64::NEG_INFINITY)
        .map(|(&lp, &lq)| lp.exp() * (lp - lq))
        .sum::<f64>()
        .max(0.0)
}

/// Jensen–Shannon divergence in nats: `½KL(p‖m) + ½KL(q‖m)` with `m = ½(p+q)`. Symmetric, and at most
/// `ln 2`.
pub fn js(p: &LogProbs, q: &LogProbs) -> f64 {
    assert_eq!(
        p.0.len(),
        q.0.len(),
        "distributions over different vocabularies"
    );
    let mut sum = 0.0;
    for (&lp, &lq) in p.0.iter().zip(&q.0) {
        let (a, b) = (lp.exp(), lq.exp());
        let m = 0.5 * (a + b);
        if m == 0.0 {
            continue;
        }
        let lm = m.ln();
        // A token one side gives probability 0 adds nothing on that side (0 · ln 0 = 0).
        if a > 0.0 {
            sum += 0.5 * a * (lp - lm);
        }
        if b > 0.0 {
            sum += 0.5 * b * (lq - lm);
        }
    }
    sum.clamp(0.0, std::f64::consts::LN_2)
}

/// The three divergences the compare view shows for one aligned step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Divergence {
    pub kl_ab: f64,
    pub kl_ba: f64,
    pub js: f64,
}

impl Divergence {
    pub const ZERO: Divergence = Divergence {
        kl_ab: 0.0,
        kl_ba: 0.0,
        js: 0.0,
    };

    pub fn between(a: &LogProbs, b: &LogProbs) -> Divergence {
        Divergence {
            kl_ab: kl(a, b),
            kl_ba: kl(b, a),
            js: js(a, b),
        }
    }
}

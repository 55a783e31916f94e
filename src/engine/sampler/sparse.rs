//! Distributions kept as (token, probability) lists, best first (`ChainOutput::kept`): what
//! speculative decoding compares. The acceptance test min(1, p/q), the residual max(0, p − q) and the
//! inverse-CDF draw over such a list.

/// min(1, p/q): the chance the check keeps a token the draft drew with probability q.
pub fn accept_prob(p: f32, q: f32) -> f32 {
    if q > 0.0 {
        (p / q).min(1.0)
    } else {
        1.0
    }
}

/// A distribution's probability of `token` (0 when it is cut).
pub fn prob_in(dist: &[(u32, f32)], token: u32) -> f32 {
    dist.iter()
        .find(|(t, _)| *t == token)
        .map_or(0.0, |&(_, p)| p)
}

/// max(0, p − q), normalised, best first; empty when p ≤ q everywhere (then p = q, and nothing is
/// ever rejected).
pub fn residual(p: &[(u32, f32)], q: &[(u32, f32)]) -> Vec<(u32, f32)> {
    let mut r: Vec<(u32, f32)> = p
        .iter()
        .map(|&(t, pt)| (t, (pt - prob_in(q, t)).max(0.0)))
        .filter(|&(_, x)| x > 0.0)
        .collect();
    let total: f64 = r.iter().map(|&(_, x)| x as f64).sum();
    r.iter_mut()
        .for_each(|(_, x)| *x = (*x as f64 / total) as f32);
    r.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    r
}

/// The inverse-CDF draw from `dist` at `u`: the token and its probability.
pub fn draw(dist: &[(u32, f32)], u: f32) -> Option<(u32, f32)> {
    let total: f64 = dist.iter().map(|&(_, p)| p as f64).sum();
    let target = u as f64 * total;
    let mut cum = 0.0f64;
    dist.iter()
        .find(|&&(_, p)| {
            cum += p as f64;
            cum > target
        })
        .or(dist.last())
        .copied()
}

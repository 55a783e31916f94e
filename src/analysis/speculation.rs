//! The arithmetic of speculative decoding (Leviathan et al. 2023, §3): how many tokens a round writes
//! for an acceptance rate, what a round costs against plain steps, and the acceptance a draft needs to
//! break even. Running totals over many rounds, for the screen, the trace and the bench.

/// Tokens a round of `k` drafted tokens writes on average when each is kept with probability `alpha`
/// independently: the kept prefix plus the one token every round ends with,
/// (1 − α^(k+1)) / (1 − α).
pub fn expected_tokens(alpha: f64, k: usize) -> f64 {
    let alpha = alpha.clamp(0.0, 1.0);
    if alpha >= 1.0 - 1e-12 {
        return (k + 1) as f64;
    }
    (1.0 - alpha.powi(k as i32 + 1)) / (1.0 - alpha)
}

/// The acceptance rate at which rounds cost as much per token as plain steps: `round_ms` (the draft's
/// passes and the check) spread over `expected_tokens` equals `plain_ms`. `None` when even every token
/// kept would not pay (the round costs more than k + 1 plain steps). 0 when a round pays even with
/// nothing kept.
pub fn break_even_acceptance(round_ms: f64, plain_ms: f64, k: usize) -> Option<f64> {
    if plain_ms <= 0.0 {
        return None;
    }
    let need = round_ms / plain_ms;
    if need <= 1.0 {
        return Some(0.0);
    }
    if need > (k + 1) as f64 {
        return None;
    }
    // expected_tokens rises with alpha: bisect.
    let (mut lo, mut hi) = (0.0, 1.0);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if expected_tokens(mid, k) < need {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(hi)
}

/// A break-even acceptance `a` (0 to 1) as a per cent to say, "97%", to a tenth near the top ("99.6%");
/// `None` past 99.95%, where a figure would round to 100% and read as an acceptance no round can pass.
pub fn acceptance_words(a: f64) -> Option<String> {
    let p = a * 100.0;
    match p {
        _ if p < 99.5 => Some(format!("{p:.0}%")),
        _ if p < 99.95 => Some(format!("{p:.1}%")),
        _ => None,
    }
}

/// Rounds added up: what the screen's running line, `trace` and `bench` report.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    pub rounds: usize,
    /// Drafted tokens checked (up to and including each round's first rejection).
    pub checked: usize,
    pub accepted: usize,
    /// Tokens of text written (the kept drafts and each round's last token).
    pub tokens: usize,
    pub round_ms: f64,
    /// What as many plain steps would have cost.
    pub plain_ms: f64,
    pub draft_ms: f64,
    pub verify_ms: f64,
}

impl Tally {
    /// Adds one round: `drafted` tokens proposed, `accepted` kept, its times, and one plain step's.
    pub fn add(
        &mut self,
        drafted: usize,
        accepted: usize,
        (draft_ms, verify_ms): (f64, f64),
        plain_ms: f64,
    ) {
        self.rounds += 1;
        self.checked += (accepted + 1).min(drafted);
        self.accepted += accepted;
        self.tokens += accepted + 1;
        self.draft_ms += draft_ms;
        self.verify_ms += verify_ms;
        self.round_ms += draft_ms + verify_ms;
        self.plain_ms += plain_ms * (accepted + 1) as f64;
    }

    /// Adds another tally's rounds.
    pub fn merge(&mut self, t: &Tally) {
        self.rounds += t.rounds;
        self.checked += t.checked;
        self.accepted += t.accepted;
        self.tokens += t.tokens;
        self.round_ms += t.round_ms;
        self.plain_ms += t.plain_ms;
        self.draft_ms += t.draft_ms;
        self.verify_ms += t.verify_ms;
    }

    /// Kept drafted tokens over checked ones.
    pub fn acceptance(&self) -> f64 {
        ratio(self.accepted as f64, self.checked as f64)
    }

    /// Tokens written per pass of the model (plain decoding: 1).
    pub fn tokens_per_pass(&self) -> f64 {
        ratio(self.tokens as f64, self.rounds as f64)
    }

    /// Plain time over speculative time for the same tokens: above 1 the draft pays.
    pub fn speedup(&self) -> f64 {
        ratio(self.plain_ms, self.round_ms)
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_tokens_runs_from_one_to_k_plus_one() {
        assert_eq!(expected_tokens(0.0, 4), 1.0);
        assert_eq!(expected_tokens(1.0, 4), 5.0);
        // 1 + a + a² + a³ + a⁴ at a = 0.5
        assert!((expected_tokens(0.5, 4) - 1.9375).abs() < 1e-12);
    }

    #[test]
    fn break_even_is_where_the_round_costs_what_its_tokens_would() {
        let a = break_even_acceptance(30.0, 10.0, 4).unwrap();
        assert!((expected_tokens(a, 4) - 3.0).abs() < 1e-9, "{a}");
        assert_eq!(break_even_acceptance(8.0, 10.0, 4), Some(0.0));
        assert_eq!(break_even_acceptance(60.0, 10.0, 4), None);
    }

    #[test]
    fn a_tally_counts_checked_tokens_up_to_the_first_rejection() {
        let mut t = Tally::default();
        t.add(4, 4, (4.0, 2.0), 5.0); // all kept: 4 checked, 5 tokens
        t.add(4, 1, (4.0, 2.0), 5.0); // 1 kept, the 2nd rejected: 2 checked, 2 tokens
        assert_eq!((t.checked, t.accepted, t.tokens, t.rounds), (6, 5, 7, 2));
        assert!((t.acceptance() - 5.0 / 6.0).abs() < 1e-12);
        assert!((t.tokens_per_pass() - 3.5).abs() < 1e-12);
        assert!((t.speedup() - 35.0 / 12.0).abs() < 1e-12);
    }
}

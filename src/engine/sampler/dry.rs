//! DRY ("Don't Repeat Yourself", p-e-w 2024), with llama.cpp's semantics (`llama_sampler_dry_*` in
//! `src/llama-sampling.cpp`, itself ported from koboldcpp). Where the repetition penalty punishes single
//! tokens, DRY punishes a token for *continuing a sequence* already seen, and more the longer it is.
//!
//! For each candidate token `t`: let `n` be the length of the longest suffix of the recent tokens that
//! also occurred earlier, immediately followed by `t` (emitting `t` would repeat `n + 1` tokens). When
//! `n >= allowed_length`, `t`'s logit loses `multiplier * base^(n - allowed_length)`.
//!
//! The steps, as llama.cpp runs them over the last `penalty_last_n` tokens (the window):
//! 1. Sequence breakers: walking back from the newest token, the first complete *restart sequence*
//!    caps every match length (`rep_limit`): a match never reaches across a breaker. If the cap is below
//!    `allowed_length` nothing is penalised.
//! 2. The Z-algorithm on the reversed window gives, for every earlier position, how long a suffix of the
//!    window ends there (capped by `rep_limit`), in linear time.
//! 3. Each position whose match is at least `allowed_length` long nominates the token after it, keeping
//!    the longest match per token.
//! 4. The penalty, with the exponent clamped so `base^exp` stays a finite `f32`; a token that is itself a
//!    breaker is never penalised.
//!
//! Sequence breakers are strings. llama.cpp maps each onto the vocabulary once
//! (`get_overlapping_token_sequences`): every token whose text *contains* the string becomes a
//! single-token breaker; a token whose text *ends with a proper prefix* of the string becomes the head
//! of a multi-token restart sequence, its tail the tokenisation of the rest of the string (at most 20
//! tokens). [`DryBreakers::from_vocab`] does the same, once per session (see `session/feed.rs`).

use crate::protocol::SamplerSettings;
use std::collections::HashMap;

/// A breaker longer than this many bytes is cut to it (llama.cpp: `MAX_CHAR_LEN`).
pub const MAX_BREAKER_BYTES: usize = 40;
/// The tail of a multi-token restart sequence keeps at most this many tokens (llama.cpp: `MAX_SEQ_LEN`).
pub const MAX_TAIL_TOKENS: usize = 20;

/// The sequence breakers mapped onto token ids: each *head* token with the *tails* that must follow it
/// to complete a restart sequence. An empty tail makes the head a breaker on its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DryBreakers {
    heads: HashMap<u32, Vec<Vec<u32>>>,
}

impl DryBreakers {
    /// No breakers: matches run as far back as the window.
    pub fn none() -> Self {
        Self::default()
    }

    /// Breakers given directly as token sequences (the first token is the head), as llama.cpp's tests
    /// build them. An empty sequence is skipped.
    pub fn from_sequences(seqs: &[Vec<u32>]) -> Self {
        let mut b = Self::default();
        for s in seqs {
            if let Some((&head, tail)) = s.split_first() {
                b.add(head, tail.to_vec());
            }
        }
        b
    }

    /// Maps breaker strings onto a vocabulary of `n_vocab` tokens, as llama.cpp does: `token_bytes(id)` is
    /// a token's text (special tokens as their names), `tokenize(text)` tokenises the rest of a breaker
    /// (no BOS; `None` when it cannot, and that restart sequence is skipped). Empty breakers are skipped;
    /// longer ones than [`MAX_BREAKER_BYTES`] are cut.
    pub fn from_vocab(
        breakers: &[String],
        n_vocab: usize,
        token_bytes: impl Fn(u32) -> Vec<u8>,
        tokenize: impl Fn(&str) -> Option<Vec<u32>>,
    ) -> Self {
        let mut b = Self::default();
        let words: Vec<Vec<u8>> = (0..n_vocab as u32).map(&token_bytes).collect();
        for breaker in breakers {
            let s = &breaker.as_bytes()[..breaker.len().min(MAX_BREAKER_BYTES)];
            if s.is_empty() {
                continue;
            }
            for (id, word) in words.iter().enumerate() {
                let id = id as u32;
                if contains(word, s) {
                    b.add(id, vec![]);
                    continue;
                }
                // Every place the token's text ends with a proper prefix of the breaker: the rest of
                // the breaker, tokenised, must follow.
                for pos in (0..word.len()).filter(|&p| word[p] == s[0]) {
                    let overlap = (word.len() - pos).min(s.len());
                    if word[pos..pos + overlap] != s[..overlap] {
                        continue;
                    }
                    let rest = String::from_utf8_lossy(&s[overlap..]);
                    let Some(mut tail) = tokenize(&rest) else {
                        continue;
                    };
                    tail.truncate(MAX_TAIL_TOKENS);
                    b.add(id, tail);
                }
            }
        }
        b
    }

    fn add(&mut self, head: u32, tail: Vec<u32>) {
        let tails = self.heads.entry(head).or_default();
        if !tails.contains(&tail) {
            tails.push(tail);
        }
    }

    /// Whether `token` is a breaker on its own (DRY never penalises it).
    pub fn is_single_token_breaker(&self, token: u32) -> bool {
        self.heads
            .get(&token)
            .is_some_and(|tails| tails.iter().any(|t| t.is_empty()))
    }

    /// How many tokens start a restart sequence.
    pub fn head_count(&self) -> usize {
        self.heads.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Whether DRY does anything under these settings (llama.cpp: a multiplier other than 0, a base of at
/// least 1 and a window other than 0).
pub fn dry_on(s: &SamplerSettings) -> bool {
    s.dry_multiplier != 0.0 && s.dry_base >= 1.0 && s.dry_penalty_last_n != 0
}

/// The window DRY scans: the last `dry_penalty_last_n` tokens of `history`, all of it for -1.
fn window<'a>(history: &'a [u32], s: &SamplerSettings) -> &'a [u32] {
    let n = if s.dry_penalty_last_n < 0 {
        history.len()
    } else {
        (s.dry_penalty_last_n as usize).min(history.len())
    };
    &history[history.len() - n..]
}

/// Step 1: the longest a match may be, walking back from the newest token to the first complete restart
/// sequence: `i` tokens back from the end with a tail of `len` tokens caps matches at `i - len`.
fn rep_limit(w: &[u32], breakers: &DryBreakers) -> usize {
    let m = w.len();
    // `back(i)` is the token `i` places before the newest (llama.cpp's `last_tokens.rat(i)`).
    let back = |i: usize| w[m - 1 - i];
    for i in 0..m {
        let Some(tails) = breakers.heads.get(&back(i)) else {
            continue;
        };
        let longest = tails
            .iter()
            .filter(|t| t.len() <= i)
            .filter(|t| t.iter().enumerate().all(|(o, &tok)| tok == back(i - o - 1)))
            .map(|t| t.len())
            .max();
        if let Some(len) = longest {
            return i - len;
        }
    }
    m
}

/// Step 2: the Z-array of `r`: `z[k]` is the length of the longest common prefix of `r` and `r[k..]`
/// (`z[0]` is left 0). Linear: the box `[lt, rt]` is the rightmost match found so far.
fn z_array(r: &[u32]) -> Vec<usize> {
    let m = r.len();
    let mut z = vec![0; m];
    let (mut lt, mut rt) = (0, 0);
    for k in 1..m {
        let mut n = if k < rt { z[k - lt].min(rt - k) } else { 0 };
        while k + n < m && r[n] == r[k + n] {
            n += 1;
        }
        z[k] = n;
        if k + n > rt {
            lt = k;
            rt = k + n;
        }
    }
    z
}

/// Steps 1 to 3: for each token that would extend a repeat of at least `dry_allowed_length` tokens,
/// the longest such repeat (`n`, not counting the token itself), sorted by token id. Empty when DRY is
/// off or no match is long enough.
pub fn dry_repeats(
    history: &[u32],
    s: &SamplerSettings,
    breakers: &DryBreakers,
) -> Vec<(u32, usize)> {
    if !dry_on(s) {
        return vec![];
    }
    let w = window(history, s);
    let m = w.len();
    let allowed = s.dry_allowed_length;
    if m <= allowed {
        return vec![];
    }
    let limit = rep_limit(w, breakers);
    if limit < allowed {
        return vec![];
    }
    // Reversed, a suffix of the window is a prefix: z[k] is how long a suffix of the window also ends at
    // window position m - 1 - k.
    let reversed: Vec<u32> = w.iter().rev().cloned().collect();
    let z = z_array(&reversed);
    let mut best: HashMap<u32, usize> = HashMap::new();
    for k in 1..m {
        let n = z[k].min(limit);
        if n >= allowed {
            // The token after the earlier occurrence is the one that would continue the repeat.
            let next = w[m - k];
            let e = best.entry(next).or_default();
            *e = (*e).max(n);
        }
    }
    let mut out: Vec<(u32, usize)> = best.into_iter().collect();
    out.sort_unstable();
    out
}

/// The penalty for a repeat of `n` tokens: `multiplier * base^(n - allowed_length)`, the exponent
/// clamped as llama.cpp does so the power stays finite (computed in f64, as C++'s `std::pow(float,
/// int)` is, then rounded to f32).
pub fn dry_penalty(n: usize, s: &SamplerSettings) -> f32 {
    const FLOAT_MAX_LOG: f32 = 88.722_84;
    let max_exponent = if s.dry_base > 1.000_001 {
        (FLOAT_MAX_LOG / s.dry_base.ln()) as i64
    } else {
        0
    };
    let mut exp = n as i64 - s.dry_allowed_length as i64;
    if max_exponent > 0 && exp > max_exponent {
        exp = max_exponent;
    }
    (s.dry_multiplier as f64 * (s.dry_base as f64).powf(exp as f64)) as f32
}

/// Step 4: `(token, penalty)` for every token DRY penalises, sorted by token id. A single-token breaker
/// is never penalised.
pub fn dry_penalties(
    history: &[u32],
    s: &SamplerSettings,
    breakers: &DryBreakers,
) -> Vec<(u32, f32)> {
    dry_repeats(history, s, breakers)
        .into_iter()
        .filter(|&(t, _)| !breakers.is_single_token_breaker(t))
        .map(|(t, n)| (t, dry_penalty(n, s)))
        .collect()
}

/// Subtracts the DRY penalties from `logits` in place; nothing when DRY is off.
pub fn apply_dry(logits: &mut [f32], history: &[u32], s: &SamplerSettings, breakers: &DryBreakers) {
    for (t, p) in dry_penalties(history, s, breakers) {
        if let Some(l) = logits.get_mut(t as usize) {
            *l -= p;
        }
    }
}

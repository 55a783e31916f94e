//! What an `expect` may claim, as plain data parsed from the lesson file (the table in
//! docs/LESSONS.md), and the combinations of fields that make no sense, refused when the file is read.

use serde::de::{self, Deserializer};
use serde::Deserialize;

/// One claim checked against the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// The claim, as written (`top1 " Paris"`).
    pub what: String,
    /// What the model did.
    pub observed: String,
    pub ok: bool,
}

/// What a lesson claims about the model right now. Every field given must hold.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The next distribution's most likely token has exactly this text.
    pub top1: Option<String>,
    /// A token (by text, exactly one token) for `in_top_k`, `prob_above`, `prob_below`.
    pub token: Option<String>,
    /// `token` is among the k most likely next tokens.
    pub in_top_k: Option<usize>,
    /// `token`'s raw probability as the next token is above / below this.
    pub prob_above: Option<f64>,
    pub prob_below: Option<f64>,
    /// The sampler chain (penalties, DRY, cut-offs, the draw) plans another next token than the raw
    /// model's most likely one (`true`), or the same (`false`).
    pub chain_changes_top1: Option<bool>,
    /// The last committed token has (or has not) exactly this text.
    pub last_token: Option<String>,
    pub last_token_not: Option<String>,
    /// The raw probability the model gave the last committed token is above / below this.
    pub last_prob_above: Option<f64>,
    pub last_prob_below: Option<f64>,
    /// The last committed token was not the raw model's most likely one at its position (`true`: a
    /// penalty, the draw or a forced choice took another), or was (`false`).
    pub last_not_top1: Option<bool>,
    /// The next distribution's entropy (nats) is above / below this.
    pub entropy_above: Option<f64>,
    pub entropy_below: Option<f64>,
    /// A loop is found at the tip with a period in `[lo, hi]`.
    pub loop_period: Option<[usize; 2]>,
    /// No loop at the tip (`no_loop = true`).
    pub no_loop: Option<bool>,
    /// Mean Jensen–Shannon divergence (nats) between the previous branch and the current path, from
    /// their fork on, is above / below this.
    pub js_above: Option<f64>,
    pub js_below: Option<f64>,
    /// Limits `js_above` / `js_below` to the first this-many steps from the fork on.
    pub js_steps: Option<usize>,
    /// After the token where they fork, the current path and the previous branch write different
    /// tokens (`true`), or the same ones (`false`), over the length of the shorter.
    pub differs_from_previous: Option<bool>,
    /// The last forward pass read exactly / more than this many tokens.
    pub tokens_fed: Option<usize>,
    pub tokens_fed_above: Option<usize>,
    /// The last forward pass read the whole sequence (true: the KV cache is off) or one token.
    pub tokens_fed_is_length: Option<bool>,
    /// Reading the prompt costs at least this many times less per token than writing one (decode ms
    /// per token with the cache on over prefill ms per token). Keep it conservative.
    pub prefill_faster: Option<f64>,
    /// Over the decode steps at the end of the path with the KV cache as it is now (at least
    /// [`GROWTH_MIN_STEPS`]), the fastest step of the last third over the fastest step of the first
    /// third is above / below this. Timing is noisy: keep it conservative.
    pub decode_growth_above: Option<f64>,
    pub decode_growth_below: Option<f64>,
    /// The generated text (after the prompt) contains / does not contain this.
    pub text_contains: Option<String>,
    pub text_not_contains: Option<String>,
    /// The prompt, as the model read it, is this many tokens / more than this many tokens.
    pub prompt_tokens: Option<usize>,
    pub prompt_tokens_above: Option<usize>,
    /// The newest position's attention in one head.
    pub attention: Option<AttentionExpect>,
    /// Of the drafted tokens checked since the draft was loaded, the share the model kept is above
    /// / below this (0 to 1).
    pub acceptance_above: Option<f64>,
    pub acceptance_below: Option<f64>,
    /// A one-token step reads at least this share of the model file's weight bytes (the speed of
    /// light: every weight, every step).
    pub step_reads_model_above: Option<f64>,
    /// The last one-token step took at least its floor (its bytes over this machine's bandwidth,
    /// measured at load in the app, else when the check runs), within the measurement's noise (`true`), or beat it (`false`).
    pub step_slower_than_light: Option<bool>,
}

/// Fewest decode steps `decode_growth_above` / `decode_growth_below` compare (two per third).
pub const GROWTH_MIN_STEPS: usize = 6;

/// Attention of the newest position (the last token read) in one layer and head. In the file both
/// count from 1, as the screen does ("layer 17/30 · head 1/9"); here they are 0-based.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttentionExpect {
    /// 0-based; written 1-based in the file.
    #[serde(deserialize_with = "one_based")]
    pub layer: usize,
    /// 0-based; written 1-based in the file.
    #[serde(deserialize_with = "one_based")]
    pub head: usize,
    /// Weight on the previous token is above this.
    pub previous_above: Option<f64>,
    /// Weight on the very first token (the attention sink) is above this.
    pub first_above: Option<f64>,
    /// Weight on the tokens that followed earlier copies of the newest token is above this: the
    /// "copy" (induction) pattern.
    pub copy_above: Option<f64>,
    /// Weight on any later position is exactly zero (the causal mask); always true of a real model.
    pub causal: Option<bool>,
}

/// A layer or head number as the file writes it (from 1, as on screen), made 0-based. 0 is an error.
pub fn one_based<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    let n = i64::deserialize(d)?;
    if n < 1 {
        return Err(de::Error::custom(format!(
            "{n}: layers and heads count from 1, as on screen (layer 1 is the first)"
        )));
    }
    Ok(n as usize - 1)
}

impl Expect {
    /// A problem with the combination of fields, if any (checked at load time).
    pub fn problem(&self) -> Option<String> {
        let token_checks =
            self.in_top_k.is_some() || self.prob_above.is_some() || self.prob_below.is_some();
        if token_checks && self.token.is_none() {
            return Some("`in_top_k`, `prob_above` and `prob_below` need `token = \"...\"`".into());
        }
        if self.token.is_some() && !token_checks {
            return Some(
                "`token` needs one of `in_top_k`, `prob_above`, `prob_below` to say what to check"
                    .into(),
            );
        }
        if let Some([lo, hi]) = self.loop_period {
            if lo == 0 || lo > hi {
                return Some(format!(
                    "`loop_period = [{lo}, {hi}]`: expected [lo, hi] with 1 <= lo <= hi"
                ));
            }
        }
        let shares = [
            ("prob_above", self.prob_above),
            ("prob_below", self.prob_below),
            ("last_prob_above", self.last_prob_above),
            ("last_prob_below", self.last_prob_below),
            ("acceptance_above", self.acceptance_above),
            ("acceptance_below", self.acceptance_below),
            ("step_reads_model_above", self.step_reads_model_above),
        ];
        for (name, p) in shares {
            if let Some(p) = p.filter(|p| !(0.0..=1.0).contains(p)) {
                return Some(format!(
                    "`{name} = {p}`: a probability or share is between 0 and 1 (0.5 is 50%)"
                ));
            }
        }
        if let Some(n) = self.js_steps {
            if self.js_above.is_none() && self.js_below.is_none() {
                return Some(
                    "`js_steps` needs `js_above` or `js_below` to say what to check".into(),
                );
            }
            if n == 0 {
                return Some("`js_steps = 0`: expected at least 1 step".into());
            }
        }
        for x in [self.decode_growth_above, self.decode_growth_below]
            .into_iter()
            .flatten()
        {
            if !(x > 0.0 && x.is_finite()) {
                return Some(format!(
                    "`decode_growth_*` = {x}: expected a ratio above 0, e.g. 1.2"
                ));
            }
        }
        if let Some(a) = &self.attention {
            let any = a.previous_above.is_some()
                || a.first_above.is_some()
                || a.copy_above.is_some()
                || a.causal.is_some();
            if !any {
                return Some("`attention` needs one of `previous_above`, `first_above`, `copy_above`, `causal`".into());
            }
        }
        if self == &Expect::default() {
            return Some(
                "an empty `expect`: give at least one check, e.g. `top1 = \" Paris\"`".into(),
            );
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expect(text: &str) -> Result<Expect, String> {
        toml::from_str::<Expect>(text).map_err(|e| e.to_string())
    }

    /// A probability or share outside 0..1 is refused when the file is read, not at run time.
    #[test]
    fn a_probability_above_one_is_refused_when_read() {
        let e = expect("token = \" Paris\"\nprob_above = 1.5").unwrap();
        let why = e.problem().expect("refused");
        assert!(
            why.contains("`prob_above = 1.5`") && why.contains("between 0 and 1"),
            "{why}"
        );
        let e = expect("acceptance_below = -0.1").unwrap();
        assert!(e.problem().unwrap().contains("acceptance_below"));
        let e = expect("token = \" Paris\"\nprob_above = 0.5").unwrap();
        assert_eq!(e.problem(), None);
    }

    /// Layers and heads are written from 1, as on screen, and kept from 0.
    #[test]
    fn attention_counts_from_one_in_the_file() {
        let e = expect("attention = { layer = 17, head = 1, previous_above = 0.5 }").unwrap();
        let a = e.attention.unwrap();
        assert_eq!((a.layer, a.head), (16, 0));
        let err = expect("attention = { layer = 0, head = 1, causal = true }").unwrap_err();
        assert!(err.contains("count from 1"), "{err}");
        let err = expect("attention = { layer = 3, head = 0, causal = true }").unwrap_err();
        assert!(err.contains("count from 1"), "{err}");
    }

    #[test]
    fn js_steps_needs_a_js_check_and_a_count() {
        let e = expect("js_steps = 16").unwrap();
        assert!(e.problem().unwrap().contains("js_above"));
        let e = expect("js_steps = 0\njs_above = 0.1").unwrap();
        assert!(e.problem().unwrap().contains("at least 1"));
        assert_eq!(
            expect("js_steps = 16\njs_above = 0.1").unwrap().problem(),
            None
        );
    }

    #[test]
    fn decode_growth_must_be_a_positive_ratio() {
        let e = expect("decode_growth_above = 0.0").unwrap();
        assert!(e.problem().unwrap().contains("ratio"));
        assert_eq!(expect("decode_growth_below = 1.5").unwrap().problem(), None);
    }
}

//! The sampler's flags, shared by the app, `trace` and `compare`, and the settings they make.

use crate::protocol::lesson::format::SamplerPatch;
use crate::protocol::SamplerSettings;
use clap::Args;

#[derive(Debug, Args, Clone)]
pub struct SamplerArgs {
    /// Always take the most likely token (no random draw).
    #[arg(long)]
    pub greedy: bool,
    /// Divide the logits by this before sampling; 0 means greedy [default: 0.8, range 0 to 5].
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Keep only the k most likely tokens; 0 turns it off [default: 40]. (Not `trace --top-k`, which is
    /// how many candidates to print.)
    #[arg(long = "sample-top-k")]
    pub sample_top_k: Option<usize>,
    /// Keep the smallest set of tokens whose probability adds up to p; 1 turns it off [default: 0.95].
    #[arg(long)]
    pub top_p: Option<f32>,
    /// Drop tokens less likely than min-p times the top token's probability; 0 turns it off
    /// [default: 0.05].
    #[arg(long)]
    pub min_p: Option<f32>,
    /// Penalise tokens seen in the penalty window (--penalty-last-n): 1 is off, higher discourages
    /// repeats [default: 1, range 1 to 3].
    #[arg(long)]
    pub repeat_penalty: Option<f32>,
    /// Subtract this from a token's logit once per time it occurs in the penalty window; 0 is off,
    /// negative encourages repeats [default: 0, range -2 to 2].
    #[arg(long, allow_negative_numbers = true)]
    pub frequency_penalty: Option<f32>,
    /// Subtract this once from the logit of any token that occurs in the penalty window; 0 is off,
    /// negative encourages repeats [default: 0, range -2 to 2].
    #[arg(long, allow_negative_numbers = true)]
    pub presence_penalty: Option<f32>,
    /// How many recent tokens (prompt included) the repeat, frequency and presence penalties look at;
    /// 0 turns them off [default: 64, range 0 to 131072].
    #[arg(long, value_name = "N")]
    pub penalty_last_n: Option<usize>,
    /// DRY ("don't repeat yourself"): lower a token that would extend a sequence already seen, by
    /// multiplier * base^(length - allowed length); 0 turns it off [default: 0, range 0 to 5; 0.8 is
    /// llama.cpp's suggestion].
    #[arg(long)]
    pub dry_multiplier: Option<f32>,
    /// DRY: how fast the penalty grows with each repeated token [default: 1.75, range 1 to 5].
    #[arg(long)]
    pub dry_base: Option<f32>,
    /// DRY: repeats up to this many tokens long go unpenalised [default: 2, range 1 to 20].
    #[arg(long)]
    pub dry_allowed_length: Option<usize>,
    /// DRY: how many recent tokens to scan for repeats; -1 means the whole context, 0 turns DRY off
    /// [default: -1, range -1 to 131072].
    #[arg(long, allow_negative_numbers = true)]
    pub dry_penalty_last_n: Option<i32>,
    /// DRY: text that ends a repeat (a token containing it is never penalised). Repeatable; the first
    /// use replaces the defaults, `none` leaves no breakers; `\n`, `\t`, `\r`, `\\` and `\"` are
    /// read as escapes [default: "\n" ":" "\"" "*"].
    #[arg(long = "dry-sequence-breaker", value_name = "TEXT")]
    pub dry_sequence_breakers: Vec<String>,
    /// Seed of the random draw: the same seed gives the same tokens [default: 42].
    #[arg(long)]
    pub seed: Option<u64>,
}

/// `--dry-sequence-breaker` values as llama.cpp reads them: any use replaces the defaults, and `none`
/// clears the list. Escapes are read so that a newline can be typed.
fn dry_breakers(args: &[String]) -> Vec<String> {
    let mut out = vec![];
    for a in args {
        if a == "none" {
            out.clear();
        } else {
            out.push(unescape(a));
        }
    }
    out
}

/// `\n`, `\t`, `\r`, `\\` and `\"` as the characters they stand for; any other backslash is kept.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some('"') => out.push('"'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

impl SamplerArgs {
    /// The settings these flags ask for, over the defaults (as a lesson's `[sampler]` table is read),
    /// checked against the valid ranges. `--temperature 0` means greedy, as in llama.cpp
    /// (`SamplerSettings::is_greedy`).
    pub fn settings(&self) -> anyhow::Result<SamplerSettings> {
        let breakers = (!self.dry_sequence_breakers.is_empty())
            .then(|| dry_breakers(&self.dry_sequence_breakers));
        let patch = SamplerPatch {
            greedy: Some(self.greedy),
            temperature: self.temperature,
            top_k: self.sample_top_k,
            top_p: self.top_p,
            min_p: self.min_p,
            repeat_penalty: self.repeat_penalty,
            frequency_penalty: self.frequency_penalty,
            presence_penalty: self.presence_penalty,
            penalty_last_n: self.penalty_last_n,
            dry_multiplier: self.dry_multiplier,
            dry_base: self.dry_base,
            dry_allowed_length: self.dry_allowed_length,
            dry_penalty_last_n: self.dry_penalty_last_n,
            dry_sequence_breakers: breakers,
            seed: self.seed,
        };
        let s = patch.settings();
        s.validate().map_err(|e| anyhow::anyhow!("--{e}"))?;
        Ok(s)
    }
}

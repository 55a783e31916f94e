//! The sampler's settings, declared once: the table below is the only place a setting is named,
//! typed, defaulted, ranged and explained. `table.rs` expands it into the struct that crosses the
//! channel, the names, the lesson's patch, the ranges, the replay's flags and `validate`; the command
//! line (`cli/sampler.rs`), the sampler panel, the status bar and the handouts read what it makes.
//!
//! Stages run in this order: penalties, DRY, temperature, top-k, top-p, min-p, then a draw (llama.cpp's
//! default order as far as these stages go).
//!
//! DRY follows llama.cpp (`engine/sampler/dry.rs`): a token that would extend a sequence of `n >=
//! dry_allowed_length` tokens already seen in the window loses `dry_multiplier * dry_base^(n -
//! dry_allowed_length)` from its logit. Sequence breakers are mapped onto the vocabulary as llama.cpp
//! does: a token whose text contains a breaker stops every match and is never penalised; a token whose
//! text ends with the start of a breaker stops a match only when the tokens of the breaker's rest follow
//! it. Simplifications: none in the matching; llama.cpp's `-1` window is its context size, here it is the
//! whole token path (never longer than the context); and `validate` refuses an empty breaker or one over
//! 40 bytes, which llama.cpp skips or cuts with a warning.

mod names;
mod table;
mod value;

pub use names::*;
pub use value::{Kind, SettingValue};

use serde::{Deserialize, Serialize};
use table::sampler_settings;

/// The longest `dry_allowed_length` the settings accept.
pub const DRY_MAX_ALLOWED_LENGTH: usize = 20;
/// The widest `dry_penalty_last_n` the settings accept (beyond any context this app loads).
pub const DRY_MAX_LAST_N: i32 = 131_072;
/// The widest `penalty_last_n` the settings accept (as wide as DRY's window).
pub const PENALTY_MAX_LAST_N: usize = DRY_MAX_LAST_N as usize;
/// The longest DRY sequence breaker, in bytes (llama.cpp cuts longer ones to this).
pub const DRY_MAX_BREAKER_BYTES: usize = 40;

// Each row: the doc of the field; `Variant key: type = default`; the stage it belongs to (`group`);
// its command-line flag (also the name ranges and messages use); its row in the sampler panel; a
// sentence for a learner (the panel's); the flag's help (`--help` adds the default and the range);
// then, where they apply, its range, the value that turns it off, an extra check, and its names in
// the status bar (long, short).
sampler_settings! {
    /// Divides the logits: below 1 sharpens, above 1 flattens; 0 means greedy (`is_greedy`).
    Temperature temperature: f32 = 0.8;
        group Draw, flag "temperature", label "temperature",
        explain "divides the logits: <1 sharpens, >1 flattens",
        help "Divide the logits by this before sampling",
        range TEMPERATURE = (0.0, 5.0, "0 means greedy"),
        status ("T", "T");
    /// Keeps the k most likely tokens; 0 turns top-k off.
    TopK top_k: usize = 40;
        group Draw, flag "sample-top-k", label "top-k",
        explain "keeps only the k most likely tokens",
        help "Keep only the k most likely tokens; 0 turns it off (not `trace --top-k`, which is how \
              many candidates to print)",
        off 0, status ("top-k", "k");
    /// Keeps the smallest set whose mass (after temperature) reaches p; 1.0 turns top-p off.
    TopP top_p: f32 = 0.95;
        group Draw, flag "top-p", label "top-p",
        explain "keeps the smallest set whose mass reaches p, after temperature",
        help "Keep the smallest set of tokens whose probability (after temperature) adds up to p",
        range TOP_P = (0.01, 1.0, "1 turns it off"), off 1.0, status ("top-p", "p");
    /// Drops tokens below min-p times the top token's probability (both after temperature); 0.0
    /// turns min-p off.
    MinP min_p: f32 = 0.05;
        group Draw, flag "min-p", label "min-p",
        explain "drops tokens below min-p × the top token's p, after temperature",
        help "Drop tokens less likely than min-p times the top token's probability (both after \
              temperature)",
        range MIN_P = (0.0, 0.99, "0 turns it off"), off 0.0, status ("min-p", "m");
    /// CTRL-style: divides positive logits, multiplies negative ones; 1.0 turns it off.
    RepeatPenalty repeat_penalty: f32 = 1.0;
        group Penalty, flag "repeat-penalty", label "repeat penalty",
        explain "makes tokens already seen less likely",
        help "Penalise tokens seen in the penalty window (--penalty-last-n); higher discourages repeats",
        range REPEAT_PENALTY = (1.0, 3.0, "1 turns it off"), off 1.0, status ("rep", "rep");
    /// Subtracted once per earlier occurrence (OpenAI-style); 0 is off.
    FrequencyPenalty frequency_penalty: f32 = 0.0;
        group Penalty, flag "frequency-penalty", label "frequency pen.",
        explain "subtracts this from a logit per time the token was seen",
        help "Subtract this from a token's logit once per time it occurs in the penalty window; \
              negative encourages repeats",
        range FREQUENCY_PENALTY = (-2.0, 2.0, "0 turns it off"), off 0.0, status ("freq", "freq");
    /// Subtracted once if the token occurred at all; 0 is off.
    PresencePenalty presence_penalty: f32 = 0.0;
        group Penalty, flag "presence-penalty", label "presence pen.",
        explain "subtracts this once from a token seen at all",
        help "Subtract this once from the logit of any token that occurs in the penalty window; \
              negative encourages repeats",
        range PRESENCE_PENALTY = (-2.0, 2.0, "0 turns it off"), off 0.0, status ("pres", "pres");
    /// How many recent tokens (prompt included) the penalties look at; 0 turns them off.
    PenaltyLastN penalty_last_n: usize = 64;
        group Penalty, flag "penalty-last-n", label "penalty window",
        explain "how many recent tokens the penalties look at",
        help "How many recent tokens (prompt included) the repeat, frequency and presence penalties \
              look at",
        range PENALTY_LAST_N = (0, PENALTY_MAX_LAST_N, "0 turns the penalties off"), off 0,
        status ("over last", "last");
    /// DRY's strength; 0 turns DRY off (llama.cpp suggests 0.8).
    DryMultiplier dry_multiplier: f32 = 0.0;
        group Dry, flag "dry-multiplier", label "DRY multiplier",
        explain "DRY: lowers a token that would repeat a sequence",
        help "DRY (\"don't repeat yourself\"): lower a token that would extend a sequence already \
              seen, by multiplier * base^(length - allowed length); 0.8 is llama.cpp's suggestion",
        range DRY_MULTIPLIER = (0.0, 5.0, "0 turns DRY off"), off 0.0, status ("DRY", "DRY");
    /// How fast the DRY penalty grows with the length of the repeat.
    DryBase dry_base: f32 = 1.75;
        group Dry, flag "dry-base", label "DRY base",
        explain "DRY: the penalty grows by this per repeated token",
        help "DRY: how fast the penalty grows with each repeated token",
        range DRY_BASE = (1.0, 5.0, "the penalty grows by this factor per repeated token");
    /// Repeats up to this many tokens long go unpenalised by DRY.
    DryAllowedLength dry_allowed_length: usize = 2;
        group Dry, flag "dry-allowed-length", label "DRY allowed len",
        explain "DRY: repeats this long go unpenalised",
        help "DRY: repeats up to this many tokens long go unpenalised",
        range DRY_ALLOWED_LENGTH = (1, DRY_MAX_ALLOWED_LENGTH, "repeats this long go unpenalised");
    /// How many recent tokens DRY scans: -1 the whole context, 0 turns DRY off.
    DryPenaltyLastN dry_penalty_last_n: i32 = -1;
        group Dry, flag "dry-penalty-last-n", label "DRY window",
        explain "DRY: how many recent tokens it scans for repeats",
        help "DRY: how many recent tokens to scan for repeats",
        range DRY_PENALTY_LAST_N = (-1, DRY_MAX_LAST_N, "-1 means the whole context, 0 turns DRY off"),
        off 0;
    /// Texts that end a repeat for DRY (llama.cpp's defaults: newline, colon, double quote, asterisk).
    DrySequenceBreakers dry_sequence_breakers: Vec<String> = default_dry_sequence_breakers();
        group Dry, flag "dry-sequence-breaker", label "DRY breakers",
        explain "DRY: texts that end a repeat (--dry-sequence-breaker)",
        help "DRY: text that ends a repeat (a token containing it is never penalised). Repeatable; the \
              first use replaces the defaults, `none` leaves no breakers; `\\n`, `\\t`, `\\r`, `\\\\` \
              and `\\\"` are read as escapes",
        check check_breakers;
    /// Argmax of the penalised logits; no random draw.
    Greedy greedy: bool = false;
        group Greedy, flag "greedy", label "greedy",
        explain "always take the most likely token, no draw",
        help "Always take the most likely token (no random draw)";
    /// The random draws' seed: the same seed gives the same tokens.
    Seed seed: u64 = 42;
        group Draw, flag "seed", label "seed",
        explain "the random draws; same seed, same text",
        help "Seed of the random draw: the same seed gives the same tokens";
}

/// llama.cpp's default DRY sequence breakers.
fn default_dry_sequence_breakers() -> Vec<String> {
    ["\n", ":", "\"", "*"].map(String::from).to_vec()
}

/// Every breaker is 1 to 40 bytes of text.
fn check_breakers(breakers: &[String]) -> Result<(), String> {
    for b in breakers {
        if b.is_empty() || b.len() > DRY_MAX_BREAKER_BYTES {
            return Err(format!(
                "dry-sequence-breaker {b:?} is out of range: use 1 to {DRY_MAX_BREAKER_BYTES} bytes \
                 of text (\"none\" on the command line for no breakers)"
            ));
        }
    }
    Ok(())
}

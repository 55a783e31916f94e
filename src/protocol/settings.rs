//! The sampler's settings as they cross the channel: every stage's parameters, their defaults, and the
//! ranges `validate` holds them to (the CLI and the sampler panel refuse the same values).

use super::setting_names::flag;
use serde::{Deserialize, Serialize};

/// Sampler settings. Stages run in this order: penalties, DRY, temperature, top-k, top-p, min-p, then a
/// draw (llama.cpp's default order as far as these stages go).
///
/// DRY follows llama.cpp (`engine/sampler/dry.rs`): a token that would extend a sequence of `n >=
/// dry_allowed_length` tokens already seen in the window loses `dry_multiplier * dry_base^(n -
/// dry_allowed_length)` from its logit. Sequence breakers are mapped onto the vocabulary as llama.cpp
/// does: a token whose text contains a breaker stops every match and is never penalised; a token whose
/// text ends with the start of a breaker stops a match only when the tokens of the breaker's rest follow
/// it. Simplifications: none in the matching; llama.cpp's `-1` window is its context size, here it is the
/// whole token path (never longer than the context); and `validate` refuses an empty breaker or one over
/// 40 bytes, which llama.cpp skips or cuts with a warning. The DRY fields default when missing, so
/// settings saved before DRY existed still parse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplerSettings {
    /// Argmax of the penalised logits; no random draw.
    pub greedy: bool,
    pub temperature: f32,
    /// 0 turns top-k off.
    pub top_k: usize,
    /// 1.0 turns top-p off.
    pub top_p: f32,
    /// 0.0 turns min-p off.
    pub min_p: f32,
    /// 1.0 turns the repetition penalty off (CTRL-style: divide positive logits, multiply negative ones).
    pub repeat_penalty: f32,
    /// Subtracted once per earlier occurrence (OpenAI-style). 0 is off.
    pub frequency_penalty: f32,
    /// Subtracted once if the token occurred at all. 0 is off.
    pub presence_penalty: f32,
    /// How many recent tokens the penalties look at.
    pub penalty_last_n: usize,
    /// DRY strength; 0 turns DRY off (llama.cpp suggests 0.8).
    #[serde(default)]
    pub dry_multiplier: f32,
    /// How fast the DRY penalty grows with the length of the repeat.
    #[serde(default = "default_dry_base")]
    pub dry_base: f32,
    /// Repeats up to this many tokens long go unpenalised.
    #[serde(default = "default_dry_allowed_length")]
    pub dry_allowed_length: usize,
    /// How many recent tokens DRY scans: -1 the whole context, 0 turns DRY off.
    #[serde(default = "default_dry_penalty_last_n")]
    pub dry_penalty_last_n: i32,
    /// Texts that end a repeat for DRY (llama.cpp's defaults: newline, colon, double quote, asterisk).
    #[serde(default = "default_dry_sequence_breakers")]
    pub dry_sequence_breakers: Vec<String>,
    pub seed: u64,
}

fn default_dry_base() -> f32 {
    1.75
}

fn default_dry_allowed_length() -> usize {
    2
}

fn default_dry_penalty_last_n() -> i32 {
    -1
}

/// llama.cpp's default DRY sequence breakers.
pub fn default_dry_sequence_breakers() -> Vec<String> {
    ["\n", ":", "\"", "*"].map(String::from).to_vec()
}

impl Default for SamplerSettings {
    fn default() -> Self {
        Self {
            greedy: false,
            temperature: 0.8,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repeat_penalty: 1.0,
            frequency_penalty: 0.0,
            presence_penalty: 0.0,
            penalty_last_n: 64,
            dry_multiplier: 0.0,
            dry_base: default_dry_base(),
            dry_allowed_length: default_dry_allowed_length(),
            dry_penalty_last_n: default_dry_penalty_last_n(),
            dry_sequence_breakers: default_dry_sequence_breakers(),
            seed: 42,
        }
    }
}

/// The longest `dry_allowed_length` the settings accept.
pub const DRY_MAX_ALLOWED_LENGTH: usize = 20;
/// The widest `dry_penalty_last_n` the settings accept (beyond any context this app loads).
pub const DRY_MAX_LAST_N: i32 = 131_072;
/// The widest `penalty_last_n` the settings accept (as wide as DRY's window).
pub const PENALTY_MAX_LAST_N: usize = DRY_MAX_LAST_N as usize;
/// The longest DRY sequence breaker, in bytes (llama.cpp cuts longer ones to this).
pub const DRY_MAX_BREAKER_BYTES: usize = 40;

/// One setting's valid range, named as its flag is. `validate`, the command line and the sampler panel
/// all read these, so a value one accepts the others accept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds<T> {
    /// The flag's name without `--` ("temperature").
    pub name: &'static str,
    pub lo: T,
    pub hi: T,
    /// What the special values mean, for the message ("0 means greedy").
    pub note: &'static str,
}

impl<T: PartialOrd + Copy + std::fmt::Display> Bounds<T> {
    /// "use 0 to 5 (0 means greedy)".
    pub fn range_text(&self) -> String {
        format!("use {} to {} ({})", self.lo, self.hi, self.note)
    }

    /// `value` held within the range.
    pub fn clamp(&self, value: T) -> T {
        if value < self.lo {
            self.lo
        } else if value > self.hi {
            self.hi
        } else {
            value
        }
    }

    /// The error for a value outside the range ("temperature 100 is out of range: use 0 to 5 (...)").
    pub fn check(&self, value: T) -> Result<(), String> {
        if value >= self.lo && value <= self.hi {
            Ok(())
        } else {
            Err(format!(
                "{} {value} is out of range: {}",
                self.name,
                self.range_text()
            ))
        }
    }
}

const fn bounds<T>(name: &'static str, lo: T, hi: T, note: &'static str) -> Bounds<T> {
    Bounds { name, lo, hi, note }
}

pub const TEMPERATURE: Bounds<f32> = bounds("temperature", 0.0, 5.0, "0 means greedy");
pub const TOP_P: Bounds<f32> = bounds("top-p", 0.01, 1.0, "1 turns it off");
pub const MIN_P: Bounds<f32> = bounds("min-p", 0.0, 0.99, "0 turns it off");
pub const REPEAT_PENALTY: Bounds<f32> = bounds("repeat-penalty", 1.0, 3.0, "1 turns it off");
pub const FREQUENCY_PENALTY: Bounds<f32> = bounds("frequency-penalty", -2.0, 2.0, "0 turns it off");
pub const PRESENCE_PENALTY: Bounds<f32> = bounds("presence-penalty", -2.0, 2.0, "0 turns it off");
pub const PENALTY_LAST_N: Bounds<usize> = bounds(
    "penalty-last-n",
    0,
    PENALTY_MAX_LAST_N,
    "0 turns the penalties off",
);
pub const DRY_MULTIPLIER: Bounds<f32> = bounds("dry-multiplier", 0.0, 5.0, "0 turns DRY off");
pub const DRY_BASE: Bounds<f32> = bounds(
    "dry-base",
    1.0,
    5.0,
    "the penalty grows by this factor per repeated token",
);
pub const DRY_ALLOWED_LENGTH: Bounds<usize> = bounds(
    "dry-allowed-length",
    1,
    DRY_MAX_ALLOWED_LENGTH,
    "repeats this long go unpenalised",
);
pub const DRY_PENALTY_LAST_N: Bounds<i32> = bounds(
    "dry-penalty-last-n",
    -1,
    DRY_MAX_LAST_N,
    "-1 means the whole context, 0 turns DRY off",
);

impl SamplerSettings {
    /// Whether the next token is the most likely one, with no draw: `greedy`, or a temperature of 0 or
    /// below (as in llama.cpp, dividing by 0 leaves nothing to draw from). The one rule: the engine,
    /// the sampler panel, the status bar, lessons and handouts all ask this.
    pub fn is_greedy(&self) -> bool {
        self.greedy || self.temperature <= 0.0
    }

    /// The command-line flags that give these settings, `(flag, value)` (`None` for a switch): those
    /// that differ from the defaults, in the order `nexttoken --help` lists them, DRY's breakers
    /// escaped as `--dry-sequence-breaker` reads them. The handout's replay command is built from this,
    /// and `SamplerArgs` reads the same flags back into the same settings (a test holds the round trip).
    pub fn flags(&self) -> Vec<(&'static str, Option<String>)> {
        let d = SamplerSettings::default();
        let mut out: Vec<(&'static str, Option<String>)> = vec![];
        if self.greedy {
            out.push((flag("greedy"), None));
        }
        let numbers = [
            (
                flag("temperature"),
                self.temperature.to_string(),
                d.temperature.to_string(),
            ),
            (flag("top_k"), self.top_k.to_string(), d.top_k.to_string()),
            (flag("top_p"), self.top_p.to_string(), d.top_p.to_string()),
            (flag("min_p"), self.min_p.to_string(), d.min_p.to_string()),
            (
                flag("repeat_penalty"),
                self.repeat_penalty.to_string(),
                d.repeat_penalty.to_string(),
            ),
            (
                flag("frequency_penalty"),
                self.frequency_penalty.to_string(),
                d.frequency_penalty.to_string(),
            ),
            (
                flag("presence_penalty"),
                self.presence_penalty.to_string(),
                d.presence_penalty.to_string(),
            ),
            (
                flag("penalty_last_n"),
                self.penalty_last_n.to_string(),
                d.penalty_last_n.to_string(),
            ),
            (
                flag("dry_multiplier"),
                self.dry_multiplier.to_string(),
                d.dry_multiplier.to_string(),
            ),
            (
                flag("dry_base"),
                self.dry_base.to_string(),
                d.dry_base.to_string(),
            ),
            (
                flag("dry_allowed_length"),
                self.dry_allowed_length.to_string(),
                d.dry_allowed_length.to_string(),
            ),
            (
                flag("dry_penalty_last_n"),
                self.dry_penalty_last_n.to_string(),
                d.dry_penalty_last_n.to_string(),
            ),
        ];
        for (flag, v, default) in numbers {
            if v != default {
                out.push((flag, Some(v)));
            }
        }
        if self.dry_sequence_breakers != d.dry_sequence_breakers {
            if self.dry_sequence_breakers.is_empty() {
                out.push((flag("dry_sequence_breakers"), Some("none".into())));
            }
            for b in &self.dry_sequence_breakers {
                out.push((flag("dry_sequence_breakers"), Some(escape_breaker(b))));
            }
        }
        if self.seed != d.seed {
            out.push((flag("seed"), Some(self.seed.to_string())));
        }
        out
    }

    /// Checks every setting against its valid range (the `Bounds` above), shared by the command line
    /// and the sampler panel. The error names the setting as a flag would ("temperature 100 is out of
    /// range: ...").
    pub fn validate(&self) -> Result<(), String> {
        TEMPERATURE.check(self.temperature)?;
        TOP_P.check(self.top_p)?;
        MIN_P.check(self.min_p)?;
        REPEAT_PENALTY.check(self.repeat_penalty)?;
        FREQUENCY_PENALTY.check(self.frequency_penalty)?;
        PRESENCE_PENALTY.check(self.presence_penalty)?;
        PENALTY_LAST_N.check(self.penalty_last_n)?;
        DRY_MULTIPLIER.check(self.dry_multiplier)?;
        DRY_BASE.check(self.dry_base)?;
        DRY_ALLOWED_LENGTH.check(self.dry_allowed_length)?;
        DRY_PENALTY_LAST_N.check(self.dry_penalty_last_n)?;
        for b in &self.dry_sequence_breakers {
            if b.is_empty() || b.len() > DRY_MAX_BREAKER_BYTES {
                return Err(format!(
                    "dry-sequence-breaker {b:?} is out of range: use 1 to {DRY_MAX_BREAKER_BYTES} bytes \
                     of text (\"none\" on the command line for no breakers)"
                ));
            }
        }
        Ok(())
    }
}

/// A DRY breaker as `--dry-sequence-breaker` reads it back (`\n`, `\t`, `\r`, `\\`, `\"`).
fn escape_breaker(b: &str) -> String {
    let mut out = String::new();
    for c in b.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

//! Every sampler setting named once: its key in lesson and session files, its command-line flag (also
//! the name messages and ranges use), its row in the sampler panel, and the sentence that explains it.
//! The panel, the replay command (`SamplerSettings::flags`) and the ranges (`Bounds`) read this table;
//! tests hold the clap flags and the lesson keys to it.

/// One sampler setting's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingName {
    /// The field of `SamplerSettings`, and the key in a lesson's `sampler` table and a session file.
    pub key: &'static str,
    /// The command-line flag without `--`.
    pub flag: &'static str,
    /// The sampler panel's row.
    pub label: &'static str,
    /// One sentence for a learner: what the setting does.
    pub explain: &'static str,
}

const fn name(
    key: &'static str,
    flag: &'static str,
    label: &'static str,
    explain: &'static str,
) -> SettingName {
    SettingName {
        key,
        flag,
        label,
        explain,
    }
}

/// Every setting, in the sampler panel's order.
pub const SETTINGS: [SettingName; 15] = [
    name(
        "temperature",
        "temperature",
        "temperature",
        "divides the logits: <1 sharpens, >1 flattens",
    ),
    name(
        "top_k",
        "sample-top-k",
        "top-k",
        "keeps only the k most likely tokens",
    ),
    name(
        "top_p",
        "top-p",
        "top-p",
        "keeps the smallest set whose mass reaches p",
    ),
    name(
        "min_p",
        "min-p",
        "min-p",
        "drops tokens below min-p × the top probability",
    ),
    name(
        "repeat_penalty",
        "repeat-penalty",
        "repeat penalty",
        "makes tokens already seen less likely",
    ),
    name(
        "frequency_penalty",
        "frequency-penalty",
        "frequency pen.",
        "subtracts this from a logit per time the token was seen",
    ),
    name(
        "presence_penalty",
        "presence-penalty",
        "presence pen.",
        "subtracts this once from a token seen at all",
    ),
    name(
        "penalty_last_n",
        "penalty-last-n",
        "penalty window",
        "how many recent tokens the penalties look at",
    ),
    name(
        "dry_multiplier",
        "dry-multiplier",
        "DRY multiplier",
        "DRY: lowers a token that would repeat a sequence",
    ),
    name(
        "dry_base",
        "dry-base",
        "DRY base",
        "DRY: the penalty grows by this per repeated token",
    ),
    name(
        "dry_allowed_length",
        "dry-allowed-length",
        "DRY allowed len",
        "DRY: repeats this long go unpenalised",
    ),
    name(
        "dry_penalty_last_n",
        "dry-penalty-last-n",
        "DRY window",
        "DRY: how many recent tokens it scans for repeats",
    ),
    name(
        "dry_sequence_breakers",
        "dry-sequence-breaker",
        "DRY breakers",
        "DRY: texts that end a repeat (--dry-sequence-breaker)",
    ),
    name(
        "greedy",
        "greedy",
        "greedy",
        "always take the most likely token, no draw",
    ),
    name(
        "seed",
        "seed",
        "seed",
        "the random draws; same seed, same text",
    ),
];

/// The names of the setting whose key is `key`.
///
/// # Panics
/// On a key that is not in [`SETTINGS`]: a typo in our own code, caught by the tests.
pub fn setting(key: &str) -> &'static SettingName {
    SETTINGS
        .iter()
        .find(|s| s.key == key)
        .unwrap_or_else(|| panic!("no sampler setting {key:?}"))
}

/// The flag of the setting whose key is `key` ("top_k" → "sample-top-k").
pub fn flag(key: &str) -> &'static str {
    setting(key).flag
}

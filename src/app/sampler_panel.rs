//! The sampler settings panel: its fields, how each one steps up and down, and how it reads.

use crate::protocol::SamplerSettings;

/// One row of the sampler panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Temperature,
    TopK,
    TopP,
    MinP,
    RepeatPenalty,
    PenaltyWindow,
    DryMultiplier,
    DryBase,
    DryAllowedLength,
    DryWindow,
    /// Read-only here: set with `--dry-sequence-breaker`.
    DryBreakers,
    Greedy,
    Seed,
}

/// The panel's rows, top to bottom.
pub const FIELDS: [Field; 13] = [
    Field::Temperature,
    Field::TopK,
    Field::TopP,
    Field::MinP,
    Field::RepeatPenalty,
    Field::PenaltyWindow,
    Field::DryMultiplier,
    Field::DryBase,
    Field::DryAllowedLength,
    Field::DryWindow,
    Field::DryBreakers,
    Field::Greedy,
    Field::Seed,
];

/// DRY windows the dial steps through: off, a number of recent tokens, then -1 (the whole context).
const DRY_WINDOW_STEPS: [i32; 9] = [0, 16, 32, 64, 128, 256, 512, 1024, -1];

/// Penalty windows the dial steps through: how many recent tokens the penalties look at.
const WINDOW_STEPS: [usize; 7] = [8, 16, 32, 64, 128, 256, 512];

/// Top-k values the dial steps through (0 = off).
const TOP_K_STEPS: [usize; 11] = [0, 1, 2, 3, 5, 10, 20, 40, 50, 100, 200];

impl Field {
    pub fn name(self) -> &'static str {
        match self {
            Field::Temperature => "temperature",
            Field::TopK => "top-k",
            Field::TopP => "top-p",
            Field::MinP => "min-p",
            Field::RepeatPenalty => "repeat penalty",
            Field::PenaltyWindow => "penalty window",
            Field::DryMultiplier => "DRY multiplier",
            Field::DryBase => "DRY base",
            Field::DryAllowedLength => "DRY allowed len",
            Field::DryWindow => "DRY window",
            Field::DryBreakers => "DRY breakers",
            Field::Greedy => "greedy",
            Field::Seed => "seed",
        }
    }

    /// The value as shown, with "off" where the setting does nothing.
    pub fn value(self, s: &SamplerSettings) -> String {
        match self {
            Field::Temperature => format!("{:.2}", s.temperature),
            Field::TopK if s.top_k == 0 => "off".into(),
            Field::TopK => s.top_k.to_string(),
            Field::TopP if s.top_p >= 1.0 => "off".into(),
            Field::TopP => format!("{:.2}", s.top_p),
            Field::MinP if s.min_p <= 0.0 => "off".into(),
            Field::MinP => format!("{:.2}", s.min_p),
            Field::RepeatPenalty if s.repeat_penalty <= 1.0 => "off".into(),
            Field::RepeatPenalty => format!("{:.2}", s.repeat_penalty),
            Field::PenaltyWindow => s.penalty_last_n.to_string(),
            Field::DryMultiplier if s.dry_multiplier == 0.0 => "off".into(),
            Field::DryMultiplier => format!("{:.2}", s.dry_multiplier),
            Field::DryBase => format!("{:.2}", s.dry_base),
            Field::DryAllowedLength => s.dry_allowed_length.to_string(),
            Field::DryWindow if s.dry_penalty_last_n == 0 => "off".into(),
            Field::DryWindow if s.dry_penalty_last_n < 0 => "all".into(),
            Field::DryWindow => s.dry_penalty_last_n.to_string(),
            Field::DryBreakers if s.dry_sequence_breakers.is_empty() => "none".into(),
            Field::DryBreakers => s
                .dry_sequence_breakers
                .iter()
                .map(|b| show_breaker(b))
                .collect::<Vec<_>>()
                .join(" "),
            Field::Greedy => if s.greedy { "on" } else { "off" }.into(),
            Field::Seed => s.seed.to_string(),
        }
    }

    /// One sentence for a learner: what the setting does.
    pub fn explain(self) -> &'static str {
        match self {
            Field::Temperature => "divides the logits: <1 sharpens, >1 flattens",
            Field::TopK => "keeps only the k most likely tokens",
            Field::TopP => "keeps the smallest set whose mass reaches p",
            Field::MinP => "drops tokens below min-p × the top probability",
            Field::RepeatPenalty => "makes tokens already seen less likely",
            Field::PenaltyWindow => "how many recent tokens the penalty looks at",
            Field::DryMultiplier => "DRY: lowers a token that would repeat a sequence",
            Field::DryBase => "DRY: the penalty grows by this per repeated token",
            Field::DryAllowedLength => "DRY: repeats this long go unpenalised",
            Field::DryWindow => "DRY: how many recent tokens it scans for repeats",
            Field::DryBreakers => "DRY: texts that end a repeat (--dry-sequence-breaker)",
            Field::Greedy => "always take the most likely token, no draw",
            Field::Seed => "the random draws; same seed, same text",
        }
    }

    /// Moves the setting one notch (`up` or down), clamped to a sensible range.
    pub fn adjust(self, s: &mut SamplerSettings, up: bool) {
        let dir = if up { 1.0 } else { -1.0 };
        match self {
            Field::Temperature => {
                s.temperature = round2((s.temperature + 0.1 * dir).clamp(0.1, 3.0));
            }
            Field::TopK => s.top_k = step_through(&TOP_K_STEPS, s.top_k, up),
            Field::PenaltyWindow => {
                s.penalty_last_n = step_through(&WINDOW_STEPS, s.penalty_last_n, up)
            }
            Field::TopP => s.top_p = round2((s.top_p + 0.05 * dir).clamp(0.05, 1.0)),
            Field::MinP => s.min_p = round2((s.min_p + 0.01 * dir).clamp(0.0, 0.5)),
            Field::RepeatPenalty => {
                s.repeat_penalty = round2((s.repeat_penalty + 0.05 * dir).clamp(1.0, 2.0));
            }
            Field::DryMultiplier => {
                s.dry_multiplier = round2((s.dry_multiplier + 0.1 * dir).clamp(0.0, 3.0));
            }
            Field::DryBase => s.dry_base = round2((s.dry_base + 0.05 * dir).clamp(1.0, 3.0)),
            Field::DryAllowedLength => {
                s.dry_allowed_length = if up {
                    (s.dry_allowed_length + 1).min(10)
                } else {
                    s.dry_allowed_length.saturating_sub(1).max(1)
                }
            }
            Field::DryWindow => s.dry_penalty_last_n = step_dry_window(s.dry_penalty_last_n, up),
            // Text: set on the command line, shown here.
            Field::DryBreakers => {}
            Field::Greedy => s.greedy = !s.greedy,
            Field::Seed => {
                s.seed = if up {
                    s.seed.wrapping_add(1)
                } else {
                    s.seed.saturating_sub(1)
                }
            }
        }
    }
}

/// The next value of a dial up or down from `now` (which may lie between steps).
fn step_through(steps: &[usize], now: usize, up: bool) -> usize {
    let i = steps
        .iter()
        .position(|&v| v >= now)
        .unwrap_or(steps.len() - 1);
    let i = if up {
        (i + 1).min(steps.len() - 1)
    } else {
        i.saturating_sub(1)
    };
    steps[i]
}

/// The next DRY window up or down: off, then wider, then the whole context (-1) at the top.
fn step_dry_window(now: i32, up: bool) -> i32 {
    let i = DRY_WINDOW_STEPS
        .iter()
        .position(|&v| v == now)
        .or_else(|| DRY_WINDOW_STEPS.iter().position(|&v| v > now))
        .unwrap_or(DRY_WINDOW_STEPS.len() - 1);
    let i = if up {
        (i + 1).min(DRY_WINDOW_STEPS.len() - 1)
    } else {
        i.saturating_sub(1)
    };
    DRY_WINDOW_STEPS[i]
}

/// A breaker as the panel shows it: a newline as ↵, a tab as ⇥.
fn show_breaker(b: &str) -> String {
    b.replace('\n', "↵").replace('\t', "⇥")
}

fn round2(x: f32) -> f32 {
    (x * 100.0).round() / 100.0
}

/// The sampler settings in one short line, for the status bar.
pub fn summary(s: &SamplerSettings) -> String {
    if s.greedy {
        return "greedy".into();
    }
    let mut parts = vec![format!("T {:.2}", s.temperature)];
    for f in [
        Field::TopK,
        Field::TopP,
        Field::MinP,
        Field::RepeatPenalty,
        Field::DryMultiplier,
    ] {
        let v = f.value(s);
        if v != "off" {
            let name = f.name().replace("repeat penalty", "rep");
            parts.push(format!("{} {v}", name.replace("DRY multiplier", "DRY")));
        }
    }
    parts.join(" ")
}

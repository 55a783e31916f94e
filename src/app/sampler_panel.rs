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
    Greedy,
    Seed,
}

/// The panel's rows, top to bottom.
pub const FIELDS: [Field; 8] = [
    Field::Temperature,
    Field::TopK,
    Field::TopP,
    Field::MinP,
    Field::RepeatPenalty,
    Field::PenaltyWindow,
    Field::Greedy,
    Field::Seed,
];

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

fn round2(x: f32) -> f32 {
    (x * 100.0).round() / 100.0
}

/// The sampler settings in one short line, for the status bar.
pub fn summary(s: &SamplerSettings) -> String {
    if s.greedy {
        return "greedy".into();
    }
    let mut parts = vec![format!("T {:.2}", s.temperature)];
    for f in [Field::TopK, Field::TopP, Field::MinP, Field::RepeatPenalty] {
        let v = f.value(s);
        if v != "off" {
            parts.push(format!("{} {v}", f.name().replace("repeat penalty", "rep")));
        }
    }
    parts.join(" ")
}

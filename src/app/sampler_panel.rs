//! The sampler settings panel: its fields, how each one steps up and down within the ranges
//! `SamplerSettings::validate` holds the command line to, and how it reads.

use crate::protocol::{self as p, Bounds, SamplerSettings};

/// One row of the sampler panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Temperature,
    TopK,
    TopP,
    MinP,
    RepeatPenalty,
    FrequencyPenalty,
    PresencePenalty,
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
pub const FIELDS: [Field; 15] = [
    Field::Temperature,
    Field::TopK,
    Field::TopP,
    Field::MinP,
    Field::RepeatPenalty,
    Field::FrequencyPenalty,
    Field::PresencePenalty,
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

/// Penalty windows the dial steps through: off, then doubling up to the widest the settings accept.
const WINDOW_STEPS: [usize; 16] = [
    0, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131_072,
];

/// Top-k values the dial steps through (0 = off).
const TOP_K_STEPS: [usize; 11] = [0, 1, 2, 3, 5, 10, 20, 40, 50, 100, 200];

impl Field {
    /// The setting's names (its key, flag, row label and explanation), from the one table.
    pub fn names(self) -> &'static p::SettingName {
        p::setting_names::setting(match self {
            Field::Temperature => "temperature",
            Field::TopK => "top_k",
            Field::TopP => "top_p",
            Field::MinP => "min_p",
            Field::RepeatPenalty => "repeat_penalty",
            Field::FrequencyPenalty => "frequency_penalty",
            Field::PresencePenalty => "presence_penalty",
            Field::PenaltyWindow => "penalty_last_n",
            Field::DryMultiplier => "dry_multiplier",
            Field::DryBase => "dry_base",
            Field::DryAllowedLength => "dry_allowed_length",
            Field::DryWindow => "dry_penalty_last_n",
            Field::DryBreakers => "dry_sequence_breakers",
            Field::Greedy => "greedy",
            Field::Seed => "seed",
        })
    }

    /// The panel's row label.
    pub fn name(self) -> &'static str {
        self.names().label
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
            Field::FrequencyPenalty if s.frequency_penalty == 0.0 => "off".into(),
            Field::FrequencyPenalty => format!("{:.2}", s.frequency_penalty),
            Field::PresencePenalty if s.presence_penalty == 0.0 => "off".into(),
            Field::PresencePenalty => format!("{:.2}", s.presence_penalty),
            Field::PenaltyWindow if s.penalty_last_n == 0 => "off".into(),
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
            Field::Greedy => if s.is_greedy() { "on" } else { "off" }.into(),
            Field::Seed => s.seed.to_string(),
        }
    }

    /// One sentence for a learner: what the setting does.
    pub fn explain(self) -> &'static str {
        self.names().explain
    }

    /// Moves the setting one notch (`up` or down), within the range `SamplerSettings::validate` holds
    /// it to (`protocol::Bounds`). At a limit it stops, and the answer says the range.
    pub fn adjust(self, s: &mut SamplerSettings, up: bool) -> Result<(), String> {
        match self {
            Field::Temperature => notch(&mut s.temperature, 0.1, up, p::TEMPERATURE),
            Field::TopK => {
                let moved = dial(&mut s.top_k, &TOP_K_STEPS, up);
                dial_stop(moved, "top-k", s.top_k, "--sample-top-k sets any k")
            }
            Field::TopP => notch(&mut s.top_p, 0.05, up, p::TOP_P),
            Field::MinP => notch(&mut s.min_p, 0.01, up, p::MIN_P),
            Field::RepeatPenalty => notch(&mut s.repeat_penalty, 0.05, up, p::REPEAT_PENALTY),
            Field::FrequencyPenalty => {
                notch(&mut s.frequency_penalty, 0.1, up, p::FREQUENCY_PENALTY)
            }
            Field::PresencePenalty => notch(&mut s.presence_penalty, 0.1, up, p::PRESENCE_PENALTY),
            Field::PenaltyWindow => {
                let b = p::PENALTY_LAST_N;
                let moved = dial(&mut s.penalty_last_n, &WINDOW_STEPS, up);
                dial_stop(moved, b.name, s.penalty_last_n, &b.range_text())
            }
            Field::DryMultiplier => notch(&mut s.dry_multiplier, 0.1, up, p::DRY_MULTIPLIER),
            Field::DryBase => notch(&mut s.dry_base, 0.05, up, p::DRY_BASE),
            Field::DryAllowedLength => {
                let b = p::DRY_ALLOWED_LENGTH;
                let next = if up {
                    s.dry_allowed_length.saturating_add(1)
                } else {
                    s.dry_allowed_length.saturating_sub(1)
                };
                set_within(&mut s.dry_allowed_length, next, b)
            }
            Field::DryWindow => {
                // -1 (the whole context) sits above every width.
                let b = p::DRY_PENALTY_LAST_N;
                let key = |v: i32| if v < 0 { i64::MAX } else { v as i64 };
                let mut now = key(s.dry_penalty_last_n);
                let moved = dial(&mut now, &DRY_WINDOW_STEPS.map(key), up);
                s.dry_penalty_last_n = if now == i64::MAX { -1 } else { now as i32 };
                dial_stop(moved, b.name, s.dry_penalty_last_n, &b.range_text())
            }
            // Text: set on the command line, shown here.
            Field::DryBreakers => Err("DRY breakers are set with --dry-sequence-breaker".into()),
            // Off means a draw: a temperature of 0 (greedy too) goes back to the default.
            Field::Greedy if s.is_greedy() => {
                s.greedy = false;
                if s.temperature <= 0.0 {
                    s.temperature = SamplerSettings::default().temperature;
                }
                Ok(())
            }
            Field::Greedy => {
                s.greedy = true;
                Ok(())
            }
            Field::Seed => {
                let next = if up {
                    s.seed.checked_add(1)
                } else {
                    s.seed.checked_sub(1)
                };
                match next {
                    Some(v) => {
                        s.seed = v;
                        Ok(())
                    }
                    None => Err(limit_note(
                        "seed",
                        s.seed,
                        &format!("use 0 to {}", u64::MAX),
                    )),
                }
            }
        }
    }
}

/// Moves a decimal setting by `step` (kept to two places), stopping at the ends of `b`.
fn notch(v: &mut f32, step: f32, up: bool, b: Bounds<f32>) -> Result<(), String> {
    let next = round2(*v + if up { step } else { -step });
    set_within(v, next, b)
}

/// Sets `v` to `next` held within `b`; when the range held it back, says where it stopped and the range.
fn set_within<T: PartialOrd + Copy + std::fmt::Display>(
    v: &mut T,
    next: T,
    b: Bounds<T>,
) -> Result<(), String> {
    let held = b.clamp(next);
    let at_limit = held != next || held == *v;
    *v = held;
    if at_limit {
        Err(limit_note(b.name, held, &b.range_text()))
    } else {
        Ok(())
    }
}

/// "temperature stops at 5: use 0 to 5 (0 means greedy)".
fn limit_note(name: &str, at: impl std::fmt::Display, range: &str) -> String {
    format!("{name} stops at {at}: {range}")
}

/// Moves `now` to the next value of the dial `steps` up or down; a value between steps goes to the
/// neighbouring step. False when there is none: `now` is at (or beyond) the dial's end and stays.
fn dial<T: PartialOrd + Copy>(now: &mut T, steps: &[T], up: bool) -> bool {
    let next = if up {
        steps.iter().find(|&&v| v > *now)
    } else {
        steps.iter().rev().find(|&&v| v < *now)
    };
    next.map(|&v| *now = v).is_some()
}

/// A dial that did not move, said with where it stopped and the range.
fn dial_stop(
    moved: bool,
    name: &str,
    at: impl std::fmt::Display,
    range: &str,
) -> Result<(), String> {
    if moved {
        Ok(())
    } else {
        Err(limit_note(name, at, range))
    }
}

/// A breaker as the panel shows it: a newline as ↵, a tab as ⇥.
fn show_breaker(b: &str) -> String {
    b.replace('\n', "↵").replace('\t', "⇥")
}

fn round2(x: f32) -> f32 {
    (x * 100.0).round() / 100.0
}

//! The sampler settings panel: its fields, how each one steps up and down within the ranges
//! `SamplerSettings::validate` holds the command line to, and how it reads.

use crate::protocol::{self as p, Bounds, SamplerSettings, Setting};

/// The panel's rows, top to bottom: the settings in the table's order (`protocol::settings`).
pub const FIELDS: &[Setting] = Setting::ALL;

/// DRY windows the dial steps through: off, a number of recent tokens, then -1 (the whole context).
const DRY_WINDOW_STEPS: [i32; 9] = [0, 16, 32, 64, 128, 256, 512, 1024, -1];

/// Penalty windows the dial steps through: off, then doubling up to the widest the settings accept.
const WINDOW_STEPS: [usize; 16] = [
    0, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131_072,
];

/// Top-k values the dial steps through (0 = off).
const TOP_K_STEPS: [usize; 11] = [0, 1, 2, 3, 5, 10, 20, 40, 50, 100, 200];

/// Moves `setting` one notch (`up` or down), within the range `SamplerSettings::validate` holds it
/// to (`protocol::Bounds`). At a limit it stops, and the answer says the range. The panel's rows, names,
/// values and explanations are the table's (`Setting::names`, `SamplerSettings::shown`).
pub fn adjust(setting: Setting, s: &mut SamplerSettings, up: bool) -> Result<(), String> {
    match setting {
        Setting::Temperature => notch(&mut s.temperature, 0.1, up, p::TEMPERATURE),
        Setting::TopK => {
            let moved = dial(&mut s.top_k, &TOP_K_STEPS, up);
            dial_stop(moved, "top-k", s.top_k, "--sample-top-k sets any k")
        }
        Setting::TopP => notch(&mut s.top_p, 0.05, up, p::TOP_P),
        Setting::MinP => notch(&mut s.min_p, 0.01, up, p::MIN_P),
        Setting::RepeatPenalty => notch(&mut s.repeat_penalty, 0.05, up, p::REPEAT_PENALTY),
        Setting::FrequencyPenalty => notch(&mut s.frequency_penalty, 0.1, up, p::FREQUENCY_PENALTY),
        Setting::PresencePenalty => notch(&mut s.presence_penalty, 0.1, up, p::PRESENCE_PENALTY),
        Setting::PenaltyLastN => {
            let b = p::PENALTY_LAST_N;
            let moved = dial(&mut s.penalty_last_n, &WINDOW_STEPS, up);
            dial_stop(moved, b.name, s.penalty_last_n, &b.range_text())
        }
        Setting::DryMultiplier => notch(&mut s.dry_multiplier, 0.1, up, p::DRY_MULTIPLIER),
        Setting::DryBase => notch(&mut s.dry_base, 0.05, up, p::DRY_BASE),
        Setting::DryAllowedLength => {
            let b = p::DRY_ALLOWED_LENGTH;
            let next = if up {
                s.dry_allowed_length.saturating_add(1)
            } else {
                s.dry_allowed_length.saturating_sub(1)
            };
            set_within(&mut s.dry_allowed_length, next, b)
        }
        Setting::DryPenaltyLastN => {
            // -1 (the whole context) sits above every width.
            let b = p::DRY_PENALTY_LAST_N;
            let key = |v: i32| if v < 0 { i64::MAX } else { v as i64 };
            let mut now = key(s.dry_penalty_last_n);
            let moved = dial(&mut now, &DRY_WINDOW_STEPS.map(key), up);
            s.dry_penalty_last_n = if now == i64::MAX { -1 } else { now as i32 };
            dial_stop(moved, b.name, s.dry_penalty_last_n, &b.range_text())
        }
        // Text: set on the command line, shown here.
        Setting::DrySequenceBreakers => {
            Err("DRY breakers are set with --dry-sequence-breaker".into())
        }
        // Off means a draw: a temperature of 0 (greedy too) goes back to the default.
        Setting::Greedy if s.is_greedy() => {
            s.greedy = false;
            if s.temperature <= 0.0 {
                s.temperature = SamplerSettings::default().temperature;
            }
            Ok(())
        }
        Setting::Greedy => {
            s.greedy = true;
            Ok(())
        }
        Setting::Seed => {
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

fn round2(x: f32) -> f32 {
    (x * 100.0).round() / 100.0
}

//! What the table says of each setting beside its value: its names, its stage, its range; and the
//! rules that read several settings at once (greedy, what acts on the next token).

use super::{Kind, SamplerSettings, Setting, SETTINGS};

/// One sampler setting's names and facts, from the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingName {
    pub setting: Setting,
    /// The field of `SamplerSettings`, and the key in a lesson's `sampler` table and a session file.
    pub key: &'static str,
    /// The command-line flag without `--`.
    pub flag: &'static str,
    /// The sampler panel's row, and the setting's name in a handout.
    pub label: &'static str,
    /// One sentence for a learner: what the setting does.
    pub explain: &'static str,
    /// The flag's help (`--help` adds the default and the range).
    pub help: &'static str,
    pub kind: Kind,
    /// The stage of sampling it belongs to.
    pub group: Group,
    /// Its names in the status bar, long and short ("top-k", "k"); `None` when the bar leaves it out.
    pub status: Option<(&'static str, &'static str)>,
}

/// The stage of sampling a setting belongs to: it acts only while its stage does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// The random draw and the cut-offs before it: nothing under greedy.
    Draw,
    /// Greedy itself.
    Greedy,
    /// Repeat, frequency and presence penalties and their window.
    Penalty,
    /// DRY and its parameters.
    Dry,
}

impl Setting {
    /// This setting's names and facts.
    pub fn names(self) -> &'static SettingName {
        &SETTINGS[self as usize]
    }

    /// The flag's whole help: the table's sentence, the default and the range.
    pub fn help_text(self) -> String {
        let d = SamplerSettings::default_text(self);
        let mut tail = vec![];
        if !d.is_empty() {
            tail.push(format!("default: {d}"));
        }
        tail.extend(SamplerSettings::range_text(self));
        let help = self.names().help;
        if tail.is_empty() {
            format!("{help}.")
        } else {
            format!("{help} [{}].", tail.join("; "))
        }
    }
}

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

impl SamplerSettings {
    /// Whether the next token is the most likely one, with no draw: `greedy`, or a temperature of 0 or
    /// below (as in llama.cpp, dividing by 0 leaves nothing to draw from). The one rule: the engine,
    /// the sampler panel, the status bar, lessons and handouts all ask this.
    pub fn is_greedy(&self) -> bool {
        self.greedy || self.temperature <= 0.0
    }

    /// Whether `setting` changes the next token: it is not off, and its stage runs (the draw's
    /// settings do nothing under greedy, a penalty window nothing without a penalty, DRY's parameters
    /// nothing while DRY is off).
    pub fn acts(&self, setting: Setting) -> bool {
        if self.is_off(setting) {
            return false;
        }
        match setting.names().group {
            Group::Greedy => self.is_greedy(),
            Group::Draw => !self.is_greedy(),
            Group::Penalty => {
                !self.is_off(Setting::PenaltyLastN)
                    && [
                        Setting::RepeatPenalty,
                        Setting::FrequencyPenalty,
                        Setting::PresencePenalty,
                    ]
                    .iter()
                    .any(|&p| !self.is_off(p))
            }
            Group::Dry => {
                !self.is_off(Setting::DryMultiplier) && !self.is_off(Setting::DryPenaltyLastN)
            }
        }
    }

    /// The settings that change the next token, in the table's order.
    pub fn in_effect(&self) -> Vec<Setting> {
        Setting::ALL
            .iter()
            .copied()
            .filter(|&s| self.acts(s))
            .collect()
    }

    /// `setting`'s value as the panel and the summaries show it: "off" where it does nothing on its
    /// own, greedy "on" whenever `is_greedy`, DRY's window "all" for the whole context.
    pub fn shown(&self, setting: Setting) -> String {
        match setting {
            Setting::Greedy => if self.is_greedy() { "on" } else { "off" }.into(),
            Setting::DryPenaltyLastN if self.dry_penalty_last_n < 0 => "all".into(),
            s if self.is_off(s) => "off".into(),
            s => self.value_text(s),
        }
    }
}

//! The macro that turns the one table of sampler settings (`settings/mod.rs`) into everything that
//! names, stores, reads, writes, checks or shows a setting: the `SamplerSettings` struct with its
//! defaults and serde form, the `Setting` enum, the `SETTINGS` names, a lesson's `SamplerPatch`, the
//! ranges, the replay's flags and `validate`. A new row in the table is a new field everywhere, and
//! every `match` on `Setting` (the panel's dials) fails to compile until it is handled.

macro_rules! sampler_settings {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident $key:ident: $ty:ty = $default:expr;
            group $group:ident, flag $flag:literal, label $label:literal,
            explain $explain:literal, help $help:literal
            $(, range $range:ident = ($lo:expr, $hi:expr, $note:literal))?
            $(, off $off:expr)?
            $(, check $check:path)?
            $(, status ($long:literal, $tiny:literal))?;
    )*) => {
        /// Sampler settings: one field per row of the table in `settings/mod.rs`. Missing fields take
        /// their defaults when read, so files saved before a setting existed still load.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(default)]
        pub struct SamplerSettings {
            $( $(#[doc = $doc])* pub $key: $ty, )*
        }

        impl Default for SamplerSettings {
            fn default() -> Self {
                Self { $( $key: $default, )* }
            }
        }

        /// One sampler setting: a row of the panel, a flag, a key in lesson and session files.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Setting {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl Setting {
            /// Every setting, in the table's order (the panel's rows, `--help`'s order).
            pub const ALL: &'static [Setting] = &[ $( Setting::$variant, )* ];
        }

        /// Every setting's names, in the table's order (`SETTINGS[s as usize]` is `s`'s).
        pub const SETTINGS: &[SettingName] = &[ $(
            SettingName {
                setting: Setting::$variant,
                key: stringify!($key),
                flag: $flag,
                label: $label,
                explain: $explain,
                help: $help,
                kind: <$ty as SettingValue>::KIND,
                group: Group::$group,
                status: sampler_settings!(@status $(($long, $tiny))?),
            },
        )* ];

        $( $(
            #[doc = concat!("The range of `", stringify!($key), "` (`--", $flag, "`).")]
            pub const $range: Bounds<$ty> = Bounds { name: $flag, lo: $lo, hi: $hi, note: $note };
        )? )*

        /// Sampler fields to set over [`SamplerSettings::default`]; keys as in `SamplerSettings`. A
        /// lesson's `sampler` table, and what the command line's flags ask for.
        #[derive(Debug, Clone, Default, PartialEq, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct SamplerPatch {
            $( pub $key: Option<$ty>, )*
        }

        impl SamplerPatch {
            /// The settings: the defaults with these fields replaced.
            pub fn settings(&self) -> SamplerSettings {
                let d = SamplerSettings::default();
                SamplerSettings { $( $key: self.$key.clone().unwrap_or(d.$key), )* }
            }

            /// Sets `setting` from its flag's values as the command line gave them (a switch's values
            /// are empty). The error names the flag and says what is wrong.
            pub fn set_from_flag(&mut self, setting: Setting, values: &[String]) -> Result<(), String> {
                match setting { $(
                    Setting::$variant => {
                        let v = <$ty as SettingValue>::from_flag(values)
                            .map_err(|e| format!("--{}: {e}", $flag))?;
                        self.$key = Some(v);
                    }
                )* }
                Ok(())
            }
        }

        impl SamplerSettings {
            /// The command-line flags that give these settings, `(flag, value)` (`None` for a switch):
            /// those that differ from the defaults, in the table's order, texts escaped as the flag
            /// reads them. The handout's replay command is built from this, and `SamplerArgs` reads
            /// the same flags back into the same settings (a test holds the round trip).
            pub fn flags(&self) -> Vec<(&'static str, Option<String>)> {
                let d = SamplerSettings::default();
                let mut out = vec![];
                $(
                    if self.$key != d.$key {
                        for v in SettingValue::flag_values(&self.$key) {
                            out.push(($flag, v));
                        }
                    }
                )*
                out
            }

            /// Checks every setting against its range, shared by the command line, lessons, session
            /// files and the sampler panel. The error names the setting as its flag does
            /// ("temperature 100 is out of range: ...").
            pub fn validate(&self) -> Result<(), String> {
                $(
                    $( $range.check(self.$key)?; )?
                    $( $check(&self.$key)?; )?
                )*
                Ok(())
            }

            /// Whether `setting` is at the value that turns it off (top-k 0, top-p 1, …).
            pub fn is_off(&self, setting: Setting) -> bool {
                match setting { $(
                    Setting::$variant => false $( || self.$key == $off )?,
                )* }
            }

            /// `setting`'s value on its own, as the panel shows it ("0.80", "40", "on").
            pub fn value_text(&self, setting: Setting) -> String {
                match setting { $( Setting::$variant => SettingValue::show(&self.$key), )* }
            }

            /// `setting`'s default, as `--help` writes it.
            pub fn default_text(setting: Setting) -> String {
                let d = SamplerSettings::default();
                match setting { $(
                    Setting::$variant => SettingValue::flag_values(&d.$key)
                        .into_iter()
                        .flatten()
                        .map(|v| if <$ty as SettingValue>::KIND == Kind::Texts { format!("\"{v}\"") } else { v })
                        .collect::<Vec<_>>()
                        .join(" "),
                )* }
            }

            /// `setting`'s range as `--help` writes it ("use 0 to 5 (0 means greedy)"), if it has one.
            pub fn range_text(setting: Setting) -> Option<String> {
                match setting { $(
                    Setting::$variant => sampler_settings!(@range $($range)?),
                )* }
            }
        }
    };
    (@status) => { None };
    (@range) => { None };
    (@range $range:ident) => { Some($range.range_text()) };
    (@status ($long:literal, $tiny:literal)) => { Some(($long, $tiny)) };
}

pub(super) use sampler_settings;

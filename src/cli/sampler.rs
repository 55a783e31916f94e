//! The sampler's flags, shared by the app, `trace` and `compare`, and the settings they make. Every flag
//! is a row of the one table (`protocol::settings`): its name, its help, its default and its range come
//! from there, and the values are read by the table's `SamplerPatch::set_from_flag`.

use crate::protocol::{Kind, SamplerPatch, SamplerSettings, SETTINGS};
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};

/// The sampler flags as given: the settings they set over the defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SamplerArgs {
    pub patch: SamplerPatch,
}

impl SamplerArgs {
    /// The settings these flags ask for, over the defaults (as a lesson's `[sampler]` table is read),
    /// checked against the valid ranges. `--temperature 0` means greedy, as in llama.cpp
    /// (`SamplerSettings::is_greedy`).
    pub fn settings(&self) -> anyhow::Result<SamplerSettings> {
        let s = self.patch.settings();
        s.validate().map_err(|e| anyhow::anyhow!("--{e}"))?;
        Ok(s)
    }
}

impl Args for SamplerArgs {
    fn augment_args(mut cmd: Command) -> Command {
        for name in SETTINGS {
            let arg = Arg::new(name.flag)
                .long(name.flag)
                .help(name.setting.help_text());
            cmd = cmd.arg(match name.kind {
                Kind::Switch => arg.action(ArgAction::SetTrue),
                Kind::Whole => arg.value_name("N").allow_negative_numbers(true),
                Kind::Decimal => arg.value_name("X").allow_negative_numbers(true),
                Kind::Texts => arg.value_name("TEXT").action(ArgAction::Append),
            });
        }
        cmd
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for SamplerArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut args = SamplerArgs::default();
        args.update_from_arg_matches(m)?;
        Ok(args)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        for name in SETTINGS {
            let values: Vec<String> = match name.kind {
                Kind::Switch if m.get_flag(name.flag) => vec![],
                Kind::Switch => continue,
                _ => match m.get_many::<String>(name.flag) {
                    Some(v) => v.cloned().collect(),
                    None => continue,
                },
            };
            self.patch
                .set_from_flag(name.setting, &values)
                .map_err(|e| clap::Error::raw(clap::error::ErrorKind::ValueValidation, e))?;
        }
        Ok(())
    }
}

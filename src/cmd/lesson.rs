//! `nexttoken lesson list` and `nexttoken lesson check NAME|PATH`: the built-ins with their lengths, and
//! a lesson run headless on the real model with every `expect` checked (`lesson::check`).

use crate::cli::{LessonArgs, LessonCmd, ModelArgs};
use crate::engine::fetch;
use crate::engine::load::{load_session, LoadOptions};
use crate::lesson::check::check;
use crate::lesson::{builtin, load, BUILTINS};
use crate::protocol::SamplerSettings;
use anyhow::{Context, Result};
use std::io::Write;

/// Runs the `lesson` subcommand.
pub fn run_cli(model: &ModelArgs, args: &LessonArgs) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match &args.command {
        LessonCmd::List => list(&mut out),
        LessonCmd::Check { lesson } => {
            let lesson = load(lesson)?;
            let path = fetch::resolve_model(model.model.as_deref())?;
            let load = LoadOptions {
                tokenizer_json: model.tokenizer.as_deref(),
                ..LoadOptions::default()
            };
            let settings = SamplerSettings::default();
            let opts = super::session_options(model);
            let (mut session, _) = load_session(&path, &load, settings, opts, &mut |_| {})?;
            check(&mut session, &lesson, &mut out)
        }
    }
}

/// Prints each built-in lesson: name, minutes, summary.
pub fn list(out: &mut dyn Write) -> Result<()> {
    for (name, _) in BUILTINS {
        let lesson = builtin(name).context("a built-in lesson is missing")??;
        writeln!(
            out,
            "{name:<20} {:>2} min  {}",
            lesson.minutes, lesson.summary
        )?;
    }
    writeln!(
        out,
        "\nCheck one on the real model: nexttoken lesson check NAME (or a path to a .toml file)"
    )?;
    Ok(())
}

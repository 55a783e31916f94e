//! `nexttoken lesson list` and `nexttoken lesson check NAME|PATH`: the built-ins with their lengths,
//! and a lesson run headless on the real model with every `expect` checked.

use super::run::{Runner, Status};
use super::{builtin, lint, load, Lesson, BUILTINS};
use crate::cli::{LessonArgs, LessonCmd, ModelArgs};
use crate::engine::fetch;
use crate::engine::load::{load_session, LoadOptions};
use crate::engine::session::{Session, SessionOptions};
use crate::protocol::SamplerSettings;
use anyhow::{bail, Context, Result};
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
            let opts = SessionOptions::default();
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

/// Runs every step of `lesson` on `session` and checks every `expect`, printing one line per action
/// and per check. Fails at the first check that does not hold (or action the session refuses), with
/// the step's narration and the observed value; and, once every step has run, when the narration lint
/// finds a step whose claims nothing checks (printed first, as `lint` lines).
pub fn check(session: &mut Session, lesson: &Lesson, out: &mut dyn Write) -> Result<()> {
    let n = lesson.steps.len();
    writeln!(
        out,
        "lesson {}: {} ({} min, {n} steps)",
        lesson.name, lesson.title, lesson.minutes
    )?;
    let findings = lint::lint(lesson);
    for f in &findings {
        writeln!(out, "  lint {f}")?;
    }
    let mut runner = Runner::new(lesson.clone());
    runner.reset(session)?;
    let mut checks = 0;
    while !runner.is_done() {
        let run = runner.run_whole(session);
        let step = &lesson.steps[run.index];
        let heading = step
            .title
            .clone()
            .unwrap_or_else(|| first_line(&step.narration));
        writeln!(out, "step {}/{n}: {heading}", run.index + 1)?;
        for o in &run.outcomes {
            let tag = match o.status {
                Status::Done => "done",
                Status::TuiOnly => "tui ",
                Status::Passed => "ok  ",
                Status::Failed => "FAIL",
            };
            let sep = if o.observed.is_empty() { "" } else { ": " };
            writeln!(
                out,
                "  {tag} line {:<3} {}{sep}{}",
                o.line, o.what, o.observed
            )?;
            checks += usize::from(o.status == Status::Passed);
        }
        if let Some(a) = &run.answer {
            for c in &a.checks {
                writeln!(out, "       the answer's claim {}: {}", c.what, c.observed)?;
            }
        }
        if let Some(f) = run.failure() {
            out.flush()?;
            bail!(
                "lesson {} failed at step {}/{n} (line {}): {}\n  observed: {}\n  the step's narration:\n{}",
                lesson.name,
                run.index + 1,
                f.line,
                f.what,
                f.observed,
                indent(&step.narration)
            );
        }
    }
    writeln!(out, "lesson {}: all {checks} checks hold", lesson.name)?;
    if !findings.is_empty() {
        let steps: Vec<String> = findings.iter().map(|f| (f.step + 1).to_string()).collect();
        bail!(
            "lesson {}: the narration of step(s) {} makes claims that no `expect` checks (see the lint lines above)",
            lesson.name,
            steps.join(", ")
        );
    }
    Ok(())
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut s: String = line.chars().take(70).collect();
    if line.chars().count() > 70 {
        s.push('…');
    }
    s
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

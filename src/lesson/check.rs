//! `nexttoken lesson check NAME|PATH`: a lesson run headless on the real model with every `expect`
//! checked.

use super::run::{Runner, Status, StepRun};
use super::Step;
use super::{lint, Lesson};
use crate::engine::session::Session;
use anyhow::{bail, Result};
use std::io::Write;

/// Runs every step of `lesson` on `session` and checks every `expect`, printing one line per action
/// and per check. Fails at the first check that does not hold (or action the session refuses), with
/// the step's narration and the observed value; and, once every step has run, when the narration lint
/// finds a step whose claims nothing checks (printed first, as `lint` lines) or a question's answer
/// can be read before it is asked (`told` lines, [`super::told`]).
pub fn check(session: &mut Session, lesson: &Lesson, out: &mut dyn Write) -> Result<()> {
    let n = lesson.steps.len();
    writeln!(
        out,
        "lesson {}: {} ({} min, {n} step{})",
        lesson.name,
        lesson.title,
        lesson.minutes,
        if n == 1 { "" } else { "s" }
    )?;
    let findings = lint::lint(lesson);
    for f in &findings {
        writeln!(out, "  lint {f}")?;
    }
    if let Some(models) = super::written_for::written_for(session, lesson) {
        writeln!(
            out,
            "  note: written for {models}, not the model loaded: its claims may not hold here"
        )?;
    }
    let mut runner = Runner::new(lesson.clone());
    runner.reset(session)?;
    let mut checks = 0;
    let mut told = Vec::new();
    while !runner.is_done() {
        let run = runner.run_whole(session);
        let step = &lesson.steps[run.index];
        checks += print_run(&run, step, n, out)?;
        if let Some(why) = run.answer.as_ref().and_then(|a| super::told::told(step, a)) {
            writeln!(out, "  told step {}: {why}", run.index + 1)?;
            told.push(run.index);
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
    summary(
        out,
        &lesson.name,
        checks,
        told.is_empty() && findings.is_empty(),
    )?;
    if !told.is_empty() {
        bail!(
            "lesson {}: the class can read the answer to the question of {} before answering (see the `told` lines above): move it after the line `---`",
            lesson.name,
            steps_named(&told)
        );
    }
    if !findings.is_empty() {
        let steps: Vec<usize> = findings.iter().map(|f| f.step).collect();
        bail!(
            "lesson {}: the narration of {} makes claims that no `expect` checks (see the lint lines above)",
            lesson.name,
            steps_named(&steps)
        );
    }
    Ok(())
}

/// Prints one step's run: its heading, a line per action and check, and the claims behind the
/// model's answer. Returns how many checks passed.
fn print_run(run: &StepRun, step: &Step, n: usize, out: &mut dyn Write) -> Result<usize> {
    let heading = step
        .title
        .clone()
        .unwrap_or_else(|| first_line(&step.narration));
    writeln!(out, "step {}/{n}: {heading}", run.index + 1)?;
    let mut passed = 0;
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
        passed += usize::from(o.status == Status::Passed);
    }
    for c in run.answer.iter().flat_map(|a| &a.checks) {
        writeln!(out, "       the answer's claim {}: {}", c.what, c.observed)?;
    }
    Ok(passed)
}

/// 0-based step indices as a class counts them: "step 2", "steps 2, 4".
fn steps_named(steps: &[usize]) -> String {
    let numbers: Vec<String> = steps.iter().map(|i| (i + 1).to_string()).collect();
    let noun = if steps.len() == 1 { "step" } else { "steps" };
    format!("{noun} {}", numbers.join(", "))
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

/// The line after the last step: how many checks held, and, where `clean` is false, that something
/// else fails below ("all 0 checks hold" above a failure had read as a pass).
fn summary(out: &mut dyn Write, name: &str, checks: usize, clean: bool) -> std::io::Result<()> {
    match (checks, clean) {
        (0, true) => writeln!(out, "lesson {name}: it runs, and has no `expect` to check"),
        (0, false) => writeln!(out, "lesson {name}: it runs (no `expect` to check)"),
        (_, true) => writeln!(out, "lesson {name}: all {checks} checks hold"),
        (_, false) => writeln!(out, "lesson {name}: its {checks} checks hold, but:"),
    }
}

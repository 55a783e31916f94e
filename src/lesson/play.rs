//! Playing a lesson's actions that write: stepping with the stop rules (an end of text, an
//! `autoplay` condition), and one action as a line of the report.

use super::run::tip_loop;
use crate::engine::session::{Session, SessionError};
use crate::protocol::lesson::format::{Action, Autoplay, BranchTarget};
use crate::protocol::StepReport;

/// Steps up to `n` times with the sampler, by the session's one stop rule (`Session::generate`).
pub(super) fn steps(
    session: &mut Session,
    n: usize,
    stop: impl FnMut(&mut Session, &StepReport) -> bool,
) -> Result<Vec<StepReport>, SessionError> {
    session.generate(n, stop)
}

pub(super) fn autoplay(
    session: &mut Session,
    a: &Autoplay,
) -> Result<(Vec<StepReport>, String), SessionError> {
    let mut why = String::new();
    let reports = steps(session, a.max.0 as usize, |s, r| {
        if a.until_token.as_deref() == Some(r.committed.token.text.as_str()) {
            why = format!("stopped at {:?}", r.committed.token.text);
            return true;
        }
        if a.until_loop {
            if let Some(c) = tip_loop(s) {
                why = format!("loop of period {} found", c.period);
                return true;
            }
        }
        if let Some(level) = a.until_entropy_above {
            if r.next.entropy > level {
                why = format!("entropy {:.2} > {level}", r.next.entropy);
                return true;
            }
        }
        false
    })?;
    if why.is_empty() {
        let conditions = a.until_token.is_some() || a.until_loop || a.until_entropy_above.is_some();
        let end = reports
            .last()
            .is_some_and(|r| session.is_eos(r.committed.token.id));
        why = match (end, conditions) {
            (true, _) => "end of text".into(),
            (false, false) => "max".into(),
            (false, true) => "max reached before the condition held".into(),
        };
    }
    Ok((reports, why))
}

/// The generated text of some steps, quoted.
pub(super) fn generated(reports: &[StepReport]) -> String {
    let text: String = reports
        .iter()
        .map(|r| r.committed.token.text.as_str())
        .collect();
    format!("{text:?}")
}

/// One action as a line of the report.
pub fn describe(a: &Action) -> String {
    match a {
        Action::Prompt(t) => format!("prompt {t:?}"),
        Action::Chat(t) => format!("chat {t:?}"),
        Action::Sampler(_) => "sampler".into(),
        Action::Step(n) => format!("step {}", n.0),
        Action::Autoplay(a) => {
            let mut s = format!("autoplay (max {})", a.max.0);
            if let Some(t) = &a.until_token {
                s += &format!(" until {t:?}");
            }
            if a.until_loop {
                s += " until a loop";
            }
            if let Some(e) = a.until_entropy_above {
                s += &format!(" until entropy > {e}");
            }
            s
        }
        Action::Force(t) => format!("force {t:?}"),
        Action::ForceId(id) => format!("force id {id}"),
        Action::ForceText(t) => format!("force text {t:?}"),
        Action::Rewind(n) => format!("rewind {}", n.0),
        Action::Branch(BranchTarget::Previous) => "branch previous".into(),
        Action::Branch(BranchTarget::Index(i)) => format!("branch {i}"),
        Action::Panel(p) => format!("panel {:?}", p.panel).to_lowercase(),
        Action::KvCache(on) => format!("kv_cache {on}"),
        Action::Draft(d) => format!("draft {:?}", d.name),
        Action::Rounds(n) => format!("rounds {}", n.0),
        Action::Ask(q) => format!("ask {:?} ({})", q.text, q.kind_name()),
        Action::Expect(_) => "expect".into(),
    }
}

/// Runs `n` speculative rounds with the loaded draft, each handed to the TUI's round panel; stops at
/// an end of text, where plain stepping would. Says what they wrote and how many drafts were kept.
pub fn rounds(
    session: &mut Session,
    n: usize,
    tui: &mut Vec<crate::protocol::lesson::report::TuiAction>,
) -> Result<String, String> {
    let k = session
        .draft_info()
        .map(|d| d.k)
        .ok_or("no draft loaded: add `{ draft = \"layers:20\" }` before the rounds")?;
    let (mut tally, mut ids) = (crate::analysis::speculation::Tally::default(), Vec::new());
    for _ in 0..n {
        let r = session
            .speculate_within(k, usize::MAX)
            .map_err(|e| e.to_string())?;
        r.report.add_to(&mut tally);
        ids.extend(r.steps.iter().map(|s| s.committed.token.id));
        tui.push(crate::protocol::lesson::report::TuiAction::Round(Box::new(
            r.report,
        )));
        if ids.last().is_some_and(|&t| session.is_eos(t)) {
            break;
        }
    }
    Ok(format!(
        "{}: {} of {} checked drafts kept, {}: {:?}",
        crate::protocol::words::count(n, "round"),
        tally.accepted,
        tally.checked,
        crate::protocol::words::count(ids.len(), "token"),
        session.text_of(&ids)
    ))
}

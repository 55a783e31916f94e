//! The lesson runner: turns a step's actions into calls on the engine's [`Session`], one step at a
//! time, and reports what each did. The headless checker (`check.rs`) and the TUI share it: actions only
//! the TUI acts on (open a panel, ask a question) come back as [`TuiAction`]s, validated but not acted
//! on here.

use super::expect;
pub use super::play::describe;
use super::play::{autoplay, generated, steps};
use crate::analysis::{self, Cycle};
use crate::engine::session::{Choice, Session, SessionError};
use crate::protocol::lesson::format::{Action, BranchTarget, Lesson};
use crate::protocol::lesson::question::QuestionKind;
pub use crate::protocol::lesson::report::{Outcome, Status, StepRun, TuiAction};
use crate::protocol::words::count;
use crate::protocol::SamplerSettings;

/// Repeats shorter than this many tokens are not a loop ("the the" is English): the same rule as the
/// TUI's loop alert.
pub const LOOP_MIN_SPAN: usize = 4;

/// Runs a lesson's steps in order on a session.
#[derive(Debug, Clone)]
pub struct Runner {
    lesson: Lesson,
    next: usize,
    /// The tip that was current before the last rewind or branch switch: `branch = "previous"` and
    /// the divergence checks use it.
    previous: Option<usize>,
    /// A step stopped at its question: what it did so far and the action to go on from.
    paused: Option<(StepRun, usize)>,
}

impl Runner {
    pub fn new(lesson: Lesson) -> Self {
        Self {
            lesson,
            next: 0,
            previous: None,
            paused: None,
        }
    }

    pub fn lesson(&self) -> &Lesson {
        &self.lesson
    }

    /// The index of the step `run_step` runs next.
    pub fn next_step(&self) -> usize {
        self.next
    }

    pub fn is_done(&self) -> bool {
        self.next >= self.lesson.steps.len()
    }

    /// Whether a step waits at its question for the reveal.
    pub fn is_paused(&self) -> bool {
        self.paused.is_some()
    }

    /// Back to the start: default sampler settings, the KV cache on. The next step runs step 0.
    pub fn reset(&mut self, session: &mut Session) -> Result<(), SessionError> {
        session.set_settings(SamplerSettings::default());
        session.set_kv_cache(true)?;
        self.next = 0;
        self.previous = None;
        self.paused = None;
        Ok(())
    }

    /// Restores the lesson's state after step `upto` (0-based, exclusive): resets, then runs every step
    /// before it whole, questions answered. Lessons are deterministic (seeded draws), so this is how
    /// "back to the lesson" works after free exploration.
    pub fn replay_to(
        &mut self,
        session: &mut Session,
        upto: usize,
    ) -> Result<Vec<StepRun>, SessionError> {
        self.reset(session)?;
        let mut runs = Vec::new();
        while self.next < upto.min(self.lesson.steps.len()) {
            runs.push(self.run_whole(session));
        }
        Ok(runs)
    }

    /// Runs the next step whole: up to its question, then the rest and the model's answer (the
    /// headless checker, and replays).
    pub fn run_whole(&mut self, session: &mut Session) -> StepRun {
        let run = self.run_step(session);
        if run.question.is_some() {
            if let Some(done) = self.reveal(session) {
                return done;
            }
        }
        run
    }

    /// Runs the next step's actions up to its question, if it has one: then `run.question` is set and
    /// the rest waits for [`Runner::reveal`]. An action the session refuses ends the step there, as a
    /// failure.
    pub fn run_step(&mut self, session: &mut Session) -> StepRun {
        let index = self.next;
        self.next += 1;
        self.paused = None;
        let run = StepRun {
            index,
            outcomes: Vec::new(),
            tui: Vec::new(),
            question: None,
            answer: None,
        };
        self.run_from(session, run, 0)
    }

    /// Runs the rest of a step that stopped at its question, then computes the model's answer (a
    /// token question's before the rest runs, at the position it was asked at; an answer the
    /// lesson's own check refuses is a failed outcome). `None` when no step is waiting.
    pub fn reveal(&mut self, session: &mut Session) -> Option<StepRun> {
        let (mut run, from) = self.paused.take()?;
        let question = run.question.take()?;
        let line = self.lesson.steps[run.index].action_lines[from - 1];
        // A token question is about the position it was asked at: answered before the rest of the
        // step writes on (a `step` after the `ask` had made the answer the next position's "."
        // where the class was asked for " Paris"). Other questions measure what the rest does.
        let asked_here = matches!(question.kind, QuestionKind::Token)
            .then(|| super::answer::answer(session, &question, self.previous));
        run = self.run_from(session, run, from);
        if run.failure().is_some() {
            return Some(run);
        }
        let answered =
            asked_here.unwrap_or_else(|| super::answer::answer(session, &question, self.previous));
        match answered {
            Ok(a) => {
                run.outcomes.push(Outcome {
                    line,
                    what: format!("answer to {:?}", question.text),
                    observed: a.problem.clone().unwrap_or_else(|| a.shown.clone()),
                    status: if a.problem.is_some() {
                        Status::Failed
                    } else {
                        Status::Passed
                    },
                });
                run.answer = Some(a);
            }
            Err(e) => run.outcomes.push(Outcome {
                line,
                what: format!("answer to {:?}", question.text),
                observed: e,
                status: Status::Failed,
            }),
        }
        Some(run)
    }

    /// Runs the step's actions from index `from` until its end, a refusal, or its question.
    fn run_from(&mut self, session: &mut Session, mut run: StepRun, from: usize) -> StepRun {
        let Some(step) = self.lesson.steps.get(run.index).cloned() else {
            return run;
        };
        let actions = step.actions.iter().zip(&step.action_lines).enumerate();
        for (i, (action, &line)) in actions.skip(from) {
            if let Action::Ask(q) = action {
                run.outcomes.push(Outcome {
                    line,
                    what: describe(action),
                    observed: format!("asked ({})", q.kind_name()),
                    status: Status::Done,
                });
                run.question = Some(q.clone());
                self.paused = Some((run.clone(), i + 1));
                return run;
            }
            match self.act(session, action, &mut run.tui) {
                Ok(Acted::Line(status, observed)) => run.outcomes.push(Outcome {
                    line,
                    what: describe(action),
                    observed,
                    status,
                }),
                Ok(Acted::Checks(checks)) => {
                    run.outcomes.extend(checks.into_iter().map(|c| Outcome {
                        line,
                        what: format!("expect {}", c.what),
                        observed: c.observed,
                        status: if c.ok { Status::Passed } else { Status::Failed },
                    }))
                }
                Err(e) => {
                    run.outcomes.push(Outcome {
                        line,
                        what: describe(action),
                        observed: e,
                        status: Status::Failed,
                    });
                    break;
                }
            }
        }
        run
    }

    fn act(
        &mut self,
        session: &mut Session,
        action: &Action,
        tui: &mut Vec<TuiAction>,
    ) -> Result<Acted, String> {
        let err = |e: SessionError| e.to_string();
        let done = |s: String| Ok(Acted::Line(Status::Done, s));
        match action {
            Action::Prompt(text) | Action::Chat(text) => {
                let chat = matches!(action, Action::Chat(_));
                let ids = session.prompt_ids(text, chat).map_err(err)?;
                let r = session.prefill_ids(&ids).map_err(err)?;
                // So that a saved session (and the TUI's prompt box) carries the prompt as written.
                session.note_prompt(text, chat);
                self.previous = None;
                done(format!(
                    "read {} in {:.1} ms",
                    count(r.tokens, "token"),
                    r.ms
                ))
            }
            Action::Sampler(patch) => {
                let s = patch.settings();
                let what = if s.is_greedy() {
                    "greedy".to_string()
                } else {
                    format!("temperature {}, seed {}", s.temperature, s.seed)
                };
                session.set_settings(s);
                done(what)
            }
            Action::Step(n) => {
                let reports = steps(session, n.0 as usize, |_, _| false).map_err(err)?;
                done(generated(&reports))
            }
            Action::Autoplay(a) => {
                let (reports, why) = autoplay(session, a).map_err(err)?;
                done(format!(
                    "{} steps ({why}): {}",
                    reports.len(),
                    generated(&reports)
                ))
            }
            Action::Force(_)
            | Action::ForceId(_)
            | Action::ForceText(_)
            | Action::Rewind(_)
            | Action::Branch(_)
            | Action::KvCache(_) => self.edit_path(session, action),
            Action::Panel(p) => {
                tui.push(TuiAction::Panel(*p));
                Ok(Acted::Line(Status::TuiOnly, String::new()))
            }
            Action::Draft(d) => {
                let spec = crate::engine::draft::DraftSpec::parse(&d.name)?;
                let k = d.k.unwrap_or(crate::engine::draft::DEFAULT_DRAFT_K);
                session.load_draft(&spec, k).map_err(err)?;
                done(format!(
                    "draft {} loaded, {k} tokens per round",
                    spec.label()
                ))
            }
            Action::Rounds(n) => done(super::play::rounds(session, n.0 as usize, tui)?),
            Action::Ask(_) => Ok(Acted::Line(Status::TuiOnly, String::new())),
            Action::Expect(e) => Ok(Acted::Checks(expect::evaluate(session, e, self.previous)?)),
        }
    }

    /// The actions that force tokens, move along the tree or switch the cache.
    fn edit_path(&mut self, session: &mut Session, action: &Action) -> Result<Acted, String> {
        let err = |e: SessionError| e.to_string();
        let done = |s: String| Ok(Acted::Line(Status::Done, s));
        match action {
            Action::Force(text) => {
                let id = expect::single_token(session, text)?;
                let r = session.step(Choice::Force(id)).map_err(err)?;
                done(format!("forced {:?} (p = {:.4})", text, r.committed.prob))
            }
            Action::ForceId(id) => {
                let r = session.step(Choice::Force(*id)).map_err(err)?;
                done(format!(
                    "forced {:?} (p = {:.4})",
                    r.committed.token.text, r.committed.prob
                ))
            }
            Action::ForceText(text) => {
                let reports = session.force_text(text, &mut |_, _, _| {}).map_err(err)?;
                done(format!("forced {} tokens", reports.len()))
            }
            Action::Rewind(n) => {
                let before = session.tip_id();
                let dropped = session.rewind(n.0 as usize).map_err(err)?;
                if dropped > 0 {
                    self.previous = before;
                }
                done(format!("dropped {}", count(dropped, "token")))
            }
            Action::Branch(target) => {
                let leaf = self.branch_leaf(session, *target)?;
                let before = session.tip_id();
                session.switch_branch(leaf).map_err(err)?;
                self.previous = before;
                done(format!("now on branch {leaf}"))
            }
            Action::KvCache(on) => {
                session.set_kv_cache(*on).map_err(err)?;
                done(format!("KV cache {}", if *on { "on" } else { "off" }))
            }
            other => Err(format!("not a path edit: {other:?}")),
        }
    }

    fn branch_leaf(&self, session: &Session, target: BranchTarget) -> Result<usize, String> {
        match target {
            BranchTarget::Previous => self.previous.ok_or_else(|| {
                "there is no previous branch yet: rewind (or switch branch) first".to_string()
            }),
            BranchTarget::Index(i) => {
                let mut leaves: Vec<usize> = session.branches().iter().map(|b| b.id).collect();
                leaves.sort_unstable();
                let n = leaves.len();
                leaves
                    .get(i)
                    .copied()
                    .ok_or_else(|| format!("there are {n} branches; branch {i} does not exist"))
            }
        }
    }
}

enum Acted {
    Line(Status, String),
    Checks(Vec<expect::Check>),
}

/// The loop at the tip of the current path, when it spans at least [`LOOP_MIN_SPAN`] tokens and
/// reaches into the generated text.
pub fn tip_loop(session: &Session) -> Option<Cycle> {
    let tokens = session.tokens();
    analysis::tip_cycle(&tokens)
        .filter(|c| c.span() >= LOOP_MIN_SPAN && tokens.len() > session.prompt_len())
}

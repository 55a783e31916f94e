//! A lesson in the TUI (`--lesson NAME|PATH`): the narration panel's state, the keys that go to the next
//! or previous lesson step, and "back to the lesson" after exploring. The engine thread runs the steps
//! (`lesson::Track`); this side asks for a step and acts on what it left to the screen (panels to open,
//! a question to ask).

use super::keymap::{hint_key, Action, Mode};
use super::{App, HeadSel, SidePanel};
use crate::lesson::{Lesson, Panel, PanelSpec, StepRun, TuiAction};
use crate::protocol::{Command, LessonStepView};

/// The lesson open on screen.
#[derive(Debug, Clone, PartialEq)]
pub struct LessonState {
    pub lesson: Lesson,
    /// The step shown (0-based): `None` until the engine has run the first one.
    pub at: Option<usize>,
    /// What that step did (its `expect` checks among them).
    pub run: Option<StepRun>,
    /// An earlier step that went off the lesson's script, found while replaying.
    pub earlier_failure: Option<StepRun>,
    /// The session has been changed by hand since the step was shown: `g` goes back to the lesson.
    pub explored: bool,
}

impl LessonState {
    pub fn new(lesson: Lesson) -> Self {
        LessonState {
            lesson,
            at: None,
            run: None,
            earlier_failure: None,
            explored: false,
        }
    }

    pub fn len(&self) -> usize {
        self.lesson.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lesson.steps.is_empty()
    }
}

impl App {
    /// Opens `lesson` once the model is loaded, with its presenter and predict settings (its theme is
    /// chosen with the command line's, in `tui.rs`).
    pub fn with_lesson(mut self, lesson: Lesson) -> App {
        let s = &lesson.settings;
        self.presenter.on |= s.presenter;
        self.predict.on |= s.predict;
        if let Some(level) = s.pause_above {
            self.predict.pause_above = level;
        }
        self.lesson = Some(LessonState::new(lesson));
        self
    }

    /// The first request when a lesson is open: its first step.
    pub(super) fn open_lesson(&mut self) -> Option<Vec<Command>> {
        let lesson = self.lesson.as_ref()?.lesson.clone();
        Some(self.request(Command::OpenLesson(Box::new(lesson)), "opening the lesson"))
    }

    /// The lesson keys: next step, previous step, back to the lesson; `None` for any other action.
    pub(super) fn lesson_action(&mut self, action: Action) -> Option<Vec<Command>> {
        if !matches!(
            action,
            Action::NextLessonStep | Action::PrevLessonStep | Action::BackToLesson
        ) {
            return None;
        }
        let Some(state) = self.lesson.as_ref() else {
            self.say("no lesson is open: start one with nexttoken --lesson NAME (nexttoken lesson list shows them)");
            return Some(vec![]);
        };
        let (len, at) = (state.len(), state.at);
        let Some(at) = at else {
            return Some(vec![]);
        };
        let target = match action {
            Action::NextLessonStep if at + 1 >= len => {
                self.say(format!(
                    "that was the last step of the lesson; {} goes back a step",
                    hint_key(Mode::Normal, Action::PrevLessonStep)
                ));
                return Some(vec![]);
            }
            Action::NextLessonStep => at + 1,
            Action::PrevLessonStep if at == 0 => {
                self.say("this is the first step of the lesson");
                return Some(vec![]);
            }
            Action::PrevLessonStep => at - 1,
            _ => at,
        };
        let label = format!("lesson step {} of {len}", target + 1);
        Some(self.request(Command::LessonGoto { step: target }, &label))
    }

    /// A lesson step arrived: adopt the session, then do what the step left to the screen. True when
    /// it opened the compare view, which asks the engine to compare once it is free.
    pub(super) fn on_lesson_step(&mut self, step: LessonStepView) -> bool {
        let LessonStepView {
            run,
            replayed,
            earlier_failure,
            view,
        } = step;
        self.adopt(view);
        self.mode = Mode::Normal;
        self.predict.question = None;
        self.predict.teacher_hidden = false;
        let mut compare = false;
        for action in &run.tui {
            match action {
                TuiAction::Panel(spec) => compare |= self.open_panel(*spec),
                TuiAction::Ask(q) => {
                    let pos = self.session.as_ref().map_or(0, |s| s.next.position);
                    self.predict.question = Some((pos, q.clone()));
                    self.predict.revealed = None;
                }
            }
        }
        let Some(state) = self.lesson.as_mut() else {
            return compare;
        };
        let index = run.index;
        state.at = Some(index);
        state.explored = false;
        state.earlier_failure = earlier_failure;
        let failed = run.failure().is_some();
        state.run = Some(run);
        let n = state.len();
        if failed {
            self.say_error(format!(
                "lesson step {} of {n} did not go as the lesson says: see the narration panel",
                index + 1
            ));
        } else if replayed > 0 {
            self.say(format!(
                "back to the lesson: step {} of {n} (replayed {replayed} step(s))",
                index + 1
            ));
        } else {
            self.say(format!("lesson step {} of {n}", index + 1));
        }
        compare
    }

    /// Opens a panel a lesson asks for; true when it is the compare view (which needs a request).
    fn open_panel(&mut self, spec: PanelSpec) -> bool {
        let side = |app: &mut App, side: SidePanel| {
            app.screen.side = side;
            app.screen.show_chain = false;
            app.presenter.side = Some(side);
        };
        match spec.panel {
            Panel::Attention => {
                side(self, SidePanel::Attention);
                if let Some(l) = spec.layer {
                    self.focus.layer = l.min(self.n_layer().saturating_sub(1));
                }
                if let Some(h) = spec.head {
                    self.focus.head = HeadSel::Head(h.min(self.n_head().saturating_sub(1)));
                }
            }
            Panel::Timing => side(self, SidePanel::Timing),
            Panel::Repetition => side(self, SidePanel::Repetition),
            Panel::Chain => self.screen.show_chain = true,
            Panel::Distribution => self.screen.show_chain = false,
            Panel::Branches => self.mode = Mode::Branches,
            Panel::Sampler => self.mode = Mode::Sampler,
            Panel::Compare => return true,
        }
        false
    }

    /// Marks the lesson as explored when a command changes the session by hand.
    pub(super) fn note_exploring(&mut self, cmds: &[Command]) {
        if let Some(state) = self.lesson.as_mut() {
            if cmds.iter().any(Command::changes_session) {
                state.explored = true;
            }
        }
    }
}

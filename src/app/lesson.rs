//! A lesson in the TUI (`--lesson NAME|PATH`): the narration panel's state, the keys that go to the next
//! or previous lesson step, and "back to the lesson" after exploring. The engine thread runs the steps
//! (`lesson::Track`); this side asks for a step and acts on what it left to the screen (panels to open,
//! a question to ask).

use super::keymap::{hint_key, Action, Mode};
use super::{App, HeadSel, SidePanel};
use crate::protocol::lesson::{
    At, Given, Lesson, ModelAnswer, Panel, PanelSpec, Question, StepRun, TuiAction,
};
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
    /// The models the lesson was written for, when the one loaded is none of them.
    pub written_for: Option<String>,
    /// The session has been changed by hand since the step was shown: `g` goes back to the lesson.
    pub explored: bool,
    /// The step's question while it waits for the class, with the position it was asked at; the rest
    /// of the step runs once it is revealed.
    pub question: Option<(usize, Question)>,
    /// What the class answered to it (a question that is not a token question), until the answer comes.
    pub given: Option<Given>,
    /// The reveal was asked of the engine (once per question).
    pub reveal_sent: bool,
    /// The model's answer to the step's question, and the class's answer scored against it (its
    /// guess, at a token question), if the class gave one.
    pub answer: Option<(ModelAnswer, Option<Verdict>)>,
    /// The panels the step opened, so that `g` opens them again.
    pub panels: Vec<PanelSpec>,
}

/// The class's answer to a step's question scored, as the narration panel and the status line say it:
/// the verdict, the class's answer, then the model's, so that a narrow screen cuts the model's text,
/// never the verdict or the class's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub correct: bool,
    /// A choice by its number ("1"; the model's answer names it with its text), "yes" or "no", a
    /// number, or a guessed token with the model's rank of it and its probability ("\" the\" (rank
    /// 2, 5.2%)").
    pub class: String,
    /// The model's answer: "2. At the word after…", "yes", "8.7×"; at a token question, its top
    /// choice where the guess was scored ("\" Paris\" (76.8%)").
    pub model: String,
}

impl Verdict {
    /// "✓" or "✗".
    pub fn mark(&self) -> &'static str {
        if self.correct {
            "✓"
        } else {
            "✗"
        }
    }
}

/// What the status line says of a lesson step shown ([`App::say_step_shown`]).
struct StepShown {
    /// The step, 0-based.
    index: usize,
    /// It went off the lesson's script.
    failed: bool,
    /// It brought the answer to its question.
    revealing: bool,
    /// It is the first step shown since the lesson opened.
    first_shown: bool,
    /// Steps replayed to reach it.
    replayed: usize,
}

impl LessonState {
    pub fn new(lesson: Lesson) -> Self {
        LessonState {
            lesson,
            at: None,
            run: None,
            earlier_failure: None,
            written_for: None,
            explored: false,
            question: None,
            given: None,
            reveal_sent: false,
            answer: None,
            panels: Vec::new(),
        }
    }

    /// The question waiting for the class, if any.
    pub fn waiting(&self) -> Option<&Question> {
        self.question.as_ref().map(|(_, q)| q)
    }

    pub fn len(&self) -> usize {
        self.lesson.steps.len()
    }

    /// Whether the step after the one shown opens by asking the class for the next token, with only
    /// screen actions (panels) before its question: its answer is the distribution this step ends on.
    pub fn next_step_asks_this_token(&self) -> bool {
        let Some(next) = self.at.and_then(|i| self.lesson.steps.get(i + 1)) else {
            return false;
        };
        let first = next.actions.iter().find(|a| !a.tui_only());
        matches!(first, Some(crate::protocol::lesson::Action::Ask(q)) if q.is_token())
    }

    pub fn is_empty(&self) -> bool {
        self.lesson.steps.is_empty()
    }
}

impl App {
    /// Whether the distribution is held back because the next lesson step asks the class for this very
    /// token: shown now, the step would give its own question's answer away (the chat-template lesson
    /// showed "Hello 60.6%" one step before asking how the assistant begins). Held only at the step's
    /// own tip, until `h` reveals it.
    pub fn held_for_next_step(&self) -> bool {
        let Some(l) = &self.lesson else {
            return false;
        };
        let here = self.session.as_ref().map(|s| s.next.position);
        l.next_step_asks_this_token()
            && l.waiting().is_none()
            && !l.explored
            && here.is_some()
            && self.predict.revealed != here
    }

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
            Action::NextLessonStep if state.question.is_some() && !state.reveal_sent => {
                return Some(self.reveal_before_moving_on());
            }
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
            _ if !state.explored => {
                // Nothing to replay: the step's panels come back, as the step opened them.
                let panels = state.panels.clone();
                self.mode = Mode::Normal;
                let compare = panels.iter().fold(false, |c, p| self.open_panel(*p) | c);
                self.say(format!("at the lesson: step {} of {len}", at + 1));
                return Some(if compare {
                    self.compare_with_left()
                } else {
                    vec![]
                });
            }
            _ => at,
        };
        let label = format!("lesson step {} of {len}", target + 1);
        Some(self.request(Command::LessonGoto { step: target }, &label))
    }

    /// A step that reads a chat prompt shows the transcript from its start, where the template's
    /// hidden system message is: at 80x24 the chat-template lesson's step 2 had shown only the
    /// prompt's last rows, under "a hidden system message comes first". (Its reveal keeps the
    /// scroll the teacher left.)
    fn show_a_chat_from_its_start(&mut self, index: usize, revealing: bool) {
        let reads_chat = self.lesson.as_ref().is_some_and(|l| {
            let actions = l.lesson.steps.get(index).map(|s| &s.actions[..]);
            actions
                .unwrap_or_default()
                .iter()
                .any(|a| matches!(a, crate::protocol::lesson::Action::Chat(_)))
        });
        if reads_chat && !revealing {
            // Clamped to the top where the transcript is drawn (and by the scroll keys).
            self.screen.scroll_back = usize::MAX;
        }
    }

    /// A lesson step arrived: adopt the session, then do what the step left to the screen. True when
    /// it opened the compare view, which asks the engine to compare once it is free.
    pub(super) fn on_lesson_step(&mut self, step: LessonStepView) -> bool {
        let LessonStepView {
            run,
            replayed,
            earlier_failure,
            written_for,
            view,
        } = step;
        self.adopt(view);
        self.show_a_chat_from_its_start(run.index, run.answer.is_some());
        self.mode = Mode::Normal;
        self.predict.question = None;
        self.predict.teacher_hidden = false;
        self.screen.last_choice = None;
        let mut compare = false;
        let revealing = run.answer.is_some();
        if replayed > 0 {
            // A replay's run carries every round of the text on screen: the tally starts again.
            self.speculative.tally = Default::default();
            self.speculative.last = None;
        }
        let mut panels = Vec::new();
        for action in &run.tui {
            match action {
                TuiAction::Panel(spec) => panels.push(*spec),
                TuiAction::Round(r) => self.take_round(r),
            }
        }
        for spec in &panels {
            compare |= self.open_panel(*spec);
        }
        let pos = self.session.as_ref().map_or(0, |s| s.next.position);
        if let Some(q) = &run.question {
            // Hidden until the class has answered or the teacher reveals: nothing on screen answers it.
            self.predict.question = Some((pos, q.text.clone()));
            self.predict.revealed = None;
            // A guess made here at an earlier step (the lesson rewound to it) is not this question's.
            self.predict.last = None;
        }
        self.take_answer(&run);
        let Some(state) = self.lesson.as_mut() else {
            return compare;
        };
        let index = run.index;
        let first_shown = state.at.is_none();
        state.written_for = written_for;
        state.at = Some(index);
        state.explored = false;
        state.earlier_failure = earlier_failure;
        state.question = run.question.clone().map(|q| (pos, q));
        state.reveal_sent = false;
        if revealing {
            state.panels.extend(panels);
        } else {
            state.panels = panels;
            state.answer = None;
            state.given = None;
        }
        let failed = run.failure().is_some();
        state.run = Some(run);
        let shown = StepShown {
            index,
            failed,
            revealing,
            first_shown,
            replayed,
        };
        self.say_step_shown(shown);
        compare
    }

    /// The status line on a lesson step shown: a failed step, the lesson written for other models on
    /// its first step, a replay, or the step's number (a revealed answer: `take_answer` said how the
    /// class did).
    fn say_step_shown(&mut self, s: StepShown) {
        let Some(state) = self.lesson.as_ref() else {
            return;
        };
        let n = state.len();
        let index = s.index;
        if s.failed {
            let why = match &state.written_for {
                Some(models) => format!(" (it was written for {models})"),
                None => String::new(),
            };
            self.say_error(format!(
                "lesson step {} of {n} did not go as the lesson says{why}: see the narration panel",
                index + 1
            ));
        } else if s.revealing {
            // `take_answer` said how the class did.
        } else if let Some(models) = state.written_for.clone().filter(|_| s.first_shown) {
            self.say_error(format!(
                "this lesson was written for {models}, not this model: its figures differ here, and ✗ marks a claim that does not hold"
            ));
        } else if s.replayed > 0 {
            self.say(format!(
                "back to the lesson: step {} of {n} (replayed {})",
                index + 1,
                crate::protocol::words::count(s.replayed, "step")
            ));
        } else {
            self.say(format!("lesson step {} of {n}", index + 1));
        }
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
            Panel::Round => side(self, SidePanel::Round),
            Panel::Repetition => side(self, SidePanel::Repetition),
            Panel::Chain => {
                self.screen.show_chain = true;
                self.screen.last_choice = self.last_choice_at(spec.at);
            }
            Panel::Distribution => {
                self.screen.show_chain = false;
                self.screen.last_choice = self.last_choice_at(spec.at);
            }
            Panel::Branches => self.mode = Mode::Branches,
            Panel::Sampler => self.mode = Mode::Sampler,
            Panel::Compare => return true,
        }
        false
    }

    /// The position of the last decision, for a panel opened `at = "last"`.
    fn last_choice_at(&self, at: At) -> Option<usize> {
        let last = self.session.as_ref()?.last_choice.as_ref()?;
        (at == At::Last).then_some(last.position)
    }

    /// The decision the chain or bars show: the one that chose the last token while a lesson points
    /// at it and it is still the last, else the next token's.
    pub fn shown_decision(&self) -> Option<&crate::protocol::Distribution> {
        let s = self.session.as_ref()?;
        match (&s.last_choice, self.screen.last_choice) {
            (Some(d), Some(p)) if d.position == p && s.next.position == p + 1 => Some(d),
            _ => Some(&s.next),
        }
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

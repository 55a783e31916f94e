//! TUI state and its pure update: `App`, the `Msg`s it folds, and the one keymap table.
//!
//! # How a key press becomes a `Command` (the one-minute tour)
//!
//! 1. `cmd/tui.rs` reads a crossterm key event on the input thread and turns it into [`Msg::Key`]`(`[`Key`]`)`.
//! 2. [`App::update`] (in `update.rs`; engine replies are folded in `events.rs`) looks the key up in [`keymap::KEYMAP`] for the current [`Mode`]
//!    (global bindings such as Ctrl-C first), which gives an [`Action`].
//! 3. `update.rs` applies the action (each group of actions in `actions.rs`): it changes state and returns the `Command`s to send, e.g.
//!    `Action::Pick(2)` → `Command::Force { token_id }` of the second candidate.
//! 4. `cmd/tui.rs` sends those commands to the engine thread; its replies come back as [`Msg::Engine`] and
//!    are folded into the same state. Views in `ui/` then draw a pure read of `&App`, and after every
//!    message `ui::measure` reports what they would draw ([`Msg::Measured`]: where each panel and token
//!    sits, how far each view scrolls), so `update` hit-tests and scrolls against the screen without
//!    calling into `ui`.
//!
//! `update` performs no I/O and reads no clock: time arrives inside [`Msg::Tick`]. The help screen is
//! generated from the same keymap table, so it cannot drift from what the keys do.

mod action;
mod actions;
pub mod class;
pub mod editor;
mod events;
pub mod inspect;
pub mod keymap;
mod keys;
pub mod lab;
pub mod lesson;
mod lesson_question;
pub mod predict;
mod requests;
pub mod sampler_panel;
pub mod screen_map;
mod selection;
pub mod sessions;
pub mod speculative;
pub mod state;
mod text;
mod update;

pub use keymap::{Action, Key, Mode};
pub use screen_map::{Areas, ScreenMap, TokenSpot};
pub use state::{
    Autoplay, Focus, Presenter, PromptState, SamplerPanel, Screen, Selection, TextInput,
};

use crate::protocol::{Candidate, Event, ModelInfo, SamplerSettings, SessionView, TokenRecord};

/// Everything that can happen to the app.
// `Engine` carries a whole report; messages are handled one at a time, so boxing would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    Key(Key),
    /// A left click at a screen cell.
    Click {
        column: u16,
        row: u16,
    },
    Resize {
        width: u16,
        height: u16,
    },
    /// The clock moved: drives autoplay and the spinner. `now_ms` is monotonic, from any origin.
    Tick {
        now_ms: u64,
    },
    Engine(Event),
    /// Text pasted into the terminal (bracketed paste): typed into the input box in one go.
    Paste(String),
    /// The mouse wheel turned: `up` scrolls the transcript back.
    Wheel {
        up: bool,
    },
    /// From the class's web server (`--class`): a join, a count of guesses, the closed guesses.
    Class(crate::protocol::class::ClassMsg),
    /// What the views measured of the state as it is now ([`ScreenMap`]): sent by the terminal loop
    /// after every other message but the clock's tick. It changes nothing but the map, and asks nothing of the engine.
    Measured(ScreenMap),
}

/// Which colours the views use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThemeKind {
    Default,
    /// High contrast, bold, for a projector at the back of a room.
    Projector,
    /// No colours at all (the `NO_COLOR` convention): only bold, underline, reverse and characters.
    NoColor,
}

/// Attention over one head or the mean of all heads of a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadSel {
    Mean,
    Head(usize),
}

/// The right-hand panel on a small screen, where there is no room for both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SidePanel {
    Attention,
    Timing,
    /// The loop at the tip and the chart of the trap closing (`ui/repetition.rs`).
    Repetition,
    /// Model B beside model A (`ui/model_b.rs`); `Tab` offers it only when a model B is loaded.
    ModelB,
    /// The newest speculative round (`ui/round.rs`); `Tab` offers it only when a draft is loaded.
    Round,
    /// The class (`ui/class.rs`): who has joined and guessed, the class beside the model at the
    /// reveal; `Tab` offers it only in class mode.
    Class,
}

/// What the engine is doing, for the spinner.
#[derive(Debug, Clone, PartialEq)]
pub enum Busy {
    Idle,
    /// Loading the model, with the engine's last progress line.
    Loading(String),
    /// A command is in flight; the label says which ("stepping", "teacher-forcing: 2 of 5 tokens").
    Working(String),
    /// A prompt is being read: `done` of `total` tokens, since `since_ms` (the clock of `Msg::Tick`).
    Reading {
        done: usize,
        total: usize,
        since_ms: u64,
    },
}

impl Busy {
    /// What the spinner says, with progress and an estimate of the time left while a prompt is read.
    pub fn label(&self, now_ms: u64) -> String {
        match self {
            Busy::Idle => String::new(),
            Busy::Loading(what) => format!("loading: {what}"),
            Busy::Working(what) => what.clone(),
            Busy::Reading {
                done,
                total,
                since_ms,
            } => {
                let mut s = format!("reading the prompt: {done} of {total} tokens");
                let elapsed = now_ms.saturating_sub(*since_ms);
                if *done > 0 && elapsed >= 1000 {
                    // Later chunks attend over more keys, so this is a lower bound.
                    let left = elapsed as f64 * (*total - *done) as f64 / *done as f64;
                    s += &format!(", at least {} left", duration(left));
                }
                s
            }
        }
    }
}

/// A duration for people: "850 ms", "12 s", "3 min 20 s".
pub fn duration(ms: f64) -> String {
    match ms {
        ms if ms < 1000.0 => format!("{ms:.0} ms"),
        ms if ms < 60_000.0 => format!("{:.0} s", ms / 1000.0),
        ms => {
            let s = (ms / 1000.0).round() as u64;
            format!("{} min {} s", s / 60, s % 60)
        }
    }
}

/// A line for the status bar.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusLine {
    pub text: String,
    pub error: bool,
}

/// Autoplay speeds: milliseconds between steps, slowest first.
pub const AUTOPLAY_INTERVALS_MS: [u64; 6] = [2000, 1000, 500, 250, 100, 0];
/// Smallest terminal the full screen fits in.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 20;
/// Vocabulary search hits asked for.
pub const SEARCH_LIMIT: usize = 20;

/// How the app starts (from the command line and environment, read by `cmd/tui.rs`).
#[derive(Debug, Clone)]
pub struct AppConfig {
    pub prompt: String,
    pub chat: bool,
    pub theme: ThemeKind,
    pub settings: SamplerSettings,
    pub width: u16,
    pub height: u16,
}

/// The whole state of the TUI. Views read it; once built (`new` and the `with_` builders), only
/// `update` changes it.
#[derive(Debug, Clone)]
pub struct App {
    /// The loaded model, once the engine says so.
    pub model: Option<ModelInfo>,
    /// The session as the engine last described it, with each `Stepped` report folded in.
    pub session: Option<SessionView>,
    pub busy: Busy,
    pub mode: Mode,
    pub screen: Screen,
    pub focus: Focus,
    pub selection: Selection,
    pub input: TextInput,
    pub sampler: SamplerPanel,
    pub autoplay: Autoplay,
    pub prompt: PromptState,
    /// Paths compared, teacher forcing, loops (`lab.rs`).
    pub lab: lab::Lab,
    /// The last logit lens and head map, and how the map is shown (`inspect.rs`).
    pub inspect: inspect::Inspect,
    /// `--load` and the names `S` saves under (`sessions.rs`).
    pub session_files: sessions::SessionFiles,
    /// The lesson open on screen (`lesson.rs`).
    pub lesson: Option<lesson::LessonState>,
    /// Predict-then-reveal and its score (`predict.rs`).
    pub predict: predict::Predict,
    pub presenter: Presenter,
    /// Speculative rounds (`speculative.rs`).
    pub speculative: speculative::Speculative,
    /// Class mode: the students on their own devices (`class.rs`).
    pub class: Option<class::Class>,
    /// The user has been told the model ended its turn; the next step press goes past it.
    pub past_end_confirmed: bool,
    /// Step presses waiting for the step in flight (see `requests.rs`).
    pub queued_steps: usize,
    /// An action that would drop work, said once and waiting for the same key again to confirm.
    pub confirm: Option<Action>,
    pub status: Option<StatusLine>,
    pub now_ms: u64,
    pub quit: bool,
}

impl App {
    pub fn new(config: AppConfig) -> Self {
        Self {
            model: None,
            session: None,
            busy: Busy::Loading("starting the engine".into()),
            mode: Mode::Normal,
            screen: Screen {
                width: config.width,
                height: config.height,
                theme: config.theme,
                side: SidePanel::Attention,
                show_chain: false,
                last_choice: None,
                scroll_back: 0,
                help_scroll: 0,
                map: Default::default(),
            },
            focus: Focus {
                layer: 0,
                head: HeadSel::Mean,
                key_scroll: 0,
            },
            selection: Selection::default(),
            input: TextInput::default(),
            sampler: SamplerPanel {
                settings: config.settings,
                field: 0,
                dirty: false,
            },
            autoplay: Autoplay {
                on: false,
                speed: 2,
                last_ms: 0,
                paused_by_size: false,
            },
            prompt: PromptState {
                text: config.prompt,
                chat: config.chat,
            },
            lab: lab::Lab::default(),
            inspect: inspect::Inspect::default(),
            session_files: sessions::SessionFiles::default(),
            lesson: None,
            predict: predict::Predict::default(),
            presenter: Presenter::default(),
            speculative: Default::default(),
            class: None,
            past_end_confirmed: false,
            queued_steps: 0,
            confirm: None,
            status: None,
            now_ms: 0,
            quit: false,
        }
    }

    /// Whether the KV cache is on, as the engine last said (on until a session says otherwise).
    pub fn kv_cache_on(&self) -> bool {
        self.session
            .as_ref()
            .is_none_or(|s| s.last_pass.kv_cache_on)
    }

    pub fn is_busy(&self) -> bool {
        self.busy != Busy::Idle
    }

    pub fn too_small(&self) -> bool {
        self.screen.width < MIN_WIDTH || self.screen.height < MIN_HEIGHT
    }

    /// Wide layout: every panel at once.
    pub fn is_wide(&self) -> bool {
        self.screen.width >= 120 && self.screen.height >= 32
    }

    /// The candidates of the next-token distribution (empty before the first prefill).
    pub fn candidates(&self) -> &[Candidate] {
        self.session
            .as_ref()
            .map(|s| s.next.candidates.as_slice())
            .unwrap_or(&[])
    }

    /// Generated tokens so far on the current path: the step counter.
    pub fn step_count(&self) -> usize {
        self.session
            .as_ref()
            .map(|s| s.tokens.len().saturating_sub(s.prompt_len))
            .unwrap_or(0)
    }

    /// Forward passes run on the text since its prompt was read (the status bar's "passes").
    pub fn forward_passes(&self) -> u64 {
        self.session
            .as_ref()
            .map(|s| {
                s.last_pass
                    .forward_passes
                    .saturating_sub(s.passes_before_prompt)
            })
            .unwrap_or(0)
    }

    /// The newest generated token, if any.
    pub fn last_generated(&self) -> Option<&TokenRecord> {
        let s = self.session.as_ref()?;
        (s.tokens.len() > s.prompt_len).then(|| s.tokens.last())?
    }

    /// The end-of-sequence token the current path ends with, if the model has just ended its turn.
    pub fn ended_with(&self) -> Option<&str> {
        let last = self.last_generated()?;
        let eos = &self.model.as_ref()?.eos_ids;
        eos.contains(&last.token.id)
            .then_some(last.token.text.as_str())
    }

    /// Where the current path last forked from another branch (the position of the first token that
    /// differs), if it ever did, and there is something after it to rewind.
    pub fn last_fork(&self) -> Option<usize> {
        let s = self.session.as_ref()?;
        s.branches
            .iter()
            .filter(|b| !b.current && b.fork_position < s.tokens.len())
            .map(|b| b.fork_position.max(s.prompt_len))
            .max()
    }

    pub fn autoplay_interval_ms(&self) -> u64 {
        AUTOPLAY_INTERVALS_MS[self.autoplay.speed]
    }

    /// "2/s", "max" … for the status bar.
    pub fn autoplay_label(&self) -> String {
        match self.autoplay_interval_ms() {
            0 => "max".into(),
            ms if ms >= 1000 => format!("1 per {}s", ms / 1000),
            ms => format!("{}/s", 1000 / ms),
        }
    }

    /// Whether a model B is loaded beside the session's (the A/B panel has something to show).
    pub fn has_model_b(&self) -> bool {
        self.session.as_ref().is_some_and(|s| s.ab.is_some())
    }

    pub fn n_layer(&self) -> usize {
        self.session
            .as_ref()
            .map(|s| s.attention.n_layer)
            .or(self.model.as_ref().map(|m| m.n_layer))
            .unwrap_or(0)
    }

    pub fn n_head(&self) -> usize {
        self.session
            .as_ref()
            .map(|s| s.attention.n_head)
            .or(self.model.as_ref().map(|m| m.n_head))
            .unwrap_or(0)
    }
}

//! TUI state and its pure update: `App`, the `Msg`s it folds, and the one keymap table.
//!
//! # How a key press becomes a `Command` (the one-minute tour)
//!
//! 1. `tui.rs` reads a crossterm key event on the input thread and turns it into [`Msg::Key`]`(`[`Key`]`)`.
//! 2. [`App::update`] (in `update.rs`; engine replies are folded in `events.rs`) looks the key up in [`keymap::KEYMAP`] for the current [`Mode`]
//!    (global bindings such as Ctrl-C first), which gives an [`Action`].
//! 3. `update.rs` applies the action: it changes state and returns the `Command`s to send, e.g.
//!    `Action::Pick(2)` → `Command::Force { token_id }` of the second candidate.
//! 4. `tui.rs` sends those commands to the engine thread; its replies come back as [`Msg::Engine`] and are
//!    folded into the same state. Views in `ui/` then draw a pure read of `&App`.
//!
//! `update` performs no I/O and reads no clock: time arrives inside [`Msg::Tick`]. The help screen is
//! generated from the same keymap table, so it cannot drift from what the keys do.

mod events;
pub mod keymap;
pub mod layout;
pub mod sampler_panel;
mod update;

pub use keymap::{Action, Key, Mode};

use crate::protocol::{
    Candidate, Event, ModelInfo, SamplerSettings, SessionView, StepReport, TokenRecord,
};

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
}

/// What the engine is doing, for the spinner.
#[derive(Debug, Clone, PartialEq)]
pub enum Busy {
    Idle,
    /// Loading the model, with the engine's last progress line.
    Loading(String),
    /// A command is in flight; the label says which ("prefilling", "stepping", ...).
    Working(&'static str),
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

/// How the app starts (from the command line and environment, read by `tui.rs`).
#[derive(Debug, Clone)]
pub struct AppConfig {
    pub prompt: String,
    pub chat: bool,
    pub theme: ThemeKind,
    pub settings: SamplerSettings,
    pub kv_cache: bool,
    pub width: u16,
    pub height: u16,
}

/// The whole state of the TUI. Views read it; only `update` changes it.
#[derive(Debug, Clone)]
pub struct App {
    pub model: Option<ModelInfo>,
    /// The session as the engine last described it, with each `Stepped` report folded in.
    pub session: Option<SessionView>,
    /// The latest step, for the distribution the last token was chosen from.
    pub last_step: Option<StepReport>,
    pub mode: Mode,
    /// Index into the current candidates of the highlighted row.
    pub selected: usize,
    pub layer: usize,
    pub head: HeadSel,
    pub side: SidePanel,
    /// Show the sampler chain stage by stage instead of bars.
    pub show_chain: bool,
    /// Text being typed in a text-input mode.
    pub input: String,
    pub search_hits: Vec<Candidate>,
    pub search_selected: usize,
    /// Sampler settings as the user set them (sent to the engine on every change).
    pub settings: SamplerSettings,
    pub sampler_field: usize,
    /// A settings change waits here while a command is in flight; it is sent when the reply comes.
    pub settings_dirty: bool,
    pub branch_selected: usize,
    pub autoplay: bool,
    /// Index into [`AUTOPLAY_INTERVALS_MS`].
    pub speed: usize,
    pub last_auto_ms: u64,
    pub busy: Busy,
    pub status: Option<StatusLine>,
    pub theme: ThemeKind,
    pub prompt: String,
    pub chat: bool,
    pub kv_cache: bool,
    pub width: u16,
    pub height: u16,
    pub now_ms: u64,
    pub quit: bool,
}

impl App {
    pub fn new(config: AppConfig) -> Self {
        Self {
            model: None,
            session: None,
            last_step: None,
            mode: Mode::Normal,
            selected: 0,
            layer: 0,
            head: HeadSel::Mean,
            side: SidePanel::Attention,
            show_chain: false,
            input: String::new(),
            search_hits: Vec::new(),
            search_selected: 0,
            settings: config.settings,
            sampler_field: 0,
            settings_dirty: false,
            branch_selected: 0,
            autoplay: false,
            speed: 2,
            last_auto_ms: 0,
            busy: Busy::Loading("starting the engine".into()),
            status: None,
            theme: config.theme,
            prompt: config.prompt,
            chat: config.chat,
            kv_cache: config.kv_cache,
            width: config.width,
            height: config.height,
            now_ms: 0,
            quit: false,
        }
    }

    pub fn is_busy(&self) -> bool {
        self.busy != Busy::Idle
    }

    pub fn too_small(&self) -> bool {
        self.width < MIN_WIDTH || self.height < MIN_HEIGHT
    }

    /// Wide layout: every panel at once.
    pub fn is_wide(&self) -> bool {
        self.width >= 120 && self.height >= 32
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

    pub fn forward_passes(&self) -> u64 {
        self.session
            .as_ref()
            .map(|s| s.last_pass.forward_passes)
            .unwrap_or(0)
    }

    /// The newest generated token, if any.
    pub fn last_generated(&self) -> Option<&TokenRecord> {
        let s = self.session.as_ref()?;
        (s.tokens.len() > s.prompt_len).then(|| s.tokens.last())?
    }

    pub fn autoplay_interval_ms(&self) -> u64 {
        AUTOPLAY_INTERVALS_MS[self.speed]
    }

    /// "2/s", "max" … for the status bar.
    pub fn autoplay_label(&self) -> String {
        match self.autoplay_interval_ms() {
            0 => "max".into(),
            ms if ms >= 1000 => format!("1 per {}s", ms / 1000),
            ms => format!("{}/s", 1000 / ms),
        }
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

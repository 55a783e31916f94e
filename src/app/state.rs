//! The parts of `App`, grouped by what they serve: the screen's layout, the attention focus, text input,
//! the sampler panel, autoplay, the prompt, and the highlighted rows.

use super::editor::Editor;
use super::{HeadSel, SidePanel, ThemeKind};
use crate::protocol::{Candidate, SamplerSettings};

/// How the screen is laid out.
#[derive(Debug, Clone, PartialEq)]
pub struct Screen {
    pub width: u16,
    pub height: u16,
    pub theme: ThemeKind,
    /// The right-hand panel on a small screen.
    pub side: SidePanel,
    /// Show the sampler chain stage by stage instead of bars.
    pub show_chain: bool,
    /// The chain or bars show the decision that chose the token at this position (a lesson's
    /// `at = "last"`: the draw its narration is about) while it is still the last token; a step moves
    /// the panel back to the next token by itself.
    pub last_choice: Option<usize>,
    /// Transcript lines scrolled back from the newest (0: follow the newest; the view clamps it).
    pub scroll_back: usize,
    /// Lines of the help screen scrolled past.
    pub help_scroll: usize,
    /// What the last frame drew, as the views measured it (`Msg::Measured`).
    pub map: super::ScreenMap,
}

/// Which attention the matrix draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Focus {
    pub layer: usize,
    pub head: HeadSel,
    /// Key columns scrolled back from the newest (0: the newest keys; the view clamps it to the window).
    pub key_scroll: usize,
}

/// Text being typed in a text-input mode, and the vocabulary search's hits.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TextInput {
    /// The text and its cursor.
    pub editor: Editor,
    /// Hits in the order the vocabulary search found them (best match first).
    pub hits: Vec<Candidate>,
    /// List the hits by probability, highest first, rather than by match.
    pub by_prob: bool,
    /// Index into [`TextInput::shown_hits`] of the highlighted hit.
    pub selected: usize,
    /// The user moved the highlight onto a hit (↑/↓) since the text last changed: Enter on a guess
    /// then takes that hit rather than the typed text.
    pub picked: bool,
    /// How the text typed after `i` will tokenise (empty until the engine says).
    pub preview: Vec<crate::protocol::TokenView>,
}

impl TextInput {
    pub fn text(&self) -> &str {
        self.editor.text()
    }

    /// The hits in the order the list shows them: by match, or by probability (ties keep match order).
    pub fn shown_hits(&self) -> Vec<&Candidate> {
        self.hits_in_order(self.by_prob)
    }

    /// The hits by match, or by probability (ties keep match order).
    pub fn hits_in_order(&self, by_prob: bool) -> Vec<&Candidate> {
        let mut hits: Vec<&Candidate> = self.hits.iter().collect();
        if by_prob {
            hits.sort_by(|a, b| b.prob.total_cmp(&a.prob));
        }
        hits
    }

    /// The highlighted hit, as the list shows it.
    pub fn selected_hit(&self) -> Option<&Candidate> {
        self.shown_hits().get(self.selected).copied()
    }
}

/// The sampler panel: the settings as the user set them (sent to the engine on every change).
#[derive(Debug, Clone, PartialEq)]
pub struct SamplerPanel {
    pub settings: SamplerSettings,
    /// Index into `sampler_panel::FIELDS` of the highlighted setting.
    pub field: usize,
    /// A change waits here while a command is in flight; it is sent when the reply comes.
    pub dirty: bool,
}

/// Stepping by itself on the clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Autoplay {
    pub on: bool,
    /// Index into [`super::AUTOPLAY_INTERVALS_MS`].
    pub speed: usize,
    /// When the last autoplay step was asked for (ms, the clock of `Msg::Tick`).
    pub last_ms: u64,
    /// Autoplay was on when the terminal became too small to draw: it stopped then, and says so once
    /// the terminal is big enough again.
    pub paused_by_size: bool,
}

/// The prompt the session was (or will be) read from.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptState {
    pub text: String,
    /// Wrapped in the model's chat template.
    pub chat: bool,
}

/// Highlighted rows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selection {
    /// Index into the current candidates.
    pub candidate: usize,
    /// Index into the branch list.
    pub branch: usize,
}

/// Presenter mode: large type and fewer panels, for a projector (`--presenter`, `z`, or a lesson's
/// setting).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Presenter {
    pub on: bool,
    /// The panel beside the transcript: `None` shows the token just chosen in large type; `Tab` and a
    /// lesson's `panel` action choose another.
    pub side: Option<SidePanel>,
}

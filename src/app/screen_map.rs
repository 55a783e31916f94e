//! The screen map: what the last frame drew, as the views measured it. The terminal loop hands it to
//! `update` after every message but the clock's tick (`Msg::Measured`), so a click, a page or a scroll
//! key acts on the screen the user sees, and `app` never calls into `ui` to ask (the layout and the
//! text wrapping are the view's). Before the first measure everything is empty: a click hits nothing and nothing scrolls.

use ratatui::layout::Rect;

/// The screen, cut into panels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Areas {
    pub transcript: Rect,
    pub distribution: Rect,
    /// `None` when the small layout shows timing in its place.
    pub attention: Option<Rect>,
    /// `None` when the small layout shows attention in its place.
    pub timing: Option<Rect>,
    /// The repetition panel, when `Tab` chose it: in the attention panel's place.
    pub repetition: Option<Rect>,
    /// The A/B panel (model B beside model A), when `Tab` chose it: in the attention panel's place.
    pub model_b: Option<Rect>,
    /// The speculative round panel, when `Tab` or `d` chose it (a draft is loaded): in the attention
    /// panel's place, or across the lower screen when it is small.
    pub round: Option<Rect>,
    /// The class panel (class mode), when `Tab` chose it: where the round panel would go.
    pub class: Option<Rect>,
    /// Two lines at the bottom: status and key hints (or the text being typed).
    pub status: Rect,
    /// Where panels that open over the screen go (branches, search hits; the sampler settings too,
    /// unless `sampler` says otherwise).
    pub overlay: Rect,
    /// Where the sampler settings open: over the overlay's place, except beside the repetition panel,
    /// which they never cover, so a loop can be watched while the penalties are tuned.
    pub sampler: Rect,
    /// A lesson's narration, across the top, when a lesson is open.
    pub narration: Option<Rect>,
    /// Presenter mode: the token just chosen in large type, beside the transcript.
    pub big_token: Option<Rect>,
}

/// A token of the transcript where it was drawn: one line, `x..x + width`, at `position` in the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenSpot {
    pub x: u16,
    pub y: u16,
    pub width: u16,
    pub position: usize,
}

/// What the views measured on the last frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScreenMap {
    pub areas: Areas,
    /// The rows of the candidate list: candidate `i` is drawn on row `y + i`.
    pub candidate_rows: Rect,
    /// Every transcript token on screen (pieces of a token wrapped over two lines are two spots).
    pub tokens: Vec<TokenSpot>,
    /// The transcript's lines past one screenful: how far back it can scroll.
    pub transcript_max_scroll: usize,
    /// How far the lens can scroll up (0 unless the lens is open).
    pub lens_max_scroll: usize,
    /// How far the help can scroll (0 unless the help is open).
    pub help_max_scroll: usize,
    /// How far the attention panel's key columns can scroll back (0 when it is not on screen).
    pub attention_max_key_scroll: usize,
}

impl ScreenMap {
    /// The candidate under a click, if any, of `n` candidates.
    pub fn candidate_at(&self, column: u16, row: u16, n: usize) -> Option<usize> {
        let rows = self.candidate_rows;
        let inside = column >= rows.x
            && column < rows.x + rows.width
            && row >= rows.y
            && row < rows.y + rows.height;
        let i = (row.wrapping_sub(rows.y)) as usize;
        (inside && i < n).then_some(i)
    }

    /// The position of the transcript token under a click, if any.
    pub fn token_at(&self, column: u16, row: u16) -> Option<usize> {
        self.tokens
            .iter()
            .find(|s| s.y == row && column >= s.x && column < s.x + s.width)
            .map(|s| s.position)
    }
}

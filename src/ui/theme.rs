//! Styles for each theme (default, projector, NO_COLOR): views ask here instead of naming colours.

use crate::app::ThemeKind;
use ratatui::style::{Color, Modifier, Style};

/// The styles the views use, resolved for one theme.
#[derive(Debug, Clone, Copy)]
pub struct Theme {
    pub kind: ThemeKind,
    pub text: Style,
    pub dim: Style,
    pub border: Style,
    pub title: Style,
    pub key: Style,
    pub selected: Style,
    pub planned: Style,
    pub bar: Style,
    /// Behind a bar: the model's raw probability where the sampler's is shorter.
    pub ghost: Style,
    pub forced: Style,
    pub special: Style,
    pub bytes: Style,
    pub prompt: Style,
    pub cursor: Style,
    pub blocked: Style,
    pub newest: Style,
    pub error: Style,
    pub info: Style,
    pub warn_badge: Style,
    pub ok_badge: Style,
}

/// Heat-map steps on `sqrt(weight)`: below the first a cell is blank, then ░ ▒ ▓ █. The square root
/// spreads the small weights that dominate long rows over the visible shades.
const HEAT_STEPS: [f32; 4] = [0.08, 0.3, 0.5, 0.7];
/// The weight under which a shaded cell stays blank (the first step, squared): the legend says so.
pub const HEAT_BLANK: f32 = HEAT_STEPS[0] * HEAT_STEPS[0];

pub use crate::fmt::PROB_STEPS;
/// Without colour, tokens less likely than this are in italics.
pub const PROB_ITALIC: f32 = 0.05;

const fn s() -> Style {
    Style::new()
}

impl Theme {
    /// The styles for one theme kind.
    pub fn new(kind: ThemeKind) -> Theme {
        match kind {
            ThemeKind::Default => Theme::default_colours(),
            ThemeKind::Projector => Theme::projector(),
            ThemeKind::NoColor => Theme::no_color(),
        }
    }

    /// The default theme's styles: colours for a dark terminal.
    fn default_colours() -> Theme {
        let bold = Modifier::BOLD;
        Theme {
            kind: ThemeKind::Default,
            text: s(),
            dim: s().fg(Color::DarkGray),
            border: s().fg(Color::DarkGray),
            title: s().fg(Color::Cyan).add_modifier(bold),
            key: s().fg(Color::Yellow).add_modifier(bold),
            selected: s().bg(Color::Indexed(236)).add_modifier(bold),
            planned: s().fg(Color::Green).add_modifier(bold),
            bar: s().fg(Color::Cyan),
            ghost: s().fg(Color::DarkGray),
            forced: s()
                .fg(Color::Magenta)
                .add_modifier(bold | Modifier::UNDERLINED),
            special: s().fg(Color::Blue).add_modifier(Modifier::ITALIC),
            bytes: s().fg(Color::Yellow).add_modifier(Modifier::ITALIC),
            prompt: s().fg(Color::Gray),
            cursor: s().add_modifier(Modifier::REVERSED),
            blocked: s().fg(Color::Indexed(238)),
            newest: s().fg(Color::Yellow).add_modifier(bold),
            error: s().fg(Color::Red).add_modifier(bold),
            info: s().fg(Color::Green),
            warn_badge: s().fg(Color::White).bg(Color::Red).add_modifier(bold),
            ok_badge: s().fg(Color::Black).bg(Color::Green),
        }
    }

    /// The projector theme's styles: light colours and bold type, to read from the back of a room.
    fn projector() -> Theme {
        let bold = Modifier::BOLD;
        Theme {
            kind: ThemeKind::Projector,
            text: s().fg(Color::White).add_modifier(bold),
            dim: s().fg(Color::Gray),
            border: s().fg(Color::White),
            title: s().fg(Color::LightCyan).add_modifier(bold),
            key: s().fg(Color::LightYellow).add_modifier(bold),
            selected: s().fg(Color::Black).bg(Color::LightCyan).add_modifier(bold),
            planned: s().fg(Color::LightGreen).add_modifier(bold),
            bar: s().fg(Color::LightCyan),
            ghost: s().fg(Color::Gray),
            forced: s()
                .fg(Color::LightMagenta)
                .add_modifier(bold | Modifier::UNDERLINED),
            special: s().fg(Color::LightBlue).add_modifier(bold),
            bytes: s().fg(Color::LightYellow).add_modifier(bold),
            prompt: s().fg(Color::White).add_modifier(bold),
            cursor: s().add_modifier(Modifier::REVERSED | bold),
            blocked: s().fg(Color::Gray),
            newest: s().fg(Color::LightYellow).add_modifier(bold),
            error: s().fg(Color::White).bg(Color::Red).add_modifier(bold),
            info: s().fg(Color::LightGreen).add_modifier(bold),
            warn_badge: s().fg(Color::White).bg(Color::Red).add_modifier(bold),
            ok_badge: s()
                .fg(Color::Black)
                .bg(Color::LightGreen)
                .add_modifier(bold),
        }
    }

    /// The styles without colour (NO_COLOR): bold, dim, italic and reversed type only.
    fn no_color() -> Theme {
        let bold = Modifier::BOLD;
        Theme {
            kind: ThemeKind::NoColor,
            text: s(),
            dim: s().add_modifier(Modifier::DIM),
            border: s(),
            title: s().add_modifier(bold),
            key: s().add_modifier(bold),
            selected: s().add_modifier(Modifier::REVERSED),
            planned: s().add_modifier(bold),
            bar: s(),
            ghost: s().add_modifier(Modifier::DIM),
            forced: s().add_modifier(bold | Modifier::UNDERLINED),
            special: s().add_modifier(Modifier::ITALIC),
            bytes: s().add_modifier(Modifier::ITALIC),
            prompt: s(),
            cursor: s().add_modifier(Modifier::REVERSED),
            blocked: s().add_modifier(Modifier::DIM),
            newest: s().add_modifier(bold),
            error: s().add_modifier(bold | Modifier::REVERSED),
            info: s(),
            warn_badge: s().add_modifier(bold | Modifier::REVERSED),
            ok_badge: s(),
        }
    }

    pub fn has_color(&self) -> bool {
        self.kind != ThemeKind::NoColor
    }

    /// Colour of a token by the probability it had when chosen: sure is green, surprising is red.
    /// Without colour, a token under [`PROB_ITALIC`] is in italics.
    pub fn prob(&self, p: f32) -> Style {
        if !self.has_color() {
            return if p < PROB_ITALIC {
                s().add_modifier(Modifier::ITALIC)
            } else {
                s()
            };
        }
        let colors = [
            Color::Green,
            Color::LightGreen,
            Color::Yellow,
            Color::LightRed,
        ];
        let c = PROB_STEPS
            .iter()
            .zip(colors)
            .find(|&(&step, _)| p >= step)
            .map_or(Color::Red, |(_, c)| c);
        let style = s().fg(c);
        if self.kind == ThemeKind::Projector {
            style.add_modifier(Modifier::BOLD)
        } else {
            style
        }
    }

    /// Background of token `i` in the transcript, alternating so that token boundaries show.
    pub fn token_bg(&self, i: usize) -> Style {
        match (self.kind, i % 2) {
            (ThemeKind::NoColor, _) => s(),
            (_, 0) => s().bg(Color::Indexed(235)),
            _ => s().bg(Color::Indexed(238)),
        }
    }

    /// A heat-map cell for attention weight `w` in 0..=1: a shade character pair and its style.
    pub fn heat(&self, w: f32) -> (&'static str, Style) {
        let x = w.clamp(0.0, 1.0).sqrt();
        let [blank, light, medium, dark] = HEAT_STEPS;
        let glyph = match x {
            x if x < blank => "  ",
            x if x < light => "░░",
            x if x < medium => "▒▒",
            x if x < dark => "▓▓",
            _ => "██",
        };
        if !self.has_color() {
            return (glyph, s());
        }
        // 232..=255 is the grey ramp; warm it towards yellow for the strong weights.
        let color = match x {
            x if x < light => Color::Indexed(24),
            x if x < medium => Color::Indexed(31),
            x if x < dark => Color::Indexed(179),
            _ => Color::Indexed(226),
        };
        (glyph, s().fg(color))
    }

    /// A matrix cell that prints its weight: the heat is the background, the number stays readable.
    pub fn heat_cell(&self, w: f32) -> Style {
        let x = w.clamp(0.0, 1.0).sqrt();
        if !self.has_color() {
            return if x >= HEAT_STEPS[2] {
                s().add_modifier(Modifier::REVERSED)
            } else {
                s()
            };
        }
        let [blank, light, medium, dark] = HEAT_STEPS;
        let (bg, fg) = match x {
            x if x < blank => (Color::Reset, Color::DarkGray),
            x if x < light => (Color::Indexed(17), Color::Gray),
            x if x < medium => (Color::Indexed(24), Color::White),
            x if x < dark => (Color::Indexed(136), Color::Black),
            _ => (Color::Indexed(220), Color::Black),
        };
        let style = s().bg(bg).fg(fg);
        if self.kind == ThemeKind::Projector {
            style.add_modifier(Modifier::BOLD)
        } else {
            style
        }
    }
}

//! Views: pure reads of `&App` that draw one frame with ratatui. Split by panel; none changes state.

pub mod attention;
pub mod attention_grid;
pub mod branches;
pub mod chain;
pub mod class;
pub mod compare;
mod compare_chart;
mod compare_summary;
pub mod distribution;
pub mod head_map;
pub mod help;
pub mod layout;
pub mod legend;
pub mod lens;
pub mod light;
mod markdown;
pub mod model_b;
pub mod model_b_label;
pub mod model_top;
pub mod narration;
mod narration_fit;
pub mod overlays;
mod pick_line;
pub mod predict;
pub mod presenter;
pub mod repetition;
pub mod round;
pub mod served;
pub mod status;
pub mod theme;
pub mod timing;
mod timing_chart;
pub mod transcript;

use crate::app::keymap::{self, Action};
use crate::app::{App, Mode, ScreenMap, MIN_HEIGHT, MIN_WIDTH};
use layout::centered;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Wrap};
use ratatui::Frame;
use theme::Theme;

/// A panel's draw function.
type Panel = fn(&mut Frame, Rect, &App, &Theme);

/// Draws the whole screen for the current state.
pub fn draw(frame: &mut Frame, app: &App) {
    let theme = Theme::new(app.screen.theme);
    let screen = frame.area();
    if app.too_small() || screen.width < MIN_WIDTH || screen.height < MIN_HEIGHT {
        too_small(frame, screen, &theme);
        return;
    }
    // The layout follows the app's idea of the size; clip in case the terminal disagrees for a frame.
    let clip = |r: Rect| r.intersection(screen);
    let areas = layout::areas(app);
    transcript::draw(frame, clip(areas.transcript), app, &theme);
    distribution::draw(frame, clip(areas.distribution), app, &theme);
    // While a lesson's question waits, the figures that could answer it wait too: the attention
    // panel as well, where the head a step before showed "looks most at ' moon' 90%" beside a
    // question on another head, whose answer was another word.
    let asking = app.lesson.as_ref().is_some_and(|l| l.waiting().is_some());
    for (area, panel) in [
        (areas.attention, attention::draw as Panel),
        (areas.timing, timing::draw),
        (areas.repetition, repetition::draw),
        (areas.model_b, model_b::draw),
        (areas.round, round::draw),
        (areas.class, class::draw),
    ] {
        match area {
            Some(a) if asking => narration::hidden_for_question(frame, clip(a), &theme),
            Some(a) => panel(frame, clip(a), app, &theme),
            None => {}
        }
    }
    if let Some(n) = areas.narration {
        narration::draw(frame, clip(n), app, &theme);
    }
    if let Some(b) = areas.big_token {
        presenter::draw(frame, clip(b), app, &theme);
    }
    status::draw(frame, clip(areas.status), app, &theme);
    let overlay = clip(areas.overlay);
    // Help and the prompt editor go over everything but the status lines, which say how to close them.
    let above_status = Rect {
        height: areas.status.y.saturating_sub(screen.y),
        ..screen
    };
    // A lesson's narration stays on screen above the views that open over the panels.
    let below_narration = match areas.narration {
        Some(n) => Rect {
            y: n.y + n.height,
            height: above_status.height.saturating_sub(n.height),
            ..above_status
        },
        None => above_status,
    };
    match app.mode {
        Mode::Help => help::draw(frame, clip(above_status), app.screen.help_scroll, &theme),
        Mode::Prompt => overlays::prompt(frame, clip(above_status), app, &theme),
        Mode::Sampler => overlays::sampler(frame, clip(areas.sampler), app, &theme),
        Mode::Branches => branches::draw(frame, overlay, app, &theme),
        Mode::Search => overlays::search(frame, overlay, app, &theme),
        Mode::Compare => compare::draw(frame, clip(below_narration), app, &theme),
        Mode::Lens => lens::draw(frame, clip(below_narration), app, &theme),
        Mode::HeadMap => head_map::draw(frame, clip(below_narration), app, &theme),
        Mode::Normal | Mode::ForceText | Mode::Reference | Mode::Answer => {}
    }
    if app.class.as_ref().is_some_and(|c| c.show_card) && app.mode == Mode::Normal {
        class::card(frame, clip(above_status), app, &theme);
    }
}

/// What `draw` would draw for this state, measured for `update` ([`ScreenMap`]): where each panel and
/// each transcript token sits, and how far each scrolling view can scroll. The terminal loop sends it
/// as `Msg::Measured` after every message but the clock's tick.
pub fn measure(app: &App) -> ScreenMap {
    let theme = Theme::new(app.screen.theme);
    let areas = layout::areas(app);
    let (tokens, transcript_max_scroll) = transcript::measure(app, &theme, areas.transcript);
    // The help draws above the two status lines.
    let above_status = Rect::new(0, 0, app.screen.width, areas.status.y);
    ScreenMap {
        areas,
        candidate_rows: layout::candidate_rows(areas.distribution, app.screen.show_chain),
        tokens,
        transcript_max_scroll,
        // Only an open view can scroll: the help's lines are built only while it is open.
        lens_max_scroll: if app.mode == Mode::Lens {
            lens::max_scroll(app)
        } else {
            0
        },
        help_max_scroll: match app.mode {
            Mode::Help => help::max_scroll(above_status, &theme),
            _ => 0,
        },
        attention_max_key_scroll: attention::max_key_scroll(app),
    }
}

/// A clear message instead of a garbled screen.
fn too_small(frame: &mut Frame, screen: Rect, theme: &Theme) {
    let text = vec![
        Line::styled("Terminal too small", theme.title),
        Line::styled(
            format!("now {}x{}", screen.width, screen.height),
            theme.text,
        ),
        Line::styled(format!("needs {MIN_WIDTH}x{MIN_HEIGHT}"), theme.key),
        Line::styled(
            format!(
                "resize, or {} to quit",
                keymap::hint_key(Mode::Normal, Action::Quit)
            ),
            theme.dim,
        ),
    ];
    let area = centered(screen, 24.min(screen.width), 6.min(screen.height));
    let p = Paragraph::new(text)
        .centered()
        .wrap(Wrap { trim: true })
        .block(Block::bordered().border_style(theme.border));
    frame.render_widget(p, area);
}

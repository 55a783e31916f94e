//! Where each panel sits on screen: pure geometry from the app's state. The views draw into these areas,
//! and `measure` reports them to `update` in the screen map (`app::ScreenMap`), so a click is tested
//! against the very areas that were drawn.

use crate::app::{App, Areas, SidePanel};
use ratatui::layout::{Constraint, Layout, Rect};

/// Rows under the candidate list inside the distribution panel (entropy line, sampler line).
pub const DIST_FOOTER: u16 = 2;
/// Header rows above the candidates in the sampler-chain view (stage names, kept counts).
pub const CHAIN_HEADER: u16 = 2;

/// The screen of `app`, cut into panels.
pub fn areas(app: &App) -> Areas {
    let screen = Rect::new(0, 0, app.screen.width, app.screen.height);
    let status_h = 1 + super::status::error_rows(app, app.screen.width);
    let [body, status] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(status_h)]).areas(screen);
    let (narration, body) = narration_split(app, body);
    let areas = if app.presenter.on {
        presenter(app, body, status)
    } else {
        panels(app, body, status)
    };
    Areas { narration, ..areas }
}

/// The narration panel across the top of the body (as tall as its text, at most two fifths of the
/// body; while a question waits, up to half where two fifths would cut it, as the panel below then
/// shows only the question card: at 80x24 a question with three choices had left the narration one
/// line, and the scale it asked about was cut), and what is left below it.
fn narration_split(app: &App, body: Rect) -> (Option<Rect>, Rect) {
    let Some(lesson) = app.lesson.as_ref() else {
        return (None, body);
    };
    let most = (body.height * 2 / 5).max(4);
    let (mut h, cut) = super::narration::height(app, body.width, most);
    if cut && lesson.waiting().is_some() {
        h = super::narration::height(app, body.width, (body.height / 2).max(most)).0;
    }
    let [top, rest] =
        Layout::vertical([Constraint::Length(h.max(4)), Constraint::Fill(1)]).areas(body);
    (Some(top), rest)
}

/// Presenter mode: the transcript beside the token just chosen in large type (or the panel a lesson
/// or `Tab` chose), over a full-width distribution with wide bars.
fn presenter(app: &App, body: Rect, status: Rect) -> Areas {
    let [middle, distribution] =
        Layout::vertical([Constraint::Percentage(45), Constraint::Fill(1)]).areas(body);
    let [transcript, side] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Fill(1)]).areas(middle);
    let pick = |p: SidePanel| (app.presenter.side == Some(p)).then_some(side);
    Areas {
        transcript,
        distribution,
        attention: pick(SidePanel::Attention),
        timing: pick(SidePanel::Timing),
        repetition: pick(SidePanel::Repetition),
        model_b: pick(SidePanel::ModelB),
        round: pick(SidePanel::Round),
        class: pick(SidePanel::Class),
        status,
        overlay: distribution,
        // Over the side, not the bars: a class watches the distribution change as a setting does.
        sampler: side,
        narration: None,
        big_token: app.presenter.side.is_none().then_some(side),
    }
}

/// The transcript's share of a narrow screen: 30%; under a lesson on a small screen, as much as its
/// text needs up to 40%. The narration takes the top rows there, and 30% showed two lines of text: the
/// words a step's narration names (the dice lesson's " unicorn.") had scrolled away. A short text
/// leaves the rows to the panel below (the chain's candidates).
fn transcript_rows(app: &App, body: Rect) -> Constraint {
    let most = (body.height * 2).div_ceil(5);
    if app.lesson.is_none() || body.height >= 16 {
        return Constraint::Percentage(30);
    }
    let wanted = super::transcript::height(app, body.width);
    if wanted <= body.height * 3 / 10 {
        Constraint::Percentage(30)
    } else {
        Constraint::Length(wanted.min(most))
    }
}

/// The usual screen: every panel at once when wide, else the distribution beside one chosen panel.
fn panels(app: &App, body: Rect, status: Rect) -> Areas {
    if app.is_wide() {
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(58), Constraint::Fill(1)]).areas(body);
        let [transcript, attention] =
            Layout::vertical([Constraint::Percentage(35), Constraint::Fill(1)]).areas(left);
        let [distribution, timing] =
            Layout::vertical([Constraint::Fill(1), Constraint::Length(18)]).areas(right);
        let loops = app.screen.side == SidePanel::Repetition;
        let b = app.screen.side == SidePanel::ModelB && app.has_model_b();
        let round = app.screen.side == SidePanel::Round && app.draft().is_some();
        let class = app.screen.side == SidePanel::Class && app.class.is_some();
        Areas {
            transcript,
            distribution,
            attention: (!loops && !b && !round && !class).then_some(attention),
            timing: Some(timing),
            repetition: loops.then_some(attention),
            model_b: b.then_some(attention),
            round: round.then_some(attention),
            class: class.then_some(attention),
            status,
            overlay: attention,
            // Over the timing panel, which says nothing about sampling, when the loop is on screen.
            sampler: if loops { timing } else { attention },
            narration: None,
            big_token: None,
        }
    } else {
        let [transcript, lower] =
            Layout::vertical([transcript_rows(app, body), Constraint::Fill(1)]).areas(body);
        let [distribution, side] =
            Layout::horizontal([Constraint::Percentage(55), Constraint::Fill(1)]).areas(lower);
        // The sampler chain needs a column per stage: it takes the whole width, but for the sampler
        // panel's side while that is open (the chain then leaves stages out whole).
        let chain_wide = app.screen.show_chain && app.mode != crate::app::keymap::Mode::Sampler;
        let round = app.screen.side == SidePanel::Round && app.draft().is_some();
        let class = app.screen.side == SidePanel::Class && app.class.is_some();
        let (distribution, attention, timing, repetition, model_b) = match app.screen.side {
            _ if chain_wide => (lower, None, None, None, None),
            _ if app.screen.show_chain => (distribution, None, None, None, None),
            SidePanel::Round if round => (distribution, None, None, None, None),
            SidePanel::Class if class => (distribution, None, None, None, None),
            SidePanel::Timing => (distribution, None, Some(side), None, None),
            SidePanel::Repetition => (distribution, None, None, Some(side), None),
            SidePanel::ModelB if app.has_model_b() => (distribution, None, None, None, Some(side)),
            SidePanel::Attention | SidePanel::ModelB | SidePanel::Round | SidePanel::Class => {
                (distribution, Some(side), None, None, None)
            }
        };
        // Beside the repetition panel, over the bars: the panel still shows what the sampler makes
        // of the token that would go on with the loop.
        let sampler = match repetition {
            Some(_) => distribution,
            None => side,
        };
        Areas {
            transcript,
            distribution,
            attention,
            timing,
            repetition,
            model_b,
            round: (round && !app.screen.show_chain).then_some(side),
            class: (class && !app.screen.show_chain).then_some(side),
            status,
            overlay: side,
            sampler,
            narration: None,
            big_token: None,
        }
    }
}

/// The rows of the candidate list inside the distribution panel: candidate `i` is drawn on row `y + i`.
pub fn candidate_rows(distribution: Rect, show_chain: bool) -> Rect {
    let inner = inset(distribution);
    let header = if show_chain { CHAIN_HEADER } else { 0 };
    Rect {
        y: inner.y + header,
        height: inner.height.saturating_sub(header + DIST_FOOTER),
        ..inner
    }
}

/// The inside of a bordered block.
pub fn inset(r: Rect) -> Rect {
    Rect {
        x: r.x + 1,
        y: r.y + 1,
        width: r.width.saturating_sub(2),
        height: r.height.saturating_sub(2),
    }
}

/// A `width` × `height` rectangle centred in `area` (clipped to it).
pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

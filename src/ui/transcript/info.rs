//! The transcript's last row: the newest token's probability, rank and surprise, or what to press.

use crate::app::keymap::{hint_key, Action, Mode};
use crate::app::App;
use crate::fmt::{quoted_token, FORCED_MARK};
use crate::protocol::Source;
use crate::ui::theme::Theme;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

/// How surprised the model was by the newest generated token; before the first, what to press for it
/// (while a guess is awaited, or the next lesson step asks for the token, the step is refused, so
/// the line says to guess, ask or reveal instead). In
/// `width` columns: a figure that does not fit is left out whole, never cut (at 80x24 in presenter
/// mode "−log p 1.04" had read "−log p 1"), and a hint takes a shorter form.
pub(super) fn info_line(app: &App, theme: &Theme, width: usize) -> Line<'static> {
    let Some(t) = app.last_generated() else {
        let (answer, reveal) = (
            hint_key(Mode::Normal, Action::OpenSearch),
            hint_key(Mode::Normal, Action::ToggleHidden),
        );
        let forms = if app.awaiting_guess() && app.question_is_token() {
            vec![
                format!("what comes first? {answer} to guess, or {reveal} reveals it"),
                format!("what comes first? {answer} guess · {reveal} reveal"),
                format!("{answer} guess · {reveal} reveal"),
            ]
        } else if app.awaiting_guess() {
            vec![
                format!("the question first: {answer} to answer, or {reveal} reveals the answer"),
                format!("the question first: {answer} answer · {reveal} reveal"),
                format!("{answer} answer · {reveal} reveal"),
            ]
        } else if app.held_for_next_step() {
            let next = hint_key(Mode::Normal, Action::NextLessonStep);
            vec![
                format!(
                    "the next step asks for this token: {next} asks it, or {reveal} reveals it"
                ),
                format!("{next} asks for this token · {reveal} reveals it"),
                format!("{next} ask · {reveal} reveal"),
            ]
        } else {
            let step = hint_key(Mode::Normal, Action::Step);
            vec![
                format!("press {step} to generate the first token"),
                format!("{step}: the first token"),
            ]
        };
        return Line::styled(crate::fmt::first_fitting(&forms, width), theme.dim);
    };
    let (label, style) = match t.source {
        Source::Forced => (format!("{FORCED_MARK} forced"), theme.forced),
        Source::Class => (format!("{FORCED_MARK} the class's choice"), theme.forced),
        // Greedy takes the top after the penalties: "rank #2" beside a bare "greedy" read as a bug.
        Source::Greedy if t.rank > 0 => ("greedy after penalties".to_string(), theme.planned),
        Source::Greedy => ("greedy".to_string(), theme.planned),
        _ => ("sampled".to_string(), theme.planned),
    };
    let token = format!(" {} ", quoted_token(&t.token));
    let mut figures = vec![
        format!("p {}", crate::fmt::pct(t.prob)),
        format!("rank #{}", t.rank + 1),
        format!("−log p {:.2}", -t.logprob),
    ];
    let used = |f: &[String]| label.width() + token.width() + f.join("  ").width();
    while figures.len() > 1 && used(&figures) > width {
        figures.pop();
    }
    Line::from(vec![
        Span::styled(label, style),
        Span::styled(token, theme.text),
        Span::styled(figures.join("  "), theme.prob(t.prob)),
    ])
}

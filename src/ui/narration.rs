//! The narration panel of a lesson: the step's heading and text (markdown-light: `**bold**`, `` `code` ``,
//! blank lines between paragraphs, wrapped with textwrap), then what the step's `expect` checks saw.
//! A check's result waits while the class is asked to guess, so it never gives the answer away.

use super::narration_fit::{fitted, Body};
use super::theme::Theme;
use crate::app::keymap::{hint_key, key_for, pair_hint, Action, Mode};
use crate::app::lesson::LessonState;
use crate::app::App;
use crate::protocol::lesson::{Given, QuestionKind, Status};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Rows the panel would like at this screen width, given at most `most`: its lines and two borders,
/// or, where they do not fit, the lines [`fitted`] keeps (without blank lines, so no rows stay empty);
/// and whether even those were cut.
pub fn height(app: &App, width: u16, most: u16) -> (u16, bool) {
    let theme = Theme::new(app.screen.theme);
    let Some(l) = app.lesson.as_ref() else {
        return (2, false);
    };
    let cols = width.saturating_sub(2) as usize;
    let room = most.saturating_sub(2) as usize;
    let (kept, cut) = fitted(
        body(app, l, cols, &theme),
        (room, cols),
        l.waiting().is_some(),
    );
    ((kept.len() as u16).saturating_add(2), cut)
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let Some(state) = app.lesson.as_ref() else {
        return;
    };
    let keys = format!(" {}: lesson steps ", step_keys(app.mode));
    let width = area.width.saturating_sub(2) as usize;
    let title = title(state, width);
    // The keys beside the title where both fit, else on the bottom border: the heading comes first.
    let keys_on_top = title.width() + keys.width() <= width;
    let keys = Line::styled(keys, theme.dim).right_aligned();
    let mut block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(title, theme.title));
    block = if keys_on_top {
        block.title_top(keys)
    } else {
        block.title_bottom(keys)
    };
    let room = area.height.saturating_sub(2) as usize;
    let body = body(app, state, width, theme);
    let (lines, cut) = fitted(body, (room, width), state.waiting().is_some());
    if cut {
        block = block.title_bottom(Line::styled(
            " … more than fits: a larger window shows it all ",
            theme.dim,
        ));
    }
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// The keys that step the lesson from the screen as it is: the mode's own, or, where a popup or a
/// typed answer takes them (the sampler panel's ← → lower and raise a setting), its close key first.
fn step_keys(mode: Mode) -> String {
    let pair = [Action::PrevLessonStep, Action::NextLessonStep];
    let own = pair_hint(mode, pair);
    if !own.is_empty() {
        return own;
    }
    let normal = pair_hint(Mode::Normal, pair);
    match key_for(mode, Action::Close) {
        Some(close) => format!("{close}, then {normal}"),
        None => normal,
    }
}

/// The panel's title in `cols` columns: the lesson, the step and its heading where they fit; else the
/// step and its heading first (the lesson's own title was on screen when it began), cut at the end.
fn title(state: &LessonState, cols: usize) -> String {
    let (lesson, n) = (&state.lesson.title, state.len());
    let Some(i) = state.at else {
        return clipped(&format!(" {lesson} · {n} steps "), cols);
    };
    let heading = state.lesson.steps[i].title.as_deref().unwrap_or_default();
    let full = format!(" {lesson} · step {} of {n} · {heading} ", i + 1);
    if full.width() <= cols {
        return full;
    }
    clipped(
        &format!(" step {} of {n} · {heading} · {lesson} ", i + 1),
        cols,
    )
}

/// `text` in at most `cols` columns: whole, or cut with "…" as its last column.
fn clipped(text: &str, cols: usize) -> String {
    if text.width() <= cols {
        return text.to_string();
    }
    let (mut out, mut used) = (String::new(), 0);
    for c in text.chars() {
        used += c.width().unwrap_or(0);
        if used + 1 > cols {
            break;
        }
        out.push(c);
    }
    format!("{}…", out.trim_end())
}

/// The note that stands for the narration's part after `---` while the question waits.
pub(super) const MORE_AFTER: &str = "(more after the answer)";

/// The panel's lines at `width`: the narration, then the checks, then where the class is.
fn body(app: &App, state: &LessonState, width: usize, theme: &Theme) -> Body {
    let Some(i) = state.at else {
        let line = Line::styled(
            format!(
                "{}: the first step is being run on the model…",
                state.lesson.summary
            ),
            theme.dim,
        );
        return Body {
            lines: vec![line],
            narration: 1,
            read: 0,
            passed: vec![],
            summary: None,
            pinned: vec![],
        };
    };
    let narration_text = &state.lesson.steps[i].narration;
    let text = shown_narration(narration_text, state.waiting().is_some());
    let mut lines = super::markdown::markdown_light(&text, width.max(10), theme);
    let narration = lines.len();
    // Once a question is answered, the text the class read before the answer: its lines come first.
    let answered = state.waiting().is_none() && state.answer.is_some();
    let read = match crate::protocol::lesson::format::split_at_reveal(narration_text) {
        (before, Some(_)) if answered => {
            super::markdown::markdown_light(before.trim_end(), width.max(10), theme).len()
        }
        _ => 0,
    };
    question_lines(state, width, theme, &mut lines);
    let (passed, summary) = match &state.run {
        Some(run) => check_lines(app, run, (width, theme), &mut lines),
        None => (Vec::new(), None),
    };
    let mut pinned = Vec::new();
    if let Some(models) = &state.written_for {
        let text = format!("⚠ written for {models}, not this model: ✗ marks what fails");
        pinned.push(Line::styled(crate::fmt::fit(&text, width), theme.error));
    }
    if let Some(f) = &state.earlier_failure {
        let text = format!(
            "⚠ step {} did not go as the lesson says: what follows may differ from its text",
            f.index + 1
        );
        pinned.push(Line::styled(crate::fmt::fit(&text, width), theme.error));
    }
    if state.explored {
        let back = crate::app::keymap::hint_key(Mode::Normal, Action::BackToLesson);
        let text = format!("✎ exploring on your own: {back} goes back to the lesson");
        pinned.push(Line::styled(crate::fmt::fit(&text, width), theme.key));
    }
    Body {
        lines,
        narration,
        read,
        passed,
        summary,
        pinned,
    }
}

/// The step's checks, a line each, onto `lines` (while a guess waits, one line that says how many
/// held): which of the lines are checks that held, and the one line that can stand for them.
fn check_lines(
    app: &App,
    run: &crate::protocol::lesson::StepRun,
    (width, theme): (usize, &Theme),
    lines: &mut Vec<Line<'static>>,
) -> (Vec<usize>, Option<Line<'static>>) {
    let checks: Vec<_> = run
        .outcomes
        .iter()
        .filter(|o| matches!(o.status, Status::Passed | Status::Failed))
        .collect();
    let failed = checks.iter().any(|o| o.status == Status::Failed);
    if app.awaiting_guess() && !failed && !checks.is_empty() {
        lines.push(Line::styled(
            format!(
                "✓ {} check(s) held on the model: shown after the reveal",
                checks.len()
            ),
            theme.dim,
        ));
        return (Vec::new(), None);
    }
    let mut passed = Vec::new();
    for o in &checks {
        let (mark, style) = match o.status {
            Status::Passed => ("✓", theme.info),
            _ => ("✗", theme.error),
        };
        if o.status == Status::Passed {
            passed.push(lines.len());
        }
        let text = format!("{mark} {}: {}", o.what, o.observed);
        lines.push(Line::styled(crate::fmt::fit(&text, width), style));
    }
    let held = format!("✓ {} checks held on the model", passed.len());
    (passed, Some(Line::styled(held, theme.info)))
}

/// The narration as the class may see it now: the part after a line `---` (what the answer shows)
/// waits while the step's question does.
pub fn shown_narration(narration: &str, asking: bool) -> String {
    match crate::protocol::lesson::format::split_at_reveal(narration) {
        (before, Some(_)) if asking => {
            format!("{}\n\n*{MORE_AFTER}*", before.trim_end())
        }
        (before, Some(after)) => format!("{}\n\n{}", before.trim_end(), after.trim_start()),
        (_, None) => narration.to_string(),
    }
}

/// A panel whose figures could answer the question on screen, while it waits.
pub fn hidden_for_question(frame: &mut Frame, area: Rect, theme: &Theme) {
    let reveal = hint_key(Mode::Normal, Action::ToggleHidden);
    let lines = vec![
        Line::styled("Hidden until the answer:", theme.title),
        Line::styled("its figures could give it away.", theme.dim),
        Line::styled(format!("{reveal} reveals"), theme.dim),
    ];
    let block = Block::bordered().border_style(theme.border);
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// The step's question while it waits (how to answer, the choices), and the answers once revealed.
fn question_lines(
    state: &LessonState,
    width: usize,
    theme: &Theme,
    lines: &mut Vec<Line<'static>>,
) {
    let fit = |s: String| crate::fmt::fit(&s, width);
    if let Some(q) = state.waiting() {
        let answer = hint_key(Mode::Normal, Action::OpenSearch);
        let reveal = hint_key(Mode::Normal, Action::ToggleHidden);
        let how = match q.kind {
            QuestionKind::Token => format!("{answer} to guess the next token, {reveal} reveals"),
            _ => format!(
                "{answer} then {} to answer, {reveal} reveals",
                q.how_to_answer()
            ),
        };
        lines.push(Line::default());
        lines.push(Line::styled(fit(format!("? {}", q.text)), theme.title));
        if let QuestionKind::Choice(choices) = &q.kind {
            for (n, c) in choices.iter().enumerate() {
                lines.push(Line::styled(
                    fit(format!("  {}. {}", n + 1, c.text)),
                    theme.text,
                ));
            }
        }
        let given = state
            .given
            .as_ref()
            .map(|g| format!("the class answers {}", shown(g)));
        lines.push(Line::styled(fit(given.unwrap_or(how)), theme.dim));
    }
    if let Some((a, scored)) = &state.answer {
        // The verdict and the class's answer first: a narrow panel cuts the model's text, never them.
        let text = match scored {
            Some(v) => format!(
                "{} the class: {} · the model: {}",
                v.mark(),
                v.class,
                v.model
            ),
            None => format!("→ the model: {}", a.shown),
        };
        lines.push(Line::default());
        lines.push(Line::styled(
            fit(format!("? {}", a.question.text)),
            theme.dim,
        ));
        lines.push(Line::styled(fit(text), theme.key));
    }
}

/// A class's answer as the panel says it.
fn shown(g: &Given) -> String {
    match g {
        Given::Yes(true) => "yes".into(),
        Given::Yes(false) => "no".into(),
        Given::Choice(i) => format!("choice {}", i + 1),
        Given::Number(v) => format!("{v}"),
    }
}

#[cfg(test)]
mod tests {
    use super::{clipped, shown_narration};

    /// A heading that fits stays whole; one that does not ends in "…" within its columns, wide
    /// characters counted as two.
    #[test]
    fn a_long_heading_ends_in_an_ellipsis() {
        assert_eq!(clipped(" Every step reads ", 18), " Every step reads ");
        assert_eq!(clipped(" Every step reads ", 13), " Every step…");
        assert_eq!(clipped("⟨漢字⟩ token", 6), "⟨漢字…");
        assert_eq!(clipped("⟨漢字⟩ token", 5), "⟨漢…");
    }

    #[test]
    fn the_part_after_the_rule_waits_for_the_answer() {
        let text = "Will it loop?\n---\nIt loops: greedy has no way out.";
        let asking = shown_narration(text, true);
        assert!(asking.starts_with("Will it loop?"));
        assert!(!asking.contains("no way out"), "{asking}");
        assert!(asking.contains("more after the answer"));
        let answered = shown_narration(text, false);
        assert_eq!(
            answered,
            "Will it loop?\n\nIt loops: greedy has no way out."
        );
        assert_eq!(shown_narration("plain", true), "plain");
    }
}

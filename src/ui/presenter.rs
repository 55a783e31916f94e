//! Presenter mode's own panel: the token just chosen, in large type (tui-big-text) that reads from the
//! back of a room, with its probability, rank and how it was chosen in words (never colour alone), and
//! the class's score when it is guessing.

use super::theme::Theme;
use crate::app::App;
use crate::fmt::pct;
use crate::protocol::Source;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;
use tui_big_text::{BigText, PixelSize};

/// The token as large type shows it: a leading space as `·`, a line break as `\n`, so that the
/// class sees that a token carries its space.
pub fn big_form(text: &str) -> String {
    text.replace(' ', "·")
        .replace('\n', "\\n")
        .replace('\t', "\\t")
}

/// The largest pixel size at which `chars` glyphs fit in `area`: (size, columns, rows per glyph).
fn fitting(chars: usize, area: Rect) -> Option<(PixelSize, u16)> {
    // font8x8 glyphs are 8×8 pixels; each size packs them into cells differently.
    [
        (PixelSize::Full, 8, 8),
        (PixelSize::HalfHeight, 8, 4),
        (PixelSize::Quadrant, 4, 4),
    ]
    .into_iter()
    .find(|&(_, w, h)| chars as u16 * w <= area.width && h <= area.height)
    .map(|(size, _, h)| (size, h))
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(" Chosen token ", theme.title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(record) = app.last_generated() else {
        let p = Paragraph::new(vec![
            Line::default(),
            Line::styled(" The prompt is read.", theme.text),
            Line::styled(" The first token chosen shows here.", theme.dim),
        ]);
        frame.render_widget(p, inner);
        return;
    };
    let how = how_chosen(record);
    let score = super::predict::score_line_fit(app, inner.width as usize);
    let rows = 2 + u16::from(!score.is_empty());
    let [big, text] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(rows)]).areas(inner);
    let shown = big_form(&record.token.text);
    let chars = shown.chars().count();
    // Large type of a space or a mark is a blot a class cannot read (" " is a lone "·"): the facts
    // then name it as every other panel does, "⟨␣⟩" (not where it is too long for large type: the
    // quoted form stands there already).
    let blot = !shown.chars().any(char::is_alphanumeric);
    let large = fitting(chars, big);
    let name = if blot && large.is_some() {
        format!(" {}", crate::fmt::quoted_token(&record.token))
    } else {
        String::new()
    };
    let mut facts = vec![
        Line::from(vec![
            Span::styled(name, theme.key),
            // The model's own probability: the bars beside it may show the sampler's.
            Span::styled(format!(" model p {} ", pct(record.prob)), theme.title),
            Span::styled(format!("· rank {}", record.rank + 1), theme.text),
        ]),
        Line::styled(format!(" {how}"), theme.key),
    ];
    if !score.is_empty() {
        facts.push(Line::styled(score, theme.dim));
    }
    match large {
        Some((size, rows)) => {
            // Centred vertically in the room there is.
            let top = big.y + big.height.saturating_sub(rows) / 2;
            let at = Rect {
                y: top,
                height: rows,
                ..big
            };
            let widget = BigText::builder()
                .pixel_size(size)
                .style(theme.title)
                .lines(vec![Line::from(shown)])
                .centered()
                .build();
            frame.render_widget(widget, at);
        }
        None => {
            // Too long for large type: plain bold text, quoted as every other panel quotes a token
            // (the `·` is only for the large font, which has no `␣`).
            let quoted = crate::fmt::quoted_token(&record.token);
            let p = Paragraph::new(Line::styled(quoted, theme.title)).centered();
            frame.render_widget(p, big);
        }
    }
    frame.render_widget(Paragraph::new(facts), text);
}

/// How the token on show was chosen, in words.
fn how_chosen(record: &crate::protocol::TokenRecord) -> &'static str {
    match record.source {
        Source::Forced => "FORCED by hand",
        Source::Class => "CHOSEN by the class",
        // Greedy takes the top after the penalties, which need not be the model's own first.
        Source::Greedy if record.rank > 0 => "greedy: the top after the penalties",
        Source::Greedy => "greedy: the top choice",
        Source::Sampled => "sampled: a random draw",
        Source::Prompt => "prompt",
    }
}

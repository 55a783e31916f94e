//! Markdown-light: a lesson's narration as styled, wrapped lines. Paragraphs are wrapped at spaces
//! and hyphens (a word longer than the line is cut anywhere);
//! `**bold**`, `*italic*` and `` `code` `` are the only marks.

use super::theme::Theme;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

/// Markdown-light text as styled, wrapped lines: paragraphs (blank lines between them) are wrapped
/// with textwrap; `**bold**`, `*italic*` and `` `code` `` carry across line breaks (inside code a `*`
/// is only a star).
pub fn markdown_light(text: &str, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    // Lines break at spaces (and hyphens), not by Unicode's rules: they break after a '|', and
    // "<|im_end|>" had come out as "<|" at the end of one line and "im_end|>" on the next.
    let options = textwrap::Options::new(width).word_separator(textwrap::WordSeparator::AsciiSpace);
    let mut out = Vec::new();
    for (n, para) in text.split("\n\n").enumerate() {
        if n > 0 {
            out.push(Line::default());
        }
        let mut marks = Marks::default();
        let joined = held_quotes(&para.split_whitespace().collect::<Vec<_>>().join(" "));
        // Markers take no room on screen; wrapping with them counted only makes lines a little short.
        for line in textwrap::wrap(&joined, &options) {
            out.push(Line::from(marks.spans(&line.replace(HELD, " "), theme)));
        }
    }
    out
}

/// A space no line breaks at, put back to a plain space once the lines are wrapped.
const HELD: char = '\u{a0}';

/// `text` with the space that opens a quoted token held to its quote: `" dog"` is a token with its
/// leading space, and a line had ended in `lands on "` with `dog"` on the next. An opening quote is
/// one at the start or after a space or a bracket.
fn held_quotes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut prev: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        let opens = matches!(c, '"' | '“') && prev.is_none_or(|p| p == ' ' || p == '(');
        if opens && chars.peek() == Some(&' ') {
            chars.next();
            out.push(HELD);
            prev = Some(HELD);
            continue;
        }
        prev = Some(c);
    }
    out
}

/// The markers open at a point of the text.
#[derive(Default)]
struct Marks {
    bold: bool,
    italic: bool,
    code: bool,
}

impl Marks {
    /// One wrapped line as spans, the markers dropped and their styles applied.
    fn spans(&mut self, line: &str, theme: &Theme) -> Vec<Span<'static>> {
        let mut spans = Vec::new();
        let mut rest = line;
        while !rest.is_empty() {
            let star = if self.code { None } else { rest.find('*') };
            let next = [star, rest.find('`')]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(rest.len());
            if next > 0 {
                spans.push(Span::styled(rest[..next].to_string(), self.style(theme)));
            }
            rest = &rest[next..];
            if let Some(r) = rest.strip_prefix('`') {
                self.code = !self.code;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("**") {
                self.bold = !self.bold;
                rest = r;
            } else if let Some(r) = rest.strip_prefix('*') {
                self.italic = !self.italic;
                rest = r;
            }
        }
        spans
    }

    fn style(&self, theme: &Theme) -> Style {
        let base = match (self.bold, self.code) {
            (_, true) => theme.key,
            (true, false) => theme.title,
            (false, false) => theme.text,
        };
        if self.italic && !self.code {
            base.add_modifier(Modifier::ITALIC)
        } else {
            base
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    /// A special token stays whole on one line (Unicode's rules would break it after a '|'), and
    /// the marks are dropped with their style kept across the break.
    #[test]
    fn lines_break_at_spaces_and_marks_carry_across() {
        let theme = Theme::new(crate::app::ThemeKind::Default);
        let para = "We step back one token to see that choice: `<|im_end|>` at the top";
        let lines = text(&markdown_light(para, 46, &theme));
        assert!(lines.iter().any(|l| l.contains("<|im_end|>")), "{lines:?}");
        assert!(lines.iter().all(|l| l.len() <= 46), "{lines:?}");
        let bold = markdown_light("a **bold claim that wraps** b", 12, &theme);
        // The marks count towards the width while wrapping ("a **bold" is 8 columns).
        assert_eq!(text(&bold), vec!["a bold", "claim that", "wraps b"]);
        assert_eq!(bold[2].spans[0].style, theme.title, "bold carries over");
        assert_eq!(bold[2].spans[1].style, theme.text);
        assert_eq!(
            text(&markdown_light("one\n\ntwo", 20, &theme)),
            vec!["one", "", "two"]
        );
    }

    /// A quoted token keeps its leading space with its quote: `" dog"` never ends a line at `"`;
    /// a closing quote still breaks, and the screen shows a plain space.
    #[test]
    fn a_quoted_tokens_space_stays_with_its_quote() {
        let theme = Theme::new(crate::app::ThemeKind::Default);
        let para = "With seed 7 it lands on \" dog\", not the top";
        for width in 10..40 {
            let lines = text(&markdown_light(para, width, &theme));
            assert!(
                lines
                    .iter()
                    .all(|l| !l.ends_with('"') || l.ends_with("dog\",")),
                "{lines:?}"
            );
            assert!(lines.join(" ").contains("\" dog\""), "{width}: {lines:?}");
        }
        assert_eq!(held_quotes("(\" a\" b) \"c\" d"), "(\"\u{a0}a\" b) \"c\" d");
    }
}

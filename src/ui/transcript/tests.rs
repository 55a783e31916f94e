//! The transcript's wrapping: at token boundaries between words, never inside a word or a number
//! made of several tokens.

use super::{wrap, Chunk};
use ratatui::style::Style;

fn rows(tokens: &[&str], width: usize) -> Vec<String> {
    let chunks: Vec<Chunk> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| Chunk::Text(t.to_string(), Style::default(), Some(i)))
        .collect();
    wrap(&chunks, width)
        .iter()
        .map(|row| row.iter().map(|p| p.text.as_str()).collect())
        .collect()
}

/// SmolLM2 writes 311 as three tokens: the number moves to the next row whole, with the full stop
/// after it, where the row had ended "approximately 3" over "11 million".
#[test]
fn a_number_of_several_tokens_wraps_whole() {
    let tokens = ["is", " approximately", " ", "3", "1", "1", " million", "."];
    assert_eq!(
        rows(&tokens, 18),
        ["is approximately ", "311 million."],
        "the break falls before the number"
    );
    assert_eq!(rows(&tokens, 40), ["is approximately 311 million."]);
    // A word of two tokens, and its full stop, stay together too.
    assert_eq!(
        rows(&["on", " Sat", "urday", "."], 10),
        ["on", " Saturday."],
        "the break falls before the word"
    );
}

/// A run wider than the line still breaks, between its tokens.
#[test]
fn a_run_wider_than_the_line_breaks_between_its_tokens() {
    let digits = ["1", "2", "3", "4", "5", "6"];
    assert_eq!(rows(&digits, 4), ["1234", "56"]);
}

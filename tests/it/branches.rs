//! The branch list's texts on the real model: each is read from as few tokens as hold it, and says what
//! decoding the `chars + 8` tokens at that end says there (a token is at least one character, except
//! partial UTF-8 bytes).

use crate::support;
use nexttoken::engine::session::{Choice, Session};

/// The last `chars` characters of the text of the last `chars + 8` of `ids`.
fn tail(s: &Session, ids: &[u32], chars: usize) -> String {
    let text = s.text_of(&ids[ids.len().saturating_sub(chars + 8)..]);
    let skip = text.chars().count().saturating_sub(chars);
    text.chars().skip(skip).collect()
}

/// The first `chars` characters of the text of the first `chars + 8` of `ids`.
fn head(s: &Session, ids: &[u32], chars: usize) -> String {
    let text = s.text_of(&ids[..ids.len().min(chars + 8)]);
    text.chars().take(chars).collect()
}

#[test]
fn branch_texts_are_the_ends_of_the_whole_text() {
    let mut s = support::real_session();
    s.prefill_text(
        "A long afternoon in the old town: the baker, the bookseller and the clockmaker all kept \
         their doors open while the rain came and went over the square.",
        false,
    )
    .unwrap();
    // Multi-byte characters split over tokens, a long word, and runs of one-letter tokens.
    let text =
        " At the café, crème brûlée and naïve jokes — 東京の雨 — a b c d e f g h i j k l m n.";
    s.force_text(text, &mut |_, _, _| {}).unwrap();
    for _ in 0..12 {
        s.step(Choice::Sample).unwrap();
    }
    s.rewind(20).unwrap();
    s.step(Choice::Force(s.encode(" Meanwhile").unwrap()[0]))
        .unwrap();
    for _ in 0..6 {
        s.step(Choice::Sample).unwrap();
    }
    let prompt = s.prompt_len();
    let branches = s.branches();
    assert_eq!(branches.len(), 2);
    let current = s.tokens();
    for b in &branches {
        s.switch_branch(b.id).unwrap();
        let ids = s.tokens();
        assert_eq!(b.preview, tail(&s, &ids[prompt..], 40), "preview");
        assert_eq!(b.before_fork, tail(&s, &ids[..b.fork_position], 30));
        assert_eq!(b.after_fork, head(&s, &ids[b.fork_position..], 40));
        assert!(b.preview.chars().count() == 40 && !b.preview.contains('\u{fffd}'));
        if !b.current {
            assert!(!b.after_fork.is_empty() && ids != current);
        }
    }
}

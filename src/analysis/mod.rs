//! Pure measurements over token sequences and distributions, shared by the engine, the TUI and the
//! headless commands: loops at the tip of a sequence and repeated n-grams (`repetition.rs`), and
//! divergences between two next-token distributions (`divergence.rs`), and what each attention head
//! does at a position (`heads.rs`), and the arithmetic of speculative decoding (`speculation.rs`).
//!
//! Nothing here knows about candle, tokenizers or the terminal: the inputs are token ids and logits
//! rows, so `app/` may call it on the data it already holds.

pub mod divergence;
pub mod heads;
pub mod repetition;
pub mod speculation;

pub use divergence::{Divergence, LogProbs};
pub use heads::{head_score, HeadScore};
pub use repetition::{repeated_ngrams, tip_cycle, Cycle};

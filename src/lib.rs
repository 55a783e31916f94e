//! nexttoken: watch a real quantised language model write, one forward pass at a time.
//!
//! # The house, floor by floor (top first)
//!
//! Each module uses only the modules below it (the table in docs/ARCHITECTURE.md, held by
//! `tests/it/house.rs`).
//!
//! | module | owns |
//! |---|---|
//! | [`cmd`] | the commands: the TUI (`cmd::tui`), `trace`, `compare`, `compare_ab`, `lesson`, `export`, `bench` |
//! | [`cli`] | every command-line flag |
//! | [`class`] | class mode's web server: students join, guess the next token and read their scores |
//! | [`ui`] | views: pure reads of `&App` drawn with ratatui; the layout; the screen map for `update` |
//! | [`export`] | the handout: a saved session as one HTML page or Markdown |
//! | [`app`] | the TUI's state and its pure `App::update`, the one keymap table |
//! | [`worker`] | the engine thread: the session, model B and the open lesson, one command at a time |
//! | [`lesson`] | the lesson runner: a step's actions as session calls, `expect` checks, the model's answers |
//! | [`engine`] | candle and tokenizers: GGUF, tokenizer, forward pass, KV cache, sampler, session tree |
//! | [`fmt`] | tokens, probabilities, times and bars as plain text, for the views and the handouts |
//! | [`protocol`] | the plain data that crosses threads: `Command`, `Event`, reports, settings, lessons |
//! | [`analysis`] | pure measurements: loops, repeated n-grams, divergences, head scores |
//!
//! # Threads: one direction
//!
//! ```text
//! input thread --Msg--> UI thread (App: state, update, render) --Command--> engine thread (model, session)
//!                              ^                                                   |
//!                              +----------------- Event (plain data) --------------+
//! ```

#![deny(unsafe_op_in_unsafe_fn)]

pub mod analysis;
pub mod app;
pub mod class;
pub mod cli;
pub mod cmd;
pub mod engine;
pub mod export;
pub mod fmt;
pub mod lesson;
pub mod protocol;
pub mod ui;
pub mod worker;
